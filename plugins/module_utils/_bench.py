# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Measuring a served endpoint the way a benchmark tool does (used by specdec_bench and the draft-length tuner).

Each prompt is sent as a streamed request (OpenAI ``stream: true`` with ``include_usage``) by ``concurrency``
workers, after ``warmup`` requests that are not counted. Per request: time to first token (the first chunk that
carries text or reasoning), the gaps between streamed chunks (inter-token latency as the tuner reads it), time per
output token ((latency - TTFT) / (output tokens - 1), what NVIDIA AIPerf calls ``inter_token_latency``) and the
request latency; output tokens come from the stream's ``usage`` when the server reports it. A failed request is
counted and the run goes on; it fails only when every request failed.

Acceptance is read once, as everything in the collection reads it: the cluster's Prometheus text (the server's
``/prometheus/metrics`` or the collection's exporter) is scraped before the measured requests and after them, and
``_metrics.acceptance`` turns the two snapshots into the acceptance rate, the mean acceptance length, acceptance by
draft position and the accepted-length histogram.

``export_files`` writes the run in the shape of NVIDIA AIPerf's exports (``profile_export_aiperf.json``,
``profile_export.jsonl``) so that the tools that read AIPerf's files read this one too.

Triton's LLM API backend (``run_triton``) answers each generate request whole (``decoupled: false``): the time to
first token and the inter-token latency come from the response's perf metrics (server-side timestamps), the tokens
from the model's tokenizer, and acceptance from the per-request draft counts (no histogram: the tuner then measures
every candidate it is given).
"""

from __future__ import annotations

import datetime
import http.client
import json
import math
import os
import tempfile
import threading
import time
import urllib.error
import uuid

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _metrics
from ansible_collections.dgx_spark.specdec.plugins.module_utils._endpoint import (
    HTTP_AGENT,
    EndpointError,
    TransportError,
    _describe_exception,
    count_tokens_in_container,
    excerpt,
    run_generation,
)

try:
    from ansible.module_utils.urls import open_url
except ImportError:  # unit tests inject their own opener
    open_url = None

MAX_ERRORS = 5
SUMMARY_FILE = "profile_export_aiperf.json"
RECORDS_FILE = "profile_export.jsonl"
# Our own block in the AIPerf summary; AIPerf's fields are metric tags and a few run keys, none with this prefix.
EXTRA_KEY = "dgx_spark_specdec"

# ---------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------


def make_stream_opener(validate_certs=True, use_proxy=True):
    """An opener that yields ``(monotonic time, line)`` as the response's lines arrive."""

    def opener(url, body, headers, timeout):
        try:
            resp = open_url(url, data=body, headers=headers, method="POST", timeout=timeout,
                            validate_certs=validate_certs, use_proxy=use_proxy, http_agent=HTTP_AGENT)
        except urllib.error.HTTPError as exc:
            raise EndpointError("HTTP %d from %s: %s" % (exc.code, url, excerpt(exc.read(), 300)), code=exc.code)
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
            raise TransportError(*_describe_exception(exc, timeout))
        try:
            while True:
                try:
                    line = resp.readline()
                except (OSError, http.client.HTTPException, ValueError) as exc:  # the stream broke off
                    raise TransportError(*_describe_exception(exc, timeout))
                if not line:
                    return
                yield time.monotonic(), line
        finally:
            resp.close()

    return opener


def make_text_getter(validate_certs=True, use_proxy=True):
    """``get(url, timeout) -> str``: one GET of a text page (Prometheus metrics); EndpointError names the URL."""

    def get(url, timeout):
        try:
            resp = open_url(url, headers={"Accept": "text/plain"}, method="GET", timeout=timeout,
                            validate_certs=validate_certs, use_proxy=use_proxy, http_agent=HTTP_AGENT)
            try:
                return resp.read().decode("utf-8", "replace")
            finally:
                resp.close()
        except urllib.error.HTTPError as exc:
            raise EndpointError("metrics_url %s answered HTTP %d: %s" % (url, exc.code, excerpt(exc.read(), 200)))
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
            raise EndpointError("metrics_url %s: %s" % (url, _describe_exception(exc, timeout)[1]))

    return get


def read_snapshot(get, url, timeout=30.0):
    """The speculative-decoding counters of one scrape of ``url``."""
    text = get(url, timeout)
    try:
        return _metrics.snapshot(text)
    except _metrics.MetricsError as exc:
        raise EndpointError("metrics_url %s is not Prometheus text: %s" % (url, exc))


