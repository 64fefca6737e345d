"""The plan with the Triton frontend (the Triton tutorial's LLM API backend): what the roles get, and each mistake."""

import hashlib
import os
import sys

import pytest
import yaml

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_plan as p

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
from spark_nodes import profile, spark  # noqa: E402  pylint: disable=wrong-import-position


def triton(variables=None, prof="single_spark_triton_eagle3", facts=None):
    return p.plan_cluster("spark-a", ["spark-a"], profile(prof), {"spark-a": dict(variables or {})},
                          {"spark-a": facts or spark("spark-a")})


def errors(variables=None, prof="single_spark_triton_eagle3"):
    with pytest.raises(p.PlanError) as info:
        triton(variables, prof)
    return info.value.errors


def test_the_tutorials_eagle3_through_triton():
    plans, warnings = triton()
    plan = plans["spark-a"]
    assert warnings == []
    assert plan["trtllm_version"] == "1.2.1"  # Triton 26.07 ships TensorRT-LLM 1.2.1
    docker = plan["container"]["docker"]
    assert docker["name"] == "triton-specdec"
    assert docker["image"] == "nvcr.io/nvidia/tritonserver:26.07-trtllm-python-py3"
    assert "/home/spark/.dgx-spark/llmapi_repo:/opt/tritonserver/llmapi_repo" in docker["volumes"]
    assert {"path": "/home/spark/.dgx-spark/llmapi_repo", "owner": "root", "mode": "0755",
            "record": {"kind": "tree"}} in plan["container"]["dirs"]
    serve = plan["serve"]
    content = serve["options_file"]["content"]
    assert serve["options_file"]["path"] == "/home/spark/.dgx-spark/llmapi_repo/tensorrt_llm/1/model.yaml"
    assert yaml.safe_load(content) == {
        "model": "meta-llama/Llama-3.1-8B-Instruct", "backend": "pytorch", "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1,
        # 1.2.1 spells EAGLE-3 "Eagle" and names the draft speculative_model.
        "speculative_config": {"decoding_type": "Eagle", "max_draft_len": 3,
                               "speculative_model": "/models/EAGLE3-LLaMA3.1-Instruct-8B/"},
        "triton_config": {"max_batch_size": 0, "decoupled": False}}
    assert serve["template"] == {"marker": "/home/spark/.dgx-spark/llmapi_repo/tensorrt_llm/config.pbtxt",
                                 "argv": ["cp", "-R", "-n", "/app/all_models/llmapi/.", "/opt/tritonserver/llmapi_repo/"]}
    digest = hashlib.sha256(content.encode()).hexdigest()
    command = docker["command"]
    assert command[command.index("--expect") + 1] == "/opt/tritonserver/llmapi_repo/tensorrt_llm/1/model.yaml=" + digest
    assert command[command.index("--daemon") + 1] == "tritonserver"
    assert command[command.index("--") + 1:] == [
        "python3", "/app/scripts/launch_triton_server.py", "--model_repo=/opt/tritonserver/llmapi_repo/",
        "--http_port", "8000", "--grpc_port", "8001", "--metrics_port", "8002"]
    assert serve["endpoint"] == {
        "url": "http://127.0.0.1:8000", "port": 8000, "model": "tensorrt_llm", "api": "triton", "prompt": "What is ML?",
        "max_tokens": 50, "requests": 1, "metrics_url": "http://127.0.0.1:8002", "prometheus_url": None,
        "tokenizer": {"container": "triton-specdec", "model": "meta-llama/Llama-3.1-8B-Instruct"},
        # The loading's progress lines read Triton's readiness.
        "ready": {"label": "triton-specdec", "kind": "load", "container": "triton-specdec",
                  "url": "http://127.0.0.1:8000/v2/health/ready"}}


