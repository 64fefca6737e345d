"""Unit tests for the plan: clusters and rank order, what each role gets, and every bad input with its message."""

import copy
import hashlib
import json
import os
import sys

import pytest
import yaml

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _inputs as inputs
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_plan as p

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
from spark_nodes import SEED_ADDRESSES, profile, spark  # noqa: E402  pylint: disable=wrong-import-position

IMAGE = "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6"


def two(variables=None, per_node=None, prof=None, facts=None):
    node_vars = {h: dict(netplan_qsfp_addresses=SEED_ADDRESSES[h]) for h in ("spark-a", "spark-b")}
    for h in node_vars:
        node_vars[h].update(variables or {})
        node_vars[h].update((per_node or {}).get(h, {}))
    facts = facts or {h: spark(h) for h in node_vars}
    return p.plan_cluster("sparks", ["spark-a", "spark-b"], prof or profile("two_spark_eagle3"), node_vars, facts)


def one(variables=None, prof="single_spark_draft_target", facts=None):
    return p.plan_cluster("spark-a", ["spark-a"], profile(prof), {"spark-a": dict(variables or {})},
                          {"spark-a": facts or spark("spark-a")})


def errors_of(call, *args, **kwargs):
    with pytest.raises(p.PlanError) as info:
        call(*args, **kwargs)
    return info.value.errors


# -- clusters -------------------------------------------------------------------------------------

def test_legacy_inventory_is_one_cluster_head_from_spark_head():
    hv = {"spark-b": {}, "spark-a": {}}
    groups = {"spark_head": ["spark-a"], "spark_workers": ["spark-b"]}
    # Inventory order puts the worker first: the head still leads the rank order.
    assert p.cluster_members("spark-b", ["spark-b", "spark-a"], hv, groups) == ("sparks", ["spark-a", "spark-b"])
    assert p.cluster_members("spark-a", ["spark-b", "spark-a"], hv, groups) == ("sparks", ["spark-a", "spark-b"])


def test_many_clusters_in_one_inventory_each_with_its_head():
    hv = {h: {"specdec_cluster": c, "specdec_cluster_head": head}
          for c, head, hosts in (("pair1", "a2", ("a1", "a2")), ("pair2", "b1", ("b1", "b2")))
          for h in hosts}
    hv["s1"] = {"specdec_cluster": "solo"}
    order = ["a1", "a2", "b1", "b2", "s1"]
    assert p.cluster_members("a1", order, hv, {}) == ("pair1", ["a2", "a1"])
    assert p.cluster_members("b2", order, hv, {}) == ("pair2", ["b1", "b2"])
    assert p.cluster_members("s1", order, hv, {}) == ("solo", ["s1"])


def test_single_profile_serves_each_host_alone():
    assert p.cluster_members("spark-a", ["spark-a", "spark-b"], {"spark-a": {}, "spark-b": {}},
                             {"spark_head": ["spark-a"]}, single=True) == ("spark-a", ["spark-a"])


def test_a_cluster_serves_one_profile():
    hv = {"a": {"specdec_cluster": "pair1", "specdec_cluster_head": "a", "specdec_profile_name": "two_spark_eagle3"},
          "b": {"specdec_cluster": "pair1", "specdec_profile_name": "single_spark_eagle3"},
          "s": {"specdec_cluster": "solo", "specdec_profile_name": "single_spark_eagle3"}}
    for host, single in (("a", False), ("b", True)):
        (message,) = errors_of(p.cluster_members, host, ["a", "b", "s"], hv, {}, single=single)
        assert message == ('specdec_profile_name of cluster pair1: its nodes name different profiles '
                           '("single_spark_eagle3" on b; "two_spark_eagle3" on a); a cluster serves one profile: '
                           "set it once, on the cluster's group")
    assert p.cluster_members("s", ["a", "b", "s"], hv, {}, single=True) == ("solo", ["s"])
    # Without clusters in the inventory, one-Spark profiles still serve every host alone.
    assert p.cluster_members("a", ["a", "b"], {"a": {"specdec_profile_name": "x"}, "b": {}}, {},
                             single=True) == ("a", ["a"])


