# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""_bench: streamed requests, warm-up, failures, statistics, acceptance from two scrapes, the AIPerf-shaped export."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import threading

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _bench, _metrics

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
_SPEC = importlib.util.spec_from_file_location("aiperf_check", os.path.join(ROOT, "tools", "aiperf_check.py"))
aiperf_check = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(aiperf_check)


class Clock:
    """A monotonic clock the fake server advances as it answers."""

    def __init__(self):
        self.now = 100.0
        self.lock = threading.Lock()

    def __call__(self):
        return self.now

    def advance(self, seconds):
        with self.lock:
            self.now += seconds
            return self.now


def sse(chunk):
    return b"data: " + json.dumps(chunk).encode() + b"\n"


def completion_stream(words, usage=True, prompt_tokens=7):
    chunks = [sse({"choices": [{"text": " " + w}]}) for w in words]
    if usage:
        chunks.append(sse({"choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(words) * 2}}))
    return chunks + [b"data: [DONE]\n"]


class FakeServer:
    """An opener (``_bench.stream_one``'s) and a Prometheus page whose counters grow with each answered request.

    Each request costs ``ttft`` then ``step`` per chunk on the clock; every step drafts 3 tokens and accepts 0, 1, 2
    of them in turn (so the first position is accepted 2 steps in 3, the second 1 in 3, the third never).
    """

    def __init__(self, clock, words=("a", "b", "c", "d"), ttft=0.05, step=0.01, fail=(), usage=True):
        self.clock = clock
        self.words = list(words)
        self.ttft, self.step = ttft, step
        self.fail = set(fail)
        self.usage = usage
        self.calls = 0
        self.bodies = []
        self.lock = threading.Lock()
        self.steps = 0
        self.accepted = [0, 0, 0]
        self.scrapes = []

    def opener(self, url, body, headers, timeout):
        with self.lock:
            call = self.calls
            self.calls += 1
            self.bodies.append(json.loads(body))
        if call in self.fail:
            raise _bench.EndpointError("HTTP 500 from %s: boom %d" % (url, call), code=500)
        with self.lock:  # the server counts as it generates, before the stream ends
            for dummy in self.words:
                accepted = self.steps % 3
                self.steps += 1
                for position in range(accepted):
                    self.accepted[position] += 1
        now = self.clock.advance(self.ttft)
        for index, line in enumerate(completion_stream(self.words, self.usage)):
            if index:
                now = self.clock.advance(self.step)
            yield now, line

    def metrics(self, url, timeout):
        with self.lock:
            self.scrapes.append((url, self.calls))
            lines = ["# TYPE trtllm_spec_decode_num_draft_tokens counter",
                     'trtllm_spec_decode_num_draft_tokens_total{model_name="m"} %d' % (3 * self.steps),
                     'trtllm_spec_decode_num_accepted_tokens_total{model_name="m"} %d' % sum(self.accepted)]
            for index in range(3):  # the collector's token_position labels, from FIRST_POSITION
                position = _metrics.FIRST_POSITION + index
                lines.append('trtllm_spec_decode_drafted_tokens_total{token_position="%d"} %d' % (position, self.steps))
                lines.append('trtllm_spec_decode_accepted_tokens_total{token_position="%d"} %d'
                             % (position, self.accepted[index]))
            return "\n".join(lines) + "\n"


def run(server, prompts=("p1", "p2", "p3"), **kw):
    kw.setdefault("metrics_url", "http://x:9464/metrics")
    return _bench.run("http://x:8000", "completions", "m", list(prompts), 16, opener=server.opener,
                      metrics_get=server.metrics, clock=server.clock, **kw)


# -- one streamed request ---------------------------------------------------------------------------

def lines_at(pairs):
    def opener(url, body, headers, timeout):
        for when, line in pairs:
            yield when, line
    return opener


def test_one_streamed_request_counts_tokens_from_usage():
    lines = [(0.10, sse({"choices": [{"text": " Hello"}]})), (0.12, b"\n"), (0.15, sse({"choices": [{"text": " world"}]})),
             (0.16, sse({"choices": [], "usage": {"completion_tokens": 5, "prompt_tokens": 3}})), (0.17, b"data: [DONE]\n")]
    result = _bench.stream_one(lines_at(lines), "u", "completions", {}, {}, 5, iter([0.0, 0.2]).__next__)
    assert result["ttft_s"] == pytest.approx(0.10) and result["latency_s"] == pytest.approx(0.2)
    assert result["output_tokens"] == 5 and result["tokens_from_usage"] is True and result["input_tokens"] == 3
    assert result["gaps_s"] == [pytest.approx(0.05)]


def test_reasoning_streamed_apart_is_the_first_token():
    lines = [(0.05, sse({"choices": [{"delta": {"role": "assistant", "content": ""}}]})),
             (0.10, sse({"choices": [{"delta": {"reasoning_content": "Let me think"}}]})),
             (0.20, sse({"choices": [{"delta": {"reasoning": " more"}}]})),
             (0.30, sse({"choices": [{"delta": {"content": "Answer"}}]})), (0.31, b"data: [DONE]\n")]
    result = _bench.stream_one(lines_at(lines), "u", "chat", {}, {}, 5, iter([0.0, 0.4]).__next__)
    assert result["ttft_s"] == pytest.approx(0.10)  # not the empty role chunk, not the first content
    assert result["output_tokens"] == 3 and result["tokens_from_usage"] is False


@pytest.mark.parametrize("lines, needle", [
    ([(0.1, b"data: [DONE]\n")], "carried no text"),
    ([(0.1, b"data: {not json\n")], "malformed stream chunk"),
    ([(0.1, sse({"error": {"message": "out of memory"}}))], "reported an error"),
])
def test_broken_streams_are_errors(lines, needle):
    with pytest.raises(_bench.EndpointError) as info:
        _bench.stream_one(lines_at(lines), "u", "chat", {}, {}, 5, iter([0.0, 0.1]).__next__)
    assert needle in info.value.msg


# -- statistics ---------------------------------------------------------------------------------------

def test_percentiles_interpolate_like_numpy():
    assert _bench.percentile([5, 1, 3, 2, 4], 0.5) == 3
    assert _bench.percentile([1, 2, 3, 4, 100], 0.95) == pytest.approx(80.8)  # numpy.percentile(..., 95)
    assert _bench.percentile([7], 0.99) == 7


def test_distribution_has_aiperf_stat_keys():
    dist = _bench.distribution([1.0, 2.0, 3.0, 4.0])
    assert set(dist) == {"avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std"}
    assert dist["avg"] == 2.5 and dist["std"] == pytest.approx(1.118034, rel=1e-6)  # population std, as numpy.std
    assert dist["p25"] == pytest.approx(1.75) and _bench.distribution([]) is None


# -- the run -------------------------------------------------------------------------------------------

def test_warmup_is_not_counted_and_acceptance_comes_from_two_scrapes():
    server = FakeServer(Clock())
    result = run(server, warmup=2)
    assert server.calls == 5 and result["requests"] == 3 and result["warmup_requests"] == 2
    # The "before" scrape follows the warm-up, the "after" scrape the last request.
    assert server.scrapes == [("http://x:9464/metrics", 2), ("http://x:9464/metrics", 5)]
    assert [b["prompt"] for b in server.bodies[:2]] == ["p1", "p2"] and server.bodies[0]["stream"] is True
    # Measured: 3 requests x 4 steps = 12 steps, accepted counts 0,1,2 cycling from step 8.
    assert result["drafted_tokens"] == 36 and result["accepted_tokens"] == 12
    assert result["acceptance_rate"] == pytest.approx(12 / 36.0)
    assert result["mean_acceptance_length"] == pytest.approx(1 + 12 / 12.0)
    assert result["accepted_histogram"] == [4, 4, 4, 0]
    assert result["acceptance_per_position"] == [
        {"position": _metrics.FIRST_POSITION, "drafted": 12.0, "accepted": 8.0, "rate": pytest.approx(8 / 12.0)},
        {"position": _metrics.FIRST_POSITION + 1, "drafted": 12.0, "accepted": 4.0, "rate": pytest.approx(4 / 12.0)},
        {"position": _metrics.FIRST_POSITION + 2, "drafted": 12.0, "accepted": 0.0, "rate": 0.0}]
    assert result["step_ms_mean"] is None and result["iterations"] is None


def test_latencies_throughput_and_tokens():
    server = FakeServer(Clock(), ttft=0.05, step=0.01)
    result = run(server, metrics_url=None)
    # Each request: 4 text chunks (TTFT 50 ms, then 10 ms apart), usage, [DONE]: 50 + 5 x 10 = 100 ms.
    assert result["ttft_ms"]["p50"] == pytest.approx(50.0) and result["itl_ms"]["p99"] == pytest.approx(10.0)
    assert result["latency_ms"]["mean"] == pytest.approx(100.0)
    assert result["tpot_ms"]["p50"] == pytest.approx(50.0 / 7, rel=1e-4)  # (100 - 50) / (8 usage tokens - 1)
    assert set(result["ttft_ms"]) == {"mean", "min", "max", "p50", "p90", "p95", "p99"}
    assert result["output_tokens"] == 24 and result["output_tokens_source"] == "usage" and result["input_tokens"] == 21
    assert result["tokens_per_s"] == pytest.approx(24 / 0.3) and result["requests_per_s"] == pytest.approx(10.0)
    assert result["acceptance_rate"] is None and result["accepted_histogram"] is None and result["metrics_url"] is None


def test_failed_requests_are_counted_not_fatal():
    server = FakeServer(Clock(), fail={1, 3})
    result = run(server, prompts=["a", "b", "c", "d", "e"])
    assert result["requests"] == 3 and result["failed_requests"] == 2
    assert len(result["errors"]) == 2 and "boom 1" in result["errors"][0]
    assert [r["error"]["code"] for r in result["_records"] if r["error"]] == [500, 500]


def test_the_run_fails_only_when_every_request_failed():
    server = FakeServer(Clock(), fail={0, 1})
    with pytest.raises(_bench.EndpointError) as info:
        run(server, prompts=["a", "b"], metrics_url=None)
    assert "all 2 requests" in info.value.msg and "boom 0" in info.value.msg


def test_concurrent_workers_measure_every_prompt():
    server = FakeServer(Clock())
    result = run(server, prompts=["p%d" % i for i in range(9)], concurrency=4, metrics_url=None)
    assert result["requests"] == 9 and server.calls == 9 and result["concurrency"] == 4
    assert sorted(r["index"] for r in result["_records"]) == list(range(9))


def test_a_bad_metrics_page_names_the_url():
    server = FakeServer(Clock())

    def bad(url, timeout):
        return "this is { not prometheus\n"
    with pytest.raises(_bench.EndpointError) as info:
        _bench.run("http://x:8000", "completions", "m", ["a"], 8, opener=server.opener, metrics_url="http://h:9464/metrics",
                   metrics_get=bad, clock=server.clock)
    assert "metrics_url http://h:9464/metrics" in info.value.msg
    assert server.calls == 0  # the "before" reading comes first: nothing measured against a bad page


# -- the AIPerf-shaped export ------------------------------------------------------------------------

AGGREGATE_TAGS = {"request_latency", "time_to_first_token", "time_to_second_token", "inter_token_latency",
                  "inter_chunk_latency", "output_token_throughput_per_user", "output_sequence_length",
                  "input_sequence_length"}
SCALAR_TAGS = {"request_count", "error_request_count", "request_throughput", "output_token_throughput",
               "benchmark_duration", "total_osl", "total_isl"}


def exported(tmp_path, server, **kw):
    result = run(server, **kw)
    records, run_info = result.pop("_records"), result.pop("_run")
    paths = _bench.export_files(str(tmp_path / "out"), result, records, run_info)
    doc = json.loads((tmp_path / "out" / "profile_export_aiperf.json").read_text())
    lines = [json.loads(line) for line in (tmp_path / "out" / "profile_export.jsonl").read_text().splitlines()]
    return result, paths, doc, lines


def test_summary_has_aiperf_field_names_units_and_statistics(tmp_path):
    result, paths, doc, dummy = exported(tmp_path, FakeServer(Clock(), fail={2}), prompts=["a", "b", "c", "d"])
    assert paths == [str(tmp_path / "out" / "profile_export_aiperf.json"), str(tmp_path / "out" / "profile_export.jsonl")]
    assert set(doc) == AGGREGATE_TAGS | SCALAR_TAGS | {
        "schema_version", "benchmark_id", "input_config", "was_cancelled", "error_summary", "start_time", "end_time",
        "dgx_spark_specdec"}
    for tag in AGGREGATE_TAGS:
        assert set(doc[tag]) == {"unit", "avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95",
                                 "p99", "std"}, tag
    for tag in SCALAR_TAGS:
        assert set(doc[tag]) == {"unit", "avg"}, tag
    units = {tag: doc[tag]["unit"] for tag in AGGREGATE_TAGS | SCALAR_TAGS}
    assert units == {"request_latency": "ms", "time_to_first_token": "ms", "time_to_second_token": "ms",
                     "inter_token_latency": "ms", "inter_chunk_latency": "ms",
                     "output_token_throughput_per_user": "tokens/sec/user", "output_sequence_length": "tokens",
                     "input_sequence_length": "tokens", "request_count": "requests", "error_request_count": "requests",
                     "request_throughput": "requests/sec", "output_token_throughput": "tokens/sec",
                     "benchmark_duration": "sec", "total_osl": "tokens", "total_isl": "tokens"}
    assert doc["schema_version"] == "1.0"
    assert doc["request_count"]["avg"] == 3 and doc["error_request_count"]["avg"] == 1
    assert doc["time_to_first_token"]["p50"] == pytest.approx(result["ttft_ms"]["p50"], rel=1e-4)
    assert doc["inter_token_latency"]["avg"] == pytest.approx(result["tpot_ms"]["mean"], rel=1e-4)  # AIPerf's ITL is our TPOT
    assert doc["inter_chunk_latency"]["p99"] == pytest.approx(result["itl_ms"]["p99"], rel=1e-4)  # the chunk gaps
    assert doc["output_token_throughput"]["avg"] == pytest.approx(result["tokens_per_s"])
    assert doc["output_token_throughput"]["avg"] == pytest.approx(doc["total_osl"]["avg"] / doc["benchmark_duration"]["avg"])
    assert doc["input_config"]["endpoint"] == {"model_names": ["m"], "type": "completions", "streaming": True,
                                               "url": "http://x:8000", "timeout_seconds": 300.0}
    assert doc["input_config"]["loadgen"] == {"concurrency": 1, "request_count": 4, "warmup_request_count": 0}
    assert doc["error_summary"] == [{"error_details": {"code": 500, "type": "EndpointError",
                                                       "message": "HTTP 500 from http://x:8000/v1/completions: boom 2"},
                                     "count": 1}]
    assert doc["start_time"] <= doc["end_time"]
    extra = doc["dgx_spark_specdec"]
    assert extra["acceptance_rate"] == result["acceptance_rate"] and extra["accepted_histogram"] == [4, 4, 4, 0]
    assert extra["acceptance_per_position"][0]["position"] == _metrics.FIRST_POSITION


def test_records_have_aiperf_record_shape(tmp_path):
    dummy, dummy2, doc, lines = exported(tmp_path, FakeServer(Clock(), fail={1}), prompts=["a", "b", "c"])
    assert [line["metadata"]["session_num"] for line in lines] == [0, 1, 2]
    first = lines[0]
    assert set(first) == {"metadata", "metrics", "error"} and first["error"] is None
    assert set(first["metadata"]) == {"session_num", "x_request_id", "turn_index", "request_start_ns", "request_ack_ns",
                                      "request_end_ns", "worker_id", "record_processor_id", "benchmark_phase",
                                      "was_cancelled", "cancellation_time_ns"}
    assert first["metadata"]["benchmark_phase"] == "profiling"
    assert first["metadata"]["request_end_ns"] - first["metadata"]["request_start_ns"] == pytest.approx(100e6, rel=1e-6)
    assert first["metrics"]["time_to_first_token"] == {"value": pytest.approx(50.0), "unit": "ms"}
    assert first["metrics"]["inter_chunk_latency"] == {"value": [pytest.approx(10.0)] * 3, "unit": "ms"}
    assert first["metrics"]["output_sequence_length"] == {"value": 8, "unit": "tokens"}
    assert first["metrics"]["inter_token_latency"]["unit"] == "ms"
    assert first["metrics"]["output_token_throughput_per_user"]["unit"] == "tokens/sec/user"
    assert lines[1]["metrics"] == {} and lines[1]["error"]["type"] == "EndpointError"
    assert doc["request_count"]["avg"] == 2


def test_export_files_are_replaced_atomically_with_mode_0644(tmp_path):
    dummy, paths, dummy2, dummy3 = exported(tmp_path, FakeServer(Clock()))
    old = os.stat(paths[0]).st_ino
    dummy, paths, dummy2, dummy3 = exported(tmp_path, FakeServer(Clock()))
    assert os.stat(paths[0]).st_ino != old  # a new file renamed over the old one
    for path in paths:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert sorted(os.listdir(str(tmp_path / "out"))) == ["profile_export.jsonl", "profile_export_aiperf.json"]


def test_the_checker_accepts_the_export_and_names_wrong_fields(tmp_path):
    dummy, paths, doc, dummy2 = exported(tmp_path, FakeServer(Clock(), fail={0}), prompts=["a", "b"])
    problems, notes = aiperf_check.check(paths[0], paths[1])
    assert problems == [] and notes == ["dgx_spark_specdec: not an AIPerf field"]
    broken = dict(doc)
    broken["time_to_first_token"] = dict(doc["time_to_first_token"], unit="s", median=1.0)
    broken["request_count"] = {"unit": "requests", "avg": 5}
    del broken["inter_token_latency"]
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    problems, dummy = aiperf_check.check(str(tmp_path / "broken.json"), paths[1])
    assert "time_to_first_token: unit 's', AIPerf writes 'ms'" in problems
    assert "time_to_first_token: 'median' is not a statistic of AIPerf's JsonMetricResult" in problems
    assert "inter_token_latency: missing from a streaming run" in problems
    assert "records: 1 successful profiling records, request_count says 5" in problems
