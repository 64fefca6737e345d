"""trtllm-serve stand-in: /prometheus/metrics per release, the native spec-decode switch, and the collection's exporter.

The stand-in runs from the checkout (no Docker). Names, types and labels are read with prometheus_client's own parser.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _metrics
from lab_helpers import DRAFT, MODEL, hf_download, http, running_server, write_yaml
from trtllm_standin import metrics as standin_metrics
from trtllm_standin.release import KNOWN

R12 = tuple(v for v in KNOWN if v.startswith("1.2."))
UNDEFINED = {"model_name": "undefined", "engine_type": "undefined"}
REQUEST_FAMILIES = {
    "request_success": "counter",
    "e2e_request_latency_seconds": "histogram",
    "time_to_first_token_seconds": "histogram",
    "time_per_output_token_seconds": "histogram",
    "request_queue_time_seconds": "histogram",
}
BUCKETS = {
    "e2e_request_latency_seconds": standin_metrics.E2E_BUCKETS,
    "time_to_first_token_seconds": standin_metrics.TTFT_BUCKETS,
    "time_per_output_token_seconds": standin_metrics.TPOT_BUCKETS,
    "request_queue_time_seconds": standin_metrics.QUEUE_BUCKETS,
}
# The names the 1.3.0rc11+ example checks (examples/serve/prometheus_metrics.py, METRIC_PREFIX = "trtllm_").
EXAMPLE_NAMES = ("request_success_total", "e2e_request_latency_seconds", "time_to_first_token_seconds",
                 "request_queue_time_seconds", "kv_cache_hit_rate", "kv_cache_reused_blocks_total",
                 "kv_cache_missed_blocks_total", "kv_cache_utilization")
SPEC_FAMILIES = {
    "trtllm_spec_decode_num_draft_tokens": "counter",
    "trtllm_spec_decode_num_accepted_tokens": "counter",
    "trtllm_spec_decode_drafted_tokens": "counter",
    "trtllm_spec_decode_accepted_tokens": "counter",
    "trtllm_spec_decode_acceptance_length": "gauge",
    "trtllm_spec_decode_draft_overhead": "gauge",
}
DRAFT_LEN = 3
OPTIONS = """\
return_perf_metrics: true
perf_metrics_max_requests: 100
enable_iter_perf_stats: {iter_stats}
speculative_config:
  decoding_type: Eagle
  max_draft_len: {draft_len}
  speculative_model_dir: {draft}
"""
PROMPTS = ("Paris is great because", "Paris is great because", "Tell me about trains", "Why is the sky blue")


@pytest.fixture
def start(standin_env, tmp_path):
    """start(version, return_perf_metrics=True, iter_stats=True, native_spec=False) -> context manager of a server."""
    hf_download(standin_env, MODEL)
    draft = hf_download(standin_env, DRAFT, "--local-dir", str(tmp_path / "draft"))

    def _start(version, return_perf_metrics=True, iter_stats=True, native_spec=False):
        env = dict(standin_env, TRTLLM_VERSION=version)
        if native_spec:
            env[standin_metrics.NATIVE_SPEC_ENV] = "1"
        text = OPTIONS.format(iter_stats=str(iter_stats).lower(), draft_len=DRAFT_LEN, draft=draft)
        if not return_perf_metrics:
            text = text.replace("return_perf_metrics: true", "return_perf_metrics: false")
        path = write_yaml(tmp_path / ("extra-%s.yml" % version), text)
        return running_server(env, [MODEL, "--extra_llm_api_options", path], tmp_path)

    return _start


def run_requests(server, prompts=PROMPTS, max_tokens=40):
    """Completions, one after the other; their usage and finish reasons."""
    out = []
    for prompt in prompts:
        status, body = http("POST", server.url + "/v1/completions",
                            {"model": MODEL, "prompt": prompt, "max_tokens": max_tokens})
        assert status == 200, body
        out.append((body["usage"]["completion_tokens"], body["choices"][0]["finish_reason"]))
    return out


def scrape(server):
    status, text = http("GET", server.url + "/prometheus/metrics")
    assert status == 200, text
    return text


def families(text):
    return {family.name: family for family in text_string_to_metric_families(text)}


def value(family, suffix="", **labels):
    """Sum of a family's samples named family.name + suffix whose labels include ``labels``."""
    return sum(s.value for s in family.samples
               if s.name == family.name + suffix and all(s.labels.get(k) == v for k, v in labels.items()))


