# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run the spark_fabric module's main() against a fake DGX Spark: /sys/class/net and /sys/class/infiniband in a
scratch directory, and ip, ibdev2netdev, ethtool and ping answered by a fake run_command."""

from __future__ import annotations

import json
import os
import sys
import types

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgx_spark.specdec.plugins.modules import spark_fabric

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
from fake_host import FakeHost  # noqa: E402  pylint: disable=wrong-import-position

BINS = {"ip": "/usr/sbin/ip", "ping": "/usr/bin/ping", "ibdev2netdev": "/usr/sbin/ibdev2netdev",
        "ethtool": "/usr/sbin/ethtool"}
QSFP = ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")
HCA = {"enp1s0f0np0": "rocep1s0f0", "enP2p1s0f0np0": "roceP2p1s0f0", "enp1s0f1np1": "rocep1s0f1",
       "enP2p1s0f1np1": "roceP2p1s0f1"}
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"

LINK_A = {"iface": "enp1s0f1np1", "address": "192.168.200.12", "peer": "spark-b", "peer_address": "192.168.200.13",
          "mtu": 9000}
LINK_B = {"iface": "enP2p1s0f1np1", "address": "192.168.200.14", "peer": "spark-b", "peer_address": "192.168.200.15",
          "mtu": 9000}
CLUSTER = {"spark-a": {"enp1s0f1np1": ["192.168.200.12/24"], "enP2p1s0f1np1": ["192.168.200.14/24"]},
           "spark-b": {"enp1s0f1np1": ["192.168.200.13/24"], "enP2p1s0f1np1": ["192.168.200.15/24"]}}


def v4_gid(address):
    return "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % tuple(int(x) for x in address.split("."))


class FakeSpark(FakeHost):
    """spark-a: its four QSFP netdevs, their HCAs and GID tables, and the commands the module runs."""

    def __init__(self, root):
        self.sys_net = root / "net"
        self.sys_ib = root / "infiniband"
        self.sys_net.mkdir(parents=True)
        self.bins = dict(BINS)
        self.addresses = {}
        self.peers = {}  # netdev -> {peer_address: peer MTU}, what answers a ping
        self.ibdev_up = {}
        self.ethtool = {}
        self.calls = []

    def netdev(self, name, mtu=9000, operstate="up", speed="200000", cidr=None, peers=None, ib_up=None):
        path = self.sys_net / name
        path.mkdir()
        for key, value in (("mtu", mtu), ("operstate", operstate), ("speed", speed)):
            if value is not None:
                (path / key).write_text("%s\n" % value)
        self.addresses[name] = [cidr] if cidr else []
        self.peers[name] = dict(peers or {})
        self.ibdev_up[name] = (operstate == "up") if ib_up is None else ib_up

    def hca(self, netdev, gids):
        """gids: {index: (gid, type)} on port 1 of the netdev's HCA."""
        base = self.sys_ib / HCA[netdev]
        (base / "device" / "net" / netdev).mkdir(parents=True)
        for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
            (base / "ports" / "1" / sub).mkdir(parents=True, exist_ok=True)
        for index in range(8):
            gid, kind = gids.get(index, (ZERO_GID, None))
            (base / "ports" / "1" / "gids" / str(index)).write_text(gid + "\n")
            if kind:
                (base / "ports" / "1" / "gid_attrs" / "types" / str(index)).write_text(kind + "\n")
                (base / "ports" / "1" / "gid_attrs" / "ndevs" / str(index)).write_text(netdev + "\n")

    def healthy(self, rdma=True):
        self.netdev("enp1s0f0np0", mtu=1500, operstate="down", speed="-1")
        self.netdev("enP2p1s0f0np0", mtu=1500, operstate="down", speed="-1")
        self.netdev("enp1s0f1np1", cidr="192.168.200.12/24", peers={"192.168.200.13": 9000})
        self.netdev("enP2p1s0f1np1", cidr="192.168.200.14/24", peers={"192.168.200.15": 9000})
        if rdma:
            for name in QSFP:
                self.hca(name, {0: ("fe80:0000:0000:0000:0000:0000:0000:0001", "IB/RoCE v1")})
            self.hca_v4("enp1s0f1np1", "192.168.200.12", 3)
            self.hca_v4("enP2p1s0f1np1", "192.168.200.14", 5)

    def hca_v4(self, netdev, address, index):
        base = self.sys_ib / HCA[netdev] / "ports" / "1"
        (base / "gids" / str(index)).write_text(v4_gid(address) + "\n")
        (base / "gid_attrs" / "types" / str(index)).write_text("RoCE v2\n")
        (base / "gid_attrs" / "ndevs" / str(index)).write_text(netdev + "\n")

    # -- commands --

    def answer(self, args):
        name = args[0].rsplit("/", 1)[-1]
        return getattr(self, "cmd_" + name)(args[1:])

    def cmd_ip(self, argv):
        assert argv == ["-j", "-4", "addr", "show"], argv
        links = [{"ifname": "lo", "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8}]}]
        for name, cidrs in self.addresses.items():
            info = [{"family": "inet", "local": c.split("/")[0], "prefixlen": int(c.split("/")[1])} for c in cidrs]
            links.append({"ifname": name, "addr_info": info})
        return 0, json.dumps(links), ""

    def cmd_ibdev2netdev(self, argv):
        assert argv == []
        lines = ["%s port 1 ==> %s (%s)" % (HCA[n], n, "Up" if up else "Down") for n, up in self.ibdev_up.items()]
        return 0, "\n".join(lines) + "\n", ""

    def cmd_ethtool(self, argv):
        speed = self.ethtool.get(argv[0])
        return 0, "Settings for %s:\n\tSpeed: %s\n" % (argv[0], "%dMb/s" % speed if speed else "Unknown!"), ""

    def cmd_ping(self, argv):
        opts, rest = {}, list(argv)
        while rest and rest[0].startswith("-"):
            flag = rest.pop(0)
            opts[flag] = rest.pop(0) if flag != "-n" else True
        dest, iface, count = rest[0], opts["-I"], int(opts["-c"])
        size = int(opts.get("-s", 56))
        state = (self.sys_net / iface / "operstate").read_text().strip()
        peer_mtu = self.peers.get(iface, {}).get(dest)
        received = count
        if state != "up" or peer_mtu is None or size + 28 > peer_mtu:
            received = 0
        out = "PING %s\n\n--- %s ping statistics ---\n%d packets transmitted, %d received, %d%% packet loss, time 1000ms\n" % (
            dest, dest, count, received, 0 if received else 100)
        if not received:
            return 1, out, ""
        return 0, out + "rtt min/avg/max/mdev = 0.049/0.050/0.051/0.001 ms\n", ""

    def commands(self, name):
        return [c for c in self.calls if c[0].endswith("/" + name)]


@pytest.fixture
def spark(monkeypatch, tmp_path):
    fake = FakeSpark(tmp_path / "sys" / "class")

    fake.install(monkeypatch)
    monkeypatch.setattr(spark_fabric, "SYS_CLASS_NET", str(fake.sys_net))
    monkeypatch.setattr(spark_fabric, "SYS_CLASS_INFINIBAND", str(fake.sys_ib))
    monkeypatch.setattr(spark_fabric, "socket", types.SimpleNamespace(gethostname=lambda: "spark-a"))
    return fake


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            spark_fabric.main()
    return info.value.code, json.loads(capsys.readouterr().out)


def passes(capsys, args):
    rc, result = run_module(capsys, args)
    assert rc == 0, result
    assert result["changed"] is False and not result.get("failed")
    return result


def node_args(**extra):
    return dict({"node": "spark-a", "links": [LINK_A, LINK_B], "mtu": 9000, "cluster_addresses": CLUSTER}, **extra)


# -- node mode -------------------------------------------------------------------------------------------------------


def test_healthy_node(capsys, spark):
    spark.healthy()
    result = passes(capsys, node_args())
    report = result["fabric"]
    assert result["faults"] == [] and report["ok"] is True
    by_name = {i["iface"]: i for i in report["interfaces"]}
    assert list(by_name) == list(QSFP)
    assert by_name["enp1s0f1np1"]["gid_index"] == 3 and by_name["enP2p1s0f1np1"]["gid_index"] == 5
    assert by_name["enp1s0f1np1"]["hca"] == "rocep1s0f1" and by_name["enp1s0f1np1"]["ibdev2netdev"] == "Up"
    assert by_name["enp1s0f1np1"]["speed_mbps"] == 200000 and by_name["enp1s0f1np1"]["ipv4"] == ["192.168.200.12/24"]
    assert [(e["iface"], e["peer_address"], e["expected_by"], e["ping"]["received"]) for e in report["links"]] == [
        ("enp1s0f1np1", "192.168.200.13", "plan", 2), ("enP2p1s0f1np1", "192.168.200.15", "plan", 2)]
    # The don't-fragment pings fill the planned MTU; every command is an argv list (checked by the fake).
    assert [c[1:] for c in spark.commands("ping")] == [
        ["-n", "-M", "do", "-s", "8972", "-c", "2", "-i", "0.2", "-W", "2", "-I", "enp1s0f1np1", "192.168.200.13"],
        ["-n", "-M", "do", "-s", "8972", "-c", "2", "-i", "0.2", "-W", "2", "-I", "enP2p1s0f1np1", "192.168.200.15"]]
    assert report["tools"]["ib_write_bw"] is None and report["rdma"]["sysfs"] is True


def test_check_mode_reads_the_same(capsys, spark):
    spark.healthy()
    normal = passes(capsys, node_args())
    checked = passes(capsys, node_args(_ansible_check_mode=True))
    assert checked["fabric"] == normal["fabric"]


def test_no_rdma_devices(capsys, spark):
    spark.healthy(rdma=False)
    report = passes(capsys, node_args())["fabric"]
    assert report["ok"] is True
    assert report["rdma"]["note"] == "no RDMA devices (sysfs)"
    assert {i["gid_index"] for i in report["interfaces"]} == {None}
    assert {i["rdma_note"] for i in report["interfaces"]} == {"no RDMA devices (sysfs)"}


def test_port_down_falls_out_of_the_plan_but_is_a_fault(capsys, spark):
    spark.healthy()
    (spark.sys_net / "enP2p1s0f1np1" / "operstate").write_text("down\n")
    spark.ibdev_up["enP2p1s0f1np1"] = False
    # The plan lists the Up ports only; the addresses still name the peer of the Down one.
    result = passes(capsys, node_args(links=[LINK_A]))
    assert result["faults"] == [
        "spark-a enP2p1s0f1np1 -> spark-b (192.168.200.15): Down (operstate down, ibdev2netdev Down); expected Up: "
        "spark-a has 192.168.200.14 on it and spark-b has 192.168.200.15 in that subnet"]
    fault = result["fabric"]["faults"][0]
    assert (fault["node"], fault["iface"], fault["peer"], fault["peer_address"]) == (
        "spark-a", "enP2p1s0f1np1", "spark-b", "192.168.200.15")
    assert result["fabric"]["links"][1]["expected_by"] == "addresses"


def test_mtu_below_plan_and_failed_ping(capsys, spark):
    spark.healthy()
    (spark.sys_net / "enp1s0f1np1" / "mtu").write_text("1500\n")
    spark.peers["enP2p1s0f1np1"]["192.168.200.15"] = 1500  # the other end's MTU is low
    result = passes(capsys, node_args())
    assert [f["check"] for f in result["fabric"]["faults"]] == ["mtu", "ping"]
    assert result["faults"][0] == "spark-a enp1s0f1np1 -> spark-b (192.168.200.13): MTU 1500 is below the planned 9000"
    assert result["faults"][1].startswith("spark-a enP2p1s0f1np1 -> spark-b (192.168.200.15): no reply to a 9000-byte "
                                          "ping with don't-fragment")


def test_no_roce_v2_gid(capsys, spark):
    spark.healthy()
    (spark.sys_ib / "rocep1s0f1" / "ports" / "1" / "gid_attrs" / "types" / "3").write_text("IB/RoCE v1\n")
    result = passes(capsys, node_args())
    assert result["faults"] == ["spark-a enp1s0f1np1 -> spark-b (192.168.200.13): rocep1s0f1 has no RoCE v2 GID for "
                                "192.168.200.12 (NCCL over RoCE needs one)"]


def test_speed_from_ethtool_and_warning(capsys, spark):
    spark.healthy()
    (spark.sys_net / "enp1s0f1np1" / "speed").write_text("-1\n")
    spark.ethtool["enp1s0f1np1"] = 100000
    result = passes(capsys, node_args())
    interface = result["fabric"]["interfaces"][2]
    assert (interface["speed_mbps"], interface["speed_source"]) == (100000, "ethtool")
    assert result["faults"] == []
    assert [w["message"] for w in result["fabric"]["warnings"]] == [
        "spark-a enp1s0f1np1 -> spark-b (192.168.200.13): speed 100000 Mb/s is below 200000 Mb/s"]
    # Only where sysfs shows no speed (the ports without a cable too), not for enP2p1s0f1np1.
    assert [c[1] for c in spark.commands("ethtool")] == ["enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1"]


def test_without_ibdev2netdev_and_ethtool(capsys, spark):
    spark.healthy()
    del spark.bins["ibdev2netdev"]
    del spark.bins["ethtool"]
    report = passes(capsys, node_args())["fabric"]
    interface = report["interfaces"][2]
    assert (interface["hca"], interface["hca_source"], interface["ibdev2netdev"]) == ("rocep1s0f1", "sysfs", None)
    assert report["tools"] == {"ib_write_bw": None, "ibdev2netdev": None, "ethtool": None}


def test_ib_write_bw_is_found(capsys, spark):
    spark.healthy()
    spark.bins["ib_write_bw"] = "/usr/bin/ib_write_bw"
    assert passes(capsys, node_args())["fabric"]["tools"]["ib_write_bw"] == "/usr/bin/ib_write_bw"


def test_no_links_no_ping(capsys, spark):
    spark.healthy()
    del spark.bins["ping"]
    result = passes(capsys, {"node": "spark-a"})
    assert result["fabric"]["links"] == [] and len(result["fabric"]["interfaces"]) == 4
    assert spark.commands("ping") == []


@pytest.mark.parametrize("args, msg", [
    ({"links": [LINK_A, LINK_A]}, "links[1]: enp1s0f1np1 to 192.168.200.13 is already checked by links[0]"),
    ({"links": [LINK_A], "count": 0}, "count: 0; accepted"),
    ({"links": [LINK_A], "reports": {}}, "parameters are mutually exclusive: links|reports"),
    ({"reports": {}, "bandwidth_port": 80}, "bandwidth_port: 80; accepted"),
])
def test_wrong_options_fail(capsys, spark, args, msg):
    spark.healthy()
    rc, result = run_module(capsys, args)
    assert rc == 1 and result["failed"] is True and result["msg"].startswith(msg), result
    assert spark.calls == []


# -- controller mode -------------------------------------------------------------------------------------------------


def two_reports(capsys, spark, bins=None):
    spark.healthy()
    spark.bins.update(bins or {})
    a = passes(capsys, node_args())["fabric"]
    b = json.loads(json.dumps(a).replace("192.168.200.12", "@A").replace("192.168.200.13", "192.168.200.12")
                   .replace("@A", "192.168.200.13").replace("192.168.200.14", "@B")
                   .replace("192.168.200.15", "192.168.200.14").replace("@B", "192.168.200.15")
                   .replace("spark-b", "@N").replace("spark-a", "spark-b").replace("@N", "spark-a"))
    return {"spark-a": a, "spark-b": b}


PLANS = {"spark-a": {"cluster": "pair1", "nodes": ["spark-a", "spark-b"]},
         "spark-b": {"cluster": "pair1", "nodes": ["spark-a", "spark-b"]}}


def test_controller_mode(capsys, spark):
    reports = two_reports(capsys, spark)
    spark.calls = []
    result = passes(capsys, {"reports": reports, "hosts": ["spark-a", "spark-b"], "plans": PLANS})
    assert spark.calls == []  # nothing runs on the controller
    doc = result["fabric"]
    assert doc["ok"] is True and result["faults"] == [] and result["bandwidth_pairs"] == []
    assert doc["generated"].endswith("+00:00") and doc["clusters"]["pair1"]["plan"] == "ok"
    assert [len(n["links"]) for n in doc["nodes"].values()] == [2, 2]
    assert doc["nodes"]["spark-a"]["links"][0]["bandwidth_reason"] == "ib_write_bw not installed on spark-a, spark-b"
    assert result["table"][0].startswith("NODE") and len(result["table"]) == 9
    assert result["summary"][0] == "fabric OK: 2 node(s) in 1 cluster(s), 4 link(s) checked, 0 fault(s), 0 warning(s)"


def test_controller_mode_measurements(capsys, spark):
    reports = two_reports(capsys, spark, {"ib_write_bw": "/usr/bin/ib_write_bw"})
    args = {"reports": reports, "hosts": ["spark-a", "spark-b"], "plans": PLANS, "bandwidth": True}
    pairs = passes(capsys, args)["bandwidth_pairs"]
    assert [(p["client"], p["server"], p["server_address"]) for p in pairs] == [
        ("spark-a", "spark-b", "192.168.200.13"), ("spark-a", "spark-b", "192.168.200.15")]
    out = (" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
           " 65536      1722832          0.00               91.50                0.172254\n")
    # As a registered loop gives them: the pair under "item".
    measured = [{"item": pairs[0], "rc": 0, "stdout": out, "stderr": ""},
                {"item": pairs[1], "rc": 0, "stdout": out.replace("91.50", "92.25"), "stderr": ""}]
    doc = passes(capsys, dict(args, measurements=measured))["fabric"]
    assert [e["bandwidth"] for e in doc["nodes"]["spark-b"]["links"]] == [91.5, 92.25]
    assert doc["ok"] is True
    # A requested measurement without a result is a fault.
    result = passes(capsys, dict(args, measurements=measured[:1]))
    assert result["faults"] == ["spark-a enP2p1s0f1np1 -> spark-b (192.168.200.15): not measured: no result from spark-a"]
    assert result["fabric"]["nodes"]["spark-b"]["links"][1]["bandwidth_reason"] == "not measured: no result from spark-a"


def test_controller_mode_node_without_report(capsys, spark):
    reports = two_reports(capsys, spark)
    reports["spark-b"] = None
    result = passes(capsys, {"reports": reports, "plans": PLANS, "failures": {"spark-b": "spark-b did not answer"}})
    assert result["faults"] == ["spark-b: not checked: spark-b did not answer"]
    assert result["fabric"]["ok"] is False and result["fabric"]["nodes"]["spark-b"]["links"] == []
