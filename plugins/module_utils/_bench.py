# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Measuring a served endpoint the way the draft-length tuner needs it (used by specdec_bench).

Each prompt is sent as a streamed request (OpenAI ``stream: true`` with ``include_usage``), one after the
other at concurrency 1 (or by N threads): time to first token, the gaps between streamed chunks
(inter-token latency) and output tokens/s. After each request the server's iteration statistics
(``/metrics``, with ``enable_iter_perf_stats``) are read: at batch size 1 each iteration is one request's
step, so its ``numAcceptedTokens`` builds the accepted-length histogram (acceptance by draft position) and
its ``iterLatencyMS`` the step time.

Triton's LLM API backend (``run_triton``) answers each generate request whole (``decoupled: false``): the
time to first token and the inter-token latency come from the response's perf metrics (server-side
timestamps), the tokens from the model's tokenizer, and acceptance from the per-request draft counts (no
histogram: the tuner then measures every candidate it is given).
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error

from ansible_collections.dgx_spark.specdec.plugins.module_utils._endpoint import (
    HTTP_AGENT,
    EndpointError,
    TransportError,
    _describe_exception,
    _fetch_stats,
    count_tokens_in_container,
    excerpt,
    run_generation,
)

try:
    from ansible.module_utils.urls import open_url
except ImportError:  # unit tests inject their own opener
    open_url = None


def make_stream_opener(validate_certs=True, use_proxy=True):
    """An opener that yields ``(monotonic time, line)`` as the response's lines arrive."""

    def opener(url, body, headers, timeout):
        try:
            resp = open_url(url, data=body, headers=headers, method="POST", timeout=timeout,
                            validate_certs=validate_certs, use_proxy=use_proxy, http_agent=HTTP_AGENT)
        except urllib.error.HTTPError as exc:
            raise EndpointError("HTTP %d from %s: %s" % (exc.code, url, excerpt(exc.read(), 300)))
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
            raise TransportError(*_describe_exception(exc, timeout))
        try:
            for line in iter(resp.readline, b""):
                yield time.monotonic(), line
        finally:
            resp.close()

    return opener


def payload(api, model, prompt, max_tokens, temperature):
    body = {"model": model, "max_tokens": max_tokens, "temperature": temperature, "stream": True,
            "stream_options": {"include_usage": True}}
    if api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    return body


def _chunk_text(api, chunk):
    choices = chunk.get("choices") or []
    if not choices:
        return ""
    if api == "chat":
        return (choices[0].get("delta") or {}).get("content") or ""
    return choices[0].get("text") or ""


def stream_one(opener, url, api, body, headers, timeout, clock=time.monotonic):
    """One streamed request: ``{ttft_s, latency_s, output_tokens, gaps_s}``."""
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
        usage = chunk.get("usage") or usage
        if _chunk_text(api, chunk):
            arrivals.append(now)
    end = clock()
    if not arrivals:
        raise EndpointError("the stream from %s carried no text" % url)
    tokens = (usage or {}).get("completion_tokens") or len(arrivals)
    return {
        "ttft_s": arrivals[0] - start,
        "latency_s": end - start,
        "output_tokens": int(tokens),
        "gaps_s": [b - a for a, b in zip(arrivals, arrivals[1:])],
    }


