# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run the spark_link module's main() against a fake node: /sys/class/net in a scratch directory and a ping
that answers like iputils over a QSFP cable whose two ends have given MTUs."""

from __future__ import annotations

import json
import os
import sys
import types

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgx_spark.specdec.plugins.modules import spark_link

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
from fake_host import FakeHost  # noqa: E402  pylint: disable=wrong-import-position

PING = "/usr/bin/ping"

LINK_A = {"iface": "enp1s0f1np1", "address": "192.168.200.12", "peer": "spark-b", "peer_address": "192.168.200.13",
          "mtu": 9000}
LINK_B = {"iface": "enP2p1s0f1np1", "address": "192.168.200.14", "peer": "spark-b", "peer_address": "192.168.200.15",
          "mtu": 9000}


class FakeNode(FakeHost):
    """A DGX Spark: netdevs in a scratch /sys/class/net and a ping that crosses a cable to each peer.

    ``cables`` maps a netdev to {peer_address, peer_mtu, up, route_mtu}: ``route_mtu`` (default: the netdev's
    MTU) is what this end can send; ``peer_mtu`` what the other end receives; ``up`` whether anything crosses."""

    def __init__(self, sys_net):
        self.sys_net = sys_net
        self.bins = {"ping": PING}
        self.cables = {}
        self.calls = []

    def netdev(self, name, mtu=9000, operstate="up", speed="200000", peer_address=None, peer_mtu=9000, up=True,
               route_mtu=None):
        path = self.sys_net / name
        path.mkdir()
        for key, value in (("mtu", mtu), ("operstate", operstate), ("speed", speed)):
            if value is not None:
                (path / key).write_text("%s\n" % value)
        if peer_address:
            self.cables[name] = {"peer_address": peer_address, "peer_mtu": peer_mtu, "up": up,
                                 "route_mtu": route_mtu or mtu}

    def answer(self, args):
        assert args[0] == PING, args
        return self.ping(args[1:])

    def ping(self, argv):
        opts = {}
        rest = list(argv)
        while rest and rest[0].startswith("-"):
            flag = rest.pop(0)
            opts[flag] = rest.pop(0) if flag != "-n" else True
        assert len(rest) == 1 and "-n" in opts, argv
        dest, iface, count = rest[0], opts["-I"], int(opts["-c"])
        size = int(opts.get("-s", 56))
        df = opts.get("-M") == "do"
        header = "PING %s (%s) from 192.168.200.12 %s: %d(%d) bytes of data.\n" % (dest, dest, iface, size, size + 28)
        cable = self.cables.get(iface)
        if cable is None:
            return 2, "", "ping: SO_BINDTODEVICE %s: No such device\n" % iface
        if df and size + 28 > cable["route_mtu"]:
            err = "ping: local error: message too long, mtu=%d\n" % cable["route_mtu"] * count
            return 1, header + ("\n--- %s ping statistics ---\n%d packets transmitted, 0 received, +%d errors, "
                                "100%% packet loss, time 1002ms\n\n" % (dest, count, count)), err
        if not cable["up"] or dest != cable["peer_address"] or (size + 28 > cable["peer_mtu"]):
            return 1, header + ("\n--- %s ping statistics ---\n%d packets transmitted, 0 received, 100%% packet loss, "
                                "time 1021ms\n\n" % (dest, count)), ""
        replies = "".join("%d bytes from %s: icmp_seq=%d ttl=64 time=0.05 ms\n" % (size + 8, dest, seq + 1)
                          for seq in range(count))
        return 0, header + replies + ("\n--- %s ping statistics ---\n%d packets transmitted, %d received, 0%% packet "
                                      "loss, time 1001ms\nrtt min/avg/max/mdev = 0.049/0.050/0.051/0.001 ms\n"
                                      % (dest, count, count)), ""

    def commands(self):
        return [[os.path.basename(args[0])] + args[1:] for args in self.calls]


@pytest.fixture
def node(monkeypatch, tmp_path):
    sys_net = tmp_path / "sys" / "class" / "net"
    sys_net.mkdir(parents=True)
    fake = FakeNode(sys_net)

    fake.install(monkeypatch)
    monkeypatch.setattr(spark_link, "SYS_CLASS_NET", str(sys_net))
    monkeypatch.setattr(spark_link, "socket", types.SimpleNamespace(gethostname=lambda: "spark-a"))
    return fake


def two_links(node, **changes_b):
    node.netdev("enp1s0f1np1", peer_address="192.168.200.13")
    args = dict(dict(mtu=9000, operstate="up", speed="200000", peer_address="192.168.200.15"), **changes_b)
    node.netdev("enP2p1s0f1np1", **args)


def run_module(capsys, args):
    """Run main() like Ansible does; return (rc, parsed JSON result)."""
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            spark_link.main()
    out = capsys.readouterr().out
    return info.value.code, json.loads(out)


def passes(capsys, args):
    rc, result = run_module(capsys, args)
    assert rc == 0, result
    assert result["changed"] is False and not result.get("failed")
    return result


def fails(capsys, args, own=True):
    """The module failed; ``own`` failures (not AnsibleModule's argument checks) say changed=false."""
    rc, result = run_module(capsys, args)
    assert rc == 1 and result["failed"] is True, result
    assert (result["changed"] is False) if own else (result.get("changed", False) is False)
    return result


def ok_link(spec, speed=200000):
    return dict(spec, operstate="up", mtu=9000, planned_mtu=9000, speed_mbps=speed,
                ping={"size": 8972, "df": True, "transmitted": 2, "received": 2, "rtt_avg_ms": 0.05, "ok": True},
                ok=True, cause="")


# -- all well -------------------------------------------------------------------------------------------------------


def test_all_links_ok(capsys, node):
    two_links(node)
    result = passes(capsys, {"links": [LINK_A, LINK_B]})
    assert result["links"] == [ok_link(LINK_A), ok_link(LINK_B)]
    assert result["summary"] == [
        "enp1s0f1np1 -> spark-b 192.168.200.13: MTU 9000, 200000 Mb/s, DF ping 8972 bytes 2/2 (0.05 ms)",
        "enP2p1s0f1np1 -> spark-b 192.168.200.15: MTU 9000, 200000 Mb/s, DF ping 8972 bytes 2/2 (0.05 ms)",
    ]
    assert node.commands() == [
        ["ping", "-n", "-M", "do", "-s", "8972", "-c", "2", "-i", "0.2", "-W", "2", "-I", "enp1s0f1np1", "192.168.200.13"],
        ["ping", "-n", "-M", "do", "-s", "8972", "-c", "2", "-i", "0.2", "-W", "2", "-I", "enP2p1s0f1np1", "192.168.200.15"],
    ]


def test_count_timeout_and_unplanned_mtu(capsys, node):
    node.netdev("enp1s0f0np0", mtu=1500, peer_address="192.168.100.11", peer_mtu=1500)
    result = passes(capsys, {"links": [{"iface": "enp1s0f0np0", "peer": "spark-b", "peer_address": "192.168.100.11"}],
                             "count": 3, "timeout": 1})
    assert result["links"][0]["planned_mtu"] is None and result["links"][0]["mtu"] == 1500
    assert result["links"][0]["address"] == "" and result["links"][0]["ping"]["size"] == 1472
    assert node.commands() == [["ping", "-n", "-M", "do", "-s", "1472", "-c", "3", "-i", "0.2", "-W", "1", "-I", "enp1s0f0np0",
                                "192.168.100.11"]]


def test_speed_not_shown(capsys, node):
    two_links(node, speed="-1")
    (node.sys_net / "enp1s0f1np1" / "speed").unlink()
    result = passes(capsys, {"links": [LINK_A, LINK_B]})
    assert [item["speed_mbps"] for item in result["links"]] == [None, None]
    assert result["summary"][0] == ("enp1s0f1np1 -> spark-b 192.168.200.13: MTU 9000, speed not shown, "
                                    "DF ping 8972 bytes 2/2 (0.05 ms)")


def test_empty_speed_file(capsys, node):
    node.netdev("enp1s0f1np1", speed="", peer_address="192.168.200.13")
    assert passes(capsys, {"links": [LINK_A]})["links"][0]["speed_mbps"] is None


def test_empty_links(capsys, node):
    result = passes(capsys, {"links": []})
    assert result["links"] == [] and result["summary"] == []
    assert node.calls == []


def test_ping_is_not_needed_without_links(capsys, node):
    del node.bins["ping"]
    assert passes(capsys, {"links": []})["links"] == []


def test_check_mode_gives_the_same(capsys, node):
    two_links(node, peer_mtu=1500)
    normal = fails(capsys, {"links": [LINK_A, LINK_B], "node": "spark-a"})
    calls = node.commands()
    node.calls = []
    checked = fails(capsys, {"links": [LINK_A, LINK_B], "node": "spark-a", "_ansible_check_mode": True})
    assert checked["links"] == normal["links"] and checked["msg"] == normal["msg"]
    assert checked["summary"] == normal["summary"]
    assert node.commands() == calls and len(calls) == 3
    node.calls = []
    node.cables["enP2p1s0f1np1"]["peer_mtu"] = 9000
    assert passes(capsys, {"links": [LINK_A, LINK_B], "_ansible_check_mode": True})["links"] == [ok_link(LINK_A),
                                                                                                 ok_link(LINK_B)]


# -- failures -------------------------------------------------------------------------------------------------------


def test_mtu_differs(capsys, node):
    two_links(node, mtu=1500)
    result = fails(capsys, {"links": [LINK_A, LINK_B]})
    assert result["msg"] == (
        "QSFP link check failed on spark-a: QSFP link enP2p1s0f1np1 of spark-a (192.168.200.14) to spark-b "
        "(192.168.200.15): MTU is 1500 on spark-a, planned 9000; this end cannot send 9000-byte packets unfragmented "
        "(ping -M do -s 8972: the route's MTU is 1500) [ping: ping: local error: message too long, mtu=1500 / "
        "2 packets transmitted, 0 received, +2 errors, 100% packet loss, time 1002ms]")
    first, second = result["links"]
    assert first == ok_link(LINK_A)
    assert second["ok"] is False and second["mtu"] == 1500 and second["planned_mtu"] == 9000
    assert second["ping"] == {"size": 8972, "df": True, "transmitted": 2, "received": 0, "rtt_avg_ms": None,
                              "ok": False}
    assert result["summary"][1] == ("enP2p1s0f1np1 -> spark-b 192.168.200.15: MTU 1500 (planned 9000), 200000 Mb/s, "
                                    "DF ping 8972 bytes 0/2")
    assert len(node.calls) == 2  # no small ping after "message too long"


def test_message_too_long_with_right_mtu(capsys, node):
    # The netdev has MTU 9000 but a route to the peer is locked at 1500.
    node.netdev("enp1s0f1np1", peer_address="192.168.200.13", route_mtu=1500)
    result = fails(capsys, {"links": [LINK_A], "node": "spark-a"})
    assert result["msg"].startswith(
        "QSFP link check failed on spark-a: QSFP link enp1s0f1np1 of spark-a (192.168.200.12) to spark-b "
        "(192.168.200.13): this end cannot send 9000-byte packets unfragmented (ping -M do -s 8972: the route's MTU "
        "is 1500) [ping: ping: local error: message too long, mtu=1500")
    assert "planned" not in result["links"][0]["cause"]


def test_peer_mtu_lower_small_ping_crosses(capsys, node):
    node.netdev("enp1s0f1np1", peer_address="192.168.200.13", peer_mtu=1500)
    result = fails(capsys, {"links": [LINK_A]})
    assert result["msg"] == (
        "QSFP link check failed on spark-a: QSFP link enp1s0f1np1 of spark-a (192.168.200.12) to spark-b "
        "(192.168.200.13): no reply to a 9000-byte ping with don't-fragment (ping -M do -s 8972): the MTU of spark-b's "
        "end is probably lower than 9000, or the link is down (a normal ping: small packets cross, so the other end's "
        "MTU is lower than 9000) [ping: 2 packets transmitted, 0 received, 100% packet loss, time 1021ms]")
    assert node.commands()[1] == ["ping", "-n", "-c", "1", "-i", "0.2", "-W", "2", "-I", "enp1s0f1np1", "192.168.200.13"]
    assert result["links"][0]["ping"]["received"] == 0 and result["links"][0]["operstate"] == "up"


def test_nothing_crosses_operstate_down(capsys, node):
    node.netdev("enp1s0f1np1", operstate="down", speed="-1", peer_address="192.168.200.13", up=False)
    result = fails(capsys, {"links": [dict(LINK_A, address=None)], "timeout": 3})
    assert result["msg"] == (
        "QSFP link check failed on spark-a: QSFP link enp1s0f1np1 of spark-a to spark-b (192.168.200.13): no reply to "
        "a 9000-byte ping with don't-fragment (ping -M do -s 8972): the MTU of spark-b's end is probably lower than "
        "9000, or the link is down (a normal ping: no packet crosses: the link or the peer's address is down) "
        "[ping: 2 packets transmitted, 0 received, 100% packet loss, time 1021ms]; enp1s0f1np1 is down (operstate), "
        "not up")
    entry = result["links"][0]
    assert (entry["operstate"], entry["speed_mbps"], entry["address"]) == ("down", None, "")
    assert result["summary"] == ["enp1s0f1np1 -> spark-b 192.168.200.13: MTU 9000, speed not shown, operstate down, "
                                 "DF ping 8972 bytes 0/2"]
    assert node.commands()[1] == ["ping", "-n", "-c", "1", "-i", "0.2", "-W", "3", "-I", "enp1s0f1np1", "192.168.200.13"]


def test_wrong_peer_address_nothing_crosses(capsys, node):
    node.netdev("enp1s0f1np1", peer_address="192.168.200.13")
    result = fails(capsys, {"links": [dict(LINK_A, peer_address="192.168.200.99")]})
    assert "no packet crosses: the link or the peer's address is down" in result["msg"]


def test_missing_netdev_and_one_message_per_failed_link(capsys, node):
    node.netdev("enp1s0f1np1", peer_address="192.168.200.13", peer_mtu=1500)
    result = fails(capsys, {"links": [LINK_A, LINK_B]})
    messages = result["msg"][len("QSFP link check failed on spark-a: "):]
    assert result["msg"].startswith("QSFP link check failed on spark-a: QSFP link enp1s0f1np1 of spark-a")
    assert messages.count("QSFP link ") == 2
    assert messages.endswith(
        "; QSFP link enP2p1s0f1np1 of spark-a (192.168.200.14) to spark-b (192.168.200.15): enP2p1s0f1np1 does not "
        "exist on spark-a (no %s/enP2p1s0f1np1): is the netplan file applied and the netdev named right?"
        % node.sys_net)
    missing = result["links"][1]
    assert missing["operstate"] is None and missing["mtu"] is None and missing["speed_mbps"] is None
    assert missing["ping"]["size"] is None and missing["ok"] is False
    assert result["summary"][1] == "enP2p1s0f1np1 -> spark-b 192.168.200.15: no such netdev"
    assert [c[-2] for c in node.commands()] == ["enp1s0f1np1", "enp1s0f1np1"]  # the missing one is not pinged


def test_ping_missing_fails(capsys, node):
    two_links(node)
    del node.bins["ping"]
    assert '"ping"' in fails(capsys, {"links": [LINK_A]}, own=False)["msg"]


# -- options --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args,expected", [
    ({"links": [dict(LINK_A, peer_address="192.168.200.300")]},
     "links[0].peer_address: '192.168.200.300' is not an IPv4 address; accepted: an IPv4 address A.B.C.D"),
    ({"links": [dict(LINK_A, peer_address="spark-b")]}, "links[0].peer_address: 'spark-b' is not an IPv4 address"),
    ({"links": [LINK_A, dict(LINK_B, iface="../../etc")]},
     "links[1].iface: '../../etc' is not a netdev name; accepted: a netdev name of 1 to 15"),
    ({"links": [dict(LINK_A, mtu=9600)]},
     "links[0].mtu: 9600 is out of range; accepted: a whole number from 576 to 9216"),
    ({"links": [dict(LINK_A, mtu=500)]}, "links[0].mtu: 500 is out of range"),
    ({"links": [LINK_A], "count": 0}, "count: 0; accepted: a whole number of pings per link, 1 or more"),
    ({"links": [LINK_A], "timeout": 0}, "timeout: 0; accepted: a whole number of seconds"),
    ({"links": [LINK_A, LINK_A]}, "links[1]: enp1s0f1np1 to %s is already checked by links[0]" % LINK_A["peer_address"]),
])
def test_bad_options_fail_naming_field_value_and_accepted(capsys, node, args, expected):
    two_links(node)
    result = fails(capsys, args)
    assert result["msg"].startswith(expected), result["msg"]
    assert node.calls == []


@pytest.mark.parametrize("args,expected", [
    ({}, "missing required arguments: links"),
    ({"links": [{"iface": "enp1s0f1np1", "peer": "spark-b"}]}, "missing required arguments: peer_address"),
    ({"links": [dict(LINK_A, mtu="jumbo")]}, "mtu"),
    ({"links": [dict(LINK_A, speed=1)]}, "speed"),
])
def test_argument_spec_rejects(capsys, node, args, expected):
    result = fails(capsys, args, own=False)
    assert expected in result["msg"]
    assert node.calls == []
