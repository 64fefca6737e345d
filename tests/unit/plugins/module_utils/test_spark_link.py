# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Unit tests for plugins/module_utils/_spark_link.py (pure: no Ansible, ping answered by a fake runner)."""

from __future__ import annotations

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _spark_link as link

PING = "/usr/bin/ping"

# iputils ping (DGX OS / Ubuntu), LC_ALL=C.
PING_OK = """\
PING 192.168.200.13 (192.168.200.13) from 192.168.200.12 enp1s0f1np1: 8972(9000) bytes of data.
8980 bytes from 192.168.200.13: icmp_seq=1 ttl=64 time=0.051 ms
8980 bytes from 192.168.200.13: icmp_seq=2 ttl=64 time=0.049 ms

--- 192.168.200.13 ping statistics ---
2 packets transmitted, 2 received, 0% packet loss, time 1001ms
rtt min/avg/max/mdev = 0.049/0.050/0.051/0.001 ms
"""

PING_HALF = """\
PING 192.168.200.13 (192.168.200.13) from 192.168.200.12 enp1s0f1np1: 8972(9000) bytes of data.
8980 bytes from 192.168.200.13: icmp_seq=2 ttl=64 time=1.25 ms

--- 192.168.200.13 ping statistics ---
2 packets transmitted, 1 received, 50% packet loss, time 1012ms
rtt min/avg/max/mdev = 1.250/1.250/1.250/0.000 ms
"""

PING_NO_REPLY = """\
PING 192.168.200.13 (192.168.200.13) from 192.168.200.12 enp1s0f1np1: 8972(9000) bytes of data.

--- 192.168.200.13 ping statistics ---
2 packets transmitted, 0 received, 100% packet loss, time 1021ms

"""

PING_UNREACHABLE = """\
PING 192.168.200.13 (192.168.200.13) from 192.168.200.12 enp1s0f1np1: 56(84) bytes of data.
From 192.168.200.12 icmp_seq=1 Destination Host Unreachable

--- 192.168.200.13 ping statistics ---
1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms

"""

PING_TOO_LONG_OUT = """\
PING 192.168.200.13 (192.168.200.13) from 192.168.200.12 enp1s0f1np1: 8972(9000) bytes of data.

--- 192.168.200.13 ping statistics ---
2 packets transmitted, 0 received, +2 errors, 100% packet loss, time 1002ms

"""
PING_TOO_LONG_ERR = "ping: local error: message too long, mtu=1500\nping: local error: message too long, mtu=1500\n"

PING_FRAG = """\
PING 10.1.0.2 (10.1.0.2) 8972(9000) bytes of data.
From 10.0.0.1 icmp_seq=1 Frag needed and DF set (mtu = 1500)

--- 10.1.0.2 ping statistics ---
1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms
"""

BUSYBOX_OK = """\
PING 192.168.200.13 (192.168.200.13): 8972 data bytes
8980 bytes from 192.168.200.13: seq=0 ttl=64 time=0.112 ms

--- 192.168.200.13 ping statistics ---
1 packets transmitted, 1 packets received, 0% packet loss
round-trip min/avg/max = 0.112/0.112/0.112 ms
"""

SPEC = {"iface": "enp1s0f1np1", "address": "192.168.200.12", "peer": "spark-b", "peer_address": "192.168.200.13",
        "mtu": 9000}
NETDEV = {"exists": True, "operstate": "up", "mtu": 9000, "speed_mbps": 200000}


def spec(**changes):
    result = dict(SPEC)
    result.update(changes)
    return result


def netdev(**changes):
    result = dict(NETDEV)
    result.update(changes)
    return result