def spec_sums(entries):
    spec = [e["specDecodingStats"] for e in entries]
    return sum(s["numDraftTokens"] for s in spec), sum(s["numAcceptedTokens"] for s in spec)


def expected_families(version, native_spec=False):
    feats = standin_metrics.features(version, native_spec)
    prefix = feats["prefix"]
    out = {prefix + name: kind for name, kind in REQUEST_FAMILIES.items()}
    if feats["kv_gauges"]:
        out.update({"trtllm_kv_cache_hit_rate": "gauge", "trtllm_kv_cache_utilization": "gauge"})
    if feats["kv_blocks"]:
        out.update({"trtllm_kv_cache_reused_blocks": "counter", "trtllm_kv_cache_missed_blocks": "counter"})
    if native_spec:
        out.update(SPEC_FAMILIES)
    return out


def check_shapes(fams, pid):
    """Sample names, labels and buckets of every family, as multiprocess prometheus_client exposes them."""
    for name, family in fams.items():
        assert family.samples, name
        for sample in family.samples:
            labels = dict(sample.labels)
            assert {k: labels.pop(k, None) for k in UNDEFINED} == UNDEFINED, sample
            if family.type == "counter":
                assert sample.name == name + "_total", sample       # no _created: multiprocess mode
                allowed = {"finished_reason"} if name.endswith("request_success") else (
                    {"token_position"} if name.endswith(("drafted_tokens", "accepted_tokens")) and "num_" not in name
                    else set())
                assert set(labels) == allowed, sample
            elif family.type == "gauge":
                assert sample.name == name and labels == {"pid": str(pid)}, sample
            else:
                assert family.type == "histogram", name
                suffix = sample.name[len(name):]
                assert suffix in ("_bucket", "_sum", "_count"), sample
                assert set(labels) == ({"le"} if suffix == "_bucket" else set()), sample
        if family.type == "histogram":
            stem = name[len("trtllm_"):] if name.startswith("trtllm_") else name
            les = [float(s.labels["le"]) for s in family.samples if s.name == name + "_bucket"]
            assert les == list(BUCKETS[stem]) + [float("inf")], name


# -- per release -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", ["1.2.0rc6", "1.3.0rc12"])
def test_route_only_with_return_perf_metrics(start, version):
    with start(version, return_perf_metrics=False) as server:
        run_requests(server, PROMPTS[:1])
        assert http("GET", server.url + "/prometheus/metrics") == (404, {"detail": "Not Found"})
        assert http("GET", server.url + "/metrics")[1]            # the iteration stats are still served


def test_no_family_before_a_request(start):
    """Multiprocess mode shows a series once it has been written: nothing before the first request."""
    with start("1.3.0rc12") as server:
        assert http("GET", server.url + "/health_generate")[0] == 200   # the server's own generation: not logged
        assert scrape(server) == ""


@pytest.mark.parametrize("version", KNOWN)
def test_families_per_release(start, version):
    with start(version) as server:
        done = run_requests(server)
        text = scrape(server)
        entries = http("GET", server.url + "/metrics")[1]
        pid = server.proc.pid
    fams = families(text)
    assert {name: f.type for name, f in fams.items()} == expected_families(version)
    check_shapes(fams, pid)
    assert not any(name.startswith("trtllm_spec_decode") for name in fams)
    prefix = standin_metrics.features(version)["prefix"]
    success = fams[prefix + "request_success"]
    for reason in ("stop", "length"):
        assert value(success, "_total", finished_reason=reason) == sum(1 for dummy, r in done if r == reason)
    assert value(fams[prefix + "e2e_request_latency_seconds"], "_count") == len(done)
    assert value(fams[prefix + "time_to_first_token_seconds"], "_count") == len(done)
    assert value(fams[prefix + "time_per_output_token_seconds"], "_count") == sum(1 for t, dummy in done if t > 1)
    assert value(fams[prefix + "request_queue_time_seconds"], "_count") <= len(done)
    if version in R12:
        assert not any(name.startswith("trtllm_") for name in fams)
    else:
        kv = entries[-1]["kvCacheStats"]
        assert value(fams["trtllm_kv_cache_hit_rate"]) == pytest.approx(kv["cacheHitRate"])
        assert value(fams["trtllm_kv_cache_utilization"]) == pytest.approx(kv["usedNumBlocks"] / kv["maxNumBlocks"])
        assert value(fams["trtllm_kv_cache_reused_blocks"], "_total") > 0      # the repeated prompt