@pytest.mark.parametrize("hv, groups, message", [
    ({"a": {}, "b": {}}, {}, "cluster sparks (a, b) has no head"),
    ({"a": {}, "b": {}}, {"spark_head": ["a", "b"]}, "several hosts in spark_head (a, b)"),
    ({"a": {"specdec_cluster_head": "a"}, "b": {"specdec_cluster_head": "b"}}, {}, "name different heads (a, b)"),
    ({"a": {"specdec_cluster_head": "c"}, "b": {}}, {}, 'specdec_cluster_head of cluster sparks: "c" is not a member'),
])
def test_ambiguous_clusters_are_named(hv, groups, message):
    assert message in errors_of(p.cluster_members, "a", ["a", "b"], hv, groups)[0]


# -- the two-Spark plan ---------------------------------------------------------------------------

def test_two_spark_plan_follows_the_seed():
    plans, warnings = two()
    head, worker = plans["spark-a"], plans["spark-b"]
    assert warnings == []
    assert head["nodes"] == worker["nodes"] == ["spark-a", "spark-b"] and head["is_head"] and not worker["is_head"]
    assert head["netplan"]["addresses"] == ["192.168.200.12", "192.168.200.14"]
    assert worker["netplan"]["addresses"] == ["192.168.200.13", "192.168.200.15"]
    assert "192.168.200.12/24" in head["netplan"]["content"] and "table: 101" in head["netplan"]["content"]
    hostfile = head["hostfile"]["content"].splitlines()
    assert hostfile[1:] == ["192.168.200.12 slots=1", "192.168.200.13 slots=1"]
    assert worker["hostfile"]["content"] == head["hostfile"]["content"]
    assert head["hostfile"]["path"] == "/home/spark/.dgx-spark/openmpi-hostfile"

    options = yaml.safe_load(head["serve"]["options_file"]["content"])
    assert options["speculative_config"] == {"decoding_type": "Eagle", "max_draft_len": 3,
                                             "speculative_model_dir": "/models/Qwen3-235B-A22B-Eagle3/"}
    assert head["serve"]["argv"] == [
        "mpirun", "-np", "2",
        "--mca", "oob_tcp_static_ipv4_ports", "50100", "--mca", "oob_tcp_static_ipv6_ports", "50100",
        "--mca", "btl_tcp_port_min_v4", "50101", "--mca", "btl_tcp_port_range_v4", "32",
        "--mca", "btl_tcp_disable_family", "6", "-x", "CPATH", "-x", "TRITON_PTXAS_PATH", "-x", "HF_HOME", "-x", "HF_TOKEN_PATH",
        "/bin/bash", "/etc/dgx-spark/entrypoint.sh", "--rank", "--",
        "trtllm-llmapi-launch", "trtllm-serve", "nvidia/Qwen3-235B-A22B-FP4", "--backend", "pytorch",
        "--tp_size", "2", "--max_num_tokens", "1024",
        "--extra_llm_api_options", "/etc/dgx-spark/extra-llm-api-config.yml", "--host", "0.0.0.0", "--port", "8355"]
    assert worker["serve"]["argv"] is None and worker["serve"]["endpoint"] is None
    assert head["serve"]["endpoint"]["url"] == "http://127.0.0.1:8355"

    command = head["container"]["docker"]["command"]
    digest = hashlib.sha256(head["serve"]["options_file"]["content"].encode()).hexdigest()
    assert command[:6] == ["/bin/bash", "/etc/dgx-spark/entrypoint.sh", "--install-missing",
                           "--firewall", "/etc/dgx-spark/firewall.json", "--sshd"]
    # Open MPI's pinned ports: only lo and the QSFP netdevs (the spec the entrypoint applies and keeps).
    assert head["container"]["firewall"]["mpi"] == {"ports": "50100:50132",
                                                    "interfaces": ["enp1s0f1np1", "enP2p1s0f1np1"]}
    assert json.loads(head["container"]["firewall"]["file"]["content"])["mpi"] == head["container"]["firewall"]["mpi"]
    assert head["container"]["docker"]["capabilities"] == ["NET_ADMIN"]
    # The head waits for every node's memory check (the approval) and restarts a server that stops answering.
    assert command[command.index("--approval") + 1] == "/etc/dgx-spark/start-approved=" + hashlib.sha256(
        head["serve"]["approval"]["content"].encode()).hexdigest()
    assert command[command.index("--health") + 1:command.index("--health") + 4] == [
        "http://127.0.0.1:8355/health", "--liveness", "120"]
    assert command[command.index("--peer") + 1] == "192.168.200.13"
    assert "/etc/dgx-spark/extra-llm-api-config.yml=" + digest in command
    assert command[command.index("--") + 1:] == head["serve"]["argv"]
    assert worker["container"]["docker"]["command"] == [
        "/bin/bash", "/etc/dgx-spark/entrypoint.sh", "--install-missing", "--firewall", "/etc/dgx-spark/firewall.json",
        "--sshd", "/etc/dgx-spark/ssh/sshd_config"]
    assert worker["serve"]["approval"] == head["serve"]["approval"]

    env = head["container"]["docker"]["env"]
    for key in ("UCX_NET_DEVICES", "NCCL_SOCKET_IFNAME", "OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_oob_tcp_if_include"):
        assert env[key] == "enp1s0f1np1,enP2p1s0f1np1"
    assert env["HF_TOKEN_PATH"] == "/etc/dgx-spark/hf_token" and "HF_TOKEN" not in env
    assert head["container"]["docker"]["volumes"] == [
        "/home/spark/.cache/huggingface:/root/.cache/huggingface", "/home/spark/models:/models",
        "/home/spark/.dgx-spark:/etc/dgx-spark:ro"]
    assert head["container"]["docker"]["restart_policy"] == "unless-stopped"
    assert head["container"]["name"] == "trtllm-multinode"
    sshd = head["container"]["files"][0]
    assert sshd["path"].endswith("/ssh/sshd_config")
    assert "ListenAddress 192.168.200.12:2233\nListenAddress 192.168.200.14:2233" in sshd["content"]
    assert head["container"]["ssh"]["nodes"] == [
        {"name": "spark-a", "addresses": ["192.168.200.12", "192.168.200.14"]},
        {"name": "spark-b", "addresses": ["192.168.200.13", "192.168.200.15"]}]


