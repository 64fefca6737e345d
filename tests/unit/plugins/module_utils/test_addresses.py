# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Unit tests for plugins/module_utils/_addresses.py (pure: no Ansible, the node's addresses from a fake reader)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _addresses as addr

# The plan's entries for spark-a with the seed preset (netplan_qsfp_spec.entries), keys the module ignores included.
ENTRIES = [
    {"iface": "enp1s0f1np1", "cidr": "192.168.200.12/24", "address": "192.168.200.12", "prefix": 24,
     "network": "192.168.200.0/24", "table": 101},
    {"iface": "enP2p1s0f1np1", "cidr": "192.168.200.14/24", "address": "192.168.200.14", "prefix": 24,
     "network": "192.168.200.0/24", "table": 102},
]


def link(ifname, *cidrs, index=1):
    """One link of `ip -j -4 addr show` as iproute2 6.x prints it."""
    infos = []
    for cidr in cidrs:
        local, prefixlen = cidr.split("/")
        infos.append({"family": "inet", "local": local, "prefixlen": int(prefixlen), "scope": "global",
                      "label": ifname, "valid_life_time": 4294967295, "preferred_life_time": 4294967295})
    return {"ifindex": index, "ifname": ifname, "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"], "mtu": 9000,
            "qdisc": "mq", "operstate": "UP", "group": "default", "txqlen": 1000, "addr_info": infos}


def ip_json(*links):
    return json.dumps(list(links))


ALL_THERE = ip_json(link("lo", "127.0.0.1/8"), link("enP7s7", "10.213.0.5/24", index=2),
                    link("enp1s0f1np1", "192.168.200.12/24", index=3),
                    link("enP2p1s0f1np1", "192.168.200.14/24", index=4))


# -- parse_ip_addr --------------------------------------------------------------------------------------------------


def test_parse_ip_addr():
    assert addr.parse_ip_addr(ALL_THERE) == {"lo": ["127.0.0.1/8"], "enP7s7": ["10.213.0.5/24"],
                                             "enp1s0f1np1": ["192.168.200.12/24"],
                                             "enP2p1s0f1np1": ["192.168.200.14/24"]}


def test_parse_ip_addr_skips_what_is_not_an_ipv4_address():
    text = json.dumps([
        {},  # iproute2 prints {} for a link without IPv4 address under -4
        {"ifname": "enp1s0f0np0", "addr_info": []},
        {"ifname": "enp1s0f1np1", "addr_info": [
            {"family": "inet6", "local": "fe80::1", "prefixlen": 64},
            {"family": "inet", "prefixlen": 24},
            {"family": "inet", "local": "192.168.200.12", "prefixlen": 24},
            {"family": "inet", "local": "192.168.200.12", "prefixlen": 24},
            {"family": "inet", "local": "192.168.200.99"},
            "garbage"]},
        "garbage",
    ])
    assert addr.parse_ip_addr(text) == {"enp1s0f0np0": [], "enp1s0f1np1": ["192.168.200.12/24", "192.168.200.99/32"]}


@pytest.mark.parametrize("text", ["", "  \n", "[]"])
def test_parse_ip_addr_empty(text):
    assert addr.parse_ip_addr(text) == {}


@pytest.mark.parametrize("text,expected", [
    ("1: lo: <LOOPBACK,UP> mtu 65536", "not JSON"),
    ('{"ifname": "lo"}', "not a JSON list but dict"),
])
def test_parse_ip_addr_refuses_other_output(text, expected):
    with pytest.raises(addr.IpAddrError, match=expected):
        addr.parse_ip_addr(text)


# -- absent and the message -----------------------------------------------------------------------------------------


def test_nothing_absent():
    assert addr.absent(ENTRIES, addr.parse_ip_addr(ALL_THERE)) == []


def test_absent_names_netdev_and_where_the_address_is_instead():
    current = {"enp1s0f1np1": ["192.168.200.12/16"],           # planned netdev, other prefix length
               "enp1s0f0np0": ["192.168.200.14/24"],           # other netdev
               "enP2p1s0f1np1": ["192.168.200.15/24"]}         # another address
    missing = addr.absent(ENTRIES, current)
    assert missing == [
        {"iface": "enp1s0f1np1", "cidr": "192.168.200.12/24", "found": ["enp1s0f1np1: 192.168.200.12/16"]},
        {"iface": "enP2p1s0f1np1", "cidr": "192.168.200.14/24", "found": ["enp1s0f0np0: 192.168.200.14/24"]},
    ]
    assert [addr.describe(item) for item in missing] == [
        "192.168.200.12/24 on enp1s0f1np1 (found on enp1s0f1np1: 192.168.200.12/16)",
        "192.168.200.14/24 on enP2p1s0f1np1 (found on enp1s0f0np0: 192.168.200.14/24)",
    ]


def test_absent_when_the_netdev_is_not_there():
    missing = addr.absent(ENTRIES, {"enp1s0f1np1": ["192.168.200.12/24"]})
    assert missing == [{"iface": "enP2p1s0f1np1", "cidr": "192.168.200.14/24", "found": []}]
    assert addr.describe(missing[0]) == "192.168.200.14/24 on enP2p1s0f1np1"