def test_rc12_serves_the_examples_eight_names(start):
    with start("1.3.0rc12") as server:
        run_requests(server)
        samples = _metrics.parse_text(scrape(server))
    stems = {name[:-len(suffix)] if suffix and name.endswith(suffix) else name
             for name in samples for suffix in ("_bucket", "_sum", "_count", "")}
    for name in EXAMPLE_NAMES:
        assert "trtllm_" + name in samples or "trtllm_" + name in stems, name
    assert not [name for name in samples if "spec_decode" in name]


def test_iteration_gauges_need_iteration_stats(start):
    with start("1.3.0rc12", iter_stats=False) as server:
        run_requests(server)
        fams = families(scrape(server))
    assert set(fams) == {"trtllm_" + name for name in REQUEST_FAMILIES}


def test_openmetrics_when_asked(start):
    with start("1.2.0rc6") as server:
        run_requests(server, PROMPTS[:1])
        req = urllib.request.Request(server.url + "/prometheus/metrics",
                                     headers={"Accept": "application/openmetrics-text; version=1.0.0"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            ctype, body = resp.headers["content-type"], resp.read().decode()
    assert ctype.startswith("application/openmetrics-text")
    assert body.rstrip().endswith("# EOF") and "request_success_total{" in body


def test_queued_requests_and_drafting_requests_in_iteration_stats(start):
    with start("1.2.0rc6") as server:
        run_requests(server, PROMPTS[:2])
        entries = http("GET", server.url + "/metrics")[1]
    assert entries
    for entry in entries:
        assert isinstance(entry["numQueuedRequests"], int) and entry["numQueuedRequests"] == 0
        assert entry["specDecodingStats"]["numRequestsWithDraftTokens"] == 1     # one request's step per entry


# -- the lab switch: a build with the speculative-decoding metrics ----------------------------------------------

def test_native_spec_switch_matches_the_iteration_stats(start):
    with start("1.3.0rc12", native_spec=True) as server:
        done = run_requests(server)
        text = scrape(server)
        entries = http("GET", server.url + "/metrics")[1]
        pid = server.proc.pid
    fams = families(text)
    assert {name: f.type for name, f in fams.items()} == expected_families("1.3.0rc12", native_spec=True)
    check_shapes(fams, pid)
    drafted, accepted = spec_sums(entries)
    steps = len(entries)
    assert drafted == DRAFT_LEN * steps and accepted == sum(t for t, dummy in done) - steps
    assert value(fams["trtllm_spec_decode_num_draft_tokens"], "_total") == drafted
    assert value(fams["trtllm_spec_decode_num_accepted_tokens"], "_total") == accepted
    per_drafted = {int(s.labels["token_position"]): s.value for s in fams["trtllm_spec_decode_drafted_tokens"].samples}
    per_accepted = {int(s.labels["token_position"]): s.value
                    for s in fams["trtllm_spec_decode_accepted_tokens"].samples}
    assert per_drafted == {k: steps for k in range(DRAFT_LEN)}     # 0-based; every step drafts every position
    assert set(per_accepted) <= set(per_drafted)
    assert sum(per_drafted.values()) == drafted and sum(per_accepted.values()) == accepted
    rates = [per_accepted.get(k, 0.0) / per_drafted[k] for k in range(DRAFT_LEN)]
    assert rates == sorted(rates, reverse=True)                     # acceptance is a prefix
    # Step by step: position k accepted in as many steps as accepted more than k drafts.
    for k in range(DRAFT_LEN):
        assert per_accepted.get(k, 0) == sum(1 for e in entries if e["specDecodingStats"]["numAcceptedTokens"] > k)
    last = entries[-1]["specDecodingStats"]
    assert value(fams["trtllm_spec_decode_acceptance_length"]) == last["acceptanceLength"]
    assert value(fams["trtllm_spec_decode_draft_overhead"]) == pytest.approx(last["draftOverhead"])
    # The collection's one reading agrees with the iteration stats.
    reading = _metrics.acceptance(None, _metrics.snapshot(text))
    assert reading["steps"] == steps
    assert reading["mean_acceptance_length"] == pytest.approx(
        sum(e["specDecodingStats"]["acceptanceLength"] for e in entries) / steps, abs=1e-6)


def test_native_spec_switch_without_speculation_serves_no_spec_series(standin_env, tmp_path):
    hf_download(standin_env, MODEL)
    env = dict(standin_env, TRTLLM_VERSION="1.3.0rc12", **{standin_metrics.NATIVE_SPEC_ENV: "1"})
    path = write_yaml(tmp_path / "plain.yml", "return_perf_metrics: true\nenable_iter_perf_stats: true\n")
    with running_server(env, [MODEL, "--extra_llm_api_options", path], tmp_path) as server:
        run_requests(server, PROMPTS[:2])
        fams = families(scrape(server))
    assert not [name for name in fams if "spec_decode" in name]
    assert "trtllm_request_success" in fams


# -- through the collection's exporter -----------------------------------------------------------------------------

class Tee:
    """The exporter's fetch, over urllib, keeping what it read."""

    def __init__(self):
        self.calls = []

    def __call__(self, url, timeout):
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                status, body = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, body = exc.code, exc.read()
        self.calls.append((url, status, body))
        return status, body

    def iteration_stats(self):
        out = []
        for url, status, body in self.calls:
            if url.endswith("/metrics") and not url.endswith("/prometheus/metrics") and status == 200:
                out.extend(json.loads(body))
        return out


def test_exporter_folds_1_2_iteration_stats(start):
    with start("1.2.0rc6") as server:
        done = run_requests(server)
        tee = Tee()
        exporter = _metrics.Exporter(server.url, tee)
        text = exporter.scrape()
        perf = http("GET", server.url + "/perf_metrics")[1]
    assert not exporter.native_spec
    entries = tee.iteration_stats()
    assert entries
    drafted, accepted = spec_sums(entries)
    samples = _metrics.parse_text(text)
    assert _metrics.total(samples, _metrics.DRAFTED) == drafted
    assert _metrics.total(samples, _metrics.ACCEPTED) == accepted
    assert drafted == sum(p["perf_metrics"]["speculative_decoding"]["total_draft_tokens"] for p in perf)
    snap = _metrics.snapshot(samples)
    assert sum(p["drafted"] for p in snap["positions"].values()) == drafted
    assert sum(p["accepted"] for p in snap["positions"].values()) == accepted
    assert snap["positions"][0]["drafted"] == len(entries)
    # The release's request metrics, renamed; no unprefixed name left.
    assert _metrics.total(samples, "trtllm_time_to_first_token_seconds_count") == len(done)
    assert any(labels.get("le") == "+Inf" for labels, dummy in samples["trtllm_time_to_first_token_seconds_bucket"])
    assert _metrics.total(samples, "trtllm_request_success_total") == len(done)
    assert all(name.startswith("trtllm_") for name in samples)
    assert _metrics.total(samples, "trtllm_exporter_upstream_up") == 1
    fams = families(text)          # and prometheus_client reads the exporter's text too
    assert fams["trtllm_time_to_first_token_seconds"].type == "histogram"
    assert fams["trtllm_spec_decode_drafted_tokens"].type == "counter"


def test_exporter_steps_aside_for_a_build_with_spec_metrics(start):
    with start("1.3.0rc12", native_spec=True) as server:
        run_requests(server)
        tee = Tee()
        exporter = _metrics.Exporter(server.url, tee)
        text = exporter.scrape()
        exporter.poll()
        entries = http("GET", server.url + "/metrics")[1]     # still there: the exporter did not drain them
    assert exporter.native_spec
    assert not [url for url, dummy, dummy in tee.calls if url.endswith("/metrics") and "/prometheus/" not in url]
    drafted, accepted = spec_sums(entries)
    samples = _metrics.parse_text(text)
    assert _metrics.total(samples, _metrics.DRAFTED) == drafted
    assert _metrics.total(samples, _metrics.ACCEPTED) == accepted
    assert len(samples[_metrics.DRAFTED]) == 1                      # served once: the server's, not a folded copy
    assert _metrics.total(samples, "trtllm_exporter_upstream_up") == 1
    assert "trtllm_exporter_iterations_total" not in samples
    assert {labels["pid"] for labels, dummy in samples["trtllm_kv_cache_utilization"]} == {str(server.proc.pid)}
