"""HTTP side of the trtllm-serve stand-in, standard library only.

Endpoints as tensorrt_llm/serve/openai_server.py (https://github.com/NVIDIA/TensorRT-LLM) serves them and the
trtllm-serve command reference describes them
(https://nvidia.github.io/TensorRT-LLM/<release>/commands/trtllm-serve/trtllm-serve.html).
"""

import collections
import json
import math
import socket
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import env_float, metrics, sim

GiB = 1024 ** 3


class Engine:
    """Simulated executor: generation timing, iteration stats and per-request perf metrics."""

    def __init__(self, model, version, options, base_tps=None, time_scale=None):
        self.model = model
        self.version = version
        self.options = options
        self.spec = sim.SpecProfile(options.get("speculative_config"))
        self.base_tps = base_tps or env_float("STANDIN_BASE_TPS", 50.0)
        self.prefill_tps = env_float("STANDIN_PREFILL_TPS", 4000.0)
        self.time_scale = env_float("STANDIN_TIME_SCALE", 1.0) if time_scale is None else time_scale
        self.max_seq_len = options.get("max_seq_len") or 4096
        self.max_batch_size = options.get("max_batch_size") or 2048
        self.iter_stats_enabled = bool(options.get("enable_iter_perf_stats"))
        perf_max = options.get("perf_metrics_max_requests") or 0
        self.perf_enabled = bool(options.get("return_perf_metrics")) and perf_max > 0
        cuda_graph = options.get("cuda_graph_config", {})
        self.cuda_graph_max_bs = None if cuda_graph is None else (
            (cuda_graph or {}).get("max_batch_size") or max((cuda_graph or {}).get("batch_sizes") or [128]))
        self.overlap_penalty = 1.05 if options.get("disable_overlap_scheduler") else 1.0
        kv = options.get("kv_cache_config") or {}
        self.tokens_per_block = kv.get("tokens_per_block") or 32
        fraction = kv.get("free_gpu_memory_fraction")
        fraction = 0.9 if fraction is None else fraction
        self.kv_fraction = fraction
        max_blocks = int(fraction * 80 * GiB / (64 * 1024) / self.tokens_per_block)
        if kv.get("max_tokens"):
            max_blocks = min(max_blocks, kv["max_tokens"] // self.tokens_per_block)
        self.max_blocks = max(1, max_blocks)
        self.block_reuse = kv.get("enable_block_reuse", True)
        self.lock = threading.Lock()
        self.slots = threading.BoundedSemaphore(max(1, self.max_batch_size))
        self.iter_counter = 0
        self.request_counter = 0
        self.active = 0
        self.waiting = 0
        self.used_blocks = 0
        self.alloc_total = 0
        self.seen_prefixes = set()
        self.iter_stats = collections.deque(maxlen=1000)
        self.latest_iter = None      # the newest iteration stat, drained or not (the metrics' iteration gauges)
        self.metrics = None          # metrics.Metrics when the server mounts /prometheus/metrics (App.load)
        self.perf = collections.deque(maxlen=max(1, perf_max))
        self.counters = collections.Counter()

    # -- helpers -------------------------------------------------------------------------
    def sleep(self, seconds):
        if seconds > 0 and self.time_scale > 0:
            time.sleep(seconds * self.time_scale)

    def step_seconds(self, active):
        batching = 1.0 + 0.08 * max(0, active - 1)
        measured = self.spec.step_ms()
        if measured is not None:  # a measured profile (STANDIN_SPEC_PROFILE) is the step itself: T + d*D + d*V
            return batching * measured / 1000.0
        penalty = self.overlap_penalty * batching
        if self.cuda_graph_max_bs is None or active > self.cuda_graph_max_bs:
            penalty *= 1.25
        return penalty * self.spec.step_cost() / self.base_tps

    def _blocks(self, tokens):
        return int(math.ceil(tokens / float(self.tokens_per_block)))

    # -- one request -----------------------------------------------------------------------
    def generate(self, prompt_key, prompt_tokens, max_tokens, temperature, on_step=None, multiple=False,
                 record_metrics=True):
        """Run a simulated request; returns (words, finish_reason, stats dict).

        ``multiple``: one of several choices of a request (n > 1; the release reports no TPOT for those).
        ``record_metrics``: False for the server's own generations (/health_generate).
        """
        arrival = time.time()
        words, finish = sim.generate_words(self.model, prompt_key, max_tokens)
        steps = sim.simulate_steps(self.spec, self.model, prompt_key, max_tokens, len(words), temperature)
        with self.lock:
            self.waiting += 1
        with self.slots:
            scheduled = time.time()
            with self.lock:
                self.waiting -= 1
                self.active += 1
                self.request_counter += 1
                request_id = self.request_counter
                prompt_blocks = self._blocks(prompt_tokens)
                prefix = (prompt_key, prompt_blocks)
                reused = prompt_blocks if (self.block_reuse and prefix in self.seen_prefixes) else 0
                self.seen_prefixes.add(prefix)
                new_blocks = self._blocks(prompt_tokens + len(words)) - reused
                self.used_blocks += new_blocks + reused
                self.alloc_total += new_blocks
                first_iter = self.iter_counter + 1
            try:
                # Prefill (skipped for reused blocks, as block reuse does).
                self.sleep(max(0, prompt_tokens - reused * self.tokens_per_block) / self.prefill_tps)
                first_token_time = None
                produced = 0
                drafted_total = accepted_total = 0
                # Each step drafts positions 0..drafted-1 and accepts the prefix 0..accepted-1.
                drafted_per_position = [0] * max([0] + [step[1] for step in steps])
                accepted_per_position = [0] * len(drafted_per_position)
                for tokens, drafted, accepted in steps:
                    with self.lock:
                        active = self.active
                    step = self.step_seconds(active)
                    self.sleep(step)
                    produced += tokens
                    drafted_total += drafted
                    accepted_total += accepted
                    for position in range(drafted):
                        drafted_per_position[position] += 1
                        if position < accepted:
                            accepted_per_position[position] += 1
                    if first_token_time is None:
                        first_token_time = time.time()
                    self._record_iteration(step, drafted, accepted, active, reused, new_blocks)
                    if on_step:
                        on_step(words[produced - tokens:produced])
                last_token_time = time.time()
            finally:
                with self.lock:
                    self.active -= 1
                    self.used_blocks -= new_blocks + reused
                    last_iter = self.iter_counter
        stats = {
            "request_id": request_id,
            "drafted": drafted_total,
            "accepted": accepted_total,
            "steps": len(steps),
            # Per-request timing (time.time()) and KV-cache figures, for callers that report them per request
            # (the Triton stand-in's perf-metric outputs).
            "arrival_time": arrival,
            "first_scheduled_time": scheduled,
            "first_token_time": first_token_time or last_token_time,
            "last_token_time": last_token_time,
            "reused_blocks": reused,
            "missed_blocks": prompt_blocks - reused,
            "new_blocks": new_blocks,
            "total_blocks": new_blocks + reused,
            "drafted_per_position": drafted_per_position,
            "accepted_per_position": accepted_per_position,
        }
        if self.metrics is not None and record_metrics:
            with self.lock:
                latest = self.latest_iter if self.iter_stats_enabled else None
            self.metrics.log_request(finish, stats, len(words), multiple=multiple, iteration=latest)
        with self.lock:
            self.counters["requests"] += 1
            self.counters["completion_tokens"] += len(words)
            self.counters["prompt_tokens"] += prompt_tokens
            if self.perf_enabled:
                perf = {
                    "first_iter": first_iter,
                    "last_iter": last_iter,
                    "timing_metrics": {
                        "arrival_time": arrival,
                        "first_scheduled_time": scheduled,
                        "first_token_time": first_token_time or last_token_time,
                        "last_token_time": last_token_time,
                        "server_arrival_time": arrival,
                        "server_first_token_time": first_token_time or last_token_time,
                    },
                    "kv_cache_metrics": {
                        "num_total_allocated_blocks": new_blocks + reused,
                        "num_new_allocated_blocks": new_blocks,
                        "num_reused_blocks": reused,
                        "num_missed_blocks": prompt_blocks - reused,
                    },
                }
                if drafted_total:
                    perf["speculative_decoding"] = {
                        "acceptance_rate": accepted_total / float(drafted_total),
                        "total_accepted_draft_tokens": accepted_total,
                        "total_draft_tokens": drafted_total,
                    }
                self.perf.append({"request_id": request_id, "perf_metrics": perf})
        return words, finish, stats

    def _record_iteration(self, step, drafted, accepted, active, reused, new_blocks):
        with self.lock:
            self.iter_counter += 1
            if not self.iter_stats_enabled:
                return
            latency_ms = step * 1000.0
            hits = reused
            misses = new_blocks
            entry = {
                "iter": self.iter_counter,
                "iterLatencyMS": round(latency_ms, 3),
                "timestamp": time.strftime("%m-%d-%Y %H:%M:%S"),
                "gpuMemUsage": int((20 + self.kv_fraction * 80) * GiB),
                "cpuMemUsage": 0,
                "pinnedMemUsage": 0,
                "numActiveRequests": active,
                "numQueuedRequests": self.waiting,
                "maxNumActiveRequests": self.max_batch_size,
                "maxBatchSizeRuntime": min(self.max_batch_size, max(1, active)),
                "kvCacheStats": {
                    "maxNumBlocks": self.max_blocks,
                    "freeNumBlocks": max(0, self.max_blocks - self.used_blocks),
                    "usedNumBlocks": self.used_blocks,
                    "allocTotalBlocks": self.alloc_total,
                    "allocNewBlocks": new_blocks,
                    "reusedBlocks": reused,
                    "missedBlocks": misses,
                    "cacheHitRate": (hits / float(hits + misses)) if (hits + misses) else 0.0,
                    "tokensPerBlock": self.tokens_per_block,
                },
                "inflightBatchingStats": {
                    "numScheduledRequests": active,
                    "numContextRequests": 0,
                    "numGenRequests": active,
                    "numPausedRequests": 0,
                    "numCtxTokens": 0,
                    "microBatchId": 0,
                    "avgNumDecodedTokensPerIter": float(accepted + 1),
                },
            }
            if self.spec.enabled:
                if self.spec.measured:
                    draft_ms = self.spec.draft_len * self.spec.measured["draft_token_ms"]
                else:
                    draft_ms = latency_ms * self.spec.cost * self.spec.draft_len / self.spec.step_cost()
                entry["specDecodingStats"] = {
                    "numDraftTokens": drafted,
                    "numAcceptedTokens": accepted,
                    "numRequestsWithDraftTokens": 1 if drafted else 0,
                    "acceptanceLength": float(accepted + 1),
                    "iterLatencyMS": round(draft_ms, 3),
                    "draftOverhead": round(draft_ms / latency_ms, 4) if latency_ms else 0.0,
                }
            self.iter_stats.append(entry)
            self.latest_iter = entry

    def drain_iter_stats(self):
        with self.lock:
            out = list(self.iter_stats)
            self.iter_stats.clear()
        return out

    def drain_perf(self):
        with self.lock:
            if not self.perf_enabled:
                return []
            out = list(self.perf)
            self.perf.clear()
        return out


class BadRequest(Exception):
    def __init__(self, message, status=400, err_type="BadRequestError", param=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.err_type = err_type
        self.param = param


def _int_field(body, name, default, minimum=None):
    value = body.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest("%s must be an integer, got %r" % (name, value), param=name)
    if minimum is not None and value < minimum:
        raise BadRequest("%s must be at least %d, got %d." % (name, minimum, value), param=name)
    return value


def _float_field(body, name, default):
    value = body.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest("%s must be a number, got %r" % (name, value), param=name)
    return float(value)


def _message_text(content):
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict) or "type" not in part:
                raise BadRequest("each content part must be an object with a 'type'", param="messages")
            if part["type"] == "text":
                parts.append(str(part.get("text", "")))
        return " ".join(parts)
    raise BadRequest("message content must be a string or a list of content parts", param="messages")


class App:
    """Routes and request parsing; `engine` is None until the model is 'loaded'."""

    def __init__(self, model, version, engine_factory, log):
        self.model = model
        self.version = version
        self.engine_factory = engine_factory
        self.engine = None
        self.ready = threading.Event()
        self.log = log
        self.created = int(time.time())

    def load(self):
        engine = self.engine_factory()
        # The release mounts the route, and creates its metrics collector, only with return_perf_metrics.
        if engine.options.get("return_perf_metrics"):
            engine.metrics = metrics.Metrics(self.version)
        self.engine = engine
        self.ready.set()

    # -- request bodies -------------------------------------------------------------------
    def _common(self, body):
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise BadRequest("model is required", param="model")
        if model != self.model:
            raise BadRequest("The model `%s` does not exist." % model, status=400, err_type="NotFoundError",
                             param="model")
        n = _int_field(body, "n", 1, minimum=1)
        temperature = _float_field(body, "temperature", 1.0)
        if temperature < 0 or temperature > 2:
            raise BadRequest("temperature must be between 0 and 2", param="temperature")
        _float_field(body, "top_p", 1.0)
        if not isinstance(body.get("stream", False), bool):
            raise BadRequest("stream must be a boolean", param="stream")
        return n, temperature

    def _check_length(self, prompt_tokens, max_tokens):
        limit = self.engine.max_seq_len
        if prompt_tokens + max_tokens > limit:
            raise BadRequest("The requested number of tokens (%d prompt + %d max_tokens) exceeds max_seq_len (%d)."
                             % (prompt_tokens, max_tokens, limit), param="max_tokens")

    def completions(self, body):
        n, temperature = self._common(body)
        prompt = body.get("prompt")
        if isinstance(prompt, list) and prompt and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
            key, prompt_tokens = json.dumps(prompt), len(prompt)
        elif isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            key, prompt_tokens = prompt[0], sim.count_tokens(prompt[0]) + 1
        elif isinstance(prompt, str) and prompt:
            key, prompt_tokens = prompt, sim.count_tokens(prompt) + 1
        else:
            raise BadRequest("prompt must be a non-empty string, a list with one string, or a list of token ids",
                             param="prompt")
        max_tokens = _int_field(body, "max_tokens", 16, minimum=1)
        self._check_length(prompt_tokens, max_tokens)
        return key, prompt_tokens, max_tokens, n, temperature

    def chat(self, body):
        n, temperature = self._common(body)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages must be a non-empty list", param="messages")
        texts = []
        for message in messages:
            if not isinstance(message, dict) or message.get("role") not in (
                    "system", "user", "assistant", "tool", "developer"):
                raise BadRequest("each message needs a role of system, user, assistant, tool or developer",
                                 param="messages")
            texts.append("%s: %s" % (message["role"], _message_text(message.get("content"))))
        key = "\n".join(texts)
        # Chat template overhead: ~4 tokens per message plus the assistant header.
        prompt_tokens = sum(sim.count_tokens(t) for t in texts) + 4 * len(texts) + 3
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        max_tokens = _int_field({"max_tokens": max_tokens}, "max_tokens", None, minimum=1)
        if max_tokens is None:
            max_tokens = max(1, min(256, self.engine.max_seq_len - prompt_tokens))
        self._check_length(prompt_tokens, max_tokens)
        return key, prompt_tokens, max_tokens, n, temperature


class Handler(BaseHTTPRequestHandler):
    server_version = "uvicorn"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    @property
    def app(self):
        return self.server.app

    def log_message(self, fmt, *args):  # silence the default stderr log
        pass

    def _access(self, status):
        self.app.log('INFO:     %s:%d - "%s %s HTTP/1.1" %d %s' % (
            self.client_address[0], self.client_address[1], self.command, self.path, status,
            self.responses.get(status, ("",))[0]))

    def _send(self, status, body=b"", content_type="application/json", extra=None):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self._access(status)

    def _error(self, exc):
        self._send(exc.status, {"object": "error", "message": exc.message, "type": exc.err_type,
                                "param": exc.param, "code": exc.status})

    def _read_json(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw.decode("utf-8") or "null")
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRequest("invalid JSON body: %s" % exc)

    def _not_ready(self):
        self._send(503, b"LLM is unavailable", content_type="text/plain; charset=utf-8")

    ROUTES_GET = ("/health", "/health_generate", "/version", "/v1/models", "/metrics", "/perf_metrics",
                  "/prometheus/metrics")
    ROUTES_POST = ("/v1/completions", "/v1/chat/completions")

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path not in self.ROUTES_GET:
            if path in self.ROUTES_POST:
                return self._send(405, {"detail": "Method Not Allowed"})
            return self._send(404, {"detail": "Not Found"})
        app = self.app
        if path == "/version":
            return self._send(200, {"version": app.version})
        if not app.ready.is_set():
            return self._not_ready()
        engine = app.engine
        if path == "/health":
            return self._send(200, b"", content_type="text/plain; charset=utf-8")
        if path == "/health_generate":
            engine.generate("hi", 4, 1, 0.0, record_metrics=False)
            return self._send(200, b"Generation health check OK", content_type="text/plain; charset=utf-8")
        if path == "/v1/models":
            return self._send(200, {"object": "list", "data": [
                {"id": app.model, "object": "model", "created": app.created, "owned_by": "tensorrt_llm"}]})
        if path == "/metrics":
            return self._send(200, engine.drain_iter_stats())
        if path == "/perf_metrics":
            return self._send(200, engine.drain_perf())
        if path == "/prometheus/metrics":
            if engine.metrics is None:
                return self._send(404, {"detail": "Not Found"})
            body, content_type = engine.metrics.render(self.headers.get("accept"))
            return self._send(200, body, content_type=content_type)
        return None

    do_HEAD = do_GET

    def do_POST(self):
        path = self.path.split("?", 1)[0]
        if path not in self.ROUTES_POST:
            if path in self.ROUTES_GET:
                return self._send(405, {"detail": "Method Not Allowed"})
            return self._send(404, {"detail": "Not Found"})
        app = self.app
        if not app.ready.is_set():
            return self._not_ready()
        chat = path == "/v1/chat/completions"
        try:
            body = self._read_json()
            key, prompt_tokens, max_tokens, n, temperature = (app.chat if chat else app.completions)(body)
        except BadRequest as exc:
            return self._error(exc)
        if body.get("stream"):
            return self._stream(chat, body, key, prompt_tokens, max_tokens, temperature)
        choices = []
        completion_tokens = 0
        for index in range(n):
            choice_key = key if index == 0 else "%s\x00%d" % (key, index)
            words, finish, _stats = app.engine.generate(choice_key, prompt_tokens, max_tokens, temperature,
                                                        multiple=n > 1)
            completion_tokens += len(words)
            text = sim.render(words)
            if chat:
                choices.append({"index": index, "message": {"role": "assistant", "content": text.lstrip(),
                                                            "reasoning_content": None, "tool_calls": []},
                                "logprobs": None, "finish_reason": finish, "stop_reason": None})
            else:
                choices.append({"index": index, "text": text, "logprobs": None, "finish_reason": finish,
                                "stop_reason": None})
        self._send(200, {
            "id": ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex,
            "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()),
            "model": app.model,
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })
        return None

    def _stream(self, chat, body, key, prompt_tokens, max_tokens, temperature):
        app = self.app
        cid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        created = int(time.time())
        obj = "chat.completion.chunk" if chat else "text_completion"
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

        def emit(payload):
            data = ("data: %s\n\n" % (payload if isinstance(payload, str) else json.dumps(payload))).encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def chunk(text=None, finish=None, first=False):
            if chat:
                delta = {"role": "assistant", "content": ""} if first else ({"content": text} if text else {})
                choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            else:
                choice = {"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish}
            return {"id": cid, "object": obj, "created": created, "model": app.model, "choices": [choice]}

        state = {"first": True}

        def on_step(words):
            text = " ".join(words)
            if not (chat and state["first"]):
                text = " " + text
            if chat and state["first"]:
                emit(chunk(first=True))
            state["first"] = False
            emit(chunk(text))

        words, finish, _stats = app.engine.generate(key, prompt_tokens, max_tokens, temperature, on_step=on_step)
        emit(chunk(finish=finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            emit({"id": cid, "object": obj, "created": created, "model": app.model, "choices": [],
                  "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(words),
                            "total_tokens": prompt_tokens + len(words)}})
        emit("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self._access(200)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, app):
        self.app = app
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)