def test_downloads_and_the_markers_the_server_waits_for():
    plans, dummy = two()
    downloads = plans["spark-b"]["serve"]["downloads"]
    # The marker file written after a successful download names the repository.
    assert [d.pop("marker_file") for d in downloads] == [
        {"path": d["marker"], "content": d["repo"] + "\n", "mode": "0644", "kind": "none"} for d in downloads]
    # Each download's directory is created (and recorded with what it holds) before it starts.
    assert [d.pop("directory") for d in downloads] == [
        {"path": d["dir"], "owner": "spark", "mode": "0755",
         "record": {"kind": "download", "repo": d["repo"], "revision": None}} for d in downloads]
    # Each runs in a container of its own, which its progress lines read with the bytes under its directory; the
    # expected size is asked from the release image, with the node's token file.
    watches = [d.pop("watch") for d in downloads]
    assert [d.pop("fetch_container") for d in downloads] == ["trtllm-multinode-fetch-0", "trtllm-multinode-fetch-1"]
    assert watches[1] == {
        "label": "nvidia/Qwen3-235B-A22B-Eagle3", "kind": "download", "dir": "/home/spark/models/Qwen3-235B-A22B-Eagle3",
        "container": "trtllm-multinode-fetch-1",
        "probe": {"image": plans["spark-b"]["container"]["image"], "network_mode": "host",
                  "repo": "nvidia/Qwen3-235B-A22B-Eagle3", "revision": None, "endpoint": None,
                  "token_file": "/home/spark/.dgx-spark/hf_token"}}
    assert downloads == [
        {"repo": "nvidia/Qwen3-235B-A22B-FP4", "local_dir": "", "revision": None, "field": "specdec_serve_model",
         "host_dir": "/home/spark/.cache/huggingface/hub", "argv": ["hf", "download", "nvidia/Qwen3-235B-A22B-FP4"],
         "dir": "/home/spark/.cache/huggingface/hub/models--nvidia--Qwen3-235B-A22B-FP4", "current": False,
         "marker": "/home/spark/.cache/huggingface/hub/models--nvidia--Qwen3-235B-A22B-FP4/.dgx-spark-complete"},
        {"repo": "nvidia/Qwen3-235B-A22B-Eagle3", "local_dir": "/models/Qwen3-235B-A22B-Eagle3/", "revision": None,
         "field": "specdec_serve_draft_model", "host_dir": "/home/spark/models/Qwen3-235B-A22B-Eagle3",
         "argv": ["hf", "download", "nvidia/Qwen3-235B-A22B-Eagle3", "--local-dir", "/models/Qwen3-235B-A22B-Eagle3/"],
         "dir": "/home/spark/models/Qwen3-235B-A22B-Eagle3", "current": False,
         "marker": "/home/spark/models/Qwen3-235B-A22B-Eagle3/.dgx-spark-complete"}]
    # The pre-flight asks the hub about the same repositories (the markers let it skip complete ones).
    assert plans["spark-b"]["serve"]["hub_check"] == [
        {k: d[k] for k in ("repo", "revision", "field", "marker")} for d in downloads]
    command = plans["spark-a"]["container"]["docker"]["command"]
    waits = [command[i + 1] for i, word in enumerate(command[:command.index("--")]) if word == "--exists"]
    assert waits == ["/root/.cache/huggingface/hub/models--nvidia--Qwen3-235B-A22B-FP4/.dgx-spark-complete",
                     "/models/Qwen3-235B-A22B-Eagle3/.dgx-spark-complete"]


