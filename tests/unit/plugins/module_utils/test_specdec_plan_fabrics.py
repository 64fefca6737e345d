"""Unit tests for clusters of 3 to 8 Sparks: a switch and a ring, the split of the model over the nodes (tp x pp =
N, heads, pipeline with speculative decoding, memory), the hostfile and mpirun for N ranks, and Open MPI 5."""

import os
import sys

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_plan as p

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
from spark_nodes import profile, spark  # noqa: E402  pylint: disable=wrong-import-position

ALL = ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")
IMAGE = "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6"


def cluster(count, topology="switch", prof="four_spark_mtp", variables=None, facts=None, up=None, name="sw"):
    hosts = ["%s-%s" % (name, chr(ord("a") + i)) for i in range(count)]
    node_vars = {h: dict({"specdec_topology": topology}, **(variables or {})) for h in hosts}
    ups = up or (ALL if topology == "ring" else ("enp1s0f1np1", "enP2p1s0f1np1"))
    all_facts = {h: spark(h, up=ups) for h in hosts}
    for host, extra in (facts or {}).items():
        all_facts[host].update(extra)
    return hosts, node_vars, all_facts, profile(prof)


def plan(count, **kwargs):
    hosts, node_vars, facts, prof = cluster(count, **kwargs)
    return p.plan_cluster(kwargs.get("name", "sw"), hosts, prof, node_vars, facts)[0]


def errors(count, **kwargs):
    hosts, node_vars, facts, prof = cluster(count, **kwargs)
    with pytest.raises(p.PlanError) as info:
        p.plan_cluster(kwargs.get("name", "sw"), hosts, prof, node_vars, facts)
    return info.value.errors


# -- a switch of four --------------------------------------------------------------------------------


def test_four_sparks_through_a_switch():
    plans = plan(4)
    head, last = plans["sw-a"], plans["sw-d"]
    assert head["hostfile"]["content"].splitlines()[1:] == ["192.168.100.%d slots=1" % n for n in (1, 2, 3, 4)]
    argv = head["serve"]["argv"]
    assert argv[:3] == ["mpirun", "-np", "4"]
    serve = argv[argv.index("trtllm-serve"):]
    assert serve[:6] == ["trtllm-serve", "nvidia/DeepSeek-R1-FP4", "--backend", "pytorch", "--tp_size", "4"]
    assert serve[serve.index("--ep_size") + 1] == "4" and "--pp_size" not in serve
    assert "NCCL_IB_SUBNET_AWARE_ROUTING" not in head["container"]["docker"]["env"]
    env = last["container"]["docker"]["env"]
    assert env["NCCL_IB_HCA"] == "rocep1s0f1,roceP2p1s0f1" and "NCCL_IB_GID_INDEX" not in env
    assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/openmpi-hostfile"
    # Every node knows every other's address on both netdevs; the head waits for the three workers.
    assert len(last["netplan"]["links"]) == 6 and last["netplan"]["topology"] == "switch"
    command = head["container"]["docker"]["command"]
    assert [command[i + 1] for i, a in enumerate(command) if a == "--peer"] == ["192.168.100.2", "192.168.100.3",
                                                                                "192.168.100.4"]
    assert last["serve"]["memory"]["ready_url"] == "http://192.168.100.1:8355/health"
    assert last["serve"]["memory"]["weights_share"] == 0.25


def test_the_four_spark_profile_on_a_pair_is_refused_with_what_works():
    problems = errors(2, topology="direct")
    assert problems == [
        "specdec_serve_weights_gib on sw-a (cluster sw): the weights of nvidia/DeepSeek-R1-FP4 (395 GiB) do not fit "
        "in the 238 GiB of unified memory of 2 Sparks (119 GiB each): the cluster needs at least 4 Sparks (4 or 8 work with its heads)"]


def test_tp_times_pp_must_be_the_node_count():
    problems = errors(4, variables={"specdec_serve_tp_size": 2})
    assert problems[0].startswith("specdec_serve_tp_size on sw-a (cluster sw): 2 is not tp_size x pp_size (2 x 1) = "
                                  "the number of nodes of cluster sw (4 nodes: sw-a, sw-b, sw-c, sw-d)")
    assert problems[0].endswith("(with this model, tp = the number of nodes works for 4 or 8 nodes)")


def test_pipeline_parallelism_with_speculative_decoding_is_refused():
    problems = errors(4, variables={"specdec_serve_tp_size": 2, "specdec_serve_pp_size": 2, "specdec_serve_ep_size": None})
    assert len(problems) == 1 and problems[0].startswith(
        "specdec_serve_pp_size on sw-a (cluster sw): 2 is not 1 with speculative decoding (method mtp): TensorRT-LLM's "
        "feature-combination matrix has no speculative decoding with pipeline parallelism")


