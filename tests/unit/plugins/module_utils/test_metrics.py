# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The Prometheus parser, the one reading of acceptance and the exporter's folding."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _metrics as m

NATIVE_13 = """\
# HELP trtllm_spec_decode_num_draft_tokens_total Total draft tokens.
# TYPE trtllm_spec_decode_num_draft_tokens_total counter
trtllm_spec_decode_num_draft_tokens_total{engine_type="trtllm",model_name="m"} 300.0
# TYPE trtllm_spec_decode_num_accepted_tokens_total counter
trtllm_spec_decode_num_accepted_tokens_total{engine_type="trtllm",model_name="m"} 180.0
# TYPE trtllm_spec_decode_drafted_tokens_total counter
trtllm_spec_decode_drafted_tokens_total{engine_type="trtllm",model_name="m",token_position="0"} 100.0
trtllm_spec_decode_drafted_tokens_total{engine_type="trtllm",model_name="m",token_position="1"} 100.0
trtllm_spec_decode_drafted_tokens_total{engine_type="trtllm",model_name="m",token_position="2"} 100.0
# TYPE trtllm_spec_decode_accepted_tokens_total counter
trtllm_spec_decode_accepted_tokens_total{engine_type="trtllm",model_name="m",token_position="0"} 90.0
trtllm_spec_decode_accepted_tokens_total{engine_type="trtllm",model_name="m",token_position="1"} 60.0
trtllm_spec_decode_accepted_tokens_total{engine_type="trtllm",model_name="m",token_position="2"} 30.0
trtllm_time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 4 1700000000000
"""


def test_parse_text_labels_escapes_and_special_values():
    samples = m.parse_text('a_total{x="q\\"uote",y="new\\nline"} 3\nb NaN\nc{le="+Inf"} +Inf\n# TYPE d gauge\n')
    assert samples["a_total"] == [({"x": 'q"uote', "y": "new\nline"}, 3.0)]
    assert math.isnan(samples["b"][0][1])
    assert samples["c"] == [({"le": "+Inf"}, math.inf)]


@pytest.mark.parametrize("text", ["trtllm_x{bad} 1\n", "trtllm_x 1 2 3\n", "not a sample at all\n", "x one\n"])
def test_parse_text_refuses_what_is_not_the_format(text):
    with pytest.raises(m.MetricsError):
        m.parse_text(text)


def test_acceptance_from_native_counters():
    after = m.snapshot(NATIVE_13)
    got = m.acceptance(None, after)
    assert got["acceptance_rate"] == 0.6
    assert got["steps"] == 100
    # 180 accepted drafts over 100 steps, plus the target's own token each step.
    assert got["mean_acceptance_length"] == 2.8
    assert [p["rate"] for p in got["per_position"]] == [0.9, 0.6, 0.3]
    # 10 steps accepted none, 30 one, 30 two, 30 three.
    assert got["accepted_histogram"] == [10, 30, 30, 30]


def test_acceptance_is_a_difference_and_a_reset_counts_from_zero():
    before = m.snapshot(NATIVE_13)
    later = NATIVE_13.replace("} 300.0", "} 330.0").replace("} 180.0", "} 200.0")
    assert m.acceptance(before, m.snapshot(later))["acceptance_rate"] == round(20 / 30.0, 6)
    restarted = NATIVE_13.replace("} 300.0", "} 10.0").replace("} 180.0", "} 5.0")
    assert m.acceptance(before, m.snapshot(restarted))["acceptance_rate"] == 0.5


def test_acceptance_without_speculative_decoding_is_none():
    got = m.acceptance(None, m.snapshot("trtllm_generation_tokens_total 5\n"))
    assert got["acceptance_rate"] is None and got["mean_acceptance_length"] is None and got["per_position"] == []


