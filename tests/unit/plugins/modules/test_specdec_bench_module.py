# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""specdec_bench's main() against a loopback server that streams like trtllm-serve and serves Prometheus counters."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _metrics
from ansible_collections.dgx_spark.specdec.plugins.modules import specdec_bench

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
CHECKER = os.path.join(ROOT, "tools", "aiperf_check.py")
_SPEC = importlib.util.spec_from_file_location("aiperf_check", CHECKER)
aiperf_check = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(aiperf_check)

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon"]


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []
        self.scrapes = 0
        self.steps = 0
        self.accepted = [0, 0]
        self.fail_prompts = set()
        self.reasoning = False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        return

    def _send(self, status, body, kind):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 (the standard library's name)
        state = self.server.state
        if self.path != "/prometheus/metrics":
            return self._send(404, b'{"detail": "Not Found"}', "application/json")
        with state.lock:
            state.scrapes += 1
            lines = ['trtllm_spec_decode_num_draft_tokens_total{model_name="m",engine_type="trtllm"} %d' % (2 * state.steps),
                     'trtllm_spec_decode_num_accepted_tokens_total{model_name="m",engine_type="trtllm"} %d'
                     % sum(state.accepted)]
            for index in range(2):
                position = _metrics.FIRST_POSITION + index
                lines.append('trtllm_spec_decode_drafted_tokens_total{token_position="%d"} %d' % (position, state.steps))
                lines.append('trtllm_spec_decode_accepted_tokens_total{token_position="%d"} %d'
                             % (position, state.accepted[index]))
        return self._send(200, ("\n".join(lines) + "\n").encode(), _metrics.CONTENT_TYPE)

    def do_POST(self):  # noqa: N802
        state = self.server.state
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][0]["content"] if "messages" in body else body["prompt"]
        with state.lock:
            state.requests.append(body)
            if prompt in state.fail_prompts:
                fail = True
            else:
                fail = False
                for dummy in WORDS:  # one step per word: accepts 1 draft every other step
                    accepted = state.steps % 2
                    state.steps += 1
                    if accepted:
                        state.accepted[0] += 1
        if fail:
            return self._send(500, b'{"object": "error", "message": "engine failed"}', "application/json")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def emit(data):
            line = ("data: %s\n\n" % data).encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            self.wfile.flush()

        chat = "messages" in body
        if chat and state.reasoning:
            emit(json.dumps({"choices": [{"delta": {"reasoning_content": "thinking"}}]}))
        for word in WORDS:
            choice = {"delta": {"content": " " + word}} if chat else {"text": " " + word}
            emit(json.dumps({"choices": [dict(choice, index=0)]}))
        emit(json.dumps({"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": len(WORDS)}}))
        emit("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        return None


@pytest.fixture(name="server")
def fixture_server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.state = State()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def base(srv, **extra):
    url = "http://127.0.0.1:%d" % srv.server_address[1]
    args = {"url": url, "model": "m", "prompts": ["one", "two", "three"], "max_tokens": 8, "timeout": 10,
            "metrics_url": url + "/prometheus/metrics"}
    args.update(extra)
    return args


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            specdec_bench.main()
    return info.value.code, json.loads(capsys.readouterr().out)


def test_measures_and_reads_acceptance_without_changing_anything(capsys, server):
    rc, result = run_module(capsys, base(server))
    assert rc == 0 and result["changed"] is False and result["export_files"] == []
    assert len(server.state.requests) == 5 and result["warmup_requests"] == 2  # the default warm-up
    assert result["requests"] == 3 and result["failed_requests"] == 0 and result["errors"] == []
    assert result["output_tokens"] == 15 and result["output_tokens_source"] == "usage" and result["input_tokens"] == 12
    assert server.state.scrapes == 2
    # 3 measured requests x 5 steps, 2 drafts a step, 1 accepted every other step (the warm-up's 10 steps excluded).
    assert result["drafted_tokens"] == 30 and result["accepted_tokens"] == 7
    assert result["acceptance_rate"] == pytest.approx(7 / 30.0, abs=1e-6)
    assert result["mean_acceptance_length"] == pytest.approx(1 + 7 / 15.0, abs=1e-6)
    assert result["accepted_histogram"] == [8, 7, 0]
    assert [p["position"] for p in result["acceptance_per_position"]] == [_metrics.FIRST_POSITION, _metrics.FIRST_POSITION + 1]
    for key in ("ttft_ms", "itl_ms", "tpot_ms", "latency_ms"):
        assert set(result[key]) == {"mean", "min", "max", "p50", "p90", "p95", "p99"}, key
        assert 0 <= result[key]["p50"] <= result[key]["p90"] <= result[key]["p95"] <= result[key]["p99"]
    assert result["tokens_per_s"] > 0 and result["requests_per_s"] > 0
    assert result["step_ms_mean"] is None and result["iterations"] is None
    assert not any(key.startswith("_") for key in result)


def test_keys_the_tuner_reads(capsys, server):
    args = base(server, warmup=0)
    args["prometheus_url"] = args.pop("metrics_url")  # the plan's name for it (specdec_plan.serve.endpoint)
    dummy, result = run_module(capsys, args)
    assert result["acceptance_rate"] is not None
    for key in ("requests", "concurrency", "output_tokens", "tokens_per_s", "acceptance_rate", "mean_acceptance_length",
                "accepted_histogram", "step_ms_mean", "iterations"):
        assert key in result, key
    for key in ("ttft_ms", "itl_ms"):
        assert {"p50", "p95"} <= set(result[key])


def test_export_is_written_and_reads_as_aiperf(capsys, server, tmp_path):
    server.state.fail_prompts = {"two"}
    out = tmp_path / "bench"
    rc, result = run_module(capsys, base(server, api="chat", concurrency=2, export_dir=str(out)))
    assert rc == 0 and result["changed"] is True
    assert result["export_files"] == [str(out / "profile_export_aiperf.json"), str(out / "profile_export.jsonl")]
    assert result["failed_requests"] == 1 and "HTTP 500" in result["errors"][0]
    doc = json.loads((out / "profile_export_aiperf.json").read_text())
    assert doc["request_count"] == {"unit": "requests", "avg": 2}
    assert doc["error_request_count"] == {"unit": "requests", "avg": 1}
    assert doc["input_config"]["endpoint"]["type"] == "chat" and doc["input_config"]["loadgen"]["concurrency"] == 2
    assert doc["dgx_spark_specdec"]["acceptance_rate"] == result["acceptance_rate"]
    checked = subprocess.run([sys.executable, CHECKER, str(out / "profile_export_aiperf.json"),
                              "--records", str(out / "profile_export.jsonl")], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr
    assert "reads as AIPerf's export" in checked.stdout


def test_reasoning_chunks_start_the_clock(capsys, server):
    server.state.reasoning = True
    dummy, result = run_module(capsys, base(server, api="chat", warmup=0, metrics_url=None))
    assert result["requests"] == 3 and result["acceptance_rate"] is None and result["metrics_url"] is None
    assert result["itl_ms"]["min"] >= 0


def test_check_mode_sends_and_writes_nothing(capsys, server, tmp_path):
    rc, result = run_module(capsys, base(server, export_dir=str(tmp_path / "x"), _ansible_check_mode=True))
    assert rc == 0 and result["skipped"] is True and result["changed"] is True and result["export_files"] == []
    assert server.state.requests == [] and server.state.scrapes == 0 and not (tmp_path / "x").exists()
    dummy, result = run_module(capsys, base(server, _ansible_check_mode=True))
    assert result["changed"] is False


def test_every_request_failing_fails_the_module(capsys, server):
    server.state.fail_prompts = {"one", "two", "three"}
    rc, result = run_module(capsys, base(server, warmup=0))
    assert rc == 1 and result["failed"] and "all 3 requests" in result["msg"] and "HTTP 500" in result["msg"]


def test_an_unreachable_metrics_url_is_named(capsys, server):
    rc, result = run_module(capsys, base(server, metrics_url=base(server)["url"] + "/nowhere"))
    assert rc == 1 and "metrics_url http://127.0.0.1:%d/nowhere answered HTTP 404" % server.server_address[1] in result["msg"]


@pytest.mark.parametrize("extra, needle", [
    ({"warmup": -1}, "warmup: -1 must be >= 0"),
    ({"concurrency": 0}, "concurrency: 0 must be >= 1"),
    ({"api": "triton", "tokenizer": {"container": "c", "model": "m"}}, "metrics_url: with api=triton"),
    ({"prompts": []}, "prompts: the prompt set is empty"),
])
def test_bad_parameters_are_named(capsys, server, extra, needle):
    rc, result = run_module(capsys, base(server, **extra))
    assert rc == 1 and needle in result["msg"]


def test_the_checker_exit_code_on_a_wrong_field(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps({
        "request_count": {"unit": "requests", "avg": 1}, "request_throughput": {"unit": "req/s", "avg": 1.0},
        "input_config": {"endpoint": {"model_names": ["m"]}}, "start_time": "2026-01-01T00:00:00",
        "end_time": "2026-01-01T00:00:01"}))
    checked = subprocess.run([sys.executable, CHECKER, str(tmp_path / "s.json")], capture_output=True, text=True, check=False)
    assert checked.returncode == 1 and "request_throughput: unit 'req/s', AIPerf writes 'requests/sec'" in checked.stderr