def percentile(values, share):
    """Nearest-rank percentile (share 0..1) of a non-empty list."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(share * len(ordered) + 0.5)) - 1))
    return ordered[index]


def p50_p95_ms(seconds):
    """``{p50, p95}`` in ms of a list of seconds, None when it is empty."""
    if not seconds:
        return None
    return {"p50": 1000 * percentile(seconds, 0.5), "p95": 1000 * percentile(seconds, 0.95)}


def iterations(doc):
    """The iteration entries of a ``/metrics`` document (a list, or a mapping holding one)."""
    if isinstance(doc, dict):
        doc = doc.get("iterationStats") or doc.get("iteration_stats") or []
    return [entry for entry in doc or [] if isinstance(entry, dict)]


def speculative_stats(entries):
    """Accepted-length histogram, acceptance rate, mean acceptance length and mean step time from iterations."""
    histogram = []
    drafted = accepted = 0
    latencies = []
    for entry in entries:
        if entry.get("iterLatencyMS") is not None:
            latencies.append(float(entry["iterLatencyMS"]))
        spec = entry.get("specDecodingStats") or {}
        if not spec.get("numDraftTokens"):
            continue
        draft, ok = int(spec["numDraftTokens"]), int(spec.get("numAcceptedTokens") or 0)
        drafted += draft
        accepted += ok
        # One request per iteration (batch size 1): bin by the number accepted.
        if len(histogram) < draft + 1:
            histogram.extend([0] * (draft + 1 - len(histogram)))
        histogram[min(ok, draft)] += 1
    steps = sum(histogram)
    return {
        "iterations": len(entries),
        "step_ms_mean": (sum(latencies) / len(latencies)) if latencies else None,
        "accepted_histogram": histogram or None,
        "acceptance_rate": (accepted / float(drafted)) if drafted else None,
        "mean_acceptance_length": (1.0 + accepted / float(steps)) if steps else None,
    }


def run(base_url, api, model, prompts, max_tokens, temperature=0.0, concurrency=1, timeout=300.0,
        headers=None, opener=None, stats_client=None, clock=time.monotonic):
    """Measure the endpoint with ``prompts``; returns the figures the tuner and the report use."""
    headers = dict(headers or {}, Accept="text/event-stream")
    headers["Content-Type"] = "application/json"
    path = "/v1/chat/completions" if api == "chat" else "/v1/completions"
    requests, entries, errors = [], [], []
    lock = threading.Lock()
    if stats_client is not None:
        _fetch_stats(stats_client, "/metrics")  # start from an empty iteration log
    queue = list(enumerate(prompts))

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                dummy, prompt = queue.pop(0)
            try:
                result = stream_one(opener, base_url + path, api, payload(api, model, prompt, max_tokens, temperature),
                                    headers, timeout, clock)
            except (EndpointError, TransportError) as exc:
                with lock:
                    errors.append(getattr(exc, "msg", None) or getattr(exc, "message", None) or str(exc))
                return
            doc = None
            if stats_client is not None and concurrency == 1:
                doc, dummy = _fetch_stats(stats_client, "/metrics")
            with lock:
                requests.append(result)
                entries.extend(iterations(doc))

    started = clock()
    threads = [threading.Thread(target=worker) for dummy in range(max(1, concurrency))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = clock() - started
    if errors:
        raise EndpointError("%d of %d requests failed; first: %s" % (len(errors), len(prompts), errors[0]))
    if stats_client is not None and concurrency > 1:
        doc, dummy = _fetch_stats(stats_client, "/metrics")
        entries.extend(iterations(doc))
    tokens = sum(r["output_tokens"] for r in requests)
    gaps = [g for r in requests for g in r["gaps_s"]]
    ttfts = [r["ttft_s"] for r in requests]
    out = {
        "requests": len(requests),
        "concurrency": concurrency,
        "output_tokens": tokens,
        "tokens_per_s": tokens / wall if wall > 0 else None,
        "ttft_ms": p50_p95_ms(ttfts),
        "itl_ms": p50_p95_ms(gaps),
    }
    out.update(speculative_stats(entries))
    if concurrency > 1:
        out["accepted_histogram"] = None  # iterations mix requests: no per-position acceptance
    return out


def run_triton(client, model, prompts, max_tokens, tokenizer, runner, temperature=0.0, clock=time.monotonic):
    """Measure Triton's generate endpoint at concurrency 1; the same figures as ``run`` where Triton has them."""
    results = []
    started = clock()
    for index, prompt in enumerate(prompts):
        results.append(run_generation(client, "triton", index, len(prompts), model, prompt, max_tokens, temperature))
    wall = clock() - started
    counts = count_tokens_in_container(runner, tokenizer["container"], tokenizer["model"],
                                       [r["_text"] for r in results])
    ttfts, gaps = [], []
    drafted = accepted = 0
    for result, count in zip(results, counts):
        perf = result["perf_metrics"]
        if perf["arrival_time_ns"] is not None and perf["first_token_time_ns"] is not None:
            ttfts.append((perf["first_token_time_ns"] - perf["arrival_time_ns"]) / 1e9)
        if perf["first_token_time_ns"] is not None and perf["last_token_time_ns"] is not None and count > 1:
            # No stream to time: the mean gap of each request, from the server's first and last token.
            gaps.append((perf["last_token_time_ns"] - perf["first_token_time_ns"]) / 1e9 / (count - 1))
        drafted += perf["total_draft_tokens"] or 0
        accepted += perf["total_accepted_draft_tokens"] or 0
    tokens = sum(counts)
    return {
        "requests": len(results),
        "concurrency": 1,
        "output_tokens": tokens,
        "tokens_per_s": tokens / wall if wall > 0 else None,
        "ttft_ms": p50_p95_ms(ttfts),
        "itl_ms": p50_p95_ms(gaps),
        "iterations": None,
        "step_ms_mean": None,
        "accepted_histogram": None,
        "acceptance_rate": (accepted / float(drafted)) if drafted else None,
        "mean_acceptance_length": None,
    }
