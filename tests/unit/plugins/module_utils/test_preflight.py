"""Unit tests for what a real Spark needs: memory spec, encodings, both ends of each link, image report and drift."""

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _preflight as pre

# The address plan of NVIDIA's two-Spark speculative-decoding playbook ("Run on Two Sparks").
PLAYBOOK_ADDRESSES = {"spark-a": [{"iface": "enp1s0f1np1", "cidr": "192.168.200.12/24"},
                                  {"iface": "enP2p1s0f1np1", "cidr": "192.168.200.14/24"}],
                      "spark-b": [{"iface": "enp1s0f1np1", "cidr": "192.168.200.13/24"},
                                  {"iface": "enP2p1s0f1np1", "cidr": "192.168.200.15/24"}]}


def test_links_pair_the_same_netdev_in_one_subnet():
    links = pre.pair_links(PLAYBOOK_ADDRESSES)
    assert links["spark-a"] == [
        {"iface": "enp1s0f1np1", "address": "192.168.200.12", "peer": "spark-b", "peer_iface": "enp1s0f1np1",
         "peer_address": "192.168.200.13"},
        {"iface": "enP2p1s0f1np1", "address": "192.168.200.14", "peer": "spark-b", "peer_iface": "enP2p1s0f1np1",
         "peer_address": "192.168.200.15"}]
    assert [link["peer_address"] for link in links["spark-b"]] == ["192.168.200.12", "192.168.200.14"]


def test_links_of_one_subnet_per_netdev_and_without_addresses():
    entries = {"a": [{"iface": "x0", "cidr": "192.168.100.10/24"}, {"iface": "x1", "cidr": "192.168.101.10/24"}],
               "b": [{"iface": "y1", "cidr": "192.168.101.11/24"}, {"iface": "y0", "cidr": "192.168.100.11/24"}],
               "c": [{"iface": "x0", "cidr": None}]}
    links = pre.pair_links(entries)
    assert [(lk["iface"], lk["peer_iface"]) for lk in links["a"]] == [("x0", "y0"), ("x1", "y1")]
    assert links["c"] == []


def test_mtu_differing_between_the_ends_is_named():
    links = pre.pair_links(PLAYBOOK_ADDRESSES)
    mtus = {"spark-a": {"enp1s0f1np1": 9000, "enP2p1s0f1np1": 9000},
            "spark-b": {"enp1s0f1np1": 1500, "enP2p1s0f1np1": 9000}}
    (message,) = pre.mtu_errors(links, mtus, 9000, {"spark-a": False, "spark-b": False})
    assert message.startswith("QSFP link enp1s0f1np1 of spark-a (192.168.200.12) to spark-b (192.168.200.13): the MTU "
                              "would be 9000 on spark-a and 1500 on spark-b after this run (planned: 9000; netplan is "
                              "not applied on spark-a and spark-b, its file is already the planned one)")
    # netplan applied where it differs: it sets the planned MTU, nothing to stop for.
    assert pre.mtu_errors(links, mtus, 9000, {"spark-a": False, "spark-b": True}) == []
    # MTU left alone: the ends must agree as they are.
    (message,) = pre.mtu_errors(links, mtus, None, {"spark-a": True, "spark-b": True})
    assert "(planned: left alone (netplan_qsfp_mtu: null)" in message


def test_mtu_equal_but_not_the_planned_one():
    mtus = {h: {"enp1s0f1np1": 1500, "enP2p1s0f1np1": 9000} for h in PLAYBOOK_ADDRESSES}
    (message,) = pre.mtu_errors(pre.pair_links(PLAYBOOK_ADDRESSES), mtus, 9000, {"spark-a": False, "spark-b": False})
    assert "the MTU is 1500 on both ends but netplan plans 9000 and its file is already installed" in message
    # Unknown MTUs (a netdev the facts do not list) are not judged.
    assert pre.mtu_errors(pre.pair_links(PLAYBOOK_ADDRESSES), {}, 9000, {}) == []


def test_encodings_fetched_into_the_config_dir_with_checksums():
    spec = pre.encodings_spec("/home/spark/.dgx-spark", "/etc/dgx-spark", pre.TIKTOKEN_BASE_URL + "/",
                              pre.TIKTOKEN_SHA256)
    assert spec["env"] == {"TIKTOKEN_ENCODINGS_BASE": "/etc/dgx-spark/tiktoken"}
    assert spec["files"][1] == {
        "url": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "dest": "/home/spark/.dgx-spark/tiktoken/o200k_base.tiktoken",
        "checksum": "sha256:446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"}
    assert pre.encodings_errors(pre.TIKTOKEN_BASE_URL, pre.TIKTOKEN_SHA256) == []
    assert [e[0] for e in pre.encodings_errors("ftp://x", {"o200k_base": "abc", "Bad Name": "0" * 64})] == [
        "specdec_serve_tiktoken_base_url", "specdec_serve_tiktoken_sha256.o200k_base",
        "specdec_serve_tiktoken_sha256.Bad Name"]
    assert pre.encodings_errors(pre.TIKTOKEN_BASE_URL, {})[0][0] == "specdec_serve_tiktoken_sha256"


def test_memory_spec_in_bytes():
    spec = pre.memory_spec("fail", 8, ["/w"], 0.5, 60.5, True, False, 8, 3600, "http://127.0.0.1:8000/health", "m")
    assert spec["headroom_bytes"] == 8 * pre.GIB and spec["estimate_bytes"] == int(60.5 * pre.GIB)
    assert spec["weights_share"] == 0.5 and spec["names"]["weights"] == "m"
    assert pre.memory_spec("warn", 0, [], 1.0, None, False, True, 4, 10, "u", "m")["estimate_bytes"] is None


IMAGE = "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6"
FOUND = {"present": True, "id": "sha256:" + "b" * 64, "repo_digests": ["nvcr.io/nvidia/tensorrt-llm/release@sha256:" + "c" * 64]}


def test_image_report():
    assert pre.image_report(IMAGE, FOUND, "1.2.0rc6") == (
        IMAGE + ": ID sha256:bbbbbbbbbbbb, digest nvcr.io/nvidia/tensorrt-llm/release@sha256:" + "c" * 64
        + ", TensorRT-LLM 1.2.0rc6")
    local = pre.image_report("local/x:1", {"present": True, "id": "sha256:1", "repo_digests": []}, None)
    assert "digest none (built or loaded locally, never pulled)" in local and "not reported by the image" in local
    assert pre.image_report(IMAGE, {"present": False}, None) == IMAGE + ": not on the node yet (pulled before the container starts)"


def test_tag_moved_since_the_container_was_created():
    old = {"name": "trtllm-specdec", "image_ref": IMAGE, "image_id": "sha256:" + "a" * 64, "running": True}
    warning = pre.image_drift(IMAGE, FOUND, old)
    assert warning.startswith(IMAGE + " now points to sha256:bbbbbbbbbbbb, but the container trtllm-specdec was "
                              "created from sha256:aaaaaaaaaaaa in an earlier run")
    assert "repository@sha256:" in warning
    assert pre.image_drift(IMAGE, FOUND, dict(old, image_id=FOUND["id"])) == ""
    assert pre.image_drift(IMAGE, FOUND, dict(old, image_ref="other:1")) == ""
    assert pre.image_drift("repo@sha256:" + "c" * 64, FOUND, old) == ""
    assert pre.image_drift(IMAGE, FOUND, None) == ""
