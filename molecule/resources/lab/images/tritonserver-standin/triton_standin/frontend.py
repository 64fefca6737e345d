"""Triton's endpoints: the HTTP/REST v2 API (health, metadata, generate, generate_stream), the Prometheus
metrics port and a gRPC port that only listens (standard library only).

Status codes follow Triton's mapping of its error codes: INVALID_ARG 400, NOT_FOUND 404, INTERNAL 500,
UNAVAILABLE 503, UNSUPPORTED 501; error bodies are ``{"error": "<message>"}``.
"""

import collections
import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import LOG
from .llmapi import ModelError

# How generate's JSON values become tensors (TritonJson's checks and their messages: INTERNAL errors).
_JSON_TYPES = {
    "BOOL": (lambda v: isinstance(v, bool), "attempt to access JSON non-boolean as boolean"),
    "BYTES": (lambda v: isinstance(v, str), "attempt to access JSON non-string as string"),
    "FP32": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "attempt to access JSON non-number "
             "as double"),
}
_JSON_TYPES["FP64"] = _JSON_TYPES["FP32"]
for _bits in ("8", "16", "32", "64"):
    _JSON_TYPES["INT" + _bits] = (lambda v: isinstance(v, int) and not isinstance(v, bool),
                                  "attempt to access JSON non-signed-integer as signed-integer")
    _JSON_TYPES["UINT" + _bits] = (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                                   "attempt to access JSON non-unsigned-integer as unsigned-integer")
# Python's JSON errors -> rapidjson's words (GetParseError_En), as Triton reports a body it cannot parse.
_RAPIDJSON_ERRORS = {
    "Expecting value": "Invalid value.",
    "Extra data": "The document root must not be followed by other values.",
    "Expecting property name": "Missing a name for object member.",
    "Expecting ':' delimiter": "Missing a colon after a name of object member.",
    "Expecting ',' delimiter": "Missing a comma or '}' after an object member.",
    "Unterminated string": "Missing a closing quotation mark in string.",
    "Invalid control character": "Invalid encoding in string.",
}
_MODEL_PATH = re.compile(r"^/v2/models/([^/]+)(?:/versions/([0-9]+))?(?:/(infer|generate|generate_stream|ready|"
                         r"config|stats))?$")


class TritonError(Exception):
    def __init__(self, message, code=400):
        super().__init__(message)
        self.message = message
        self.code = code


class Stats:
    """Per-model counters of the metrics port (nv_inference_*), updated by the generate handlers."""

    def __init__(self):
        self.lock = threading.Lock()
        self.models = collections.defaultdict(collections.Counter)
        self.load_seconds = {}

    def success(self, model, total_us, queue_us):
        with self.lock:
            counter = self.models[model]
            counter["success"] += 1
            counter["count"] += 1
            counter["exec_count"] += 1
            counter["request_duration_us"] += total_us
            counter["queue_duration_us"] += queue_us
            counter["compute_infer_duration_us"] += max(0, total_us - queue_us)

    def failure(self, model, total_us, reason="BACKEND"):
        with self.lock:
            self.models[model]["failure_" + reason] += 1
            self.models[model]["request_duration_us"] += total_us

    def pending(self, model, delta):
        with self.lock:
            self.models[model]["pending"] += delta

    def prometheus(self, names):
        """Prometheus text of Triton's per-model families (labels sorted, as prometheus-cpp writes them)."""
        families = (
            ("nv_inference_request_success", "counter", "Number of successful inference requests, all batch sizes",
             "success"),
            ("nv_inference_request_failure", "counter", "Number of failed inference requests, all batch sizes",
             None),
            ("nv_inference_count", "counter", "Number of inferences performed (does not include cached requests)",
             "count"),
            ("nv_inference_exec_count", "counter", "Number of model executions performed (does not include cached "
             "requests)", "exec_count"),
            ("nv_inference_request_duration_us", "counter", "Cumulative inference request duration in microseconds "
             "(includes cached requests)", "request_duration_us"),
            ("nv_inference_queue_duration_us", "counter", "Cumulative inference queuing duration in microseconds "
             "(includes cached requests)", "queue_duration_us"),
            ("nv_inference_compute_infer_duration_us", "counter", "Cumulative compute inference duration in "
             "microseconds (does not include cached requests)", "compute_infer_duration_us"),
            ("nv_inference_pending_request_count", "gauge", "Instantaneous number of pending requests awaiting "
             "execution per-model.", "pending"),
            ("nv_model_load_duration_secs", "gauge", "Model load time in seconds", None),
        )
        lines = []
        with self.lock:
            for metric, kind, help_text, key in families:
                lines += ["# HELP %s %s" % (metric, help_text), "# TYPE %s %s" % (metric, kind)]
                for name, version in names:
                    counter = self.models[name]
                    if metric == "nv_inference_request_failure":
                        for reason in ("REJECTED", "CANCELED", "BACKEND", "OTHER"):
                            lines.append('%s{model="%s",reason="%s",version="%s"} %d'
                                         % (metric, name, reason, version, counter["failure_" + reason]))
                    elif metric == "nv_model_load_duration_secs":
                        lines.append('%s{model="%s",version="%s"} %s'
                                     % (metric, name, version, round(self.load_seconds.get(name, 0.0), 6)))
                    else:
                        lines.append('%s{model="%s",version="%s"} %d' % (metric, name, version, int(counter[key])))
        return "\n".join(lines) + "\n"


