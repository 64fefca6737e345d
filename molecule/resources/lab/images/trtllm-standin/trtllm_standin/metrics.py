"""``/prometheus/metrics`` of the stand-in: the families the impersonated release's trtllm-serve serves.

From TensorRT-LLM's collector (tensorrt_llm/metrics/collector.py, https://github.com/NVIDIA/TensorRT-LLM), per release
(``$TRTLLM_VERSION``):

* 1.2.x: the five unprefixed families of https://github.com/NVIDIA/TensorRT-LLM/pull/5785: ``request_success_total``
  {finished_reason} and the histograms ``e2e_request_latency_seconds``, ``time_to_first_token_seconds``,
  ``time_per_output_token_seconds``, ``request_queue_time_seconds``. No gauges.
* 1.3.0rc5 and later: the same under the ``trtllm_`` prefix, plus the gauges ``trtllm_kv_cache_hit_rate`` and
  ``trtllm_kv_cache_utilization`` (https://github.com/NVIDIA/TensorRT-LLM/pull/11243).
* 1.3.0rc11 and later: plus the counters ``trtllm_kv_cache_reused_blocks_total`` and
  ``trtllm_kv_cache_missed_blocks_total`` (https://github.com/NVIDIA/TensorRT-LLM/pull/12132): the eight names the
  release's examples/serve/prometheus_metrics.py checks.
* ``STANDIN_NATIVE_SPEC_METRICS=1`` (a lab switch describing a NEWER build, none of the lab's releases): plus the
  speculative-decoding metrics of https://github.com/NVIDIA/TensorRT-LLM/pull/12545 and
  https://github.com/NVIDIA/TensorRT-LLM/pull/12636, so tests can see the collection's exporter step aside.

Every series has ``model_name="undefined"``, ``engine_type="undefined"``, as these releases hard-code them. The server
runs prometheus_client in multiprocess mode (``mount_metrics`` in tensorrt_llm/serve/openai_server.py), hence: no
``_created`` samples, a ``pid`` label on gauges, and a family shows only once one of its series has been written.
Iteration metrics follow the release's background loop: when a request finishes, from the newest iteration stat (so
they need ``enable_iter_perf_stats: true``). prometheus_client is imported here only: the stand-in runs without it
when ``return_perf_metrics`` is off.
"""

from __future__ import annotations

import os
import threading

from . import at_least

# The collector's default buckets (the same since PR #5785).
E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
               960.0, 1920.0, 7680.0)
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
                80.0, 160.0, 640.0, 2560.0)
TPOT_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
                80.0)
QUEUE_BUCKETS = E2E_BUCKETS

LABELS = {"model_name": "undefined", "engine_type": "undefined"}
SPEC_PREFIX = "trtllm_spec_decode_"
NATIVE_SPEC_ENV = "STANDIN_NATIVE_SPEC_METRICS"