def _iteration(drafted, accepted, requests=1, **extra):
    entry = {"iter": 1, "iterLatencyMS": 20.0, "numActiveRequests": requests, "numQueuedRequests": 2,
             "kvCacheStats": {"maxNumBlocks": 100, "usedNumBlocks": 25, "freeNumBlocks": 75},
             "inflightBatchingStats": {"numGenRequests": requests, "numCtxTokens": 7,
                                       "avgNumDecodedTokensPerIter": (accepted or 0) + 1.0}}
    if drafted is not None:
        entry["specDecodingStats"] = {"numDraftTokens": drafted, "numAcceptedTokens": accepted,
                                      "numRequestsWithDraftTokens": requests, "acceptanceLength": accepted + 1.0,
                                      "draftOverhead": 0.25}
    entry.update(extra)
    return entry


def test_folder_counts_totals_and_positions_of_single_request_iterations():
    folder = m.IterationFolder()
    folder.add([_iteration(3, 3), _iteration(3, 1), _iteration(3, 0), _iteration(6, 4, requests=2)])
    text = folder.render({"model_name": "m"}, True)
    samples = m.parse_text(text)
    assert m.total(samples, m.DRAFTED) == 15 and m.total(samples, m.ACCEPTED) == 8
    # Positions only from the three one-request iterations.
    # token_position counts from 0, as the collector's per-position lists do.
    assert m.total(samples, m.POSITION_DRAFTED, token_position=0) == 3
    assert [m.total(samples, m.POSITION_ACCEPTED, token_position=k) for k in (0, 1, 2)] == [2, 1, 1]
    assert m.total(samples, "trtllm_kv_cache_utilization") == 0.25
    assert m.total(samples, "trtllm_num_requests_waiting") == 2
    assert m.total(samples, "trtllm_iteration_latency_seconds") == 0.02
    # Generated tokens: the requests of each iteration times their mean decoded tokens (4 + 2 + 1 + 2 * 5).
    assert m.total(samples, "trtllm_generation_tokens_total") == 17
    assert m.total(samples, "trtllm_prompt_tokens_total") == 28
    assert samples[m.DRAFTED][0][0] == {"model_name": "m"}
    assert "# TYPE trtllm_spec_decode_num_draft_tokens counter" in text
    # The exporter's counters read like the native ones.
    got = m.acceptance(None, m.snapshot(text))
    assert got["steps"] == 3 and got["accepted_histogram"] == [1, 1, 0, 1]


def test_folder_without_speculative_decoding_has_no_spec_series():
    folder = m.IterationFolder()
    folder.add([_iteration(None, None)])
    samples = m.parse_text(folder.render({}, False))
    assert not [name for name in samples if "spec_decode" in name]
    assert m.total(samples, "trtllm_exporter_upstream_up") == 0


NATIVE_12 = """\
# HELP request_success_total Count of successfully processed requests.
# TYPE request_success_total counter
request_success_total{engine_type="undefined",finished_reason="stop",model_name="undefined"} 7.0
request_success_created{engine_type="undefined",finished_reason="stop",model_name="undefined"} 1.7e+09
# TYPE time_to_first_token_seconds histogram
time_to_first_token_seconds_bucket{engine_type="undefined",le="0.1",model_name="undefined"} 3.0
time_to_first_token_seconds_bucket{engine_type="undefined",le="+Inf",model_name="undefined"} 7.0
time_to_first_token_seconds_count{engine_type="undefined",model_name="undefined"} 7.0
time_to_first_token_seconds_sum{engine_type="undefined",model_name="undefined"} 1.5
python_gc_objects_collected_total{generation="0"} 10.0
"""


def test_served_metrics_keeps_the_request_metrics_under_trtllm_names():
    text = m.served_metrics(NATIVE_12)
    samples = m.parse_text(text)
    assert m.total(samples, "trtllm_request_success_total", finished_reason="stop") == 7
    assert m.total(samples, "trtllm_time_to_first_token_seconds_bucket", le="0.1") == 3
    assert "trtllm_time_to_first_token_seconds_sum" in samples
    assert "python_gc_objects_collected_total" not in samples and "request_success_total" not in samples
    assert "# TYPE trtllm_time_to_first_token_seconds histogram" in text


NATIVE_13_KV = """\
# TYPE trtllm_kv_cache_utilization gauge
trtllm_kv_cache_utilization{engine_type="undefined",model_name="undefined",pid="42"} 0.5
# TYPE trtllm_request_success_total counter
trtllm_request_success_total{engine_type="undefined",finished_reason="length",model_name="undefined"} 3.0
"""