def test_revisions_are_downloaded_recorded_and_served():
    plans, dummy = two({"specdec_serve_model_revision": "v1.0", "specdec_serve_draft_revision": "0" * 40,
                        "specdec_serve_options": {"tokenizer": "nvidia/Qwen3-235B-A22B-FP4-tokenizer"}})
    model, draft = plans["spark-a"]["serve"]["downloads"]
    assert model["argv"] == ["hf", "download", "nvidia/Qwen3-235B-A22B-FP4", "--revision", "v1.0"]
    assert draft["argv"][3:5] == ["--revision", "0" * 40] and draft["argv"][-2] == "--local-dir"
    assert model["marker_file"]["content"] == "nvidia/Qwen3-235B-A22B-FP4\nrevision: v1.0\n"
    # The server reads the model at that revision from the cache (the revision option).
    assert yaml.safe_load(plans["spark-a"]["serve"]["options_file"]["content"])["revision"] == "v1.0"
    # A tokenizer the server fetches itself is asked about too (no marker: it is not downloaded here).
    assert plans["spark-a"]["serve"]["hub_check"][-1] == {
        "repo": "nvidia/Qwen3-235B-A22B-FP4-tokenizer", "revision": None, "field": "specdec_serve_options.tokenizer",
        "marker": None}


def test_a_changed_option_changes_the_head_command_only():
    before, dummy = two()
    after, dummy = two({"specdec_serve_max_draft_len": "4"})  # templated values arrive as strings
    assert yaml.safe_load(after["spark-a"]["serve"]["options_file"]["content"])["speculative_config"]["max_draft_len"] == 4
    assert before["spark-a"]["container"]["docker"]["command"] != after["spark-a"]["container"]["docker"]["command"]
    assert before["spark-b"]["container"]["docker"] == after["spark-b"]["container"]["docker"]


def test_same_inputs_same_plan():
    assert two() == two()


def test_preset_plan_without_addresses_and_gpu_when_docker_has_nvidia():
    facts = {h: spark(h) for h in ("spark-a", "spark-b")}
    for f in facts.values():
        f["docker"]["runtimes"] = ["nvidia", "runc"]
        f["infiniband"] = True
    plans, dummy = p.plan_cluster("sparks", ["spark-a", "spark-b"], profile("two_spark_eagle3"),
                                  {"spark-a": {}, "spark-b": {}}, facts)
    assert plans["spark-b"]["netplan"]["addresses"] == ["192.168.200.13", "192.168.200.15"]
    docker = plans["spark-a"]["container"]["docker"]
    assert docker["device_requests"] == [{"driver": "nvidia", "count": -1, "capabilities": [["gpu"]]}]
    assert docker["devices"] == ["/dev/infiniband:/dev/infiniband"]
    # The token's file is always named; it holds a token only where the node has one.
    assert docker["env"]["HF_TOKEN_PATH"] == "/etc/dgx-spark/hf_token"


def test_deprecated_node_list_that_agrees_only_warns():
    dummy, warnings = two({"openmpi_hostfile_hosts": ["spark-a", "spark-b"], "netplan_qsfp_group": "sparks"})
    assert any("openmpi_hostfile_hosts is deprecated" in w for w in warnings)
    assert any("netplan_qsfp_group is deprecated and ignored" in w for w in warnings)