def test_draft_target_variant_and_an_explicit_release():
    plan = triton({"specdec_serve_trtllm_version": "1.3.0rc13", "trtllm_container_image_tag": "my-26.07"},
                  "single_spark_triton_draft_target")
    plans, warnings = plan
    spec = yaml.safe_load(plans["spark-a"]["serve"]["options_file"]["content"])["speculative_config"]
    assert spec == {"decoding_type": "Draft_Target", "max_draft_len": 3,
                    "speculative_model": "/models/Llama-3.2-1B-Instruct/"}
    assert plans["spark-a"]["container"]["image"] == "nvcr.io/nvidia/tritonserver:my-26.07"
    assert warnings[0].startswith("specdec_serve_trtllm_version on spark-a (cluster spark-a): 1.3.0rc13, but Triton "
                                  "26.07 ships TensorRT-LLM 1.2.1")


def test_flags_become_llm_api_arguments_of_model_yaml():
    plans, dummy = triton({"specdec_serve_max_batch_size": 4, "specdec_serve_kv_cache_free_gpu_memory_fraction": 0.8,
                           "specdec_serve_options": {"enable_iter_perf_stats": True}})
    doc = yaml.safe_load(plans["spark-a"]["serve"]["options_file"]["content"])
    assert doc["max_batch_size"] == 4 and doc["kv_cache_config"] == {"free_gpu_memory_fraction": 0.8}
    assert doc["enable_iter_perf_stats"] is True and doc["triton_config"]["max_batch_size"] == 0


@pytest.mark.parametrize("variables,message", [
    ({"specdec_serve_triton_release": "24.12"}, 'specdec_serve_triton_release: "24.12" is not a Triton release of '
                                                'the form YY.MM from 25.01 on'),
    ({"specdec_serve_triton_release": "27.01"}, 'specdec_serve_triton_release: "27.01" is newer than the Triton '
                                                'releases this collection knows (25.01 to 26.07); set '
                                                'specdec_serve_trtllm_version'),
    ({"specdec_serve_triton_release": "25.12"}, 'the TensorRT-LLM release of Triton 25.12 (specdec_serve_triton_release'
                                                ' on spark-a (cluster spark-a)): "1.1.0" is not a TensorRT-LLM release '
                                                'this collection knows'),
    ({"specdec_serve_host": "10.0.0.1"}, "specdec_serve_host on spark-a (cluster spark-a): \"10.0.0.1\" is not "
                                         "0.0.0.0 with the Triton frontend"),
    ({"specdec_serve_extra_args": ["--log_level", "info"]}, "specdec_serve_extra_args on spark-a (cluster spark-a)"),
    ({"specdec_serve_triton_metrics_port": 8000}, "three different ports for HTTP (specdec_serve_port), gRPC and "
                                                  "metrics (now 8000, 8001, 8000)"),
    ({"specdec_serve_triton_config": {"max_batch_size": 8, "decoupled": False}},
     "triton_config.max_batch_size: 8; accepted: 0"),
    ({"specdec_serve_triton_config": {"decoupled": "yes"}}, "triton_config.decoupled: \"yes\"; accepted: true"),
    ({"specdec_serve_validate_api": "chat"}, "specdec_serve_validate_api on spark-a (cluster spark-a): \"chat\""),
    ({"trtllm_container_mode": "multinode"}, "specdec_serve_frontend on spark-a (cluster spark-a): \"triton\" is "
                                             "not trtllm-serve for a multinode profile"),
])
def test_mistakes_are_named_before_anything_changes(variables, message):
    found = errors(variables)
    assert any(message in e for e in found), found


def test_streaming_is_warned_about_config_pbtxt():
    plans, warnings = triton({"specdec_serve_triton_config": {"max_batch_size": 0, "decoupled": True}})
    assert "may also need model_transaction_policy { decoupled: true } in tensorrt_llm/config.pbtxt" in warnings[0]
    assert yaml.safe_load(plans["spark-a"]["serve"]["options_file"]["content"])["triton_config"]["decoupled"] is True