# ---------------------------------------------------------------------------
# One streamed request
# ---------------------------------------------------------------------------

def payload(api, model, prompt, max_tokens, temperature):
    body = {"model": model, "max_tokens": max_tokens, "temperature": temperature, "stream": True,
            "stream_options": {"include_usage": True}}
    if api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    return body


def _chunk_text(api, chunk):
    """The text a chunk carries; for chat also reasoning streamed apart (trtllm-serve's reasoning parser, vLLM)."""
    choices = chunk.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return ""
    if api == "chat":
        delta = choices[0].get("delta") or {}
        return delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning") or ""
    return choices[0].get("text") or ""


def stream_one(opener, url, api, body, headers, timeout, clock=time.monotonic):
    """One streamed request: ``{start_s, end_s, ttft_s, latency_s, output_tokens, tokens_from_usage, input_tokens,
    chunks_s, gaps_s}`` (times on ``clock``; ``chunks_s`` the arrivals of the chunks that carried text)."""
    start = clock()
    arrivals = []
    usage = None
    for now, raw in opener(url, json.dumps(body).encode("utf-8"), headers, timeout):
        line = raw.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            break
        try:
            chunk = json.loads(data)
        except ValueError:
            raise EndpointError("malformed stream chunk from %s: %s" % (url, excerpt(data, 200)))
        if not isinstance(chunk, dict):
            raise EndpointError("malformed stream chunk from %s: %s" % (url, excerpt(data, 200)))
        if chunk.get("error"):  # servers report a failure met mid-stream as a chunk
            raise EndpointError("the stream from %s reported an error: %s" % (url, excerpt(json.dumps(chunk["error"]), 200)))
        usage = chunk.get("usage") or usage
        if _chunk_text(api, chunk):
            arrivals.append(now)
    end = clock()
    if not arrivals:
        raise EndpointError("the stream from %s carried no text" % url)
    usage = usage if isinstance(usage, dict) else {}
    reported = usage.get("completion_tokens")
    prompt_tokens = usage.get("prompt_tokens")
    return {
        "start_s": start,
        "end_s": end,
        "ttft_s": arrivals[0] - start,
        "latency_s": end - start,
        "output_tokens": int(reported) if reported else len(arrivals),
        "tokens_from_usage": bool(reported),
        "input_tokens": int(prompt_tokens) if prompt_tokens else None,
        "chunks_s": [t - start for t in arrivals],
        "gaps_s": [b - a for a, b in zip(arrivals, arrivals[1:])],
    }


# ---------------------------------------------------------------------------
# Statistics (as AIPerf computes them: numpy's linear percentiles, population std)
# https://github.com/ai-dynamo/aiperf/blob/main/aiperf/metrics/metric_dicts.py
# ---------------------------------------------------------------------------

# AIPerf's STAT_KEYS (https://github.com/ai-dynamo/aiperf/blob/main/aiperf/common/constants.py)
STAT_KEYS = ("avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std")


def percentile(values, share):
    """Percentile (share 0..1) of a non-empty list, interpolated linearly between ranks like numpy.percentile."""
    ordered = sorted(values)
    pos = share * (len(ordered) - 1)
    low = int(math.floor(pos))
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def distribution(values, scale=1.0):
    """AIPerf's statistics of ``values`` times ``scale``; None when empty."""
    if not values:
        return None
    scaled = [v * scale for v in values]
    mean = sum(scaled) / len(scaled)
    out = {"avg": mean, "min": min(scaled), "max": max(scaled),
           "std": math.sqrt(sum((v - mean) ** 2 for v in scaled) / len(scaled))}
    for key in STAT_KEYS:
        if key.startswith("p"):
            out[key] = percentile(scaled, int(key[1:]) / 100.0)
    return out


def summary_ms(seconds):
    """``{mean, min, max, p50, p90, p95, p99}`` in ms of a list of seconds, None when it is empty."""
    dist = distribution(seconds, 1000.0)
    if dist is None:
        return None
    out = {"mean": dist["avg"], "min": dist["min"], "max": dist["max"]}
    out.update((key, dist[key]) for key in ("p50", "p90", "p95", "p99"))
    return {key: round(value, 4) for key, value in out.items()}


