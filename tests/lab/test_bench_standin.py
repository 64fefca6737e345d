"""specdec_bench's measurement (module_utils/_bench.py) against the stand-in serving a measured profile.

The stand-in's STANDIN_SPEC_PROFILE (what SPARK_LAB_SPEC_PROFILE passes to the lab's containers): acceptance by
draft position and a step of T + d*D + d*V ms. The figures the bench reports must follow it.
"""

import json

import pytest

from lab_helpers import MODEL, DRAFT, hf_download, running_server, write_yaml

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _bench, _endpoint

PROFILE = {"acceptance": [0.9, 0.7, 0.5], "target_step_ms": 4.0, "draft_token_ms": 0.5, "verify_token_ms": 0.25,
           "seed": 7}
PROMPTS = ["Write a haiku about a river.", "Explain speculative decoding to a child.",
           "List five uses of a paperclip.", "Summarize the plot of a heist movie you invent."]


def bench(server, stats=True):
    base = "http://127.0.0.1:%d" % server.port
    client = _endpoint.EndpointClient(base, _endpoint.make_urls_opener(), {}, request_timeout=30) if stats else None
    return _bench.run(base, "completions", MODEL, PROMPTS, 96, opener=_bench.make_stream_opener(), stats_client=client)


@pytest.fixture(name="profiled_env")
def fixture_profiled_env(standin_env):
    standin_env["STANDIN_SPEC_PROFILE"] = json.dumps(PROFILE)
    standin_env["STANDIN_TIME_SCALE"] = "1"
    return standin_env


def test_plain_model_steps_take_the_target_step(profiled_env, tmp_path):
    hf_download(profiled_env, MODEL)
    options = write_yaml(tmp_path / "o.yml", "enable_iter_perf_stats: true\n")
    with running_server(profiled_env, [MODEL, "--extra_llm_api_options", options], tmp_path) as server:
        result = bench(server)
    assert result["requests"] == 4 and result["output_tokens"] > 0
    assert result["step_ms_mean"] == pytest.approx(4.0, rel=0.01)
    assert result["accepted_histogram"] is None and result["acceptance_rate"] is None
    assert result["ttft_ms"]["p50"] > 0 and result["itl_ms"]["p95"] >= result["itl_ms"]["p50"]


def test_speculative_steps_follow_the_profile(profiled_env, tmp_path):
    hf_download(profiled_env, MODEL)
    draft = hf_download(profiled_env, DRAFT, "--local-dir", str(tmp_path / "draft"))
    text = ("enable_iter_perf_stats: true\nspeculative_config:\n  decoding_type: Eagle\n  max_draft_len: 3\n"
            "  speculative_model_dir: %s\n" % draft)
    options = write_yaml(tmp_path / "o.yml", text)
    with running_server(profiled_env, [MODEL, "--extra_llm_api_options", options], tmp_path) as server:
        result = bench(server)
    # T + d*D + d*V = 4 + 3*0.5 + 3*0.25 ms
    assert result["step_ms_mean"] == pytest.approx(6.25, rel=0.01)
    histogram = result["accepted_histogram"]
    assert len(histogram) == 4 and sum(histogram) == result["iterations"]
    # P(J >= 1) = 0.9: the first draft token is accepted in about 9 of 10 iterations.
    assert sum(histogram[1:]) / float(sum(histogram)) == pytest.approx(0.9, abs=0.06)
    assert 1.0 < result["mean_acceptance_length"] < 4.0
