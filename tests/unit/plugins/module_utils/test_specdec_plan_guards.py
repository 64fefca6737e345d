"""The plan's parts for what the lab hides: memory, encodings, links and NCCL, images, the allow-list, login token."""

import os
import sys

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_plan as p

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
from spark_nodes import PLAYBOOK_ADDRESSES, plan_errors, plan_pair, plan_single, spark  # noqa: E402  pylint: disable=wrong-import-position

GIB = 1024 ** 3


two, one, errors_of = plan_pair, plan_single, plan_errors


# -- memory -------------------------------------------------------------------------------------------------------

def test_memory_spec_of_a_single_spark():
    plans, dummy = one()
    memory = plans["spark-a"]["serve"]["memory"]
    assert memory == {
        "check": "fail", "headroom_bytes": 8 * GIB,
        "weights": ["/home/spark/.cache/huggingface/hub/models--openai--gpt-oss-120b",
                    "/home/spark/models/gpt-oss-120b-Eagle3"],
        "weights_share": 1.0, "estimate_bytes": None, "drop_caches": True, "guard": False,
        "guard_below_bytes": 8 * GIB, "guard_timeout": 3600, "ready_url": "http://127.0.0.1:8000/health",
        "names": {"headroom": "specdec_serve_memory_headroom_gib", "check": "specdec_serve_memory_check",
                  "estimate": "specdec_serve_weights_gib",
                  "weights": "openai/gpt-oss-120b and its draft nvidia/gpt-oss-120b-Eagle3-long-context"}}


def test_memory_settings_and_their_errors():
    plans, dummy = one({"specdec_serve_memory_check": "warn", "specdec_serve_memory_headroom_gib": "4.5",
                        "specdec_serve_weights_gib": 65, "specdec_serve_drop_caches": False,
                        "specdec_serve_memory_guard": "true", "specdec_serve_memory_guard_below_gib": 6})
    memory = plans["spark-a"]["serve"]["memory"]
    assert (memory["check"], memory["headroom_bytes"], memory["estimate_bytes"], memory["drop_caches"],
            memory["guard"], memory["guard_below_bytes"]) == ("warn", int(4.5 * GIB), 65 * GIB, False, True, 6 * GIB)
    errors = errors_of(one, {"specdec_serve_memory_check": "maybe", "specdec_serve_memory_headroom_gib": -1})
    assert errors == ['specdec_serve_memory_check on spark-a: "maybe" is not one of fail, warn, skip',
                      "specdec_serve_memory_headroom_gib on spark-a: -1 is not a number >= 0"]


def test_workers_wait_for_the_head_over_the_qsfp_link_and_hold_half():
    plans, dummy = two()
    assert plans["spark-a"]["serve"]["memory"]["ready_url"] == "http://127.0.0.1:8355/health"
    assert plans["spark-b"]["serve"]["memory"]["ready_url"] == "http://192.168.200.12:8355/health"
    assert plans["spark-b"]["serve"]["memory"]["weights_share"] == 0.5


def test_triton_readiness_url():
    plans, dummy = one(prof="single_spark_triton_eagle3")
    assert plans["spark-a"]["serve"]["memory"]["ready_url"] == "http://127.0.0.1:8000/v2/health/ready"


# -- gpt-oss encodings --------------------------------------------------------------------------------------------

def test_gpt_oss_profiles_fetch_and_mount_the_encodings():
    plans, dummy = one()
    container = plans["spark-a"]["container"]
    assert container["docker"]["env"]["TIKTOKEN_ENCODINGS_BASE"] == "/etc/dgx-spark/tiktoken"
    assert [f["dest"] for f in container["fetch"]] == [
        "/home/spark/.dgx-spark/tiktoken/cl100k_base.tiktoken", "/home/spark/.dgx-spark/tiktoken/o200k_base.tiktoken"]
    assert {"path": "/home/spark/.dgx-spark/tiktoken", "owner": "root", "mode": "0755",
            "record": {"kind": "tree"}} in container["dirs"]
    # Other models need none.
    plans, dummy = one(prof="single_spark_draft_target")
    assert plans["spark-a"]["container"]["fetch"] == []
    assert "TIKTOKEN_ENCODINGS_BASE" not in plans["spark-a"]["container"]["docker"]["env"]


