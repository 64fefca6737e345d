# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run the spark_addresses module's main() against a fake node: an `ip -j -4 addr show` whose answer changes from
read to read, as networkd configures the addresses after netplan apply, and a recorded sleep."""

from __future__ import annotations

import json
import os
import sys
import types

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgx_spark.specdec.plugins.modules import spark_addresses

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
from fake_host import FakeHost  # noqa: E402  pylint: disable=wrong-import-position

IP = "/usr/sbin/ip"

# netplan_qsfp_spec.entries of spark-a with the seed preset, as the plan returns them.
ENTRIES = [
    {"iface": "enp1s0f1np1", "cidr": "192.168.200.12/24", "address": "192.168.200.12", "prefix": 24,
     "network": "192.168.200.0/24", "table": 101},
    {"iface": "enP2p1s0f1np1", "cidr": "192.168.200.14/24", "address": "192.168.200.14", "prefix": 24,
     "network": "192.168.200.0/24", "table": 102},
]
NONE = {"lo": ["127.0.0.1/8"], "enP7s7": ["10.213.0.5/24"]}
HALF = dict(NONE, enp1s0f1np1=["192.168.200.12/24"])
ALL = dict(HALF, enP2p1s0f1np1=["192.168.200.14/24"])


def ip_json(addresses):
    """{netdev: [cidr]} -> `ip -j -4 addr show` (iproute2 prints {} for a link without IPv4 address)."""
    links = [{}]
    for index, (name, cidrs) in enumerate(addresses.items(), 1):
        links.append({"ifindex": index, "ifname": name, "flags": ["UP"], "mtu": 9000, "operstate": "UP",
                      "addr_info": [{"family": "inet", "local": c.split("/")[0], "prefixlen": int(c.split("/")[1]),
                                     "scope": "global", "label": name} for c in cidrs]})
    return json.dumps(links)


class FakeNode(FakeHost):
    """``answers``: what each read of the addresses returns, (rc, stdout, stderr); the last one repeats."""

    def __init__(self):
        self.bins = {"ip": IP}
        self.answers = [(0, ip_json(ALL), "")]
        self.calls = []
        self.sleeps = []

    def states(self, *addresses):
        self.answers = [(0, ip_json(a), "") for a in addresses]

    def answer(self, args):
        assert args == [IP, "-j", "-4", "addr", "show"], args
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


@pytest.fixture
def node(monkeypatch):
    fake = FakeNode()

    fake.install(monkeypatch)
    monkeypatch.setattr(spark_addresses, "_sleep", fake.sleeps.append)
    monkeypatch.setattr(spark_addresses, "socket", types.SimpleNamespace(gethostname=lambda: "spark-a"))
    return fake


def run_module(capsys, args):
    """Run main() like Ansible does; return (rc, parsed JSON result)."""
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            spark_addresses.main()
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


# -- all well -------------------------------------------------------------------------------------------------------


def test_all_there_at_the_first_read(capsys, node):
    result = passes(capsys, {"entries": ENTRIES, "node": "spark-a"})
    assert result["missing"] == [] and result["reads"] == 1 and node.sleeps == []
    assert result["addresses"] == ALL
    assert result["summary"] == ("spark-a: 192.168.200.12/24 on enp1s0f1np1, 192.168.200.14/24 on enP2p1s0f1np1 "
                                 "(read once)")
    assert node.calls == [[IP, "-j", "-4", "addr", "show"]]


def test_waits_until_networkd_has_put_them_all(capsys, node):
    node.states(NONE, HALF, ALL)
    result = passes(capsys, {"entries": ENTRIES, "retries": 5})
    assert result["reads"] == 3 and node.sleeps == [2, 2] and len(node.calls) == 3
    assert result["summary"].startswith("spark-a: ") and result["summary"].endswith("(read 3 times)")


def test_check_mode_reads_the_same(capsys, node):
    node.states(HALF, ALL)
    result = passes(capsys, {"entries": ENTRIES, "delay": 1, "_ansible_check_mode": True})
    assert result["reads"] == 2 and node.sleeps == [1]


def test_no_entries_reads_nothing(capsys, node):
    del node.bins["ip"]
    result = passes(capsys, {"entries": [], "node": "spark-a"})
    assert (result["missing"], result["reads"], result["addresses"]) == ([], 0, {})
    assert node.calls == []


# -- failures -------------------------------------------------------------------------------------------------------


def test_missing_after_the_last_read_names_node_addresses_netdevs_and_command(capsys, node):
    node.states(NONE, HALF)
    result = fails(capsys, {"entries": ENTRIES, "node": "spark-a", "retries": 4,
                            "apply_command": "/usr/local/sbin/lab-networkd-apply"})
    assert result["msg"] == (
        'After applying with "/usr/local/sbin/lab-networkd-apply", spark-a lacks 192.168.200.14/24 on enP2p1s0f1np1 '
        '(checked 4 times, 2 s apart). The file stays; the next run applies again.')
    assert result["missing"] == [{"iface": "enP2p1s0f1np1", "cidr": "192.168.200.14/24", "found": []}]
    assert result["reads"] == 4 and node.sleeps == [2, 2, 2] and result["addresses"] == HALF


def test_an_address_on_the_wrong_netdev_is_missing(capsys, node):
    # The old check only looked for the address anywhere; the plan (missing) wants it on its netdev.
    node.states(dict(NONE, enp1s0f1np1=["192.168.200.12/24"], enp1s0f0np0=["192.168.200.14/24"]))
    result = fails(capsys, {"entries": ENTRIES, "retries": 1})
    assert result["msg"] == (
        'After applying with "netplan apply", spark-a lacks 192.168.200.14/24 on enP2p1s0f1np1 (found on '
        'enp1s0f0np0: 192.168.200.14/24) (checked once). The file stays; the next run applies again.')
    assert node.sleeps == []


def test_a_wrong_prefix_length_is_missing(capsys, node):
    node.states(dict(ALL, enp1s0f1np1=["192.168.200.12/16"]))
    result = fails(capsys, {"entries": ENTRIES, "retries": 2, "delay": 0, "node": "spark-b"})
    assert result["msg"].startswith('After applying with "netplan apply", spark-b lacks 192.168.200.12/24 on '
                                    'enp1s0f1np1 (found on enp1s0f1np1: 192.168.200.12/16) (checked 2 times). The file')
    assert node.sleeps == []


def test_ip_fails(capsys, node):
    node.answers = [(1, "", "Cannot open netlink socket: Permission denied\n")]
    result = fails(capsys, {"entries": ENTRIES, "node": "spark-a"})
    assert result["msg"] == ("ip -j -4 addr show failed on spark-a (rc=1): Cannot open netlink socket: "
                             "Permission denied")
    assert len(node.calls) == 1 and result["reads"] == 0


def test_ip_without_json(capsys, node):
    node.answers = [(0, "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536\n    inet 127.0.0.1/8 scope host lo\n", "")]
    result = fails(capsys, {"entries": ENTRIES, "node": "spark-a"})
    assert result["msg"].startswith("cannot read the output of ip -j -4 addr show on spark-a: not JSON")


def test_ip_missing_fails(capsys, node):
    del node.bins["ip"]
    assert '"ip"' in fails(capsys, {"entries": ENTRIES}, own=False)["msg"]


# -- options --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args,expected", [
    ({"entries": ENTRIES, "retries": 0}, "retries: 0; accepted: a whole number of reads of the addresses, 1 or more"),
    ({"entries": ENTRIES, "delay": -2}, "delay: -2; accepted: a whole number of seconds between two reads"),
    ({"entries": [{"iface": "enp1s0f1np1"}]}, "entries[0].cidr: None; accepted: an IPv4 address with prefix length"),
    ({"entries": [dict(ENTRIES[0], cidr="192.168.200.12/33")]}, "entries[0].cidr: '192.168.200.12/33'"),
])
def test_bad_options_fail_naming_field_value_and_accepted(capsys, node, args, expected):
    result = fails(capsys, args)
    assert result["msg"].startswith(expected), result["msg"]
    assert node.calls == []


@pytest.mark.parametrize("args,expected", [
    ({}, "missing required arguments: entries"),
    ({"entries": ENTRIES, "retries": "many"}, "retries"),
    ({"entries": ENTRIES, "wait": 1}, "wait"),
])
def test_argument_spec_rejects(capsys, node, args, expected):
    result = fails(capsys, args, own=False)
    assert expected in result["msg"]
    assert node.calls == []
