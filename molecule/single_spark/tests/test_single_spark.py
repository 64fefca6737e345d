"""Verify the single-Spark Draft-Target converge in the lab (testinfra, node spark-a)."""

import os
import sys

import pytest
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "resources"))
import verify_helpers as vh  # noqa: E402  pylint: disable=wrong-import-position

testinfra_hosts = vh.testinfra_hosts("spark-a")
CONFIG = vh.home("spark-a") + "/.dgx-spark"


@pytest.fixture(scope="module")
def container(host):
    return vh.inspect(host, "spark-a")


def test_login_user_runs_docker_without_sudo(host):
    assert "docker" in host.user("spark").groups
    with host.sudo("spark"):
        assert host.run("docker ps -q").rc == 0


def test_container_runs_with_the_seed_settings(container):
    assert container["State"]["Running"]
    hc = container["HostConfig"]
    assert hc["IpcMode"] == "host"
    assert hc["NetworkMode"].startswith("container:")
    limits = {u["Name"]: (u["Soft"], u["Hard"]) for u in hc["Ulimits"]}
    assert limits["memlock"] == (8388608, 8388608)  # the lab's value; -1 on a Spark
    assert limits["stack"] == (67108864, 67108864)
    assert hc["RestartPolicy"]["Name"] == "unless-stopped"
    assert not hc.get("DeviceRequests")  # trtllm_container_gpus: never in the lab
    assert container["Config"]["Image"] == "local/tensorrt-llm-standin:1.2.0rc6"


def test_mounts(container):
    mounts = {m["Destination"]: m for m in container["Mounts"]}
    assert mounts["/root/.cache/huggingface"]["Source"] == vh.home("spark-a") + "/.cache/huggingface"
    assert mounts["/models"]["Source"] == vh.home("spark-a") + "/models"
    assert mounts["/etc/dgx-spark"]["Source"] == CONFIG
    assert mounts["/etc/dgx-spark"]["RW"] is False


def test_token_is_a_root_only_file_named_by_path(host, container):
    env = dict(e.split("=", 1) for e in container["Config"]["Env"])
    assert env["HF_TOKEN_PATH"] == "/etc/dgx-spark/hf_token"
    assert "HF_TOKEN" not in env
    token_file = host.file(CONFIG + "/hf_token")
    assert token_file.mode == 0o600 and token_file.user == "root"
    with host.sudo():
        assert token_file.content_string == vh.TOKEN


def test_options_file(host):
    f = host.file(CONFIG + "/extra-llm-api-config.yml")
    assert f.user == "root" and f.mode == 0o644
    assert yaml.safe_load(f.content_string) == {
        "print_iter_log": False,
        "disable_overlap_scheduler": True,
        "speculative_config": {"decoding_type": "DraftTarget", "max_draft_len": 4,
                               "speculative_model_dir": "/models/Llama-3.1-8B-Instruct-FP4/"},
        "kv_cache_config": {"enable_block_reuse": False},
    }


def test_models_downloaded_once(host):
    hub = vh.home("spark-a") + "/.cache/huggingface/hub/models--nvidia--Llama-3.3-70B-Instruct-FP4"
    assert host.file(hub + "/.dgx-spark-complete").exists
    assert host.file(vh.home("spark-a") + "/models/Llama-3.1-8B-Instruct-FP4/.dgx-spark-complete").exists


def test_server_flags(host):
    args = vh.in_container(host, "spark-a", "cat /proc/$(cat /run/dgx-spark-serve.pid)/cmdline | tr '\\0' ' '").stdout
    words = args.split()
    # argv is [python, /path/to/trtllm-serve, ...] for a console script.
    serve = next(i for i, w in enumerate(words) if w.endswith("trtllm-serve"))
    assert words[serve + 1:] == [
        "nvidia/Llama-3.3-70B-Instruct-FP4", "--backend", "pytorch", "--tp_size", "1", "--max_batch_size", "1",
        "--kv_cache_free_gpu_memory_fraction", "0.9",
        "--extra_llm_api_options", "/etc/dgx-spark/extra-llm-api-config.yml", "--host", "localhost", "--port", "8000"]


def test_endpoint_answers(host):
    status = vh.http_get(host, "http://127.0.0.1:8000/health")[0]
    assert status == 200
    status, body = vh.http_get(host, "http://127.0.0.1:8000/v1/models")
    assert status == 200
    assert [m["id"] for m in yaml.safe_load(body)["data"]] == ["nvidia/Llama-3.3-70B-Instruct-FP4"]


def test_token_never_exposed(host, container):
    assert vh.TOKEN and vh.TOKEN not in str(container)
    assert vh.TOKEN not in vh.in_container(host, "spark-a", "cat /var/log/trtllm-serve.log").stdout
    assert vh.TOKEN not in vh.in_container(host, "spark-a", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '").stdout
    assert vh.TOKEN not in host.run("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '").stdout
    assert vh.TOKEN not in host.run("docker logs %s 2>&1", vh.serving_container("spark-a")).stdout