def test_failure_message():
    missing = addr.absent(ENTRIES, {"enp1s0f1np1": ["192.168.200.12/24"], "enp1s0f0np0": ["192.168.200.14/24"]})
    assert addr.failure_message("spark-a", missing, "netplan apply", 10, 2) == (
        'After applying with "netplan apply", spark-a lacks 192.168.200.14/24 on enP2p1s0f1np1 (found on '
        'enp1s0f0np0: 192.168.200.14/24) (checked 10 times, 2 s apart). The file stays; the next run applies again.')
    both = addr.absent(ENTRIES, {})
    assert addr.failure_message("spark-b", both, "/usr/local/sbin/lab-networkd-apply", 1, 2) == (
        'After applying with "/usr/local/sbin/lab-networkd-apply", spark-b lacks 192.168.200.12/24 on enp1s0f1np1, '
        '192.168.200.14/24 on enP2p1s0f1np1 (checked once). The file stays; the next run applies again.')


def test_summary_line():
    assert addr.summary_line("spark-a", ENTRIES, 2) == (
        "spark-a: 192.168.200.12/24 on enp1s0f1np1, 192.168.200.14/24 on enP2p1s0f1np1 (read 2 times)")
    assert addr.summary_line("spark-a", [], 0) == "spark-a: no address planned (read 0 times)"


# -- wait -----------------------------------------------------------------------------------------------------------


class Reader:
    """Answers each read with the next of ``answers`` (the last one repeats) and records the sleeps."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.reads = 0
        self.sleeps = []

    def read(self):
        self.reads += 1
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def sleep(self, seconds):
        self.sleeps.append(seconds)


def test_wait_returns_at_the_first_complete_read():
    reader = Reader({}, {"enp1s0f1np1": ["192.168.200.12/24"]}, addr.parse_ip_addr(ALL_THERE))
    current, missing, reads = addr.wait(ENTRIES, reader.read, retries=10, delay=2, sleep=reader.sleep)
    assert (missing, reads, reader.reads, reader.sleeps) == ([], 3, 3, [2, 2])
    assert current["enP2p1s0f1np1"] == ["192.168.200.14/24"]


def test_wait_gives_up_after_retries_reads_without_a_last_sleep():
    reader = Reader({"enp1s0f1np1": ["192.168.200.12/24"]})
    current, missing, reads = addr.wait(ENTRIES, reader.read, retries=4, delay=3, sleep=reader.sleep)
    assert reads == 4 and reader.reads == 4 and reader.sleeps == [3, 3, 3]
    assert [m["cidr"] for m in missing] == ["192.168.200.14/24"]
    assert current == {"enp1s0f1np1": ["192.168.200.12/24"]}


def test_wait_once_and_without_delay():
    reader = Reader({})
    assert addr.wait(ENTRIES, reader.read, retries=1, delay=2, sleep=reader.sleep)[2] == 1
    assert reader.sleeps == []
    reader = Reader({})
    assert addr.wait(ENTRIES, reader.read, retries=3, delay=0, sleep=reader.sleep)[2] == 3
    assert reader.sleeps == []


def test_wait_reads_nothing_without_entries():
    reader = Reader({})
    assert addr.wait([], reader.read, retries=5, delay=2, sleep=reader.sleep) == ({}, [], 0)
    assert reader.reads == 0


def test_wait_lets_a_read_error_through():
    def read():
        raise RuntimeError("ip failed")

    with pytest.raises(RuntimeError, match="ip failed"):
        addr.wait(ENTRIES, read, retries=3, delay=0)


# -- validate -------------------------------------------------------------------------------------------------------


def test_validate_accepts_the_plan_entries():
    assert addr.validate(ENTRIES, 10, 2) == []
    assert addr.validate([], 1, 0) == []


@pytest.mark.parametrize("entries,retries,delay,expected", [
    (ENTRIES, 0, 2, "retries: 0; accepted: a whole number of reads of the addresses, 1 or more"),
    (ENTRIES, True, 2, "retries: True; accepted"),
    (ENTRIES, 10, -1, "delay: -1; accepted: a whole number of seconds between two reads, 0 or more"),
    (["enp1s0f1np1"], 10, 2, "entries[0]: 'enp1s0f1np1'; accepted: a dict with iface and cidr"),
    ([{"cidr": "192.168.200.12/24"}], 10, 2, "entries[0].iface: None; accepted: a netdev name of 1 to 15"),
    ([{"iface": "../../etc", "cidr": "192.168.200.12/24"}], 10, 2, "entries[0].iface: '../../etc'; accepted"),
    ([{"iface": "enp1s0f1np1", "cidr": "192.168.200.12"}], 10, 2,
     "entries[0].cidr: '192.168.200.12'; accepted: an IPv4 address with prefix length A.B.C.D/N"),
    ([{"iface": "enp1s0f1np1", "cidr": "192.168.200.300/24"}], 10, 2, "entries[0].cidr: '192.168.200.300/24'"),
    ([ENTRIES[0], dict(ENTRIES[1], cidr="192.168.200.12/24")], 10, 2,
     "entries[1].cidr: 192.168.200.12 is already planned by entries[0]; accepted: each address once"),
])
def test_validate_names_field_value_and_accepted(entries, retries, delay, expected):
    errors = addr.validate(entries, retries, delay)
    assert len(errors) == 1 and errors[0].startswith(expected), errors