# -- one Spark ------------------------------------------------------------------------------------

def test_single_spark_draft_target():
    plans, dummy = one()
    node = plans["spark-a"]
    assert node["netplan"] is None and node["hostfile"] is None and node["container"]["ssh"] is None
    assert node["serve"]["argv"] == [
        "trtllm-serve", "nvidia/Llama-3.3-70B-Instruct-FP4", "--backend", "pytorch", "--tp_size", "1",
        "--max_batch_size", "1", "--kv_cache_free_gpu_memory_fraction", "0.9",
        "--extra_llm_api_options", "/etc/dgx-spark/extra-llm-api-config.yml", "--host", "localhost", "--port", "8000"]
    command = node["container"]["docker"]["command"]
    assert "--sshd" not in command and "--peer" not in command
    assert node["container"]["name"] == "trtllm-specdec"
    assert node["container"]["docker"]["labels"]["dgx-spark.specdec/role"] == "single"


def test_low_latency_publishes_its_port_on_a_bridge():
    plans, dummy = one(prof="single_spark_low_latency")
    docker = plans["spark-a"]["container"]["docker"]
    # The metrics exporter shares the server's namespace: its port is published too.
    assert docker["network_mode"] == "bridge" and docker["published_ports"] == ["8000:8000", "9464:9464"]
    exporter = plans["spark-a"]["container"]["exporter"]
    assert exporter["network_mode"] == "container:trtllm-specdec" and exporter["command"][-1] == "0.0.0.0:9464"
    assert docker["env"] == dict(p.LOCAL_MPI_ENV, TRTLLM_ENABLE_PDL="1", HF_TOKEN_PATH="/etc/dgx-spark/hf_token",
                                 TIKTOKEN_ENCODINGS_BASE="/etc/dgx-spark/tiktoken")
    assert "--trust_remote_code" in plans["spark-a"]["serve"]["argv"]
    # The server's MPI runtime: pinned ports, closed to all but loopback in the container's own namespace.
    firewall = plans["spark-a"]["container"]["firewall"]
    assert firewall["mpi"] == {"ports": "50100:50132", "interfaces": []} and firewall["bridge"]
    assert docker["capabilities"] == ["NET_ADMIN"]


# -- every bad input, named -----------------------------------------------------------------------