def tpot_s(record):
    """Time per output token of one request, None below two tokens (AIPerf's inter_token_latency)."""
    if "tpot_s" in record:
        return record["tpot_s"]
    if record["output_tokens"] < 2 or record.get("ttft_s") is None:
        return None
    return (record["latency_s"] - record["ttft_s"]) / (record["output_tokens"] - 1)


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------

def _error_of(exc):
    if isinstance(exc, TransportError):
        return {"code": None, "type": "TransportError", "message": exc.message}
    return {"code": (getattr(exc, "details", None) or {}).get("code"), "type": type(exc).__name__,
            "message": getattr(exc, "msg", None) or str(exc)}


def _run_pool(items, concurrency, send):
    """Run ``send(index, item)`` over ``items`` with ``concurrency`` threads; results in the items' order."""
    queue = list(enumerate(items))
    out = [None] * len(items)
    lock = threading.Lock()

    def worker(worker_id):
        while True:
            with lock:
                if not queue:
                    return
                index, item = queue.pop(0)
            out[index] = send(index, item, worker_id)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(max(1, min(concurrency, len(items))))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out


def _warmup_prompts(prompts, warmup):
    return [prompts[i % len(prompts)] for i in range(max(0, warmup))]


def run(base_url, api, model, prompts, max_tokens, temperature=0.0, concurrency=1, timeout=300.0,
        headers=None, opener=None, metrics_url=None, metrics_get=None, warmup=0, clock=time.monotonic,
        wall_ns=time.time_ns):
    """Measure the endpoint with ``prompts``; returns the figures the tuner and the report use.

    The result's ``_records`` (one per measured request) and ``_run`` (the run's settings and times) feed
    ``export_files``; the module drops them from what it returns.
    """
    headers = dict(headers or {}, Accept="text/event-stream")
    headers["Content-Type"] = "application/json"
    url = base_url + ("/v1/chat/completions" if api == "chat" else "/v1/completions")
    mono0, wall0 = clock(), wall_ns()

    def send(index, prompt, worker_id):
        started = clock()
        try:
            record = stream_one(opener, url, api, payload(api, model, prompt, max_tokens, temperature), headers,
                                timeout, clock)
            record["error"] = None
        except (EndpointError, TransportError) as exc:
            ended = clock()
            record = {"start_s": started, "end_s": ended, "latency_s": ended - started, "error": _error_of(exc)}
        record.update(index=index, worker=worker_id)
        return record

    if warmup:
        _run_pool(_warmup_prompts(prompts, warmup), concurrency, send)  # not counted: caches, graphs, connections
    get = metrics_get or make_text_getter()
    before = read_snapshot(get, metrics_url) if metrics_url else None
    records = _run_pool(list(prompts), concurrency, send)
    # The exporter folds the iteration stats in when it is scraped: a scrape after the last answer is up to date.
    after = read_snapshot(get, metrics_url) if metrics_url else None
    good = [r for r in records if r["error"] is None]
    errors = [r["error"]["message"] for r in records if r["error"] is not None]
    if not good:
        raise EndpointError("all %d requests to %s failed; first: %s" % (len(records), url, errors[0]))
    out = summarize(good, len(records), concurrency)
    out["warmup_requests"] = max(0, warmup)
    out["errors"] = errors[:MAX_ERRORS]
    out["metrics_url"] = metrics_url
    out.update(acceptance_figures(before, after) if metrics_url else acceptance_figures(None, None))
    out["_records"] = records
    out["_run"] = {"model": model, "api": api, "url": base_url, "concurrency": concurrency, "warmup": max(0, warmup),
                   "max_tokens": max_tokens, "temperature": temperature, "timeout": timeout, "streaming": True,
                   "mono0": mono0, "wall0": wall0}
    return out


