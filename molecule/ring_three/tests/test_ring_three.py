"""Verify three simulated Sparks cabled in a ring: NVIDIA's three-Spark addresses, every cable at MTU 9000, and
serving a model that three Sparks cannot split refused before any change (testinfra, ring1-a..c)."""

import json
import os
import sys

import pytest
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "resources"))
import verify_helpers as vh  # noqa: E402  pylint: disable=wrong-import-position

NODES = ("ring1-a", "ring1-b", "ring1-c")
testinfra_hosts = vh.testinfra_hosts(*NODES)
# NVIDIA's "Connect three Sparks": node1 .0.1 .1.1 .2.1 .3.1, node2 .4.1 .5.1 .0.2 .1.2 (netdev order below).
IFACES = ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")
ADDRESSES = {
    "ring1-a": ("192.168.0.1", "192.168.1.1", "192.168.2.1", "192.168.3.1"),
    "ring1-b": ("192.168.4.1", "192.168.5.1", "192.168.0.2", "192.168.1.2"),
    "ring1-c": ("192.168.2.2", "192.168.3.2", "192.168.4.2", "192.168.5.2"),
}


@pytest.fixture(scope="module")
def node(host):
    return vh.node_of(host)


def test_netplan_addresses_all_four_netdevs_with_nvidias_scheme(host, node):
    with host.sudo():
        plan = yaml.safe_load(host.file("/etc/netplan/40-cx7.yaml").content_string)
    for iface, address in zip(IFACES, ADDRESSES[node]):
        assert plan["network"]["ethernets"][iface]["addresses"] == [address + "/24"]
        assert plan["network"]["ethernets"][iface]["mtu"] == 9000


def test_each_cable_carries_a_full_size_frame_to_its_neighbour(host, node):
    for iface, address in zip(IFACES, ADDRESSES[node]):
        peer = address.rsplit(".", 1)[0] + (".2" if address.endswith(".1") else ".1")
        out = host.run("ping -c1 -W2 -M do -s 8972 -I %s %s", iface, peer)
        assert out.rc == 0, (iface, peer, out.stdout, out.stderr)


def test_serving_deepseek_on_three_sparks_is_refused_before_any_change(host, node):
    if node != NODES[0]:
        pytest.skip("one run for the ring")
    rc, output = vh.run_playbook("four_spark_mtp.yml", inventory="lab_ring")
    assert rc != 0
    assert vh.failed_in_preflight(output), output[-3000:]
    assert "3 does not divide the 128 attention heads of nvidia/DeepSeek-R1-FP4" in output, output[-3000:]
    assert "the cluster needs 4 or 8 nodes" in output
    assert vh.changed_total(output) == 0
    for name in NODES:
        assert vh.docker("inspect", vh.serving_container(name), check=False).returncode != 0


def _fabric_check(tmp):
    report = os.path.join(tmp, "fabric.json")
    rc, output = vh.run_playbook("fabric_check.yml", "-e", "fabric_check_report=" + report, inventory="lab_ring")
    with open(report, encoding="utf-8") as handle:
        return rc, output, json.load(handle)


def test_fabric_check_reads_every_cable_and_changes_nothing(host, node, tmp_path):
    if node != NODES[0]:
        pytest.skip("one check for the ring")
    rc, output, report = _fabric_check(str(tmp_path))
    assert rc == 0 and report["ok"] is True and report["faults"] == [], output[-3000:]
    assert vh.changed_total(output) == 0
    for name in NODES:
        links = report["nodes"][name]["links"]
        assert len(links) == 4 and all(link["ping"]["ok"] for link in links), links
        assert {link["peer"] for link in links} == set(NODES) - {name}


def test_fabric_check_names_a_cable_that_is_down(host, node, tmp_path):
    if node != NODES[1]:
        pytest.skip("the cable is pulled on ring1-b")
    host.run("sudo ip link set enP2p1s0f0np0 down")
    try:
        rc, output, report = _fabric_check(str(tmp_path))
        assert rc != 0 and report["ok"] is False
        down = [f for f in report["faults"] if f["node"] == "ring1-b" and f["iface"] == "enP2p1s0f0np0"]
        assert down and down[0]["peer"] == "ring1-c", report["faults"]
    finally:
        host.run("sudo ip link set enP2p1s0f0np0 up")
        host.run("sudo /usr/local/sbin/lab-networkd-apply")