@pytest.mark.parametrize("variables, expected", [
    ({"specdec_serve_model": "nvidia//Qwen3"}, 'specdec_serve_model on spark-a (cluster sparks): "nvidia//Qwen3" is not a Hugging Face model id'),
    ({"specdec_serve_model": "nvidia/Qwen3;rm -rf /"}, 'specdec_serve_model on spark-a (cluster sparks): "nvidia/Qwen3;rm -rf /"'),
    ({"specdec_serve_model": "org/a--b"}, '"org/a--b" is not a Hugging Face model id'),
    ({"specdec_serve_draft_model": "-x/y"}, 'specdec_serve_draft_model on spark-a (cluster sparks): "-x/y"'),
    ({"specdec_serve_model": "/models/../etc"}, '"/models/../etc" is not a Hugging Face model id (owner/name) or an absolute path'),
    ({"specdec_serve_draft_dir": "/opt/draft/"},
     'specdec_serve_draft_dir on spark-a (cluster sparks): "/opt/draft/" is not a directory under the /models mount'),
    ({"specdec_serve_draft_dir": "/models/a b"}, 'specdec_serve_draft_dir on spark-a (cluster sparks): "/models/a b" is not an absolute path'),
    ({"trtllm_container_name": "trtllm multinode"}, 'trtllm_container_name on spark-a: "trtllm multinode" is not a Docker container name'),
    ({"trtllm_container_image": "NVCR.io/Bad Image"},
     'trtllm_container_image on spark-a (cluster sparks): "NVCR.io/Bad Image" is not an image reference'),
    ({"trtllm_container_image_tag": "1.2.0rc6;x"}, 'trtllm_container_image_tag on spark-a (cluster sparks): "1.2.0rc6;x" is not an image tag'),
    ({"trtllm_container_qsfp_interfaces": ["enp1s0f1np1", "eth0/../x"]},
     'trtllm_container_qsfp_interfaces item on spark-a: "eth0/../x" is not a network interface name'),
    ({"trtllm_container_qsfp_addresses": ["192.168.200.300"]}, 'trtllm_container_qsfp_addresses item on spark-a: "192.168.200.300" is not an IP address'),
    ({"openmpi_hostfile_address": "192.168.200.99"}, 'openmpi_hostfile_address on spark-a: "192.168.200.99" is not one of this node\'s QSFP addresses'),
    ({"trtllm_container_hf_cache_dir": "relative/dir"}, 'trtllm_container_hf_cache_dir on spark-a: "relative/dir" is not an absolute path'),
    ({"trtllm_container_network_mode": "host;x"}, 'trtllm_container_network_mode on spark-a: "host;x" is not host, bridge, none'),
    ({"trtllm_container_env": {"BAD-NAME": "1"}},
     'trtllm_container_env key on spark-a (cluster sparks): "BAD-NAME" is not an environment variable name'),
    ({"trtllm_container_devices": ["/etc/shadow"]}, 'trtllm_container_devices item on spark-a: "/etc/shadow" is not a device'),
    ({"trtllm_container_restart_policy": "no"}, "trtllm_container_restart_policy on spark-a: \"no\" is not always, unless-stopped or on-failure"),
    ({"trtllm_container_memlock": 0}, "trtllm_container_memlock on spark-a: 0 is not -1 (unlimited)"),
    ({"specdec_serve_max_draft_len": "three"}, 'specdec_serve_max_draft_len on spark-a (cluster sparks): "three" is not an integer from 1 to 64'),
    ({"specdec_serve_port": 70000}, "specdec_serve_port on spark-a (cluster sparks): 70000 is not an integer from 1 to 65535"),
    ({"specdec_serve_host": "0.0.0.0 --x"}, 'specdec_serve_host on spark-a (cluster sparks): "0.0.0.0 --x" is not an IP address or a host name'),
    ({"specdec_serve_tp_size": 4}, "specdec_serve_tp_size on spark-a (cluster sparks): 4 is not tp_size x pp_size (4 x 1) = the number of nodes of "
     "cluster sparks (2 nodes: spark-a, spark-b): mpirun starts one rank per node and trtllm-serve's world size is tp x pp"),
    ({"specdec_serve_trtllm_version": "1.9.0"}, 'specdec_serve_trtllm_version on spark-a (cluster sparks): "1.9.0" is not a TensorRT-LLM release'),
    ({"specdec_serve_method": "medusa"}, 'specdec_serve_method on spark-a (cluster sparks): "medusa" is not one of eagle3'),
    ({"specdec_serve_extra_args": ["--port\n8000"]}, 'specdec_serve_extra_args item on spark-a (cluster sparks): "--port\\n8000"'),
    ({"specdec_serve_mpi_export": ["HF TOKEN"]}, 'specdec_serve_mpi_export item on spark-a (cluster sparks): "HF TOKEN"'),
    ({"specdec_serve_extra_options": {"speculative_config": {"decoding_type": "Eagle3"}}}, "for TensorRT-LLM 1.2.0rc6: speculative_config.decoding_type"),
    ({"specdec_serve_kv_cache_free_gpu_memory_fraction": 1.5},
     "specdec_serve_kv_cache_free_gpu_memory_fraction on spark-a (cluster sparks): 1.5 is not a number in (0, 1]"),
    ({"trtllm_container_published_ports": ["8000:80:x"]}, 'trtllm_container_published_ports item on spark-a: "8000:80:x" is not a published port'),
    ({"netplan_qsfp_mtu": 100000}, "netplan_qsfp_mtu on spark-a (cluster sparks): 100000 is not an integer from 576 to 9216"),
    ({"trtllm_container_cluster_hosts": ["spark-b", "spark-a"]},
     'trtllm_container_cluster_hosts on spark-a: ["spark-b", "spark-a"] differs from the cluster\'s nodes, head first (spark-a, spark-b)'),
])
def test_each_bad_value_fails_alone_with_field_value_and_what_is_accepted(variables, expected):
    # A cluster-wide variable is set for the whole cluster (its group); a node's own on that node.
    (name,) = variables
    if inputs.lookup(name).scope == inputs.CLUSTER:
        errors = errors_of(two, variables=variables)
    else:
        errors = errors_of(two, per_node={"spark-a": variables})
    assert len(errors) == 1, errors
    assert expected in errors[0], errors[0]