def summarize(good, total, concurrency):
    """The run's figures from its successful records (``total`` counts the failed ones too)."""
    tokens = sum(r["output_tokens"] for r in good)
    duration = max(r["end_s"] for r in good) - min(r["start_s"] for r in good)
    from_usage = {r.get("tokens_from_usage") for r in good}
    inputs = [r.get("input_tokens") for r in good]
    return {
        "requests": len(good),
        "failed_requests": total - len(good),
        "concurrency": concurrency,
        "output_tokens": tokens,
        "output_tokens_source": "usage" if from_usage == {True} else ("chunks" if from_usage == {False} else "mixed"),
        "input_tokens": sum(inputs) if inputs and None not in inputs else None,
        "duration_s": round(duration, 6),
        "tokens_per_s": tokens / duration if duration > 0 else None,
        "requests_per_s": len(good) / duration if duration > 0 else None,
        "ttft_ms": summary_ms([r["ttft_s"] for r in good if r.get("ttft_s") is not None]),
        "itl_ms": summary_ms([g for r in good for g in r.get("gaps_s") or ()]),
        "tpot_ms": summary_ms([t for t in (tpot_s(r) for r in good) if t is not None]),
        "latency_ms": summary_ms([r["latency_s"] for r in good]),
        # The iteration log is no longer read (the exporter owns it): no step time, no iteration count.
        "step_ms_mean": None,
        "iterations": None,
    }


def acceptance_figures(before, after):
    """The acceptance fields of the result from two snapshots (all None without them)."""
    if after is None:
        return {"acceptance_rate": None, "mean_acceptance_length": None, "accepted_histogram": None,
                "acceptance_per_position": None, "drafted_tokens": None, "accepted_tokens": None}
    acc = _metrics.acceptance(before, after)
    return {
        "acceptance_rate": acc["acceptance_rate"],
        "mean_acceptance_length": acc["mean_acceptance_length"],
        "accepted_histogram": acc["accepted_histogram"],
        "acceptance_per_position": acc["per_position"] or None,
        "drafted_tokens": acc["drafted"],
        "accepted_tokens": acc["accepted"],
    }


def run_triton(client, model, prompts, max_tokens, tokenizer, runner, temperature=0.0, warmup=0, clock=time.monotonic,
               wall_ns=time.time_ns):
    """Measure Triton's generate endpoint at concurrency 1; the same figures as ``run`` where Triton has them."""
    for index, prompt in enumerate(_warmup_prompts(prompts, warmup)):
        try:
            run_generation(client, "triton", index, warmup, model, prompt, max_tokens, temperature)
        except EndpointError:
            pass  # a warm-up answer is not counted, nor its failure
    mono0, wall0 = clock(), wall_ns()
    records, answers = [], []
    for index, prompt in enumerate(prompts):
        started, error = clock(), None
        try:
            answers.append(run_generation(client, "triton", index, len(prompts), model, prompt, max_tokens, temperature))
        except EndpointError as exc:
            error = _error_of(exc)
        ended = clock()
        records.append({"index": index, "worker": 0, "start_s": started, "end_s": ended, "latency_s": ended - started,
                        "error": error})
    good = [r for r in records if r["error"] is None]
    errors = [r["error"]["message"] for r in records if r["error"] is not None]
    if not good:
        raise EndpointError("all %d requests to Triton model %s failed; first: %s" % (len(records), model, errors[0]))
    counts = count_tokens_in_container(runner, tokenizer["container"], tokenizer["model"], [a["_text"] for a in answers])
    drafted = accepted = 0
    for record, answer, count in zip(good, answers, counts):
        perf = answer["perf_metrics"]
        record.update(output_tokens=count, tokens_from_usage=False, input_tokens=None, ttft_s=None, gaps_s=[])
        if perf["arrival_time_ns"] is not None and perf["first_token_time_ns"] is not None:
            record["ttft_s"] = (perf["first_token_time_ns"] - perf["arrival_time_ns"]) / 1e9
        if perf["first_token_time_ns"] is not None and perf["last_token_time_ns"] is not None and count > 1:
            # No stream to time: the mean gap of each request, from the server's first and last token.
            record["gaps_s"] = [(perf["last_token_time_ns"] - perf["first_token_time_ns"]) / 1e9 / (count - 1)]
            record["tpot_s"] = record["gaps_s"][0]  # the server's mean gap is the time per output token here
        drafted += perf["total_draft_tokens"] or 0
        accepted += perf["total_accepted_draft_tokens"] or 0
    out = summarize(good, len(records), 1)
    out.update(warmup_requests=max(0, warmup), errors=errors[:MAX_ERRORS], metrics_url=None)
    out.update(acceptance_figures(None, None))
    out["acceptance_rate"] = (accepted / float(drafted)) if drafted else None
    out["drafted_tokens"] = drafted or None
    out["accepted_tokens"] = accepted if drafted else None
    out["_records"] = records
    out["_run"] = {"model": model, "api": "triton", "url": client.base_url, "concurrency": 1, "warmup": max(0, warmup),
                   "max_tokens": max_tokens, "temperature": temperature, "timeout": client.request_timeout,
                   "streaming": False, "mono0": mono0, "wall0": wall0}
    return out