def test_encodings_from_a_local_server():
    plans, dummy = one({"specdec_serve_tiktoken_base_url": "http://files:8080/encodings",
                        "specdec_serve_tiktoken_sha256": {"o200k_base": "A" * 64}})
    assert plans["spark-a"]["container"]["fetch"] == [{"url": "http://files:8080/encodings/o200k_base.tiktoken",
                                                       "dest": "/home/spark/.dgx-spark/tiktoken/o200k_base.tiktoken",
                                                       "checksum": "sha256:" + "a" * 64}]
    errors = errors_of(one, {"specdec_serve_tiktoken_base_url": "file:///tmp"})
    assert errors == ['specdec_serve_tiktoken_base_url on spark-a (cluster spark-a): "file:///tmp" is not an http(s) '
                      "URL of the directory that holds <name>.tiktoken"]


# -- links and NCCL -----------------------------------------------------------------------------------------------

def test_links_to_check_after_netplan_and_nccl_ib_hca():
    plans, dummy = two()
    assert plans["spark-a"]["netplan"]["mtu"] == 9000
    assert plans["spark-b"]["netplan"]["links"] == [
        {"iface": "enp1s0f1np1", "address": "192.168.200.13", "peer": "spark-a", "peer_address": "192.168.200.12",
         "mtu": 9000},
        {"iface": "enP2p1s0f1np1", "address": "192.168.200.15", "peer": "spark-a", "peer_address": "192.168.200.14",
         "mtu": 9000}]
    assert plans["spark-a"]["container"]["docker"]["env"]["NCCL_IB_HCA"] == "rocep1s0f1,roceP2p1s0f1"


def test_nccl_ib_hca_missing_warns_and_can_be_set():
    facts = {h: spark(h) for h in ("spark-a", "spark-b")}
    for fact in facts.values():
        fact["qsfp"]["rdma"] = []
    plans, warnings = two(facts=facts)
    assert "NCCL_IB_HCA" not in plans["spark-a"]["container"]["docker"]["env"]
    assert any(w.startswith("NCCL_IB_HCA on spark-a: not set") for w in warnings)
    plans, warnings = two({"trtllm_container_nccl_ib_hca": ["mlx5_0", "mlx5_1"]}, facts=facts)
    assert plans["spark-b"]["container"]["docker"]["env"]["NCCL_IB_HCA"] == "mlx5_0,mlx5_1"


def test_mtu_differing_between_the_ends_stops_the_plan():
    facts = {h: spark(h) for h in ("spark-a", "spark-b")}
    facts["spark-a"]["mtu"] = {"enp1s0f1np1": 9000, "enP2p1s0f1np1": 9000}
    facts["spark-b"]["mtu"] = {"enp1s0f1np1": 1500, "enP2p1s0f1np1": 9000}
    # The netplan files are installed and current: netplan is not applied, so the MTU would stay different.
    plans, dummy = two(facts=facts)
    content = plans["spark-a"]["netplan"]["content"], plans["spark-b"]["netplan"]["content"]
    for host, text in zip(("spark-a", "spark-b"), content):
        facts[host]["netplan"] = {"/etc/netplan/40-cx7.yaml": {"sha256": p.sha256(text), "mode": "0600",
                                                               "owner": "root", "group": "root"}}
        facts[host]["ipv4"] = {i: [c] for i, c in PLAYBOOK_ADDRESSES[host].items()}
    errors = errors_of(two, facts=facts)
    assert errors == ["QSFP link enp1s0f1np1 of spark-a (192.168.200.12) to spark-b (192.168.200.13): the MTU would "
                      "be 9000 on spark-a and 1500 on spark-b after this run (planned: 9000; netplan is not applied on "
                      "spark-a and spark-b, its file is already the planned one): NCCL needs the same MTU on both "
                      "ends. Restore it on the node that differs (netplan apply), or set netplan_qsfp_mtu"]


# -- images -------------------------------------------------------------------------------------------------------

def test_image_report_and_a_moved_tag():
    image = "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6"
    fact = spark("spark-a", images={image: {"present": True, "id": "sha256:" + "b" * 64, "repo_digests": [],
                                            "labels": {}, "env": {"TRTLLM_VERSION": "1.2.0rc6"}}})
    fact["containers"] = {"trtllm-specdec": {"image_ref": image, "image_id": "sha256:" + "a" * 64, "running": True}}
    plans, warnings = one(facts=fact)
    assert plans["spark-a"]["container"]["image_report"].endswith("TensorRT-LLM 1.2.0rc6")
    assert [w for w in warnings if w.startswith("trtllm_container_image on spark-a: %s now points to" % image)]