class FakeServer:
    """The interface the exporter reads: /metrics drained on read, /v1/models, /prometheus/metrics (1.2.x)."""

    def __init__(self, native=NATIVE_12):
        self.queue = []
        self.native = native
        self.down = False
        self.reads = 0

    def fetch(self, url, timeout):
        if self.down:
            raise OSError("connection refused")
        path = url.split("8000", 1)[1]
        if path == "/metrics":
            self.reads += 1
            out, self.queue = self.queue, []
            return 200, json.dumps(out).encode()
        if path == "/v1/models":
            return 200, json.dumps({"data": [{"id": "Qwen/Qwen3-8B"}]}).encode()
        if path == m.NATIVE_PATH and self.native is not None:
            return 200, self.native.encode()
        return 404, b"{}"


def test_exporter_drains_before_each_scrape_and_keeps_counting():
    server = FakeServer()
    exporter = m.Exporter("http://127.0.0.1:8000", server.fetch)
    server.queue = [_iteration(3, 2), _iteration(3, 3)]
    first = m.parse_text(exporter.scrape())
    server.queue = [_iteration(3, 0)]
    second = m.parse_text(exporter.scrape())
    assert m.total(first, m.DRAFTED) == 6 and m.total(second, m.DRAFTED) == 9
    assert m.total(second, m.DRAFTED, model_name="Qwen/Qwen3-8B", engine_type="trtllm") == 9
    assert m.total(second, "trtllm_request_success_total") == 7
    assert m.total(second, "trtllm_exporter_upstream_up") == 1


def test_exporter_serves_once_what_the_server_serves_itself():
    server = FakeServer(native=NATIVE_13_KV)
    exporter = m.Exporter("http://127.0.0.1:8000", server.fetch)
    server.queue = [_iteration(3, 2)]
    samples = m.parse_text(exporter.scrape())
    native_labels = {"engine_type": "undefined", "model_name": "undefined", "pid": "42"}
    assert samples["trtllm_kv_cache_utilization"] == [(native_labels, 0.5)]
    assert m.total(samples, "trtllm_request_success_total") == 3
    assert m.total(samples, m.DRAFTED) == 3 and server.reads == 1


def test_exporter_leaves_the_iteration_stats_to_a_server_with_native_counters():
    server = FakeServer(native=NATIVE_13)
    exporter = m.Exporter("http://127.0.0.1:8000", server.fetch)
    server.queue = [_iteration(3, 2)]
    samples = m.parse_text(exporter.scrape())
    exporter.poll()
    assert server.reads == 0 and server.queue  # the server's own loop reads them
    assert m.total(samples, m.DRAFTED) == 300 and len(samples[m.DRAFTED]) == 1
    assert m.total(samples, "trtllm_exporter_upstream_up") == 1
    assert m.acceptance(None, m.snapshot(samples))["mean_acceptance_length"] == 2.8


def test_exporter_reports_a_silent_server_and_keeps_its_counters():
    server = FakeServer(native=None)
    exporter = m.Exporter("http://127.0.0.1:8000", server.fetch)
    server.queue = [_iteration(2, 1)]
    exporter.poll()
    server.down = True
    samples = m.parse_text(exporter.scrape())
    assert m.total(samples, "trtllm_exporter_upstream_up") == 0
    assert m.total(samples, m.DRAFTED) == 2


def test_exporter_program_serves_http(tmp_path):
    """The file runs as a program with the standard library only (as the exporter container runs it)."""
    import http.server
    import socket

    server = FakeServer()
    server.queue = [_iteration(4, 2)]

    class Upstream(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            status, body = server.fetch("http://x:8000" + self.path, 5)
            self.send_response(status)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            return

    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-I", m.__file__, "--upstream", "http://127.0.0.1:%d" % upstream.server_port,
                             "--listen", "127.0.0.1:%d" % port, "--interval", "0.2"], stdout=subprocess.PIPE)
    try:
        for dummy in range(50):
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=2) as resp:
                    samples = m.parse_text(resp.read().decode())
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("the exporter did not answer")
        assert m.total(samples, m.DRAFTED) == 4
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
        upstream.shutdown()