# ---------------------------------------------------------------------------
# AIPerf-shaped export
# Aggregate: JsonExportData / JsonMetricResult,
#   https://github.com/ai-dynamo/aiperf/blob/main/src/aiperf/common/models/export_models.py
#   written by https://github.com/ai-dynamo/aiperf/blob/main/src/aiperf/exporters/metrics_json_exporter.py
#   (earlier releases: aiperf/exporters/json_exporter.py)
# Records: MetricRecordInfo {metadata, metrics: {tag: {value, unit}}, error},
#   https://github.com/ai-dynamo/aiperf/blob/main/aiperf/common/models/record_models.py and
#   https://github.com/ai-dynamo/aiperf/blob/main/docs/tutorials/working-with-profile-exports.md
# Tags, units and formulas: https://github.com/ai-dynamo/aiperf/tree/main/src/aiperf/metrics/types
# (ttft_metric.py, inter_token_latency_metric.py, request_latency_metric.py, output_token_throughput_metrics.py,
# request_throughput_metric.py, output_sequence_length_metric.py, request_count_metric.py, error_request_count.py,
# benchmark_duration_metric.py, inter_chunk_latency_metric.py, ttst_metric.py); display units from
# https://github.com/ai-dynamo/aiperf/blob/main/aiperf/common/enums/metric_enums.py
# ---------------------------------------------------------------------------

AIPERF_SCHEMA_VERSION = "1.0"  # JsonExportData.SCHEMA_VERSION
# tag: display unit (the unit AIPerf writes in its exports).
UNITS = {
    "time_to_first_token": "ms",
    "time_to_second_token": "ms",
    "inter_token_latency": "ms",
    "inter_chunk_latency": "ms",
    "request_latency": "ms",
    "output_token_throughput_per_user": "tokens/sec/user",
    "output_sequence_length": "tokens",
    "input_sequence_length": "tokens",
    "request_throughput": "requests/sec",
    "output_token_throughput": "tokens/sec",
    "request_count": "requests",
    "error_request_count": "requests",
    "benchmark_duration": "sec",
    "total_osl": "tokens",
    "total_isl": "tokens",
}


def _record_metrics(record):
    """One record's metrics, AIPerf's tags in their display units."""
    if record["error"] is not None:
        return {}
    metrics = {}

    def put(tag, value):
        if value is not None:
            metrics[tag] = {"value": value, "unit": UNITS[tag]}

    ttft = record.get("ttft_s")
    put("time_to_first_token", None if ttft is None else ttft * 1000.0)
    chunks = record.get("chunks_s") or []
    put("time_to_second_token", (chunks[1] - chunks[0]) * 1000.0 if len(chunks) > 1 else None)
    put("request_latency", record["latency_s"] * 1000.0)
    gaps = record.get("gaps_s") or []
    put("inter_chunk_latency", [g * 1000.0 for g in gaps] if len(chunks) > 1 else None)
    put("output_sequence_length", record["output_tokens"])
    put("input_sequence_length", record.get("input_tokens"))
    itl = tpot_s(record)
    put("inter_token_latency", None if itl is None else itl * 1000.0)
    put("output_token_throughput_per_user", 1.0 / itl if itl else None)
    return metrics


