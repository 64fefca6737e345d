"""specdec_bench's measurement (module_utils/_bench.py) against the stand-in serving a measured profile.

The stand-in's STANDIN_SPEC_PROFILE (what SPARK_LAB_SPEC_PROFILE passes to the lab's containers): acceptance by
draft position and a step of T + d*D + d*V ms. The figures the bench reports must follow it.

Acceptance is read the one way the collection reads it: Prometheus counters scraped before and after the measured
requests. The stand-in plays a 1.2.x release (iteration stats on ``/metrics``, no speculative-decoding counters of its
own), so the counters come from the collection's exporter (``_metrics.Exporter``), run here in-process on a loopback
port with the stand-in as its upstream, as the specdec_monitoring role runs it next to the server.
"""

import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lab_helpers import MODEL, DRAFT, hf_download, running_server, write_yaml

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _bench, _metrics

PROFILE = {"acceptance": [0.9, 0.7, 0.5], "target_step_ms": 4.0, "draft_token_ms": 0.5, "verify_token_ms": 0.25,
           "seed": 7}
PROMPTS = ["Write a haiku about a river.", "Explain speculative decoding to a child.",
           "List five uses of a paperclip.", "Summarize the plot of a heist movie you invent."]


@contextlib.contextmanager
def exporter_for(server):
    """The collection's exporter over the stand-in, serving ``/metrics`` on a loopback port."""
    exporter = _metrics.Exporter("http://127.0.0.1:%d" % server.port, _metrics.http_fetch)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the standard library's name)
            body = exporter.scrape().encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", _metrics.CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *args):
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d/metrics" % httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


def bench(server, metrics_url, warmup=1):
    base = "http://127.0.0.1:%d" % server.port
    return _bench.run(base, "completions", MODEL, PROMPTS, 96, opener=_bench.make_stream_opener(),
                      metrics_url=metrics_url, metrics_get=_bench.make_text_getter(), warmup=warmup)


@pytest.fixture(name="profiled_env")
def fixture_profiled_env(standin_env):
    standin_env["STANDIN_SPEC_PROFILE"] = json.dumps(PROFILE)
    standin_env["STANDIN_TIME_SCALE"] = "1"
    return standin_env


def test_plain_model_steps_take_the_target_step(profiled_env, tmp_path):
    hf_download(profiled_env, MODEL)
    options = write_yaml(tmp_path / "o.yml", "enable_iter_perf_stats: true\n")
    with running_server(profiled_env, [MODEL, "--extra_llm_api_options", options], tmp_path) as server:
        with exporter_for(server) as metrics_url:
            result = bench(server, metrics_url)
    assert result["requests"] == 4 and result["failed_requests"] == 0 and result["output_tokens"] > 0
    assert result["output_tokens_source"] == "usage" and result["warmup_requests"] == 1
    # One chunk per step: the gaps between chunks are the target's step.
    assert result["itl_ms"]["p50"] == pytest.approx(4.0, rel=0.25)
    assert result["tpot_ms"]["p50"] == pytest.approx(4.0, rel=0.25)
    assert result["accepted_histogram"] is None and result["acceptance_rate"] is None
    assert result["step_ms_mean"] is None and result["iterations"] is None
    assert result["ttft_ms"]["p50"] > 0 and result["itl_ms"]["p95"] >= result["itl_ms"]["p50"]


def test_speculative_steps_follow_the_profile(profiled_env, tmp_path):
    hf_download(profiled_env, MODEL)
    draft = hf_download(profiled_env, DRAFT, "--local-dir", str(tmp_path / "draft"))
    text = ("enable_iter_perf_stats: true\nspeculative_config:\n  decoding_type: Eagle\n  max_draft_len: 3\n"
            "  speculative_model_dir: %s\n" % draft)
    options = write_yaml(tmp_path / "o.yml", text)
    with running_server(profiled_env, [MODEL, "--extra_llm_api_options", options], tmp_path) as server:
        with exporter_for(server) as metrics_url:
            result = bench(server, metrics_url)
    # One chunk per step of T + d*D + d*V = 4 + 3*0.5 + 3*0.25 ms.
    assert result["itl_ms"]["p50"] == pytest.approx(6.25, rel=0.25)
    histogram = result["accepted_histogram"]
    per_position = result["acceptance_per_position"]
    assert len(histogram) == 4 and [p["position"] for p in per_position] == [_metrics.FIRST_POSITION + k for k in range(3)]
    # P(J >= 1) = 0.9: the first draft token is accepted in about 9 of 10 steps.
    assert sum(histogram[1:]) / float(sum(histogram)) == pytest.approx(0.9, abs=0.06)
    assert per_position[0]["rate"] == pytest.approx(0.9, abs=0.06)
    assert 1.0 < result["mean_acceptance_length"] < 4.0
    # Only the measured requests count: the steps are about the output tokens over the mean acceptance length.
    steps = sum(histogram)
    assert steps == pytest.approx(result["output_tokens"] / result["mean_acceptance_length"], rel=0.1)