def test_bad_netplan_address_is_named_with_host():
    errors = errors_of(two, per_node={"spark-b": {"netplan_qsfp_addresses": {"enp1s0f1np1": "192.168.200.013/24",
                                                                             "enP2p1s0f1np1": "192.168.200.15/24"}}})
    assert any("netplan_qsfp_addresses" in e and "spark-b" in e and "192.168.200.013/24" in e for e in errors), errors


def test_same_address_on_both_nodes():
    errors = errors_of(two, per_node={"spark-b": {"netplan_qsfp_addresses": SEED_ADDRESSES["spark-a"]}})
    assert any("192.168.200.12" in e and "more than once" in e for e in errors), errors


def test_mismatched_ports_and_pulled_cable():
    facts = {"spark-a": spark("spark-a"), "spark-b": spark("spark-b", up=["enp1s0f0np0", "enP2p1s0f0np0"])}
    assert any("same port" in e.lower() or "re-seat" in e.lower() for e in errors_of(two, facts=facts))
    facts = {"spark-a": spark("spark-a"), "spark-b": spark("spark-b", up=[])}
    assert any("spark-b" in e and "unplugged" in e for e in errors_of(two, facts=facts))


def test_image_missing_without_pull_and_image_of_another_release():
    errors = errors_of(one, {"trtllm_container_pull": False})
    assert errors == ["trtllm_container_image on spark-a: %s is not on the node and trtllm_container_pull is false "
                      "(accepted: an image present on the node, or trtllm_container_pull: true)" % IMAGE]
    facts = spark("spark-a", images={IMAGE: {"present": True, "labels": {"com.nvidia.tensorrt-llm.version": "1.3.0rc12"}}})
    errors = errors_of(one, facts=facts)
    assert len(errors) == 1 and "reports TensorRT-LLM 1.3.0rc12 but specdec_serve_trtllm_version is 1.2.0rc6" in errors[0]


def test_docker_not_answering_and_bad_login_user():
    errors = errors_of(one, facts=spark("spark-a", docker_ok=False))
    assert errors == ["docker on spark-a: the engine does not answer (Cannot connect to the Docker daemon); install and "
                      "start Docker first"]
    errors = errors_of(one, facts=spark("spark-a", user="Bad User"))
    assert errors == ['login user on spark-a: "Bad User" is not a login name ([a-z_][a-z0-9_-]*)']


def test_missing_facts_and_bad_profile():
    assert "no node facts" in errors_of(p.plan_cluster, "c", ["a"], profile("single_spark_eagle3"), {"a": {}}, {})[0]
    assert "is not a mapping" in errors_of(p.plan_cluster, "c", ["a"], "oops", {"a": {}}, {"a": spark("a")})[0]


def test_one_spark_tp_size_and_unknown_profile_release():
    assert "1 on a single Spark" in errors_of(one, {"specdec_serve_tp_size": 2})[0]
    bad = copy.deepcopy(profile("single_spark_eagle3"))
    bad["trtllm_version"] = "0.9"
    errors = errors_of(p.plan_cluster, "c", ["a"], bad, {"a": {}}, {"a": spark("a")})
    assert errors[0].startswith('specdec_serve_trtllm_version on a (cluster c): "0.9" is not a TensorRT-LLM release')
    assert "Known releases: 1.2.0rc1, 1.2.0rc6, 1.2.0, 1.2.1, 1.3.0rc11, 1.3.0rc12, 1.3.0rc13" in errors[0]


# -- SSH trust ------------------------------------------------------------------------------------

