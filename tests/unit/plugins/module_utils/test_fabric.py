# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Unit tests for plugins/module_utils/_fabric.py: the GID tables of a fake /sys/class/infiniband, the links a node
must reach, one node's faults, the whole fabric's report, table and summary, and the ib_write_bw pieces."""

from __future__ import annotations

import copy
import json

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _fabric as fabric

IBDEV = """\
rocep1s0f0 port 1 ==> enp1s0f0np0 (Down)
rocep1s0f1 port 1 ==> enp1s0f1np1 (Up)
roceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Down)
roceP2p1s0f1 port 1 ==> enP2p1s0f1np1 (Up)
"""
LINK_LOCAL_GID = "fe80:0000:0000:0000:5a0a:0aff:fe00:0001"
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


def v4_gid(address):
    a, b, c, d = (int(x) for x in address.split("."))
    return "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % (a, b, c, d)


def write_hca(root, hca, netdev, gids, port="1", size=8):
    """A device of /sys/class/infiniband: ``gids`` {index: (gid, type, ndev)}; the other entries of the table are
    zero and their gid_attrs cannot be read (the kernel answers EINVAL: here they do not exist)."""
    base = root / hca
    (base / "device" / "net" / netdev).mkdir(parents=True)
    for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
        (base / "ports" / port / sub).mkdir(parents=True, exist_ok=True)
    for index in range(size):
        gid, kind, ndev = gids.get(index, (ZERO_GID, None, None))
        (base / "ports" / port / "gids" / str(index)).write_text(gid + "\n")
        if kind is not None:
            (base / "ports" / port / "gid_attrs" / "types" / str(index)).write_text(kind + "\n")
        if ndev is not None:
            (base / "ports" / port / "gid_attrs" / "ndevs" / str(index)).write_text(ndev + "\n")


def spark_gids(netdev, address, v2_index=3):
    """The table a CX-7 function has once its netdev has an IPv4 address: link-local v1/v2, the address v1/v2."""
    table = {0: (LINK_LOCAL_GID, "IB/RoCE v1", netdev), 1: (LINK_LOCAL_GID, "RoCE v2", netdev),
             v2_index - 1: (v4_gid(address), "IB/RoCE v1", netdev), v2_index: (v4_gid(address), "RoCE v2", netdev)}
    return table


@pytest.fixture
def sysfs(tmp_path):
    root = tmp_path / "sys" / "class" / "infiniband"
    root.mkdir(parents=True)
    write_hca(root, "rocep1s0f1", "enp1s0f1np1", spark_gids("enp1s0f1np1", "192.168.200.12", 3))
    # The second function's table holds its address at another index: normal.
    write_hca(root, "roceP2p1s0f1", "enP2p1s0f1np1", spark_gids("enP2p1s0f1np1", "192.168.200.14", 5))
    # The port without a cable: its two functions have link-local GIDs only.
    for hca, netdev_name in (("rocep1s0f0", "enp1s0f0np0"), ("roceP2p1s0f0", "enP2p1s0f0np0")):
        gids = {0: (LINK_LOCAL_GID, "IB/RoCE v1", netdev_name), 1: (LINK_LOCAL_GID, "RoCE v2", netdev_name)}
        write_hca(root, hca, netdev_name, gids)
    return root


# -- GID tables ------------------------------------------------------------------------------------------------------


def test_read_gid_tables(sysfs):
    tables = fabric.read_gid_tables(str(sysfs))
    assert sorted(tables) == ["roceP2p1s0f0", "roceP2p1s0f1", "rocep1s0f0", "rocep1s0f1"]
    first = tables["rocep1s0f1"]
    assert first["netdevs"] == ["enp1s0f1np1"]
    assert [e["index"] for e in first["ports"]["1"]] == [0, 1, 2, 3]  # zero GIDs left out
    assert first["ports"]["1"][3] == {"index": 3, "gid": v4_gid("192.168.200.12"), "type": "RoCE v2",
                                      "ndev": "enp1s0f1np1"}


def test_no_infiniband_in_sysfs(tmp_path):
    assert fabric.read_gid_tables(str(tmp_path / "nothing")) is None


def test_gid_ipv4():
    assert fabric.gid_ipv4(v4_gid("192.168.200.12")) == "192.168.200.12"
    assert fabric.gid_ipv4("0000:0000:0000:0000:0000:ffff:c0a8:c80c\n") == "192.168.200.12"
    assert fabric.gid_ipv4(LINK_LOCAL_GID) is None
    assert fabric.gid_ipv4("garbage") is None and fabric.gid_ipv4(None) is None


def test_roce_v2_gids_and_pick(sysfs):
    tables = fabric.read_gid_tables(str(sysfs))
    assert fabric.roce_v2_ipv4_gids(tables["rocep1s0f1"]) == [
        {"index": 3, "port": 1, "address": "192.168.200.12", "ndev": "enp1s0f1np1"}]
    assert fabric.pick_gid(tables["rocep1s0f1"], "enp1s0f1np1", ["192.168.200.12"]) == {
        "index": 3, "port": 1, "address": "192.168.200.12"}
    assert fabric.pick_gid(tables["roceP2p1s0f1"], "enP2p1s0f1np1", ["192.168.200.14"])["index"] == 5
    # Not this netdev's, not this address's, a v1 entry alone: none.
    assert fabric.pick_gid(tables["rocep1s0f1"], "enP2p1s0f1np1", ["192.168.200.12"]) is None
    assert fabric.pick_gid(tables["rocep1s0f1"], "enp1s0f1np1", ["192.168.200.99"]) is None


def test_pick_gid_v1_only(tmp_path):
    write_hca(tmp_path, "rocep1s0f1", "enp1s0f1np1", {0: (v4_gid("192.168.200.12"), "IB/RoCE v1", "enp1s0f1np1")})
    assert fabric.pick_gid(fabric.read_gid_tables(str(tmp_path))["rocep1s0f1"], "enp1s0f1np1",
                           ["192.168.200.12"]) is None


def test_pick_gid_unreadable_ndev(tmp_path):
    write_hca(tmp_path, "rocep1s0f1", "enp1s0f1np1", {4: (v4_gid("192.168.200.12"), "RoCE v2", None)})
    tables = fabric.read_gid_tables(str(tmp_path))
    assert fabric.pick_gid(tables["rocep1s0f1"], "enp1s0f1np1", ["192.168.200.12"])["index"] == 4


def test_hca_of(sysfs):
    tables = fabric.read_gid_tables(str(sysfs))
    assert fabric.hca_of("enp1s0f1np1", IBDEV, tables) == ("rocep1s0f1", "ibdev2netdev")
    assert fabric.hca_of("enP2p1s0f1np1", "", tables) == ("roceP2p1s0f1", "sysfs")
    assert fabric.hca_of("enp1s0f0np0", "", tables) == ("rocep1s0f0", "sysfs")
    assert fabric.hca_of("eth0", "", tables) == (None, "")
    assert fabric.hca_of("enp1s0f0np0", IBDEV, None) == ("rocep1s0f0", "ibdev2netdev")


def test_ibdev2netdev_state_and_ethtool():
    assert fabric.ibdev2netdev_state(IBDEV, "enp1s0f1np1") == "Up"
    assert fabric.ibdev2netdev_state(IBDEV, "enp1s0f0np0") == "Down"
    assert fabric.ibdev2netdev_state(IBDEV, "eth0") is None and fabric.ibdev2netdev_state("", "enp1s0f1np1") is None
    assert fabric.parse_ethtool_speed("Settings for enp1s0f1np1:\n\tSpeed: 200000Mb/s\n\tDuplex: Full\n") == 200000
    assert fabric.parse_ethtool_speed("Settings for x:\n\tSpeed: Unknown!\n") is None
    assert fabric.parse_ethtool_speed("") is None


# -- options ---------------------------------------------------------------------------------------------------------


LINK_A = {"iface": "enp1s0f1np1", "address": "192.168.200.12", "peer": "spark-b", "peer_address": "192.168.200.13",
          "mtu": 9000}
LINK_B = {"iface": "enP2p1s0f1np1", "address": "192.168.200.14", "peer": "spark-b", "peer_address": "192.168.200.15",
          "mtu": 9000}


def test_validate_accepts_a_switch():
    # A switch: two peers on one netdev.
    other = dict(LINK_A, peer="spark-c", peer_address="192.168.200.16")
    assert fabric.validate([LINK_A, other, LINK_B], 9000) == []
    assert fabric.validate([], None) == []


@pytest.mark.parametrize("links, mtu, count, expected", [
    ([LINK_A, LINK_A], 9000, 2, "links[1]: enp1s0f1np1 to 192.168.200.13 is already checked by links[0]"),
    ([dict(LINK_A, peer_address="192.168.200.013")], 9000, 2, "links[0].peer_address: '192.168.200.013' is not an IPv4"),
    ([dict(LINK_A, iface="en/x")], 9000, 2, "links[0].iface: 'en/x' is not a netdev name"),
    ([dict(LINK_A, address="192.168.200.13")], 9000, 2, "links[0].peer_address: 192.168.200.13 is this end's own"),
    ([dict(LINK_A, mtu=100)], 9000, 2, "links[0].mtu: 100 is out of range"),
    ([LINK_A], 99999, 2, "mtu: 99999 is out of range"),
    ([LINK_A], 9000, 0, "count: 0;"),
    (["x"], 9000, 2, "links[0]: 'x'; accepted"),
])
def test_validate_refuses(links, mtu, count, expected):
    errors = fabric.validate(links, mtu, count=count)
    assert len(errors) == 1 and errors[0].startswith(expected), errors


def test_validate_bandwidth():
    assert fabric.validate_bandwidth() == []
    assert fabric.validate_bandwidth(80)[0].startswith("bandwidth_port: 80")
    assert fabric.validate_bandwidth(18515, 10, 10)[0].startswith("bandwidth_timeout: 10")


# -- the links a node must reach --------------------------------------------------------------------------------------


def test_expected_links_plan_first_then_addresses():
    own = {"enp1s0f1np1": ["192.168.200.12/24"], "enP2p1s0f1np1": ["192.168.200.14/24"], "eth0": ["10.0.0.2/24"]}
    cluster = {"spark-a": own,
               "spark-b": {"enp1s0f1np1": ["192.168.200.13/24"], "enP2p1s0f1np1": ["192.168.200.15/24"],
                           "eth0": ["10.0.0.3/24"]}}
    links = fabric.expected_links([LINK_A], own, cluster, ("enp1s0f1np1", "enP2p1s0f1np1"), 9000, node="spark-a")
    assert links == [
        dict(LINK_A, expected_by="plan"),
        # The Down port's link, implied by the addresses: the same netdev on the peer, not its other one.
        {"iface": "enP2p1s0f1np1", "address": "192.168.200.14", "peer": "spark-b", "peer_address": "192.168.200.15",
         "mtu": 9000, "expected_by": "addresses"},
    ]


def test_expected_links_switch_every_other_node():
    cluster = {"spark-a": {"enp1s0f1np1": ["10.10.0.1/24"]}, "spark-b": {"enp1s0f1np1": ["10.10.0.2/24"]},
               "spark-c": {"enp1s0f1np1": ["10.10.0.3/24"]}, "spark-d": {"enp1s0f1np1": ["10.20.0.4/24"]}}
    links = fabric.expected_links([], cluster["spark-a"], cluster, ("enp1s0f1np1",), None, node="spark-a")
    assert [(e["peer"], e["peer_address"], e["expected_by"]) for e in links] == [
        ("spark-b", "10.10.0.2", "addresses"), ("spark-c", "10.10.0.3", "addresses")]


def test_expected_links_nothing_without_addresses():
    assert fabric.expected_links([], {}, {"spark-b": {"enp1s0f1np1": ["10.10.0.2/24"]}}, ("enp1s0f1np1",)) == []


# -- one node --------------------------------------------------------------------------------------------------------


def netdev(mtu=9000, operstate="up", speed=200000, exists=True):
    return {"exists": exists, "operstate": operstate if exists else None, "mtu": mtu if exists else None,
            "speed_mbps": speed if exists else None}


PING_OK = {"ping": {"size": 8972, "df": True, "transmitted": 2, "received": 2, "rtt_avg_ms": 0.05, "ok": True},
           "cause": ""}
PING_FAIL = {"ping": {"size": 8972, "df": True, "transmitted": 2, "received": 0, "rtt_avg_ms": None, "ok": False},
             "cause": "no reply to a 9000-byte ping with don't-fragment (ping -M do -s 8972)"}


def build(tables, netdevs=None, ibdev=IBDEV, pings=None, specs=None, node="spark-a", tools=None):
    """A node report the way the module builds it."""
    netdevs = netdevs or {}
    ipv4 = {"enp1s0f1np1": ["192.168.200.12/24"], "enP2p1s0f1np1": ["192.168.200.14/24"]}
    interfaces = [fabric.interface_report(name, netdevs.get(name, netdev() if name in ipv4 else netdev(1500, "down", None)),
                                          ipv4.get(name, []), ibdev, tables)
                  for name in ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")]
    by_name = {i["iface"]: i for i in interfaces}
    specs = [dict(s, expected_by=s.get("expected_by", "plan")) for s in (specs or [LINK_A, LINK_B])]
    links = [fabric.link_report(s, by_name[s["iface"]], (pings or {}).get(s["iface"], PING_OK)) for s in specs]
    return fabric.node_report(node, interfaces, links, tools or {"ib_write_bw": None}, tables)


def test_healthy_node(sysfs):
    report = build(fabric.read_gid_tables(str(sysfs)))
    assert report["ok"] is True and report["faults"] == [] and report["warnings"] == []
    by_name = {i["iface"]: i for i in report["interfaces"]}
    assert by_name["enp1s0f1np1"]["gid_index"] == 3 and by_name["enP2p1s0f1np1"]["gid_index"] == 5
    assert by_name["enp1s0f1np1"]["hca"] == "rocep1s0f1" and by_name["enp1s0f1np1"]["up"] is True
    assert by_name["enp1s0f0np0"]["up"] is False  # no cable: reported, not a fault
    # Different GID indexes on the two HCAs: only a note.
    assert report["notes"] == ["spark-a: the RoCE v2 GID index differs between HCAs (roceP2p1s0f1 5, rocep1s0f1 3); "
                               "this is normal, each HCA has its own table"]
    assert report["rdma"]["gid_indexes"] == {"rocep1s0f1": 3, "roceP2p1s0f1": 5}
    assert [link["ok"] for link in report["links"]] == [True, True]


def test_no_rdma_in_sysfs_is_not_a_fault():
    report = build(None)
    assert report["ok"] is True
    assert report["rdma"] == {"sysfs": False, "note": "no RDMA devices (sysfs)", "hcas": {}, "gid_indexes": {}}
    interface = [i for i in report["interfaces"] if i["iface"] == "enp1s0f1np1"][0]
    assert interface["gid_index"] is None and interface["rdma_note"] == "no RDMA devices (sysfs)"
    assert interface["hca"] == "rocep1s0f1"  # ibdev2netdev still names it
    assert report["notes"][0].startswith("spark-a: no RDMA devices (sysfs)")


def test_down_link_is_a_fault_naming_the_peer(sysfs):
    down = netdev(operstate="lowerlayerdown")
    report = build(fabric.read_gid_tables(str(sysfs)), netdevs={"enP2p1s0f1np1": down},
                   ibdev=IBDEV.replace("enP2p1s0f1np1 (Up)", "enP2p1s0f1np1 (Down)"), pings={"enP2p1s0f1np1": PING_FAIL})
    assert report["ok"] is False
    assert report["faults"] == [{
        "node": "spark-a", "iface": "enP2p1s0f1np1", "peer": "spark-b", "peer_address": "192.168.200.15",
        "check": "state",
        "message": "spark-a enP2p1s0f1np1 -> spark-b (192.168.200.15): Down (operstate lowerlayerdown, ibdev2netdev "
                   "Down); the plan expects it Up"}]  # the failed ping is not a second fault
    assert [link["ok"] for link in report["links"]] == [True, False]


def test_ibdev2netdev_down_alone_is_down(sysfs):
    report = build(fabric.read_gid_tables(str(sysfs)), ibdev=IBDEV.replace("enp1s0f1np1 (Up)", "enp1s0f1np1 (Down)"))
    assert [f["check"] for f in report["faults"]] == ["state"]
    assert "operstate up, ibdev2netdev Down" in report["faults"][0]["message"]


def test_missing_netdev(sysfs):
    report = build(fabric.read_gid_tables(str(sysfs)), netdevs={"enp1s0f1np1": netdev(exists=False)})
    assert report["faults"][0]["message"] == ("spark-a enp1s0f1np1 -> spark-b (192.168.200.13): the netdev does not "
                                              "exist; the plan expects it Up")


def test_link_implied_by_addresses_says_why():
    spec = dict(LINK_B, expected_by="addresses")
    report = build(None, netdevs={"enP2p1s0f1np1": netdev(operstate="down")}, specs=[LINK_A, spec])
    assert report["faults"][0]["message"] == (
        "spark-a enP2p1s0f1np1 -> spark-b (192.168.200.15): Down (operstate down, ibdev2netdev Up); expected Up: "
        "spark-a has 192.168.200.14 on it and spark-b has 192.168.200.15 in that subnet")


def test_mtu_below_is_a_fault_above_a_warning(sysfs):
    tables = fabric.read_gid_tables(str(sysfs))
    report = build(tables, netdevs={"enp1s0f1np1": netdev(mtu=1500), "enP2p1s0f1np1": netdev(mtu=9216)})
    assert [(f["check"], f["iface"]) for f in report["faults"]] == [("mtu", "enp1s0f1np1")]
    assert report["faults"][0]["message"] == "spark-a enp1s0f1np1 -> spark-b (192.168.200.13): MTU 1500 is below the planned 9000"
    assert [(w["check"], w["iface"]) for w in report["warnings"]] == [("mtu", "enP2p1s0f1np1")]


def test_unplanned_mtu_is_not_judged(sysfs):
    specs = [dict(LINK_A, mtu=None)]
    report = build(fabric.read_gid_tables(str(sysfs)), netdevs={"enp1s0f1np1": netdev(mtu=1500)}, specs=specs)
    assert report["faults"] == [] and report["warnings"] == []


def test_speed_warning_only_when_known(sysfs):
    tables = fabric.read_gid_tables(str(sysfs))
    report = build(tables, netdevs={"enp1s0f1np1": netdev(speed=100000), "enP2p1s0f1np1": netdev(speed=None)})
    assert report["ok"] is True and report["faults"] == []
    assert [w["message"] for w in report["warnings"]] == [
        "spark-a enp1s0f1np1 -> spark-b (192.168.200.13): speed 100000 Mb/s is below 200000 Mb/s"]


def test_ping_failure_is_a_fault(sysfs):
    report = build(fabric.read_gid_tables(str(sysfs)), pings={"enp1s0f1np1": PING_FAIL})
    assert [(f["check"], f["peer"], f["peer_address"]) for f in report["faults"]] == [("ping", "spark-b", "192.168.200.13")]
    assert report["faults"][0]["message"].endswith("no reply to a 9000-byte ping with don't-fragment (ping -M do -s 8972)")
    assert report["links"][0]["ping_cause"] and report["links"][1]["ping_cause"] == ""


def test_planned_address_missing(sysfs):
    report = build(fabric.read_gid_tables(str(sysfs)), specs=[dict(LINK_A, address="192.168.200.99")])
    assert [f["check"] for f in report["faults"]] == ["address"]
    assert "the planned address 192.168.200.99 is not on enp1s0f1np1 (it has 192.168.200.12/24)" in report["faults"][0]["message"]


def test_no_roce_v2_gid_is_a_fault(tmp_path):
    # Only v1 entries for the address on the first HCA; the second HCA is fine.
    write_hca(tmp_path, "rocep1s0f1", "enp1s0f1np1", {0: (v4_gid("192.168.200.12"), "IB/RoCE v1", "enp1s0f1np1")})
    write_hca(tmp_path, "roceP2p1s0f1", "enP2p1s0f1np1", spark_gids("enP2p1s0f1np1", "192.168.200.14"))
    report = build(fabric.read_gid_tables(str(tmp_path)))
    assert report["faults"] == [{
        "node": "spark-a", "iface": "enp1s0f1np1", "peer": "spark-b", "peer_address": "192.168.200.13", "check": "gid",
        "message": "spark-a enp1s0f1np1 -> spark-b (192.168.200.13): rocep1s0f1 has no RoCE v2 GID for 192.168.200.12 "
                   "(NCCL over RoCE needs one)"}]
    assert report["links"][0]["ok"] is False and report["links"][1]["ok"] is True


def test_hca_missing_from_sysfs_is_a_warning(tmp_path):
    write_hca(tmp_path, "rocep1s0f1", "enp1s0f1np1", spark_gids("enp1s0f1np1", "192.168.200.12"))
    report = build(fabric.read_gid_tables(str(tmp_path)))
    assert report["faults"] == []
    assert [(w["check"], w["iface"]) for w in report["warnings"]] == [("hca", "enp1s0f0np0"), ("hca", "enP2p1s0f0np0"),
                                                                      ("hca", "enP2p1s0f1np1")]


# -- bandwidth -------------------------------------------------------------------------------------------------------


IB_WRITE_BW_OUT = """\
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF          Device         : rocep1s0f1
 Number of qps   : 1            Transport type : IB
 Connection type : RC           Using SRQ      : OFF
 Mtu             : 4096[B]
 Link type       : Ethernet
 GID index       : 3
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      1722832          0.00               90.31                0.172254
---------------------------------------------------------------------------------------
"""


def test_parse_ib_write_bw():
    assert fabric.parse_ib_write_bw(IB_WRITE_BW_OUT) == 90.31
    assert fabric.parse_ib_write_bw(IB_WRITE_BW_OUT.replace("[Gb/sec]", "[MB/sec]").replace("90.31", "11288.75")) == 90.31
    assert fabric.parse_ib_write_bw("Couldn't connect to 192.168.200.13:18515\n") is None
    assert fabric.parse_ib_write_bw("") is None


def test_ib_write_bw_argv():
    assert fabric.ib_write_bw_argv("/usr/bin/ib_write_bw", "rocep1s0f1", 3, 18515) == [
        "timeout", "--kill-after=5", "60", "/usr/bin/ib_write_bw", "-d", "rocep1s0f1", "-i", "1", "-x", "3",
        "-p", "18515", "-D", "5", "-F", "--report_gbits"]
    assert fabric.ib_write_bw_argv("ib_write_bw", "r", 5, 18516, 3, 30, server="192.168.200.13")[-1] == "192.168.200.13"


def pair_of_nodes(tmp_path, tool_a="/usr/bin/ib_write_bw", tool_b="/usr/bin/ib_write_bw", rdma_b=True):
    root_a = tmp_path / "a"
    write_hca(root_a, "rocep1s0f1", "enp1s0f1np1", spark_gids("enp1s0f1np1", "192.168.200.12", 3))
    write_hca(root_a, "roceP2p1s0f1", "enP2p1s0f1np1", spark_gids("enP2p1s0f1np1", "192.168.200.14", 3))
    tables_b = None
    if rdma_b:
        root_b = tmp_path / "b"
        write_hca(root_b, "rocep1s0f1", "enp1s0f1np1", spark_gids("enp1s0f1np1", "192.168.200.13", 3))
        write_hca(root_b, "roceP2p1s0f1", "enP2p1s0f1np1", spark_gids("enP2p1s0f1np1", "192.168.200.15", 7))
        tables_b = fabric.read_gid_tables(str(root_b))
    a = build(fabric.read_gid_tables(str(root_a)), tools={"ib_write_bw": tool_a})
    b = build_b(tables_b, tool_b)
    return {"spark-a": a, "spark-b": b}


def build_b(tables, tool):
    ipv4 = {"enp1s0f1np1": ["192.168.200.13/24"], "enP2p1s0f1np1": ["192.168.200.15/24"]}
    interfaces = [fabric.interface_report(name, netdev(), ipv4[name], IBDEV, tables) for name in ipv4]
    by_name = {i["iface"]: i for i in interfaces}
    specs = [{"iface": "enp1s0f1np1", "address": "192.168.200.13", "peer": "spark-a", "peer_address": "192.168.200.12",
              "mtu": 9000, "expected_by": "plan"},
             {"iface": "enP2p1s0f1np1", "address": "192.168.200.15", "peer": "spark-a", "peer_address": "192.168.200.14",
              "mtu": 9000, "expected_by": "plan"}]
    links = [fabric.link_report(s, by_name[s["iface"]], PING_OK) for s in specs]
    return fabric.node_report("spark-b", interfaces, links, {"ib_write_bw": tool}, tables)


def test_bandwidth_pairs_once_per_link(tmp_path):
    reports = pair_of_nodes(tmp_path)
    pairs, reasons = fabric.bandwidth_pairs(["spark-a", "spark-b"], reports)
    assert reasons == {}
    assert [(p["id"], p["client"], p["client_iface"], p["server"], p["server_address"]) for p in pairs] == [
        (0, "spark-a", "enp1s0f1np1", "spark-b", "192.168.200.13"),
        (1, "spark-a", "enP2p1s0f1np1", "spark-b", "192.168.200.15")]
    assert pairs[1]["server_argv"] == ["timeout", "--kill-after=5", "60", "/usr/bin/ib_write_bw", "-d", "roceP2p1s0f1",
                                       "-i", "1", "-x", "7", "-p", "18516", "-D", "5", "-F", "--report_gbits"]
    assert pairs[1]["client_argv"][-3:] == ["-F", "--report_gbits", "192.168.200.15"]
    assert pairs[1]["client_argv"][pairs[1]["client_argv"].index("-x") + 1] == "3"


@pytest.mark.parametrize("kwargs, reason", [
    ({"tool_b": None}, "ib_write_bw not installed on spark-b"),
    ({"tool_a": None, "tool_b": None}, "ib_write_bw not installed on spark-a, spark-b"),
    ({"rdma_b": False}, "no RDMA device (sysfs) on spark-b"),
])
def test_bandwidth_skipped_with_reason(tmp_path, kwargs, reason):
    reports = pair_of_nodes(tmp_path, **kwargs)
    pairs, reasons = fabric.bandwidth_pairs(["spark-a", "spark-b"], reports)
    assert pairs == []
    assert set(reasons.values()) == {reason} and len(reasons) == 4  # both ends of both links
    doc = fabric.fabric_report(["spark-a", "spark-b"], reports, PLANS, bandwidth=True)
    entry = doc["nodes"]["spark-b"]["links"][0]
    assert entry["bandwidth"] is None and entry["bandwidth_reason"] == reason
    assert doc["ok"] is True  # nothing to measure is not a fault


PLANS = {"spark-a": {"cluster": "pair1", "nodes": ["spark-a", "spark-b"]},
         "spark-b": {"cluster": "pair1", "nodes": ["spark-a", "spark-b"]}}


def test_bandwidth_not_requested_and_measured(tmp_path):
    reports = pair_of_nodes(tmp_path)
    doc = fabric.fabric_report(["spark-a", "spark-b"], reports, PLANS, bandwidth=False)
    assert {e["bandwidth_reason"] for n in doc["nodes"].values() for e in n["links"]} == {
        "not measured (fabric_check_bandwidth is false)"}
    results = {0: {"rc": 0, "stdout": IB_WRITE_BW_OUT, "stderr": ""},
               1: {"rc": 1, "stdout": "", "stderr": " Couldn't connect to 192.168.200.15:18516\n"}}
    doc = fabric.fabric_report(["spark-a", "spark-b"], reports, PLANS, bandwidth=True, measurements=results)
    a_links, b_links = doc["nodes"]["spark-a"]["links"], doc["nodes"]["spark-b"]["links"]
    assert a_links[0]["bandwidth"] == b_links[0]["bandwidth"] == 90.31  # one measurement, both ends show it
    assert a_links[1]["bandwidth"] is None
    assert a_links[1]["bandwidth_reason"] == "ib_write_bw failed (rc=1): Couldn't connect to 192.168.200.15:18516"
    assert b_links[1]["bandwidth_reason"] == a_links[1]["bandwidth_reason"]
    # One fault per failed measurement, on the end that ran it.
    assert [(f["node"], f["check"], f["iface"]) for f in doc["faults"]] == [("spark-a", "bandwidth", "enP2p1s0f1np1")]


# -- the whole fabric ------------------------------------------------------------------------------------------------


def test_fabric_report_keys_and_json(tmp_path):
    reports = pair_of_nodes(tmp_path)
    doc = fabric.fabric_report(["spark-a", "spark-b"], reports, PLANS, generated="2026-03-01T12:00:00+00:00")
    assert sorted(doc) == ["bandwidth", "clusters", "faults", "format", "generated", "nodes", "notes", "ok", "warnings"]
    assert doc["ok"] is True and doc["format"] == 1 and doc["generated"] == "2026-03-01T12:00:00+00:00"
    assert doc["clusters"] == {"pair1": {"nodes": ["spark-a", "spark-b"], "plan": "ok", "errors": []}}
    assert list(doc["nodes"]) == ["spark-a", "spark-b"] and doc["nodes"]["spark-a"]["cluster"] == "pair1"
    assert json.loads(json.dumps(doc)) == doc
    # The nodes' own reports are not changed by joining them.
    before = copy.deepcopy(reports)
    fabric.fabric_report(["spark-a", "spark-b"], reports, PLANS, bandwidth=True, measurements={})
    assert reports == before


def test_fabric_report_failed_plan_missing_node_single():
    reports = {"spark-a": build(None)}
    plans = {"spark-a": {"cluster": "pair1", "nodes": ["spark-a", "spark-b"], "error": "x",
                         "errors": ["spark-b of cluster pair1 is not in this run"]},
             "spark-b": {"cluster": "pair1", "nodes": ["spark-a", "spark-b"], "error": "x",
                         "errors": ["spark-b of cluster pair1 is not in this run"]},
             "single1": {"cluster": "single1", "nodes": ["single1"], "error": "y",
                         "errors": ["cluster single1: the QSFP link joins two or more Sparks, found single1"]}}
    reports["single1"] = build(None, specs=[], node="single1")
    doc = fabric.fabric_report(["spark-a", "spark-b", "single1"], reports, plans,
                               failures={"spark-b": "spark-b did not answer: ssh: connect to host timed out"})
    assert doc["ok"] is False
    assert doc["clusters"]["pair1"]["plan"] == "failed" and doc["clusters"]["single1"]["plan"] == "single"
    assert [(f["check"], f["node"], f["cluster"]) for f in doc["faults"]] == [
        ("plan", "spark-a, spark-b", "pair1"), ("node", "spark-b", "pair1")]
    assert doc["faults"][0]["message"] == ("cluster pair1 (spark-a, spark-b): the plan of its QSFP links failed: "
                                           "spark-b of cluster pair1 is not in this run")
    assert doc["faults"][1]["message"] == ("spark-b: not checked: spark-b did not answer: ssh: connect to host timed out")
    assert doc["nodes"]["spark-b"]["error"].startswith("spark-b did not answer")
    assert "cluster single1: a single Spark (single1), no QSFP link to a peer is planned" in doc["notes"]


def test_table_and_summary(sysfs):
    down = netdev(operstate="down")
    reports = {"spark-a": build(fabric.read_gid_tables(str(sysfs)), netdevs={"enP2p1s0f1np1": down},
                                pings={"enP2p1s0f1np1": PING_FAIL}),
               "spark-b": None}
    doc = fabric.fabric_report(["spark-a", "spark-b"], reports, PLANS, failures={"spark-b": "unreachable"})
    table = fabric.render_table(doc)
    assert table[0].split() == ["NODE", "NETDEV", "HCA", "STATE", "SPEED", "MTU", "IPV4", "GID", "PEER", "PING",
                                "BANDWIDTH"]
    assert len(table) == 1 + 4 + 1  # four netdevs (two without a link), and the node that was not checked
    # Columns line up: every row has its netdev where the header has NETDEV.
    column = table[0].index("NETDEV")
    netdevs = ["enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1"]
    assert [row[column:].split()[0] for row in table[1:5]] == netdevs
    row = table[3]
    assert row.split()[:10] == ["spark-a", "enp1s0f1np1", "rocep1s0f1", "up/Up", "200000", "9000",
                                "192.168.200.12/24", "3", "spark-b", "192.168.200.13"]
    assert "ok 2/2 9000B 0.05ms" in row and "- (ib_write_bw not installed on spark-a; no report on spark-b)" in row
    assert "down/Up" in table[4] and "FAIL 0/2 9000B" in table[4] and " 5 " in table[4]
    assert table[1].split()[:8] == ["spark-a", "enp1s0f0np0", "rocep1s0f0", "down/Down", "?", "1500", "-", "-"]
    assert table[5].split()[:4] == ["spark-b", "-", "-", "not", ] and "not checked" in table[5]
    summary = fabric.render_summary(doc)
    assert summary[0] == "fabric FAULTY: 2 node(s) in 1 cluster(s), 2 link(s) checked, 2 fault(s), 0 warning(s)"
    assert summary[1] == ("FAULT spark-a enP2p1s0f1np1 -> spark-b (192.168.200.15): Down (operstate down, ibdev2netdev "
                          "Up); the plan expects it Up")
    assert summary[2] == "FAULT spark-b: not checked: unreachable"