def test_image_by_digest():
    image = "nvcr.io/nvidia/tensorrt-llm/release@sha256:" + "c" * 64
    plans, dummy = one({"trtllm_container_image": image})
    assert plans["spark-a"]["container"]["docker"]["image"] == image
    errors = errors_of(one, {"trtllm_container_image": "nvcr.io/nvidia/tensorrt-llm/release@sha256:abc"})
    assert errors[0].startswith("trtllm_container_image on spark-a (cluster spark-a): ")


# -- who may reach the endpoint -----------------------------------------------------------------------------------

def test_allow_list_guards_the_serving_ports():
    plans, dummy = one({"specdec_serve_host": "0.0.0.0", "specdec_serve_allowed_clients": ["10.0.0.7", "10.1.0.0/16"]})
    container = plans["spark-a"]["container"]
    firewall = container["firewall"]
    assert firewall["enabled"] and firewall["active"] and firewall["clients"]["4"] == ["10.0.0.7/32", "10.1.0.0/16"]
    # The server's port and the metrics exporter's.
    assert firewall["ports"] == [8000, 9464]
    # The container applies it before the server starts, and keeps it: its spec and program are written next to it.
    command = container["docker"]["command"]
    assert command[command.index("--firewall") + 1] == "/etc/dgx-spark/firewall.json"
    assert container["docker"]["capabilities"] == ["NET_ADMIN"]
    assert firewall["file"] in container["files"]
    assert [p["source"] for p in container["programs"]] == ["_firewall.py", "_metrics.py"]
    # A changed allow-list is applied by the watcher: no restart of the server for it (nor for the token).
    assert firewall["file"]["path"] in container["no_restart"] and container["token_file"] in container["no_restart"]
    # Triton: its three ports.
    plans, dummy = one({"specdec_serve_allowed_clients": ["10.0.0.7"]}, prof="single_spark_triton_eagle3")
    assert plans["spark-a"]["container"]["firewall"]["ports"] == [8000, 8001, 8002]


def test_allow_list_of_a_pair_admits_the_workers_and_leaves_workers_open():
    plans, dummy = two({"specdec_serve_allowed_clients": ["10.0.0.7"]})
    head = plans["spark-a"]["container"]["firewall"]
    assert head["clients"]["4"] == [
        "10.0.0.7/32", "192.168.200.12/32", "192.168.200.14/32", "192.168.200.13/32", "192.168.200.15/32"]
    assert plans["spark-b"]["container"]["firewall"]["enabled"] is False
    assert plans["spark-b"]["container"]["firewall"]["changes"]["apply"] is False


def test_ipv6_clients_and_an_ipv6_listener():
    plans, dummy = one({"specdec_serve_host": "::", "specdec_serve_allowed_clients": ["10.0.0.7", "fd00:1::/64"]})
    firewall = plans["spark-a"]["container"]["firewall"]
    assert firewall["clients"] == {"4": ["10.0.0.7/32"], "6": ["fd00:1::/64"]} and firewall["require_ipv6"]
    fact = spark("spark-a")
    fact["tools"] = {"iptables": True, "ip6tables": False}
    errors = errors_of(one, {"specdec_serve_host": "::", "specdec_serve_allowed_clients": ["10.0.0.7"]}, facts=fact)
    assert errors == ["specdec_serve_host on spark-a (cluster spark-a): :: listens on IPv6 too, and spark-a has no "
                      "ip6tables to hold the allow-list there (install ip6tables, or set specdec_serve_host: 0.0.0.0)"]