def test_ssh_trust_from_public_keys_only():
    plans, dummy = two()
    ssh = plans["spark-b"]["container"]["ssh"]
    keys = {"spark-a": {"client": "ssh-ed25519 AAAAclientA c", "host": "ssh-ed25519 AAAAhostA h"},
            "spark-b": {"client": "ssh-ed25519 AAAAclientB c", "host": "ssh-ed25519 AAAAhostB h"}}
    files = p.ssh_trust(ssh, keys)
    authorized = files["/home/spark/.dgx-spark/ssh/authorized_keys"].splitlines()[1:]
    assert authorized == [
        'from="192.168.200.12,192.168.200.14,192.168.200.13,192.168.200.15",no-agent-forwarding,no-X11-forwarding '
        "ssh-ed25519 AAAAclientA dgx-spark-specdec@spark-a",
        'from="192.168.200.12,192.168.200.14,192.168.200.13,192.168.200.15",no-agent-forwarding,no-X11-forwarding '
        "ssh-ed25519 AAAAclientB dgx-spark-specdec@spark-b"]
    assert files["/home/spark/.dgx-spark/ssh/known_hosts"] == (
        "[192.168.200.12]:2233,[192.168.200.14]:2233 ssh-ed25519 AAAAhostA\n"
        "[192.168.200.13]:2233,[192.168.200.15]:2233 ssh-ed25519 AAAAhostB\n")
    with pytest.raises(ValueError, match="public keys of spark-b"):
        p.ssh_trust(ssh, {"spark-a": keys["spark-a"]})


# -- review findings ------------------------------------------------------------------------------

def test_link_local_on_a_fresh_pair_plans_the_link_but_cannot_serve_yet():
    node_vars = {h: {"netplan_qsfp_plan": "link_local"} for h in ("spark-a", "spark-b")}
    facts = {h: spark(h) for h in node_vars}
    plans, dummy = p.plan_network("sparks", ["spark-a", "spark-b"], node_vars, facts)
    assert "link-local: [ipv4]" in plans["spark-a"]["netplan"]["content"] and plans["spark-a"]["netplan"]["addresses"] == []
    errors = errors_of(p.plan_cluster, "sparks", ["spark-a", "spark-b"], profile("two_spark_eagle3"), node_vars, facts)
    assert len(errors) == 2 and "run playbooks/qsfp_link.yml first" in errors[0]


def test_draft_given_as_a_path_is_used_where_it_is():
    plans, dummy = one({"specdec_serve_draft_model": "/models/my-draft"})
    options = yaml.safe_load(plans["spark-a"]["serve"]["options_file"]["content"])
    assert options["speculative_config"]["speculative_model_dir"] == "/models/my-draft"
    assert [d["repo"] for d in plans["spark-a"]["serve"]["downloads"]] == ["nvidia/Llama-3.3-70B-Instruct-FP4"]
    assert "/models/my-draft" in plans["spark-a"]["container"]["docker"]["command"]


def test_bad_management_address_is_named():
    errors = errors_of(two, per_node={"spark-b": {"netplan_qsfp_management_address": "10.0.0.300"}})
    assert errors == ['netplan_qsfp_management_address on spark-b: "10.0.0.300" is not an IP address']


def test_null_in_inventory_leaves_out_a_flag_the_profile_sets():
    plans, dummy = two({"specdec_serve_max_num_tokens": None})
    assert "--max_num_tokens" not in plans["spark-a"]["serve"]["argv"]
    plans, dummy = one({"specdec_serve_kv_cache_free_gpu_memory_fraction": None})
    assert "--kv_cache_free_gpu_memory_fraction" not in plans["spark-a"]["serve"]["argv"]
    # An empty string still means "the default", as the roles' empty defaults always did.
    plans, dummy = two({"specdec_serve_max_num_tokens": ""})
    assert plans["spark-a"]["serve"]["argv"][plans["spark-a"]["serve"]["argv"].index("--max_num_tokens") + 1] == "1024"


# -- releases -------------------------------------------------------------------------------------

def test_the_inventory_moves_a_profile_to_the_release_nvidia_runs_it_on_now():
    plans, warnings = one({"specdec_serve_trtllm_version": "1.3.0rc12"})
    assert plans["spark-a"]["trtllm_version"] == "1.3.0rc12"
    assert "decoding_type: Draft_Target\n" in plans["spark-a"]["serve"]["options_file"]["content"]
    assert plans["spark-a"]["container"]["image"].endswith(":1.3.0rc12")
    assert not any("the profile's NVIDIA playbook runs on" in w for w in warnings)
    dummy, warnings = one({"specdec_serve_trtllm_version": "1.3.0rc13"})
    assert any("the profile's NVIDIA playbook runs on 1.2.0rc6, 1.3.0rc12" in w for w in warnings)
