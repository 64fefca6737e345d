# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""TensorRT-LLM's Prometheus metrics: the one reading of acceptance, and the exporter for releases without them.

``trtllm-serve`` serves Prometheus text on ``/prometheus/metrics`` when the options file has
``return_perf_metrics: true``; ``enable_iter_perf_stats: true`` adds the iteration metrics (queue, KV cache,
speculative decoding). The names are those of TensorRT-LLM's metrics collector
(https://github.com/NVIDIA/TensorRT-LLM/blob/main/tensorrt_llm/metrics/collector.py): ``trtllm_`` counters, gauges
and histograms labelled ``model_name`` and ``engine_type``, per-position counters labelled ``token_position``.

Releases without the speculative-decoding metrics (1.2.x) get them from ``Exporter``: it polls the server's
iteration statistics (``GET /metrics``, a JSON list that each read empties, so the exporter must be its only reader),
folds them into cumulative counters and gauges of the same names, and passes the release's own request metrics
through under their ``trtllm_`` names. One dashboard and one set of rules then read every cluster of a fleet.

Everything that reads acceptance (the endpoint validator, specdec_bench, the tuner) takes two ``snapshot`` of the
counters and calls ``acceptance``: one parser, one formula. This file has no import outside the standard library:
it is also the exporter's program, copied to the node and run there with the image's Python
(``python3 exporter.py --upstream http://127.0.0.1:8000 --listen 0.0.0.0:9464``).
"""

from __future__ import annotations

import json
import math
import re
import sys
import threading

PREFIX = "trtllm_"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DRAFTED = PREFIX + "spec_decode_num_draft_tokens_total"
ACCEPTED = PREFIX + "spec_decode_num_accepted_tokens_total"
POSITION_DRAFTED = PREFIX + "spec_decode_drafted_tokens_total"
POSITION_ACCEPTED = PREFIX + "spec_decode_accepted_tokens_total"
POSITION_LABEL = "token_position"
FIRST_POSITION = 0
NATIVE_PATH = "/prometheus/metrics"

# ---------------------------------------------------------------------------
# Parsing the text exposition format (0.0.4)
# https://github.com/prometheus/docs/blob/main/content/docs/instrumenting/exposition_formats.md
# ---------------------------------------------------------------------------

_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+(\S+)(?:\s+-?[0-9]+)?\s*$")
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


class MetricsError(ValueError):
    """The text is not Prometheus' exposition format."""


def _labels(text):
    labels = {}
    pos = 0
    text = text.strip()
    while pos < len(text):
        match = _LABEL.match(text, pos)
        if not match:
            raise MetricsError("bad labels {%s}" % text)
        labels[match.group(1)] = re.sub(r'\\[\\"n]', lambda m: _UNESCAPE[m.group(0)], match.group(2))
        pos = match.end()
    return labels


def _value(text):
    lowered = text.lower()
    if lowered in ("+inf", "inf"):
        return math.inf
    if lowered == "-inf":
        return -math.inf
    try:
        return float(text)
    except ValueError:
        raise MetricsError("bad sample value %r" % text)


def parse_text(text):
    """``{name: [(labels, value), ...]}`` of every sample in Prometheus text (comments and types skipped)."""
    samples = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match:
            raise MetricsError("line %d is not a sample: %s" % (number, line[:120]))
        samples.setdefault(match.group(1), []).append((_labels(match.group(3) or ""), _value(match.group(4))))
    return samples


def total(samples, name, **match):
    """The sum of ``name``'s samples whose labels include ``match`` (None when there is none: not exposed)."""
    values = [value for labels, value in samples.get(name, ())
              if all(labels.get(key) == str(want) for key, want in match.items())]
    return sum(values) if values else None


# ---------------------------------------------------------------------------
# The one reading of acceptance
# ---------------------------------------------------------------------------

def snapshot(text):
    """The speculative-decoding counters of one scrape: totals and per draft position."""
    samples = parse_text(text) if isinstance(text, str) else text
    positions = {}
    for name, key in ((POSITION_DRAFTED, "drafted"), (POSITION_ACCEPTED, "accepted")):
        for labels, value in samples.get(name, ()):
            try:
                position = int(labels.get(POSITION_LABEL, ""))
            except ValueError:
                continue
            slot = positions.setdefault(position, {"drafted": 0.0, "accepted": 0.0})
            slot[key] += value
    return {"drafted": total(samples, DRAFTED), "accepted": total(samples, ACCEPTED), "positions": positions}


def _delta(after, before):
    if after is None:
        return None
    # A counter that went down was reset (the server restarted): count from zero, as Prometheus' rate() does.
    return after if before is None or after < before else after - before


def acceptance(before, after):
    """Acceptance between two snapshots: rate, mean acceptance length, per draft position, accepted-length histogram.

    * acceptance rate = accepted draft tokens / drafted tokens;
    * a drafting step drafts the first position once, so the steps are its drafted tokens, the mean acceptance
      length is ``1 + accepted / steps`` (the target's own token plus the accepted drafts, both counted per
      position, so that they cover the same steps), and the number of steps
      that accepted at least k drafts is the k-th position's accepted tokens: the histogram of accepted lengths
      follows. ``token_position`` counts from 0, as the collector's ``SPEC_DEC_DRAFTED_PER_POS`` list index does.
    Without per-position counters the steps are unknown: rate only. None where nothing was drafted.
    """
    before = before or {"drafted": None, "accepted": None, "positions": {}}
    drafted = _delta(after["drafted"], before["drafted"])
    accepted = _delta(after["accepted"], before["accepted"])
    per_position = []
    for position in sorted(after["positions"]):
        now, then = after["positions"][position], before["positions"].get(position) or {}
        pos_drafted = _delta(now["drafted"], then.get("drafted"))
        pos_accepted = _delta(now["accepted"], then.get("accepted"))
        per_position.append({"position": position, "drafted": pos_drafted, "accepted": pos_accepted,
                             "rate": round(pos_accepted / pos_drafted, 6) if pos_drafted else None})
    if drafted is None and per_position:  # per-position counters only: the totals are their sums
        drafted = sum(p["drafted"] for p in per_position)
        accepted = sum(p["accepted"] for p in per_position)
    steps = per_position[0]["drafted"] if per_position and per_position[0]["position"] == FIRST_POSITION else None
    histogram = None
    if steps:
        at_least = [steps] + [p["accepted"] for p in per_position] + [0.0]
        histogram = [int(round(max(0.0, at_least[k] - at_least[k + 1]))) for k in range(len(at_least) - 1)]
    return {
        "drafted": drafted,
        "accepted": accepted,
        "steps": steps,
        "acceptance_rate": round(accepted / drafted, 6) if drafted else None,
        # Over the positions' own steps: the exporter counts positions in one-request iterations only.
        "mean_acceptance_length": round(1.0 + sum(p["accepted"] for p in per_position) / steps, 6) if steps else None,
        "per_position": [p for p in per_position if p["drafted"]],
        "accepted_histogram": histogram,
    }


# ---------------------------------------------------------------------------
# The exporter: iteration statistics folded into the collector's metrics
# ---------------------------------------------------------------------------

# Request metrics a release serves under older names (1.2.x's collector has no prefix); passed through renamed.
# https://github.com/NVIDIA/TensorRT-LLM/pull/5785 added them unprefixed; https://github.com/NVIDIA/TensorRT-LLM/pull/11768
# moved them under trtllm_.
NATIVE_RENAMES = {
    "request_success_total": PREFIX + "request_success_total",
    "e2e_request_latency_seconds": PREFIX + "e2e_request_latency_seconds",
    "time_to_first_token_seconds": PREFIX + "time_to_first_token_seconds",
    "time_per_output_token_seconds": PREFIX + "time_per_output_token_seconds",
    "request_queue_time_seconds": PREFIX + "request_queue_time_seconds",
}
_SUFFIXES = ("_bucket", "_sum", "_count", "_created", "")

# name: (type, help). The gauges take the newest iteration's value; the counters sum every iteration.
FOLDED = {
    DRAFTED: ("counter", "Draft tokens proposed (collection exporter, from iteration stats)."),
    ACCEPTED: ("counter", "Draft tokens accepted (collection exporter, from iteration stats)."),
    POSITION_DRAFTED: ("counter", "Draft tokens proposed per draft position (iterations with one drafting request)."),
    POSITION_ACCEPTED: ("counter", "Draft tokens accepted per draft position (iterations with one drafting request)."),
    PREFIX + "generation_tokens_total": ("counter", "Tokens generated: each iteration's generation requests times its "
                                                    "mean decoded tokens per request (inflightBatchingStats)."),
    PREFIX + "prompt_tokens_total": ("counter", "Context tokens the iterations processed (inflightBatchingStats)."),
    PREFIX + "spec_decode_acceptance_length": ("gauge", "Acceptance length of the newest iteration."),
    PREFIX + "spec_decode_draft_overhead": ("gauge", "Draft overhead of the newest iteration."),
    PREFIX + "num_requests_running": ("gauge", "Active requests."),
    PREFIX + "num_requests_waiting": ("gauge", "Queued requests."),
    PREFIX + "kv_cache_utilization": ("gauge", "Used KV-cache blocks / max blocks."),
    PREFIX + "kv_cache_max_blocks": ("gauge", "KV-cache blocks in all."),
    PREFIX + "kv_cache_used_blocks": ("gauge", "KV-cache blocks in use."),
    PREFIX + "kv_cache_free_blocks": ("gauge", "KV-cache blocks free."),
    PREFIX + "iteration_latency_seconds": ("gauge", "Latency of the newest iteration."),
    PREFIX + "exporter_iterations_total": ("counter", "Iteration stats the exporter read."),
    PREFIX + "exporter_upstream_up": ("gauge", "1 when the exporter's last poll of the server answered."),
}


def _num(mapping, key):
    try:
        return float(mapping.get(key) or 0)
    except (TypeError, ValueError):
        return 0.0


class IterationFolder:
    """Cumulative counters and newest gauges from drained iteration stats (thread-safe)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counters = {DRAFTED: 0.0, ACCEPTED: 0.0, PREFIX + "exporter_iterations_total": 0.0,
                         PREFIX + "generation_tokens_total": 0.0, PREFIX + "prompt_tokens_total": 0.0}
        self.positions = {}
        self.gauges = {}
        self.spec_seen = False

    def add(self, entries):
        with self.lock:
            for entry in entries:
                if isinstance(entry, dict):
                    self._add(entry)

    def _add(self, entry):
        self.counters[PREFIX + "exporter_iterations_total"] += 1
        gauges = self.gauges
        if "numActiveRequests" in entry:
            gauges[PREFIX + "num_requests_running"] = _num(entry, "numActiveRequests")
        if "numQueuedRequests" in entry:
            gauges[PREFIX + "num_requests_waiting"] = _num(entry, "numQueuedRequests")
        if "iterLatencyMS" in entry:
            gauges[PREFIX + "iteration_latency_seconds"] = _num(entry, "iterLatencyMS") / 1000.0
        batching = entry.get("inflightBatchingStats")
        if isinstance(batching, dict):
            self.counters[PREFIX + "generation_tokens_total"] += round(
                _num(batching, "numGenRequests") * _num(batching, "avgNumDecodedTokensPerIter"))
            self.counters[PREFIX + "prompt_tokens_total"] += _num(batching, "numCtxTokens")
        kv = entry.get("kvCacheStats")
        if isinstance(kv, dict) and "maxNumBlocks" in kv:
            most, used = _num(kv, "maxNumBlocks"), _num(kv, "usedNumBlocks")
            gauges[PREFIX + "kv_cache_max_blocks"] = most
            gauges[PREFIX + "kv_cache_used_blocks"] = used
            gauges[PREFIX + "kv_cache_free_blocks"] = _num(kv, "freeNumBlocks")
            gauges[PREFIX + "kv_cache_utilization"] = used / most if most else 0.0
        spec = entry.get("specDecodingStats")
        if not isinstance(spec, dict):
            return
        self.spec_seen = True
        drafted, accepted = int(_num(spec, "numDraftTokens")), int(_num(spec, "numAcceptedTokens"))
        self.counters[DRAFTED] += drafted
        self.counters[ACCEPTED] += accepted
        if drafted:
            gauges[PREFIX + "spec_decode_acceptance_length"] = _num(spec, "acceptanceLength")
            gauges[PREFIX + "spec_decode_draft_overhead"] = _num(spec, "draftOverhead")
        # Positions are known only when one request drafted in the iteration: it drafted the first ``drafted``
        # positions and, acceptance being a prefix, accepted the first ``accepted``. Iterations of several drafting
        # requests count in the totals only.
        if drafted and int(_num(spec, "numRequestsWithDraftTokens")) == 1:
            for position in range(drafted):
                slot = self.positions.setdefault(FIRST_POSITION + position, [0.0, 0.0])
                slot[0] += 1
                slot[1] += 1 if position < accepted else 0

    def render(self, labels, upstream_up, skip=()):
        """The folded metrics as Prometheus text, every sample with ``labels``; the families in ``skip`` left out
        (the server serves them itself)."""
        with self.lock:
            values = dict(self.counters, **self.gauges)
            values[PREFIX + "exporter_upstream_up"] = 1.0 if upstream_up else 0.0
            positions = {k: list(v) for k, v in self.positions.items()}
            spec_seen = self.spec_seen
        lines = []
        for name, (kind, text) in FOLDED.items():
            if name in skip:
                continue
            if name.startswith(PREFIX + "spec_decode") and not spec_seen:
                continue  # no speculative decoding served (yet): no such series, as on the native collector
            if name in (POSITION_DRAFTED, POSITION_ACCEPTED):
                index = 0 if name == POSITION_DRAFTED else 1
                series = [(dict(labels, **{POSITION_LABEL: str(p)}), positions[p][index]) for p in sorted(positions)]
            elif name in values:
                series = [(labels, values[name])]
            else:
                continue
            lines.append("# HELP %s %s" % (name, text))
            lines.append("# TYPE %s %s" % (_family(name, kind), kind))
            lines.extend("%s%s %s" % (name, format_labels(lab), _format(value)) for lab, value in series)
        return "\n".join(lines) + "\n"


def _family(name, kind):
    return name[:-len("_total")] if kind == "counter" and name.endswith("_total") else name


def _format(value):
    if value == math.inf:
        return "+Inf"
    if value == -math.inf:
        return "-Inf"
    return repr(float(value)) if value != int(value) else "%d" % value


def format_labels(labels):
    if not labels:
        return ""
    body = ",".join('%s="%s"' % (key, str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n"))
                    for key, value in sorted(labels.items()))
    return "{%s}" % body


def _stem(name):
    return name[:-len("_total")] if name.endswith("_total") else name


# prometheus_client names a counter's family without _total (its samples add _total and _created).
_STEMS = {_stem(old): _stem(new) for old, new in NATIVE_RENAMES.items()}


def served_metrics(text):
    """The server's own ``trtllm_`` metrics, and those a release serves under older names (``NATIVE_RENAMES``)
    renamed; the rest (process and Python metrics) dropped."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                if parts[2].startswith(PREFIX):
                    out.append(line)
                elif _stem(parts[2]) in _STEMS:
                    parts[2] = _STEMS[_stem(parts[2])] + parts[2][len(_stem(parts[2])):]
                    out.append(" ".join(parts))
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        name = match.group(1)
        if name.startswith(PREFIX):
            out.append(line)
            continue
        for stem, new in _STEMS.items():
            if name.startswith(stem) and name[len(stem):] in _SUFFIXES + ("_total",):
                out.append(new + line[len(stem):])
                break
    return "\n".join(out) + ("\n" if out else "")


class Exporter:
    """Serves the collector's metrics for a server: its own, plus those folded from its iteration stats.

    The iteration stats are drained every ``interval`` seconds and before every scrape, unless the server serves the
    speculative-decoding counters itself (a build with TensorRT-LLM PR #12545): its own background loop then reads
    them, and the exporter only passes its metrics through. The choice is made on every scrape, from what the server
    answers, so one exporter serves every release.
    """

    def __init__(self, upstream, fetch, interval=2.0, labels=None):
        self.upstream = upstream.rstrip("/")
        self.fetch = fetch            # fetch(url, timeout) -> (status, body bytes); raises OSError
        self.interval = interval
        self.labels = dict(labels or {})
        self.folder = IterationFolder()
        self.poll_lock = threading.Lock()
        self.upstream_up = False
        self.native_spec = False

    def poll(self):
        """Drain the server's iteration stats into the counters; False when the server did not answer."""
        with self.poll_lock:
            if self.native_spec:
                return self.upstream_up
            try:
                status, body = self.fetch(self.upstream + "/metrics", 10)
                entries = json.loads(body.decode("utf-8")) if status == 200 else None
            except (OSError, ValueError):
                entries = None
            self.upstream_up = isinstance(entries, list)
            if self.upstream_up:
                if "model_name" not in self.labels:
                    self._learn_model()
                self.folder.add(entries)
            return self.upstream_up

    def _learn_model(self):
        try:
            status, body = self.fetch(self.upstream + "/v1/models", 10)
            data = json.loads(body.decode("utf-8")).get("data") or [] if status == 200 else []
        except (OSError, ValueError, AttributeError):
            return
        if data and isinstance(data[0], dict) and data[0].get("id"):
            self.labels.setdefault("model_name", str(data[0]["id"]))
            self.labels.setdefault("engine_type", "trtllm")

    def scrape(self):
        """The Prometheus text of one scrape."""
        try:
            status, body = self.fetch(self.upstream + NATIVE_PATH, 10)
            served = served_metrics(body.decode("utf-8", "replace")) if status == 200 else ""
            answered = True
        except (OSError, ValueError):
            served, answered = "", False
        names = set(parse_text(served)) if served else set()
        self.native_spec = DRAFTED in names
        if self.native_spec:
            self.upstream_up = answered
            skip = set(FOLDED) - {PREFIX + "exporter_upstream_up"}
        else:
            self.poll()
            skip = names  # what the server serves itself is not served twice
        return self.folder.render(self.labels, self.upstream_up, skip) + served

    def run_poller(self, stop):
        while not stop.wait(self.interval):
            self.poll()


def http_fetch(url, timeout):
    """GET a plain http:// URL (the node's own server) -> (status, body). The standard library only: the exporter
    runs in the release image, without Ansible."""
    import http.client
    import urllib.parse
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
    try:
        connection.request("GET", (parts.path or "/") + ("?" + parts.query if parts.query else ""))
        resp = connection.getresponse()
        return resp.status, resp.read()
    except http.client.HTTPException as exc:
        raise OSError(str(exc))
    finally:
        connection.close()


def main(argv=None):
    """Run the exporter: ``--upstream URL --listen HOST:PORT [--interval S]``."""
    import argparse
    import http.server
    import signal
    import socket

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="the server's base URL, e.g. http://127.0.0.1:8000")
    parser.add_argument("--listen", default="0.0.0.0:9464", help="HOST:PORT to serve /metrics on")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between polls of the iteration stats")
    args = parser.parse_args(argv)
    host, dummy, port = args.listen.rpartition(":")
    exporter = Exporter(args.upstream, http_fetch, args.interval)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the standard library's name)
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                body, status, kind = exporter.scrape().encode("utf-8"), 200, CONTENT_TYPE
            elif path == "/health":
                body, status, kind = b"ok\n", 200, "text/plain"
            else:
                body, status, kind = b"not found\n", 404, "text/plain"
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *args):  # one line per scrape would fill the container log
            return

    bind = host.strip("[]") or "0.0.0.0"

    class Server(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in bind else socket.AF_INET
        daemon_threads = True

    server = Server((bind, int(port)), Handler)
    stop = threading.Event()
    threading.Thread(target=exporter.run_poller, args=(stop,), daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *dummy: threading.Thread(target=server.shutdown).start())
    sys.stdout.write("exporter: %s -> http://%s/metrics every %.1f s\n" % (args.upstream, args.listen, args.interval))
    sys.stdout.flush()
    server.serve_forever()
    stop.set()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