def test_pipeline_without_speculative_decoding_is_a_split():
    plans = plan(4, variables={"specdec_serve_method": "none", "specdec_serve_tp_size": 2, "specdec_serve_pp_size": 2,
                               "specdec_serve_ep_size": 2, "specdec_serve_options": {"enable_attention_dp": False}})
    serve = plans["sw-a"]["serve"]["argv"]
    assert serve[serve.index("--tp_size"):serve.index("--tp_size") + 4] == ["--tp_size", "2", "--pp_size", "2"]


def test_expert_parallelism_divides_tp():
    problems = errors(4, variables={"specdec_serve_ep_size": 3})
    assert problems == ["specdec_serve_ep_size on sw-a (cluster sw): 3 is not a divisor of tp_size 4: the experts are "
                        "split within the tensor-parallel ranks (moe_tp x moe_ep = tp), --ep_size adds no ranks"]


def test_heads_come_from_the_downloaded_config_json():
    models = {"models": {"nvidia/DeepSeek-R1-FP4": {"num_attention_heads": 6, "num_key_value_heads": 6}}}
    problems = errors(4, facts={"sw-a": models})
    assert problems == ["specdec_serve_tp_size on sw-a (cluster sw): 4 does not divide the 6 attention heads of "
                        "nvidia/DeepSeek-R1-FP4 (its config.json on sw-a): TensorRT-LLM splits the heads evenly over "
                        "the tensor-parallel ranks; with speculative decoding (pp 1) the cluster needs 6 nodes"]


def test_key_value_heads_must_split_or_replicate():
    problems = errors(4, variables={"specdec_serve_attention_heads": 32, "specdec_serve_kv_heads": 6,
                                    "specdec_serve_weights_gib": 100})
    assert len(problems) == 1 and "4 neither divides the 6 key-value heads" in problems[0]


def test_a_bad_weights_figure_is_reported_once():
    problems = errors(4, variables={"specdec_serve_weights_gib": "lots"})
    assert [e for e in problems if "specdec_serve_weights_gib" in e] == problems and len(problems) == 4
    assert len({e.split(" on ")[1].split(":")[0] for e in problems}) == 4  # one per node, none twice


# -- a ring of three ---------------------------------------------------------------------------------


def test_three_sparks_in_a_ring_cannot_split_deepseek():
    problems = errors(3, topology="ring", name="ring")
    assert problems == [
        "specdec_serve_tp_size on ring-a (cluster ring): 3 does not divide the 128 attention heads of "
        "nvidia/DeepSeek-R1-FP4 (specdec_serve_attention_heads, until its config.json is downloaded): TensorRT-LLM "
        "splits the heads evenly over the tensor-parallel ranks; with speculative decoding (pp 1) the cluster needs 4 or 8 "
        "nodes",
        "specdec_serve_weights_gib on ring-a (cluster ring): the weights of nvidia/DeepSeek-R1-FP4 (395 GiB) do not "
        "fit in the 357 GiB of unified memory of 3 Sparks (119 GiB each): the cluster needs at least 4 Sparks (4 or 8 work with its heads)"]


def test_a_ring_that_splits_serves_over_each_cable():
    ring = plan(3, topology="ring", name="ring", prof="two_spark_eagle3",
                variables={"specdec_serve_tp_size": 3, "specdec_serve_attention_heads": 96,
                           "specdec_serve_kv_heads": 3})
    head, third = ring["ring-a"], ring["ring-c"]
    # Each worker is named by its address on the cable to the head (NVIDIA's three-Spark scheme).
    assert head["hostfile"]["content"].splitlines()[1:] == ["192.168.0.1 slots=1", "192.168.0.2 slots=1",
                                                            "192.168.2.2 slots=1"]
    assert third["serve"]["memory"]["ready_url"] == "http://192.168.2.1:8355/health"
    env = third["container"]["docker"]["env"]
    assert env["NCCL_IB_SUBNET_AWARE_ROUTING"] == "1"
    assert env["NCCL_SOCKET_IFNAME"] == ",".join(ALL)
    assert len(env["NCCL_IB_HCA"].split(",")) == 4
    assert sorted(link["peer"] for link in third["netplan"]["links"]) == ["ring-a", "ring-a", "ring-b", "ring-b"]


def test_a_ring_port_down_is_named_before_any_change():
    hosts, node_vars, facts, prof = cluster(3, topology="ring", name="ring")
    facts["ring-b"]["qsfp"]["up"] = ["enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1"]
    with pytest.raises(p.PlanError) as info:
        p.plan_network("ring", hosts, node_vars, facts)
    assert info.value.errors == [
        "ring-b: enP2p1s0f1np1 is Down (from ibdev2netdev), expected a cable from port 1 to ring-a's port 0 "
        "(enP2p1s0f0np0): in a ring each Spark's port 0 goes to the next one's port 1"]


def test_the_network_plan_of_a_ring_lists_neighbours():
    hosts, node_vars, facts, prof = cluster(3, topology="ring", name="ring")
    plans, dummy = p.plan_network("ring", hosts, node_vars, facts)
    assert {link["peer"] for link in plans["ring-b"]["netplan"]["links"]} == {"ring-a", "ring-c"}


