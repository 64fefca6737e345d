"""Verify the single-Spark Triton EAGLE-3 converge in the lab (testinfra, node spark-a)."""

import json
import os
import subprocess
import sys

import pytest
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "resources"))
import verify_helpers as vh  # noqa: E402  pylint: disable=wrong-import-position

testinfra_hosts = vh.testinfra_hosts("spark-a")
CONFIG = vh.home("spark-a") + "/.dgx-spark"
REPO = CONFIG + "/llmapi_repo"


@pytest.fixture(scope="module")
def container(host):
    return vh.inspect(host, "spark-a")


def generate(host, body, path="/v2/models/tensorrt_llm/generate"):
    """POST from inside the node; returns (status, parsed body)."""
    script = ("import json, sys, urllib.request, urllib.error\n"
              "req = urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(), method='POST')\n"
              "try:\n"
              "    r = urllib.request.urlopen(req, timeout=60); print(r.status); print(r.read().decode())\n"
              "except urllib.error.HTTPError as e:\n"
              "    print(e.code); print(e.read().decode())\n")
    out = host.check_output("python3 -c %s %s %s", script, "http://127.0.0.1:8000" + path, json.dumps(body))
    status, _newline, text = out.partition("\n")
    return int(status), json.loads(text)


def test_triton_image_and_supervision(container):
    assert container["State"]["Running"]
    assert container["Config"]["Image"] == "local/tritonserver-standin:26.07-trtllm-python-py3"
    assert container["HostConfig"]["RestartPolicy"]["Name"] == "unless-stopped"
    cmd = container["Config"]["Cmd"]
    assert cmd[cmd.index("--daemon") + 1] == "tritonserver"
    assert cmd[cmd.index("--") + 1:] == [
        "python3", "/app/scripts/launch_triton_server.py", "--model_repo=/opt/tritonserver/llmapi_repo/",
        "--http_port", "8000", "--grpc_port", "8001", "--metrics_port", "8002"]
    mounts = {m["Destination"]: m for m in container["Mounts"]}
    assert mounts["/opt/tritonserver/llmapi_repo"]["Source"] == REPO


def test_model_repository_from_the_template_and_model_yaml(host):
    # Copied once from the image's /app/all_models/llmapi/; model.yaml is the plan's, for TensorRT-LLM 1.2.1.
    assert host.file(REPO + "/tensorrt_llm/config.pbtxt").exists
    assert host.file(REPO + "/tensorrt_llm/1/model.py").exists
    model_yaml = host.file(REPO + "/tensorrt_llm/1/model.yaml")
    assert model_yaml.user == "root" and model_yaml.mode == 0o644
    assert yaml.safe_load(model_yaml.content_string) == {
        "model": "meta-llama/Llama-3.1-8B-Instruct", "backend": "pytorch", "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1,
        "speculative_config": {"decoding_type": "Eagle", "max_draft_len": 3,
                               "speculative_model": "/models/EAGLE3-LLaMA3.1-Instruct-8B/"},
        "triton_config": {"max_batch_size": 0, "decoupled": False}}


def test_three_ports_and_the_generate_endpoint_with_perf_metrics(host):
    listening = vh.in_container(host, "spark-a", "ss -Hltn").stdout
    for port in (8000, 8001, 8002):
        assert ":%d " % port in listening, listening
    assert vh.http_get(host, "http://127.0.0.1:8000/v2/health/ready")[0] == 200
    status, body = generate(host, {"text_input": "What is ML?", "sampling_param_max_tokens": 50,
                                   "sampling_param_return_perf_metrics": True})
    assert status == 200 and body["model_name"] == "tensorrt_llm" and body["text_output"].startswith("What is ML?")
    # As the real backend sends them: strings.
    assert isinstance(body["acceptance_rate"], str) and int(body["total_draft_tokens"]) > 0
    status, body = generate(host, {"text_input": "x"}, "/v2/models/nope/generate")
    assert status == 400 and "unknown model" in body["error"]
    status, text = vh.http_get(host, "http://127.0.0.1:8002/metrics")
    assert status == 200 and 'nv_inference_request_success{model="tensorrt_llm",version="1"}' in text


def test_token_never_exposed(host, container):
    assert vh.TOKEN and vh.TOKEN not in str(container)
    assert vh.TOKEN not in vh.logs("spark-a")
    assert vh.TOKEN not in vh.in_container(host, "spark-a", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '").stdout


def test_kill_9_of_tritonserver_brings_it_back(host):
    name = vh.serving_container("spark-a")
    before = int(vh.docker("inspect", "--format", "{{.RestartCount}}", name).stdout.strip())
    top = vh.docker("top", name, "-eo", "pid,comm").stdout.splitlines()[1:]
    server = [line.split()[0] for line in top if line.split()[1] == "tritonserver"]
    assert server, top
    subprocess.run(["kill", "-9", server[0]], check=True)
    vh.wait_for_endpoint(host, "http://127.0.0.1:8000/v2/health/ready")
    assert int(vh.docker("inspect", "--format", "{{.RestartCount}}", name).stdout.strip()) > before


def test_a_bad_triton_config_is_named_and_nothing_changes(host):
    before = host.file(REPO + "/tensorrt_llm/1/model.yaml").content_string
    rc, output = vh.run_playbook("single_spark_triton_eagle3.yml", "-e",
                                 '{"specdec_serve_triton_config": {"max_batch_size": 8, "decoupled": false}}')
    assert rc != 0 and "triton_config.max_batch_size: 8; accepted: 0" in output, output[-3000:]
    assert "changed=0" in output.split("PLAY RECAP")[-1]
    assert host.file(REPO + "/tensorrt_llm/1/model.yaml").content_string == before


def test_eagle3_against_the_plain_model_at_concurrency_1(host, tmp_path):
    # The Triton tutorial's comparison, with the draft-length tuner's benchmark: the plain model, then max_draft_len 3.
    rc, output = vh.run_playbook("tune_draft_len.yml", "-e", "specdec_profile_name=single_spark_triton_eagle3",
                                 "-e", "specdec_tune_mode=sweep", "-e", '{"specdec_tune_candidates": [3]}',
                                 "-e", "specdec_tune_max_tokens=64", "-e", "specdec_tune_results_dir=%s" % tmp_path)
    assert rc == 0, output[-3000:]
    doc = json.loads((tmp_path / "tune.json").read_text())
    assert doc["baseline_tokens_per_s"] > 0
    setting = [s for s in doc["settings"] if s["max_draft_len"] == 3][0]
    assert setting["tokens_per_s"] > 0 and 0 < setting["acceptance_rate"] <= 1
    assert (tmp_path / "report.md").exists()


def test_the_draft_target_variant_serves_and_is_idempotent(host):
    rc, output = vh.run_playbook("single_spark_triton_eagle3.yml", "-e",
                                 "specdec_profile_name=single_spark_triton_draft_target")
    assert rc == 0, output[-3000:]
    spec = yaml.safe_load(host.file(REPO + "/tensorrt_llm/1/model.yaml").content_string)["speculative_config"]
    assert spec == {"decoding_type": "DraftTarget", "max_draft_len": 3,
                    "speculative_model": "/models/Llama-3.2-1B-Instruct/"}
    rc, output = vh.run_playbook("single_spark_triton_eagle3.yml", "-e",
                                 "specdec_profile_name=single_spark_triton_draft_target")
    assert rc == 0 and vh.changed_total(output) == 0, output[-3000:]