def test_rules_already_there_change_nothing_and_a_dropped_list_removes_them():
    variables = {"specdec_serve_host": "0.0.0.0", "specdec_serve_allowed_clients": ["10.0.0.7"]}
    fact = spark("spark-a")
    fact["firewall"] = ["-N DGX-SPECDEC",
                        '-A INPUT -p tcp -m multiport --dports 8000,9464 -m comment --comment "dgx-spark.specdec" -j DGX-SPECDEC',
                        '-A DGX-SPECDEC -s 10.0.0.7/32 -m comment --comment "dgx-spark.specdec" -j ACCEPT',
                        '-A DGX-SPECDEC -i lo -m comment --comment "dgx-spark.specdec" -j ACCEPT',
                        '-A DGX-SPECDEC -p tcp -m comment --comment "dgx-spark.specdec" -j REJECT --reject-with tcp-reset']
    plans, dummy = one(variables, facts=fact)
    assert plans["spark-a"]["container"]["firewall"]["changes"]["apply"] is False
    # The list dropped: the container's watcher (still keeping Open MPI's ports) removes the chain itself.
    plans, dummy = one({"specdec_serve_host": "0.0.0.0"}, facts=fact)
    assert plans["spark-a"]["container"]["firewall"]["changes"]["remove"] == []
    # Nothing left for a watcher to keep: the run removes the rules.
    plans, dummy = one({"specdec_serve_host": "0.0.0.0", "trtllm_container_mpi_firewall": False}, facts=fact)
    changes = plans["spark-a"]["container"]["firewall"]["changes"]
    assert changes["remove"][0][:4] == ["iptables", "-w", "-D", "INPUT"]
    assert changes["remove"][-2:] == [["iptables", "-w", "-F", "DGX-SPECDEC"], ["iptables", "-w", "-X", "DGX-SPECDEC"]]
    assert "firewall" in plans["spark-a"]["changes"]


def test_published_port_keeps_the_rules_in_the_containers_namespace():
    fact = spark("spark-a")
    # An older release wrote DOCKER-USER rules in the node's namespace: they go.
    fact["firewall"] = ['-A DOCKER-USER -i docker0 -m comment --comment "dgx-spark.specdec" -j ACCEPT']
    plans, dummy = one({"specdec_serve_allowed_clients": ["10.0.0.7"]}, prof="single_spark_low_latency", facts=fact)
    firewall = plans["spark-a"]["container"]["firewall"]
    assert firewall["bridge"] and firewall["enabled"]
    assert firewall["changes"]["remove"] == [["iptables", "-w", "-D", "DOCKER-USER", "-i", "docker0", "-m", "comment",
                                              "--comment", "dgx-spark.specdec", "-j", "ACCEPT"]]


def test_allow_list_errors_and_warnings():
    errors = errors_of(one, {"specdec_serve_allowed_clients": ["10.0.0.300", "me"]})
    accepted = "an IPv4 or IPv6 address or network (A.B.C.D, A.B.C.D/N, X:Y::Z or X:Y::/N)"
    assert errors == ['specdec_serve_allowed_clients item on spark-a (cluster spark-a): "10.0.0.300" is not ' + accepted,
                      'specdec_serve_allowed_clients item on spark-a (cluster spark-a): "me" is not ' + accepted]
    fact = spark("spark-a")
    fact["tools"] = {"iptables": False}
    errors = errors_of(one, {"specdec_serve_allowed_clients": ["10.0.0.7"]}, facts=fact)
    assert errors == ["specdec_serve_allowed_clients on spark-a (cluster spark-a): the allow-list is enforced with "
                      "iptables, which is not installed on spark-a (install the iptables package, or leave the list "
                      "empty)"]
    dummy, warnings = one({"specdec_serve_allowed_clients": ["10.0.0.7"]})  # the profile listens on localhost
    assert any("listens on localhost only" in w for w in warnings)


# -- NVIDIA's older single-Spark guide ----------------------------------------------------------------------------

def test_dev_image_and_the_login_token():
    plans, warnings = one(prof="single_spark_draft_target_dev")
    container = plans["spark-a"]["container"]
    assert container["docker"]["image"] == "nvcr.io/nvidia/tensorrt-llm/release:spark-single-gpu-dev"
    assert container["docker"]["env"]["HF_TOKEN_PATH"] == "/root/.cache/huggingface/token"
    assert (container["token_file"], container["token_owner"], container["token_keep"]) == (
        "/home/spark/.cache/huggingface/token", "spark", True)
    assert any("no token stored by `huggingface-cli login`" in w for w in warnings)
    fact = spark("spark-a")
    fact["hf_login_token"] = True
    dummy, warnings = one(prof="single_spark_draft_target_dev", facts=fact)
    assert not any("huggingface-cli login" in w for w in warnings)
    # The inventory's tag wins over the profile's.
    plans, dummy = one({"trtllm_container_image_tag": "1.2.0rc1"}, prof="single_spark_draft_target_dev")
    assert plans["spark-a"]["container"]["docker"]["image"].endswith(":1.2.0rc1")