def native_spec_enabled():
    return os.environ.get(NATIVE_SPEC_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def features(version, native_spec=None):
    """What ``version`` serves: prefix, KV gauges, KV block counters, speculative-decoding metrics."""
    prefixed = at_least(version, "1.3.0rc5")
    return {
        "prefix": "trtllm_" if prefixed else "",
        "kv_gauges": prefixed,
        "kv_blocks": at_least(version, "1.3.0rc11"),
        "spec": native_spec_enabled() if native_spec is None else bool(native_spec),
    }


class _Written:
    """The registry's families that have a series: multiprocess mode has a file only for series written to."""

    def __init__(self, registry):
        self.registry = registry

    def collect(self):
        for family in self.registry.collect():
            if family.samples:
                yield family


class Metrics:
    """One server's metrics, in its own registry."""

    def __init__(self, version, pid=None, native_spec=None):
        # pylint: disable=import-outside-toplevel
        import prometheus_client
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        # Multiprocess mode writes no _created samples.
        prometheus_client.disable_created_metrics()
        self.features = features(version, native_spec)
        self.pid = str(os.getpid() if pid is None else pid)
        self.lock = threading.Lock()     # a scrape sees whole requests, never half-counted ones
        self.registry = CollectorRegistry(auto_describe=True)
        prefix = self.features["prefix"]
        labels = tuple(LABELS)
        gauge_labels = labels + ("pid",)

        def counter(name, text, extra=()):
            return Counter(prefix + name, text, labelnames=labels + tuple(extra), registry=self.registry)

        def histogram(name, text, buckets):
            return Histogram(prefix + name, text, labelnames=labels, buckets=buckets, registry=self.registry)

        def gauge(name, text):
            return Gauge(prefix + name, text, labelnames=gauge_labels, registry=self.registry)

        self.request_success = counter("request_success_total", "Count of successfully processed requests.",
                                       ("finished_reason",))
        self.e2e = histogram("e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.",
                             E2E_BUCKETS)
        self.ttft = histogram("time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                              TTFT_BUCKETS)
        self.tpot = histogram("time_per_output_token_seconds", "Histogram of time per output token in seconds.",
                              TPOT_BUCKETS)
        self.queue = histogram("request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
                               QUEUE_BUCKETS)
        self.kv_hit_rate = self.kv_utilization = self.kv_reused = self.kv_missed = None
        if self.features["kv_gauges"]:
            self.kv_hit_rate = gauge("kv_cache_hit_rate", "KV cache hit rate.")
            self.kv_utilization = gauge("kv_cache_utilization", "KV cache utilization (used blocks / max blocks).")
        if self.features["kv_blocks"]:
            self.kv_reused = counter("kv_cache_reused_blocks_total", "Number of reused KV cache blocks.")
            self.kv_missed = counter("kv_cache_missed_blocks_total", "Number of missed KV cache blocks.")
        self.spec = None
        if self.features["spec"]:
            # Always trtllm_: these came after the prefix.
            def spec(name, text, extra=()):
                return Counter(SPEC_PREFIX + name, text, labelnames=labels + tuple(extra), registry=self.registry)

            self.spec = {
                "num_draft": spec("num_draft_tokens_total", "Number of draft tokens."),
                "num_accepted": spec("num_accepted_tokens_total", "Number of accepted draft tokens."),
                "drafted": spec("drafted_tokens_total", "Draft tokens per draft position.", ("token_position",)),
                "accepted": spec("accepted_tokens_total", "Accepted draft tokens per draft position.",
                                 ("token_position",)),
                "acceptance_length": Gauge(SPEC_PREFIX + "acceptance_length", "Acceptance length.",
                                           labelnames=gauge_labels, registry=self.registry),
                "draft_overhead": Gauge(SPEC_PREFIX + "draft_overhead", "Draft overhead.",
                                        labelnames=gauge_labels, registry=self.registry),
            }
        self.served = _Written(self.registry)

    def log_request(self, finish_reason, stats, output_tokens, multiple=False, iteration=None):
        """A finished request: its request metrics, then the iteration metrics from the newest iteration stat.

        ``stats`` is Engine.generate's dict (times from time.time(), KV blocks, per-position draft counts).
        """
        # As the release's _process_req_perf_metrics (tensorrt_llm/executor/result.py) derives them.
        arrival = stats["arrival_time"]
        ttft = stats["first_token_time"] - arrival
        e2e = stats["last_token_time"] - arrival
        queue = stats["first_scheduled_time"] - arrival
        tpot = (e2e - ttft) / (output_tokens - 1) if output_tokens > 1 and not multiple else 0
        with self.lock:
            if finish_reason:  # the collector logs a request only with its finish reason
                self.request_success.labels(finished_reason=finish_reason, **LABELS).inc()
                # `if value := metrics.get(name, 0)`: a value of 0 (e.g. no queueing) is not observed.
                for histogram, value in ((self.e2e, e2e), (self.ttft, ttft), (self.tpot, tpot),
                                         (self.queue, queue)):
                    if value:
                        histogram.labels(**LABELS).observe(value)
            if self.spec is not None and stats.get("drafted"):
                # The per-position counters come from the request's perf metrics (PR #12636); a position is
                # counted only when its count is above 0.
                for key, counts in (("drafted", stats["drafted_per_position"]),
                                    ("accepted", stats["accepted_per_position"])):
                    for position, count in enumerate(counts):
                        if count > 0:
                            self.spec[key].labels(token_position=str(position), **LABELS).inc(count)
                # The release adds each iteration stat's numDraftTokens/numAcceptedTokens; the stand-in counts every
                # step of the request (the sum of its iteration stats), so the totals equal the per-position sums.
                self.spec["num_draft"].labels(**LABELS).inc(stats["drafted"])
                self.spec["num_accepted"].labels(**LABELS).inc(stats["accepted"])
            if iteration is not None:
                self._log_iteration(iteration, stats)

    def _log_iteration(self, entry, stats):
        kv = entry.get("kvCacheStats") or {}
        if self.kv_hit_rate is not None and kv:
            self.kv_hit_rate.labels(pid=self.pid, **LABELS).set(kv.get("cacheHitRate") or 0.0)
            most, used = kv.get("maxNumBlocks") or 0, kv.get("usedNumBlocks") or 0
            self.kv_utilization.labels(pid=self.pid, **LABELS).set(used / most if most else 0.0)
        if self.kv_reused is not None:
            # The release adds the growth of the executor's reused/missed block counts; the stand-in the blocks of the
            # request's prompt found in / missing from the reuse cache.
            self.kv_reused.labels(**LABELS).inc(stats.get("reused_blocks") or 0)
            self.kv_missed.labels(**LABELS).inc(stats.get("missed_blocks") or 0)
        spec = entry.get("specDecodingStats")
        if self.spec is not None and spec:
            self.spec["acceptance_length"].labels(pid=self.pid, **LABELS).set(spec.get("acceptanceLength") or 0.0)
            self.spec["draft_overhead"].labels(pid=self.pid, **LABELS).set(spec.get("draftOverhead") or 0.0)

    def render(self, accept=None):
        """(body bytes, content type) for an Accept header, as prometheus_client's make_asgi_app answers."""
        from prometheus_client.exposition import choose_encoder  # pylint: disable=import-outside-toplevel

        encoder, content_type = choose_encoder(accept or "")
        with self.lock:
            return encoder(self.served), content_type
