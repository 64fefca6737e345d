"""Verify four simulated Sparks through a switch serving DeepSeek-R1 with MTP at TP=4 (testinfra, switch1-a..d)."""

import itertools
import json
import os
import sys

import pytest
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "resources"))
import verify_helpers as vh  # noqa: E402  pylint: disable=wrong-import-position

NODES = ("switch1-a", "switch1-b", "switch1-c", "switch1-d")
testinfra_hosts = vh.testinfra_hosts(*NODES)
QSFP = ("enp1s0f1np1", "enP2p1s0f1np1")
# NVIDIA's "Connect multiple Sparks through a switch" scheme: node N gets .N in 192.168.100/24 and 192.168.101/24.
ADDRESS = {node: ("192.168.100.%d" % n, "192.168.101.%d" % n) for n, node in enumerate(NODES, start=1)}
PORT = 8355


@pytest.fixture(scope="module")
def node(host):
    return vh.node_of(host)


def test_netplan_follows_nvidias_switch_scheme(host, node):
    with host.sudo():
        plan = yaml.safe_load(host.file("/etc/netplan/40-cx7.yaml").content_string)
    for iface, address in zip(QSFP, ADDRESS[node]):
        assert plan["network"]["ethernets"][iface]["addresses"] == [address + "/24"]
        assert plan["network"]["ethernets"][iface]["mtu"] == 9000
    assert not set(plan["network"]["ethernets"]) - set(QSFP)


def test_each_netdev_answers_arp_for_its_own_address_only(host, node):
    """Both netdevs of a cable share the switch's L2 segment: the setting survives a reboot (the file) and holds now."""
    with host.sudo():
        conf = host.file("/etc/sysctl.d/60-dgx-spark-qsfp.conf").content_string
    for iface in QSFP:
        assert "net.ipv4.conf.%s.arp_ignore=1" % iface in conf and "net.ipv4.conf.%s.arp_announce=2" % iface in conf
        assert host.check_output("cat /proc/sys/net/ipv4/conf/%s/arp_ignore" % iface) == "1"


def test_every_spark_reaches_every_other_at_mtu_9000_on_both_netdevs(host, node):
    for peer in NODES:
        if peer == node:
            continue
        for twin, iface in enumerate(QSFP):
            out = host.run("ping -c1 -W2 -M do -s 8972 -I %s %s", iface, ADDRESS[peer][twin])
            assert out.rc == 0, (iface, peer, out.stdout, out.stderr)


def test_the_image_carries_open_mpi_5_and_the_container_names_prrte_settings(host, node):
    version = vh.in_container(host, node, "mpirun --version").stdout
    assert "Open MPI) 5." in version, version
    env = dict(e.split("=", 1) for e in vh.inspect(host, node)["Config"]["Env"])
    assert env["PRTE_MCA_prte_default_hostfile"] == "/etc/openmpi-hostfile"
    assert env["PRTE_MCA_plm_ssh_args"] == "-F /etc/dgx-spark/ssh/config"
    # Open MPI 5 ignores the ORTE-era names without a word: none is set.
    assert "OMPI_MCA_orte_default_hostfile" not in env and "OMPI_MCA_rmaps_ppr_n_pernode" not in env
    assert env["NCCL_IB_HCA"] == "rocep1s0f1,roceP2p1s0f1" and "NCCL_IB_GID_INDEX" not in env


def test_hostfile_has_one_slot_per_spark_head_first(host, node):
    hostfile = vh.in_container(host, node, "cat /etc/openmpi-hostfile").stdout
    assert [line for line in hostfile.splitlines() if not line.startswith("#")] == [
        "%s slots=1" % ADDRESS[n][0] for n in NODES]


def test_mpirun_places_one_rank_on_each_spark(host, node):
    if node != NODES[0]:
        pytest.skip("mpirun is started from the head")
    out = vh.in_container(host, node, "timeout 60 mpirun -np 4 hostname")
    assert out.rc == 0, out.stderr
    assert sorted(out.stdout.split()) == sorted(NODES)


def test_every_spark_runs_its_rank(host, node):
    top = vh.docker("top", vh.serving_container(node), "-eo", "pid,args").stdout
    assert "trtllm-llmapi-launch" in top or "trtllm-serve" in top, top
    if node == NODES[0]:
        cmd = vh.inspect(host, node)["Config"]["Cmd"]
        launch = cmd[cmd.index("--") + 1:]
        assert launch[:5] == ["mpirun", "-np", "4", "--map-by", "ppr:1:node"]
        serve = launch[launch.index("trtllm-serve"):]
        assert serve[1] == "nvidia/DeepSeek-R1-FP4" and serve[serve.index("--tp_size") + 1] == "4"
        assert "mpi world size 4, tp_size 4" in vh.logs(node).lower(), vh.logs(node)[-2000:]


def test_the_endpoint_answers_through_rank_0_only(host, node):
    if node != NODES[0]:
        assert host.run("ss -Hltn 'sport = :%d'" % PORT).stdout.strip() == ""
        return
    status, body = vh.http_get(host, "http://127.0.0.1:%d/v1/models" % PORT)
    assert status == 200 and yaml.safe_load(body)["data"][0]["id"] == "nvidia/DeepSeek-R1-FP4"
    options = yaml.safe_load(host.file(vh.home(node) + "/.dgx-spark/extra-llm-api-config.yml").content_string)
    assert options["speculative_config"]["decoding_type"] == "MTP"


def test_each_spark_trusts_the_other_three_by_public_key_only(host, node):
    with open(vh.home(node) + "/.dgx-spark/ssh/authorized_keys", encoding="utf-8") as handle:
        authorized = handle.read()
    assert authorized.count('from="') == 4 and "PRIVATE" not in authorized
    with open(vh.home(node) + "/.dgx-spark/ssh/known_hosts", encoding="utf-8") as handle:
        known = handle.read()
    for peer, twin in itertools.product(NODES, (0, 1)):
        assert "[%s]:2233" % ADDRESS[peer][twin] in known


def test_a_restart_of_every_container_brings_the_endpoint_back_then_a_run_changes_nothing(host, node):
    if node != NODES[0]:
        pytest.skip("restarted from the head's test")
    vh.docker("restart", *[vh.serving_container(n) for n in reversed(NODES)])
    vh.wait_for_endpoint(host, "http://127.0.0.1:%d/health" % PORT, timeout=300)
    rc, output = vh.run_playbook("four_spark_mtp.yml", inventory="lab_switch")
    assert rc == 0, output[-3000:]
    assert vh.changed_total(output) == 0, output[-3000:]


def test_fabric_check_reports_every_pair_on_both_netdevs(host, node, tmp_path):
    if node != NODES[0]:
        pytest.skip("one check for the switch")
    report_path = str(tmp_path / "fabric.json")
    rc, output = vh.run_playbook("fabric_check.yml", "-e", "fabric_check_report=" + report_path,
                                 inventory="lab_switch")
    with open(report_path, encoding="utf-8") as handle:
        report = json.load(handle)
    assert rc == 0 and report["ok"] is True, output[-3000:]
    assert vh.changed_total(output) == 0
    for name in NODES:
        links = report["nodes"][name]["links"]
        assert len(links) == 6 and all(link["ping"]["ok"] for link in links), links