class Runner:
    """Answers each ping argv with the next canned (rc, out, err); records the argv."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls = []

    def __call__(self, argv):
        self.calls.append(list(argv))
        return self.answers.pop(0)


# -- options ------------------------------------------------------------------------------------------------------


def test_validate_accepts_good_links_and_empty():
    assert link.validate([SPEC, spec(iface="enP2p1s0f1np1", address=None, peer_address="192.168.200.15", mtu=None)]) == []
    assert link.validate([]) == []
    assert link.validate(None) == []
    assert link.validate([spec(mtu=576), spec(iface="a", mtu=9216), spec(iface="eth0.100:1_x-y", mtu=1500)]) == []


@pytest.mark.parametrize("changes,expected", [
    ({"iface": "enp1s0f1np1-too-long"},
     "links[0].iface: 'enp1s0f1np1-too-long' is not a netdev name; accepted: " + link.IFNAME_ACCEPTED),
    ({"iface": ".."}, "links[0].iface: '..' is not a netdev name; accepted: "),
    ({"iface": "."}, "links[0].iface: '.' is not a netdev name; accepted: "),
    ({"iface": "eth 0"}, "links[0].iface: 'eth 0' is not a netdev name"),
    ({"iface": "eth0/1"}, "links[0].iface: 'eth0/1' is not a netdev name"),
    ({"iface": "eth0\n"}, "links[0].iface: 'eth0\\n' is not a netdev name"),
    ({"iface": ""}, "links[0].iface: '' is not a netdev name"),
    ({"peer_address": "192.168.200.256"},
     "links[0].peer_address: '192.168.200.256' is not an IPv4 address; accepted: " + link.IPV4_ACCEPTED),
    ({"peer_address": "192.168.200.013"}, "links[0].peer_address: '192.168.200.013' is not an IPv4 address"),
    ({"peer_address": "192.168.200.13/24"}, "links[0].peer_address: '192.168.200.13/24' is not an IPv4 address"),
    ({"peer_address": "fe80::1"}, "links[0].peer_address: 'fe80::1' is not an IPv4 address"),
    ({"peer_address": "spark-b"}, "links[0].peer_address: 'spark-b' is not an IPv4 address"),
    ({"peer_address": "192.168.200.12"},
     "links[0].peer_address: 192.168.200.12 is this end's own address (links[0].address); accepted: the address of "
     "the other end on this link"),
    ({"mtu": 575}, "links[0].mtu: 575 is out of range; accepted: " + link.MTU_ACCEPTED),
    ({"mtu": 9217}, "links[0].mtu: 9217 is out of range; accepted: a whole number from 576 to 9216"),
    ({"mtu": 0}, "links[0].mtu: 0 is out of range"),
    ({"mtu": True}, "links[0].mtu: True is out of range"),
    ({"peer": ""}, "links[0].peer: ''; accepted: the inventory name of the node at the other end of the link"),
    ({"peer": None}, "links[0].peer: None; accepted: the inventory name"),
])
def test_validate_names_field_value_and_accepted(changes, expected):
    errors = link.validate([spec(**changes)])
    assert len(errors) == 1 and errors[0].startswith(expected), errors


def test_validate_duplicate_iface_and_index():
    # One netdev reaches several peers on a switch: only the same netdev and peer twice is a mistake.
    errors = link.validate([SPEC, spec(peer_address="192.168.200.15"), spec(iface="bad name"), SPEC])
    assert errors == [
        "links[2].iface: 'bad name' is not a netdev name; accepted: " + link.IFNAME_ACCEPTED,
        "links[3]: enp1s0f1np1 to %s is already checked by links[0]; accepted: one entry per QSFP netdev and peer"
        % SPEC["peer_address"],
    ]


def test_validate_not_a_dict():
    assert link.validate(["enp1s0f1np1"]) == [
        "links[0]: 'enp1s0f1np1'; accepted: a dict with iface, peer, peer_address and optionally address and mtu"]


@pytest.mark.parametrize("count,timeout,expected", [
    (0, 2, ["count: 0; accepted: a whole number of pings per link, 1 or more"]),
    (2, 0, ["timeout: 0; accepted: a whole number of seconds ping waits for each reply, 1 or more"]),
    (-1, -1, ["count: -1; accepted: a whole number of pings per link, 1 or more",
              "timeout: -1; accepted: a whole number of seconds ping waits for each reply, 1 or more"]),
])
def test_validate_count_and_timeout(count, timeout, expected):
    assert link.validate([SPEC], count, timeout) == expected


# -- /sys/class/net ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text,expected", [
    ("200000\n", 200000), ("100000", 100000), ("0\n", 0), ("-1\n", None), ("", None), (None, None),
    ("garbage\n", None), ("4294967295\n", 4294967295),
])
def test_parse_speed(text, expected):
    assert link.parse_speed(text) == expected


@pytest.mark.parametrize("text,expected", [("9000\n", 9000), ("1500", 1500), ("", None), (None, None), ("x", None),
                                           ("0\n", None)])
def test_parse_mtu(text, expected):
    assert link.parse_mtu(text) == expected


@pytest.mark.parametrize("text,expected", [("up\n", "up"), ("lowerlayerdown\n", "lowerlayerdown"), ("\n", None),
                                           (None, None)])
def test_parse_operstate(text, expected):
    assert link.parse_operstate(text) == expected


# -- ping ----------------------------------------------------------------------------------------------------------


def test_ping_argv_df_and_small():
    assert link.ping_argv(PING, "enp1s0f1np1", "192.168.200.13", 2, 2, link.ping_size(9000)) == [
        PING, "-n", "-M", "do", "-s", "8972", "-c", "2", "-i", "0.2", "-W", "2", "-I", "enp1s0f1np1", "192.168.200.13"]
    assert link.ping_argv(PING, "enp1s0f1np1", "192.168.200.13", 1, 3) == [
        PING, "-n", "-c", "1", "-i", "0.2", "-W", "3", "-I", "enp1s0f1np1", "192.168.200.13"]
    assert link.ping_size(1500) == 1472 and link.ping_size(576) == 548


def test_parse_ping_ok():
    assert link.parse_ping(PING_OK) == {"transmitted": 2, "received": 2, "rtt_avg_ms": 0.05, "too_long": False,
                                        "local_mtu": None, "frag_mtu": None}


def test_parse_ping_partial_and_busybox():
    assert link.parse_ping(PING_HALF)["received"] == 1 and link.parse_ping(PING_HALF)["rtt_avg_ms"] == 1.25
    parsed = link.parse_ping(BUSYBOX_OK)
    assert (parsed["transmitted"], parsed["received"], parsed["rtt_avg_ms"]) == (1, 1, 0.112)


def test_parse_ping_no_reply_and_unreachable():
    assert link.parse_ping(PING_NO_REPLY) == {"transmitted": 2, "received": 0, "rtt_avg_ms": None,
                                              "too_long": False, "local_mtu": None, "frag_mtu": None}
    parsed = link.parse_ping(PING_UNREACHABLE)
    assert (parsed["transmitted"], parsed["received"], parsed["too_long"]) == (1, 0, False)


def test_parse_ping_message_too_long():
    parsed = link.parse_ping(PING_TOO_LONG_OUT, PING_TOO_LONG_ERR)
    assert parsed["too_long"] is True and parsed["local_mtu"] == 1500
    assert (parsed["transmitted"], parsed["received"]) == (2, 0)
    old = link.parse_ping("", "ping: sendmsg: Message too long\n")
    assert old["too_long"] is True and old["local_mtu"] is None and old["transmitted"] == 0


def test_parse_ping_frag_needed():
    assert link.parse_ping(PING_FRAG)["frag_mtu"] == 1500


@pytest.mark.parametrize("out,err", [("", ""), (None, None), ("garbage", "ping: connect: Network is unreachable\n")])
def test_parse_ping_nothing(out, err):
    assert link.parse_ping(out, err) == {"transmitted": 0, "received": 0, "rtt_avg_ms": None, "too_long": False,
                                         "local_mtu": None, "frag_mtu": None}


def test_quote_ping():
    assert link.quote_ping(PING_NO_REPLY) == "2 packets transmitted, 0 received, 100% packet loss, time 1021ms"
    assert link.quote_ping(PING_TOO_LONG_OUT, PING_TOO_LONG_ERR) == (
        "ping: local error: message too long, mtu=1500 / "
        "2 packets transmitted, 0 received, +2 errors, 100% packet loss, time 1002ms")
    assert link.quote_ping(PING_UNREACHABLE) == (
        "From 192.168.200.12 icmp_seq=1 Destination Host Unreachable / "
        "1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms")
    assert link.quote_ping("", "ping: SO_BINDTODEVICE enp1s0f1np1: No such device\n") == (
        "ping: SO_BINDTODEVICE enp1s0f1np1: No such device")
    assert link.quote_ping("weird\nthings\n") == "weird"
    assert link.quote_ping("", "") == ""
    long = link.quote_ping("ping: " + "x" * 500)
    assert len(long) == link.QUOTE_MAX and long.endswith("...")


# -- texts ----------------------------------------------------------------------------------------------------------


def test_cause_texts():
    assert link.cause_mtu(1500, 9000, "spark-a") == "MTU is 1500 on spark-a, planned 9000"
    assert link.cause_mtu(None, 9000, "spark-a") == "MTU is unknown on spark-a, planned 9000"
    assert link.cause_too_long(9000, 8972, 1500) == (
        "this end cannot send 9000-byte packets unfragmented (ping -M do -s 8972: the route's MTU is 1500)")
    assert link.cause_too_long(9000, 8972, None, "q") == (
        "this end cannot send 9000-byte packets unfragmented (ping -M do -s 8972: the route's MTU is lower) [ping: q]")
    assert link.cause_no_reply(9000, 8972, "spark-b", True) == (
        "no reply to a 9000-byte ping with don't-fragment (ping -M do -s 8972): the MTU of spark-b's end is probably "
        "lower than 9000, or the link is down (a normal ping: small packets cross, so the other end's MTU is lower "
        "than 9000)")
    assert link.cause_no_reply(9000, 8972, "spark-b", False, "q").endswith(
        "(a normal ping: no packet crosses: the link or the peer's address is down) [ping: q]")
    assert link.cause_operstate("enp1s0f1np1", "down") == "enp1s0f1np1 is down (operstate), not up"
    assert link.cause_operstate("enp1s0f1np1", None) == "the operstate of enp1s0f1np1 cannot be read"
    assert link.cause_missing("enp1s0f1np1", "spark-a").startswith(
        "enp1s0f1np1 does not exist on spark-a (no /sys/class/net/enp1s0f1np1)")
    assert link.cause_not_sent(9000, 8972, 2, "ping: x") == (
        "the 9000-byte ping with don't-fragment (ping -M do -s 8972) sent nothing (rc=2) [ping: ping: x]")
    assert "its MTU is 1500" in link.cause_frag_needed(9000, 8972, 1500)


def test_link_message_with_and_without_address():
    assert link.link_message(SPEC, "spark-a", "why") == (
        "QSFP link enp1s0f1np1 of spark-a (192.168.200.12) to spark-b (192.168.200.13): why")
    assert link.link_message(spec(address=None), "spark-a", "why") == (
        "QSFP link enp1s0f1np1 of spark-a to spark-b (192.168.200.13): why")
    assert link.link_message(spec(address=""), "spark-a", "why").startswith("QSFP link enp1s0f1np1 of spark-a to ")
    assert link.failure_message("spark-a", ["one", "two"]) == "QSFP link check failed on spark-a: one; two"


def test_summary_lines():
    result = link.new_result(SPEC, NETDEV)
    result["ping"].update(size=8972, transmitted=2, received=2, rtt_avg_ms=0.05, ok=True)
    assert link.summary_line(result) == (
        "enp1s0f1np1 -> spark-b 192.168.200.13: MTU 9000, 200000 Mb/s, DF ping 8972 bytes 2/2 (0.05 ms)")
    result.update(speed_mbps=None, mtu=1500, operstate="down")
    result["ping"].update(received=0, rtt_avg_ms=None)
    assert link.summary_line(result) == (
        "enp1s0f1np1 -> spark-b 192.168.200.13: MTU 1500 (planned 9000), speed not shown, operstate down, "
        "DF ping 8972 bytes 0/2")
    result = link.new_result(spec(mtu=None), netdev(mtu=None, operstate=None))
    assert link.summary_line(result) == (
        "enp1s0f1np1 -> spark-b 192.168.200.13: MTU unknown, 200000 Mb/s, operstate unknown, not pinged")
    assert link.summary_line(result, exists=False) == "enp1s0f1np1 -> spark-b 192.168.200.13: no such netdev"
    result["ping"].update(size=1472, transmitted=1, received=1, rtt_avg_ms=12.3456)
    assert link.summary_line(result).endswith("DF ping 1472 bytes 1/1 (12.346 ms)")


# -- one link -------------------------------------------------------------------------------------------------------


def check(run, spec_=None, netdev_=None, count=2, timeout=2):
    return link.check_link(spec_ or SPEC, netdev_ or NETDEV, "spark-a", PING, run, count, timeout)


def test_check_link_ok():
    run = Runner((0, PING_OK, ""))
    result = check(run)
    assert result == {
        "iface": "enp1s0f1np1", "peer": "spark-b", "peer_address": "192.168.200.13", "address": "192.168.200.12",
        "operstate": "up", "mtu": 9000, "planned_mtu": 9000, "speed_mbps": 200000,
        "ping": {"size": 8972, "df": True, "transmitted": 2, "received": 2, "rtt_avg_ms": 0.05, "ok": True},
        "ok": True, "cause": "",
    }
    assert run.calls == [[PING, "-n", "-M", "do", "-s", "8972", "-c", "2", "-i", "0.2", "-W", "2", "-I", "enp1s0f1np1",
                          "192.168.200.13"]]


def test_check_link_one_reply_is_enough():
    result = check(Runner((1, PING_HALF, "")))
    assert result["ok"] is True and result["ping"]["received"] == 1


def test_check_link_unplanned_mtu_uses_current():
    run = Runner((0, PING_OK, ""))
    result = check(run, spec(mtu=None), netdev(mtu=1500), count=3, timeout=1)
    assert result["ok"] is True and result["planned_mtu"] is None and result["ping"]["size"] == 1472
    assert run.calls[0][5:13] == ["1472", "-c", "3", "-i", "0.2", "-W", "1", "-I"]


def test_check_link_mtu_differs_and_too_long():
    run = Runner((1, PING_TOO_LONG_OUT, PING_TOO_LONG_ERR))
    result = check(run, netdev_=netdev(mtu=1500))
    assert result["ok"] is False and result["mtu"] == 1500 and result["planned_mtu"] == 9000
    assert result["cause"] == (
        "MTU is 1500 on spark-a, planned 9000; this end cannot send 9000-byte packets unfragmented "
        "(ping -M do -s 8972: the route's MTU is 1500) [ping: ping: local error: message too long, mtu=1500 / "
        "2 packets transmitted, 0 received, +2 errors, 100% packet loss, time 1002ms]")
    assert len(run.calls) == 1  # no small ping: the cause is known


def test_check_link_mtu_larger_than_planned_fails_even_if_ping_passes():
    result = check(Runner((0, PING_OK, "")), netdev_=netdev(mtu=9216))
    assert result["ok"] is False and result["ping"]["ok"] is True
    assert result["cause"] == "MTU is 9216 on spark-a, planned 9000"


def test_check_link_peer_mtu_lower():
    run = Runner((1, PING_NO_REPLY, ""), (0, PING_OK.replace("2 received", "1 received"), ""))
    result = check(run)
    assert result["ok"] is False and result["ping"]["ok"] is False
    assert result["cause"].startswith("no reply to a 9000-byte ping with don't-fragment (ping -M do -s 8972): the MTU "
                                      "of spark-b's end is probably lower than 9000, or the link is down (a normal "
                                      "ping: small packets cross, so the other end's MTU is lower than 9000)")
    assert run.calls[1] == [PING, "-n", "-c", "1", "-i", "0.2", "-W", "2", "-I", "enp1s0f1np1", "192.168.200.13"]


def test_check_link_nothing_crosses_and_operstate():
    run = Runner((1, PING_NO_REPLY, ""), (1, PING_UNREACHABLE, ""))
    result = check(run, netdev_=netdev(operstate="lowerlayerdown", speed_mbps=None))
    assert result["cause"] == (
        "no reply to a 9000-byte ping with don't-fragment (ping -M do -s 8972): the MTU of spark-b's end is probably "
        "lower than 9000, or the link is down (a normal ping: no packet crosses: the link or the peer's address is "
        "down) [ping: 2 packets transmitted, 0 received, 100% packet loss, time 1021ms]; "
        "enp1s0f1np1 is lowerlayerdown (operstate), not up")
    assert result["operstate"] == "lowerlayerdown" and result["speed_mbps"] is None


def test_check_link_operstate_not_up_but_ping_passes():
    result = check(Runner((0, PING_OK, "")), netdev_=netdev(operstate="unknown"))
    assert result["ok"] is True and result["operstate"] == "unknown" and result["cause"] == ""


def test_check_link_ping_sends_nothing():
    run = Runner((2, "", "ping: SO_BINDTODEVICE enp1s0f1np1: Operation not permitted\n"))
    result = check(run)
    assert result["cause"] == ("the 9000-byte ping with don't-fragment (ping -M do -s 8972) sent nothing (rc=2) "
                               "[ping: ping: SO_BINDTODEVICE enp1s0f1np1: Operation not permitted]")
    assert len(run.calls) == 1 and result["ping"]["transmitted"] == 0


def test_check_link_frag_needed():
    result = check(Runner((1, PING_FRAG, "")))
    assert result["cause"].startswith("a hop on the way cannot pass 9000-byte packets unfragmented")


def test_check_link_missing_netdev_is_not_pinged():
    run = Runner()
    result = check(run, netdev_={"exists": False, "operstate": None, "mtu": None, "speed_mbps": None})
    assert run.calls == []
    assert result["ok"] is False and result["ping"] == {"size": None, "df": True, "transmitted": 0, "received": 0,
                                                        "rtt_avg_ms": None, "ok": False}
    assert result["cause"] == ("enp1s0f1np1 does not exist on spark-a (no /sys/class/net/enp1s0f1np1): is the netplan "
                               "file applied and the netdev named right?")


def test_check_link_unknown_mtu_without_plan():
    run = Runner()
    result = check(run, spec(mtu=None), netdev(mtu=None))
    assert run.calls == [] and result["ok"] is False
    assert result["cause"] == ("the MTU of enp1s0f1np1 on spark-a cannot be read and none is planned (mtu), so it was "
                               "not pinged")