def _flatten(value):
    if isinstance(value, list):
        out = []
        for item in value:
            out.extend(_flatten(item))
        return out
    return [value]


def convert_generate(body, config):
    """Generate's JSON -> (inputs {name: [values]}, parameters, request id), as ConvertGenerateRequest does."""
    inputs, parameters = {}, {}
    if not isinstance(body, dict):
        raise TritonError("attempt to get members for non-object", 500)
    request_id = body.get("id", "")
    if not isinstance(request_id, str):
        raise TritonError("Unable to parse 'id': attempt to access JSON non-string as string", 500)

    def members(obj, nested):
        for key, value in obj.items():
            if key == "parameters" and not nested:
                if config.input(key) is not None:
                    raise TritonError("Keyword 'parameters' for nested schema also given as input tensor name")
                if not isinstance(value, dict):
                    raise TritonError("Expected JSON object for keyword: 'parameters': attempt to access JSON "
                                      "non-object as object", 500)
                members(value, True)
                continue
            tensor = config.input(key)
            if tensor is None:
                if isinstance(value, (dict, list)) or value is None:
                    raise TritonError("parameter '%s' has invalid type. It should be either 'int', 'bool', or "
                                      "'string'." % key)
                parameters[key] = value
                continue
            datatype = tensor.metadata()["datatype"]
            values = _flatten(value)
            check, message = _JSON_TYPES.get(datatype, (lambda v: False, "unexpected type"))
            for item in values:
                if not check(item):
                    raise TritonError(message, 500)
            count = len(values)
            if count:  # a fixed dimension must divide the element count, a -1 dimension takes the rest
                fixed = 1
                for dim in tensor.dims:
                    fixed *= dim if dim != -1 else 1
                if count % fixed or (count // fixed != 1 and -1 not in tensor.dims):
                    raise TritonError("The schema can not convert input '%s' to tensor with proper shape" % key)
            inputs[key] = values
    members(body, False)
    return inputs, parameters, request_id


def validate_inputs(inputs, config, request_id):
    """InferenceRequest::ValidateRequestInputs: only the counts are checked (INVALID_ARG)."""
    required = [t.name for t in config.inputs if not t.optional]
    total = len(config.inputs)
    if len(inputs) > total or len(inputs) < len(required):
        missing = [n for n in required if n not in inputs]
        got = "[%s]" % ",".join("'%s'" % n for n in sorted(inputs))
        expected = ("expected %d inputs" % total if total == len(required)
                    else "expected number of inputs between %d and %d" % (len(required), total))
        raise TritonError("[request id: %s] %s but got %d inputs for model '%s'. Got input(s) %s, but missing required "
                          "input(s) [%s]. Please provide all required input(s)."
                          % (request_id or "<id_unknown>", expected, len(inputs), config.name, got,
                             ",".join("'%s'" % n for n in missing)))


class Handler(BaseHTTPRequestHandler):
    """Triton's HTTP/REST endpoint (KServe v2 and the generate extension)."""

    protocol_version = "HTTP/1.1"
    server_version = "triton-standin"
    sys_version = ""

    def log_message(self, fmt, *args):
        pass

    @property
    def triton(self):
        return self.server.triton

    def _send(self, status, body=b"", content_type="application/json"):
        if isinstance(body, (dict, list)):
            body = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
        elif isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        if body or content_type != "application/json":
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, message, status):
        self._send(status, {"error": message})

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            return {}
        try:
            return json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            msg = getattr(exc, "msg", "")
            detail = next((v for k, v in _RAPIDJSON_ERRORS.items() if msg.startswith(k)), "Invalid value.")
            raise TritonError("failed to parse the request JSON buffer: %s at %d" % (detail, getattr(exc, "pos", 0)),
                              500) from None

    def do_GET(self):
        self._route("GET")

    def do_POST(self):
        self._route("POST")

    def _route(self, method):
        path = self.path.split("?", 1)[0]
        LOG.verbose_log(1, "http_server.cc:4904", "HTTP request: %d %s" % (0 if method == "GET" else 2, path))
        triton = self.triton
        try:
            if path in ("/v2/health/live", "/v2/health/ready"):
                if method != "GET":
                    raise TritonError("Method Not Allowed", 405)
                ok = path.endswith("live") or triton.ready()
                return self._send(200 if ok else 400)
            if path == "/v2":
                return self._send(200, triton.server_metadata())
            match = _MODEL_PATH.match(path)
            if not match:
                return self._send(400)  # evhtp's answer for an unknown URL: Bad Request, empty body
            name, version, kind = match.groups()
            if kind == "ready":
                if not triton.model_ready(name, version):
                    raise TritonError("Model version not ready", 400)
                return self._send(200)
            if kind in ("generate", "generate_stream"):
                if method != "POST":
                    raise TritonError("Method Not Allowed", 405)
                return self._generate(name, version, kind == "generate_stream")
            if kind == "infer":
                raise TritonError("the lab's Triton stand-in serves the generate extension only "
                                  "(/v2/models/%s/generate); the infer endpoint is not simulated" % name, 501)
            model = triton.model(name, version)
            if kind == "config":
                return self._send(200, triton.model_config_json(model))
            if kind == "stats":
                raise TritonError("the lab's Triton stand-in does not simulate model statistics; see the metrics "
                                  "port", 501)
            return self._send(200, triton.model_metadata(model))
        except TritonError as exc:
            return self._error(exc.message, exc.code)

    def _generate(self, name, version, streaming):
        triton = self.triton
        model = triton.model(name, version)
        body = self._body()
        inputs, _parameters, request_id = convert_generate(body, model.config)
        validate_inputs(inputs, model.config, request_id)
        started = time.time()
        responses = []   # generate: collected, then exactly one is sent; generate_stream: sent as they come
        base = {"model_name": name, "model_version": str(model.version)}
        if request_id:
            base["id"] = request_id

        def emit(outputs, _final):
            doc = dict(base, **outputs)
            if streaming:
                self._sse(doc, 200)
            else:
                responses.append(doc)

        error = None
        triton.stats.pending(name, 1)
        try:
            model.execute(inputs, emit)
        except ModelError as exc:
            error = exc
        finally:
            triton.stats.pending(name, -1)
        total_us = int((time.time() - started) * 1e6)
        if error is not None:
            triton.stats.failure(name, total_us, "BACKEND")
            if streaming:
                self._sse({"error": error.message}, error.code)
            else:
                self._error(error.message, error.code)
        else:
            # The LLM API backend's execute() hands each request to the engine at once: no Triton queueing.
            triton.stats.success(name, total_us, 0)
            if not streaming and len(responses) != 1:
                self._error("generate expects model to produce exactly 1 response, use generate stream for model "
                            "that generates various number of responses", 500)
            elif not streaming:
                self._send(200, responses[0])
        if streaming:
            self._sse_end()

    # -- server-sent events (chunked) -----------------------------------------------------------
    def _sse(self, doc, status):
        if not getattr(self, "_sse_started", False):
            self._sse_started = True  # pylint: disable=attribute-defined-outside-init
            self.send_response(status)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
        data = ("data: %s\n\n" % json.dumps(doc, separators=(",", ":"), sort_keys=True)).encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _sse_end(self):
        if getattr(self, "_sse_started", False):
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()


class MetricsHandler(BaseHTTPRequestHandler):
    """The metrics port: GET /metrics (Prometheus text)."""

    protocol_version = "HTTP/1.1"
    server_version = "triton-standin"
    sys_version = ""

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        if self.path.split("?", 1)[0] != "/metrics":
            body = b"Not Found"
            status = 404
        else:
            body = self.server.triton.stats.prometheus(self.server.triton.model_names()).encode()
            status = 200
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8" if status == 200 else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, handler, triton):
        self.triton = triton
        super().__init__(address, handler)


class GrpcListener:
    """Only a listening socket: connections are accepted and closed (gRPC is not simulated)."""

    def __init__(self, address):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(address)
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.running = True

    def serve_forever(self):
        while self.running:
            try:
                conn, _addr = self.sock.accept()
                conn.close()
            except socket.timeout:
                continue
            except OSError:
                break

    def shutdown(self):
        self.running = False

    def server_close(self):
        self.sock.close()