def test_a_one_spark_cluster_has_no_link_to_configure_and_does_not_fail_a_fleets_link_run():
    hosts, node_vars, facts, prof = cluster(1, topology="direct", name="single1")
    plans, warnings = p.plan_network("single1", hosts, node_vars, facts)
    assert plans[hosts[0]]["netplan"] is None and plans[hosts[0]]["serve"] is None
    assert warnings == ["cluster single1: one Spark (%s), no QSFP link to configure" % hosts[0]]


# -- Open MPI 5 ---------------------------------------------------------------------------------------


def test_an_image_with_open_mpi_5_gets_prrte_names():
    image = {IMAGE: {"id": "sha256:1", "env": {"PRTE_PREFIX": "/opt/hpcx/ompi5"}, "labels": {}}}
    plans = plan(4, facts={h: {"images": image} for h in ("sw-a", "sw-b", "sw-c", "sw-d")})
    env = plans["sw-b"]["container"]["docker"]["env"]
    assert env["PRTE_MCA_prte_default_hostfile"] == "/etc/openmpi-hostfile"
    assert env["PRTE_MCA_plm_ssh_args"] == "-F /etc/dgx-spark/ssh/config"
    # PRRTE's runtime on one netdev per peer (both netdevs of a cable lose its daemons), the MPI traffic on both.
    assert env["PRTE_MCA_oob_tcp_if_include"] == "enp1s0f1np1"
    assert env["OMPI_MCA_btl_tcp_if_include"] == "enp1s0f1np1,enP2p1s0f1np1"
    assert not [name for name in env if name.startswith("OMPI_MCA_") and name != "OMPI_MCA_btl_tcp_if_include"]
    argv = plans["sw-a"]["serve"]["argv"]
    assert argv[:5] == ["mpirun", "-np", "4", "--map-by", "ppr:1:node"]
    assert argv[5:8] == ["--prtemca", "oob_tcp_static_ipv4_ports", "50100"]
    assert "--mca" in argv and argv[argv.index("--mca") + 1] == "btl_tcp_port_min_v4"


def test_nodes_with_different_builds_of_the_image_are_refused():
    five = {IMAGE: {"id": "sha256:1", "env": {"PRTE_PREFIX": "/opt/hpcx/ompi5"}, "labels": {}}}
    four = {IMAGE: {"id": "sha256:2", "env": {}, "labels": {"org.open-mpi.version": "4.1.9a1"}}}
    problems = errors(4, facts={"sw-a": {"images": five}, "sw-b": {"images": four}})
    assert any("carries Open MPI 4 and 5 on the nodes (4 on sw-b; 5 on sw-a)" in e for e in problems)


def test_the_release_decides_before_the_image_is_pulled():
    from ansible_collections.dgx_spark.specdec.plugins.module_utils import _trtllm_releases as rel
    assert [rel.openmpi_major(v) for v in ("1.2.0rc6", "1.3.0rc26", "1.3.0rc27", "1.3.0", "1.4.0rc1")] == [4, 4, 5, 5, 5]


# -- ARP on a switch -----------------------------------------------------------------------------------------


def test_a_switch_node_answers_arp_on_its_own_netdev_only():
    plans = plan(4)
    sysctl = plans["sw-b"]["netplan"]["sysctl"]
    assert sysctl["file"] == "/etc/sysctl.d/60-dgx-spark-qsfp.conf"
    assert sysctl["settings"] == {"net.ipv4.conf.enp1s0f1np1.arp_ignore": "1",
                                  "net.ipv4.conf.enp1s0f1np1.arp_announce": "2",
                                  "net.ipv4.conf.enP2p1s0f1np1.arp_ignore": "1",
                                  "net.ipv4.conf.enP2p1s0f1np1.arp_announce": "2"}
    assert "net.ipv4.conf.enP2p1s0f1np1.arp_announce=2\n" in sysctl["content"]
    assert sysctl["up_to_date"] is False and "netplan" in plans["sw-b"]["changes"]


def test_the_arp_settings_in_place_change_nothing():
    first = plan(4)["sw-a"]["netplan"]["sysctl"]
    have = {"sysctl": {"file": p.sha256(first["content"]), "values": dict(first["settings"])}}
    again = plan(4, facts={"sw-a": have})["sw-a"]["netplan"]["sysctl"]
    assert again["up_to_date"] is True
    have["sysctl"]["values"]["net.ipv4.conf.enp1s0f1np1.arp_ignore"] = "0"  # reset since: set again
    assert plan(4, facts={"sw-a": have})["sw-a"]["netplan"]["sysctl"]["up_to_date"] is False


def test_a_ring_and_a_pair_need_no_arp_settings():
    ring = plan(3, topology="ring", name="ring", prof="two_spark_eagle3",
                variables={"specdec_serve_tp_size": 3, "specdec_serve_attention_heads": 96,
                           "specdec_serve_kv_heads": 3})
    assert ring["ring-a"]["netplan"]["sysctl"] is None
