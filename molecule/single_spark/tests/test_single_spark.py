"""Verify the single-Spark Draft-Target converge in the lab (testinfra, node spark-a)."""

import os
import subprocess
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


def test_container_runs_with_the_playbook_docker_run_settings(container):
    assert container["State"]["Running"]
    hc = container["HostConfig"]
    assert hc["IpcMode"] == "host"
    assert hc["NetworkMode"].startswith("container:")
    limits = {u["Name"]: (u["Soft"], u["Hard"]) for u in hc["Ulimits"]}
    assert limits["memlock"] == (8388608, 8388608)  # the lab's value; -1 on a Spark
    assert limits["stack"] == (67108864, 67108864)
    # Docker supervises the server: it is the container's own process, restarted when it exits.
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
        # Metrics on by default: /prometheus/metrics and the iteration stats the exporter reads.
        "return_perf_metrics": True,
        "enable_iter_perf_stats": True,
    }


def test_models_downloaded_once(host):
    hub = vh.home("spark-a") + "/.cache/huggingface/hub/models--nvidia--Llama-3.3-70B-Instruct-FP4"
    assert host.file(hub + "/.dgx-spark-complete").exists
    assert host.file(vh.home("spark-a") + "/models/Llama-3.1-8B-Instruct-FP4/.dgx-spark-complete").exists


def test_server_flags(container):
    cmd = container["Config"]["Cmd"]
    assert cmd[:2] == ["/bin/bash", "/etc/dgx-spark/entrypoint.sh"] and "--sshd" not in cmd
    assert cmd[cmd.index("--") + 1:] == [
        "trtllm-serve", "nvidia/Llama-3.3-70B-Instruct-FP4", "--backend", "pytorch", "--tp_size", "1", "--max_batch_size", "1",
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
    assert vh.TOKEN not in vh.logs("spark-a")
    assert vh.TOKEN not in vh.in_container(host, "spark-a", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '").stdout
    assert vh.TOKEN not in host.run("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '").stdout


def test_nothing_but_the_endpoint_listens_on_the_management_interface(host):
    management = host.check_output("ip -o -4 addr show dev eth0").split()[3].split("/")[0]
    listening = vh.in_container(host, "spark-a", "ss -Hltn").stdout.splitlines()
    exposed = [line for line in listening
               if line.split()[3].rsplit(":", 1)[0] in ("0.0.0.0", "*", "[::]", management)
               and int(line.split()[3].rsplit(":", 1)[1]) != vh.MANAGEMENT_SSH_PORT]
    # Open MPI 4.1 (the server's executor worker) binds the wildcard whatever *_if_include says: on the pinned ports,
    # which the firewall spec closes to everything but loopback.
    mpi = [line for line in exposed if 50100 <= int(line.split()[3].rsplit(":", 1)[1]) <= 50132]
    rules = vh.in_container(host, "spark-a", "iptables -w -S").stdout
    drop = '-A DGX_SPARK_MPI -m comment --comment "dgx-spark.specdec" -j DROP'
    assert not mpi or ("--dport 50100:50132" in rules and drop in rules), (mpi, rules)
    assert [line for line in exposed if line not in mpi] == [], exposed  # draft-target listens on localhost:8000


def test_a_restart_of_the_container_brings_the_endpoint_back_then_a_run_changes_nothing(host):
    vh.docker("restart", vh.serving_container("spark-a"))
    vh.wait_for_endpoint(host, "http://127.0.0.1:8000/health")
    rc, output = vh.run_playbook("single_spark_draft_target.yml")
    assert rc == 0 and vh.changed_total(output) == 0, output[-3000:]
    assert vh.TOKEN not in output


def test_kill_9_of_the_server_brings_it_back(host):
    name = vh.serving_container("spark-a")
    before = vh.docker("inspect", "--format", "{{.RestartCount}}", name).stdout.strip()
    top = vh.docker("top", name, "-eo", "pid,args").stdout.splitlines()[1:]
    server = [line.split()[0] for line in top if "trtllm-serve" in line]
    assert server, top
    subprocess.run(["kill", "-9", server[0]], check=True)
    vh.wait_for_endpoint(host, "http://127.0.0.1:8000/health")
    assert int(vh.docker("inspect", "--format", "{{.RestartCount}}", name).stdout.strip()) > int(before)


# The other one-Spark playbooks, then the teardown, on the same lab node (last: they replace the server).

@pytest.mark.parametrize("playbook, model", [
    ("single_spark_eagle3.yml", "openai/gpt-oss-120b"),
    ("single_spark_low_latency.yml", "openai/gpt-oss-120b"),
])
def test_other_single_spark_playbooks_serve_and_are_idempotent(host, playbook, model):
    rc, output = vh.run_playbook(playbook)
    assert rc == 0, output[-3000:]
    status, body = vh.http_get(host, "http://127.0.0.1:8000/v1/models")
    assert status == 200 and [m["id"] for m in yaml.safe_load(body)["data"]] == [model]
    rc, output = vh.run_playbook(playbook)
    assert rc == 0 and vh.changed_total(output) == 0, output[-3000:]


def test_teardown_removes_the_container_and_keeps_the_models(host):
    rc, output = vh.run_playbook("teardown.yml")
    assert rc == 0, output[-3000:]
    assert vh.docker("inspect", vh.serving_container("spark-a"), check=False).returncode != 0
    # and the metrics exporter next to it
    assert vh.docker("inspect", vh.serving_container("spark-a") + "-metrics", check=False).returncode != 0
    assert host.file(vh.home("spark-a") + "/models/Llama-3.1-8B-Instruct-FP4/.dgx-spark-complete").exists
    rc, output = vh.run_playbook("teardown.yml")
    assert rc == 0 and vh.changed_total(output) == 0, output[-3000:]