def aiperf_documents(result, records, run_info):
    """``(summary dict, [record dicts])`` in the shapes of AIPerf's ``profile_export_aiperf.json`` and
    ``profile_export.jsonl``."""
    mono0, wall0 = run_info["mono0"], run_info["wall0"]

    def ns(seconds):
        return int(wall0 + (seconds - mono0) * 1e9)

    lines = []
    per_tag = {}
    for record in sorted(records, key=lambda r: r["index"]):
        metrics = _record_metrics(record)
        for tag, item in metrics.items():
            per_tag.setdefault(tag, []).extend(item["value"] if isinstance(item["value"], list) else [item["value"]])
        lines.append({
            "metadata": {
                "session_num": record["index"],
                "x_request_id": str(uuid.uuid4()),
                "turn_index": 0,
                "request_start_ns": ns(record["start_s"]),
                "request_ack_ns": None,
                "request_end_ns": ns(record["end_s"]),
                "worker_id": "specdec_bench_worker_%d" % record["worker"],
                "record_processor_id": "specdec_bench",
                "benchmark_phase": "profiling",
                "was_cancelled": False,
                "cancellation_time_ns": None,
            },
            "metrics": metrics,
            "error": record["error"],
        })
    doc = {"schema_version": AIPERF_SCHEMA_VERSION, "benchmark_id": str(uuid.uuid4())}
    for tag in ("request_latency", "time_to_first_token", "time_to_second_token", "inter_token_latency",
                "inter_chunk_latency", "output_token_throughput_per_user", "output_sequence_length",
                "input_sequence_length"):
        dist = distribution(per_tag.get(tag))
        if dist is not None:
            doc[tag] = dict({"unit": UNITS[tag]}, **dist)
    good = [r for r in records if r["error"] is None]
    failed = len(records) - len(good)
    duration = result["duration_s"]

    def scalar(tag, value):
        if value is not None:
            doc[tag] = {"unit": UNITS[tag], "avg": value}

    # Scalars carry avg only, as AIPerf writes its counters and derived metrics.
    scalar("request_count", len(good))
    scalar("error_request_count", failed or None)  # AIPerf writes it only when a request failed
    scalar("request_throughput", result["requests_per_s"])
    scalar("output_token_throughput", result["tokens_per_s"])
    scalar("benchmark_duration", duration)
    scalar("total_osl", result["output_tokens"])
    scalar("total_isl", result.get("input_tokens"))
    doc["input_config"] = {
        "endpoint": {"model_names": [run_info["model"]], "type": run_info["api"], "streaming": run_info["streaming"],
                     "url": run_info["url"], "timeout_seconds": run_info["timeout"]},
        "loadgen": {"concurrency": run_info["concurrency"], "request_count": len(records),
                    "warmup_request_count": run_info["warmup"]},
        "input": {"extra": [["max_tokens", run_info["max_tokens"]], ["temperature", run_info["temperature"]]]},
    }
    doc["was_cancelled"] = False
    if failed:
        counts = {}
        for record in records:
            if record["error"] is not None:
                key = (record["error"]["code"], record["error"]["type"], record["error"]["message"])
                counts[key] = counts.get(key, 0) + 1
        doc["error_summary"] = [{"error_details": {"code": code, "type": kind, "message": message}, "count": count}
                                for (code, kind, message), count in counts.items()]
    starts = [r["start_s"] for r in records]
    ends = [r["end_s"] for r in records]
    doc["start_time"] = _iso(ns(min(starts)))
    doc["end_time"] = _iso(ns(max(ends)))
    doc[EXTRA_KEY] = {
        "producer": "dgx_spark.specdec.specdec_bench",
        "metrics_url": result.get("metrics_url"),
        "acceptance_rate": result.get("acceptance_rate"),
        "mean_acceptance_length": result.get("mean_acceptance_length"),
        "accepted_histogram": result.get("accepted_histogram"),
        "acceptance_per_position": result.get("acceptance_per_position"),
        "drafted_tokens": result.get("drafted_tokens"),
        "accepted_tokens": result.get("accepted_tokens"),
        "output_tokens_source": result.get("output_tokens_source"),
        "warmup_requests": result.get("warmup_requests"),
    }
    return doc, lines


def _iso(nanoseconds):
    # pydantic writes AIPerf's naive local datetimes as ISO 8601 without an offset.
    return datetime.datetime.fromtimestamp(nanoseconds / 1e9).isoformat()


def _write_atomic(path, data):
    directory = os.path.dirname(path)
    handle, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def export_files(export_dir, result, records, run_info):
    """Write the AIPerf-shaped summary and records under ``export_dir``; returns the two paths."""
    doc, lines = aiperf_documents(result, records, run_info)
    try:
        os.makedirs(export_dir, exist_ok=True)
        summary = os.path.join(export_dir, SUMMARY_FILE)
        records_path = os.path.join(export_dir, RECORDS_FILE)
        _write_atomic(summary, (json.dumps(doc, indent=2, sort_keys=False) + "\n").encode("utf-8"))
        _write_atomic(records_path, "".join(json.dumps(line) + "\n" for line in lines).encode("utf-8"))
    except OSError as exc:
        raise EndpointError("export_dir %s: %s" % (export_dir, exc))
    return [summary, records_path]
