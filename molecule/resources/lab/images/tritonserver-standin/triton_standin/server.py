"""``tritonserver`` stand-in: command line, model repository loading, endpoints, signals.

As the real server: the models are loaded first (a failure ends it with ``error: creating server: Internal -
failed to load all models`` unless --exit-on-error=false); only then do the gRPC, HTTP and metrics endpoints
start. SIGTERM/SIGINT stop it (exit 0); during the load they kill it, as the real server's handler is not
installed yet. Extra knobs: STANDIN_STARTUP_SECONDS (simulated load of each model, default 3), and those of
the TRT-LLM stand-in's engine (STANDIN_TIME_SCALE, STANDIN_SPEC_PROFILE, ...).
"""

import os
import signal
import sys
import threading

from . import LOG, table
from .frontend import GrpcListener, Handler, HttpServer, MetricsHandler, Stats, TritonError
from .llmapi import LlmApiModel, LoadError, ModelConfig

# Long options: kind is str, int, bool, float or none (no argument); "multi" options may repeat.
OPTIONS = {
    "help": "none", "id": "str", "exit-timeout-secs": "int", "model-store": "multi", "model-repository": "multi",
    "exit-on-error": "bool", "disable-auto-complete-config": "none", "strict-readiness": "bool",
    "strict-model-config": "bool", "model-control-mode": "str", "repository-poll-secs": "int", "load-model": "multi",
    "model-config-name": "str", "model-load-thread-count": "int", "model-load-retry-count": "int",
    "model-namespacing": "bool", "enable-peer-access": "bool", "allow-http": "bool", "http-address": "str",
    "http-port": "int", "reuse-http-port": "bool", "http-header-forward-pattern": "str", "http-thread-count": "int",
    "http-max-input-size": "int", "http-restricted-api": "multi", "allow-grpc": "bool", "grpc-address": "str",
    "grpc-port": "int", "reuse-grpc-port": "bool", "grpc-header-forward-pattern": "str",
    "grpc-infer-thread-count": "int", "grpc-restricted-protocol": "multi", "log-verbose": "int", "log-info": "bool",
    "log-warning": "bool", "log-error": "bool", "log-format": "str", "log-file": "str", "allow-metrics": "bool",
    "allow-gpu-metrics": "bool", "allow-cpu-metrics": "bool", "metrics-address": "str", "metrics-port": "int",
    "metrics-interval-ms": "float", "metrics-config": "multi", "trace-config": "multi", "cache-config": "multi",
    "rate-limit": "str", "pinned-memory-pool-byte-size": "int", "cuda-memory-pool-byte-size": "multi",
    "cuda-virtual-address-size": "multi", "buffer-manager-thread-count": "int", "host-policy": "multi",
    "model-load-gpu-limit": "multi", "allow-client-shm": "bool", "backend-directory": "str", "backend-config": "multi",
    "repoagent-directory": "str", "response-cache-byte-size": "int", "allow-sagemaker": "bool",
    "allow-vertex-ai": "bool",
}
DEFAULTS = {"exit-on-error": True, "strict-readiness": True, "allow-http": True, "allow-grpc": True,
            "allow-metrics": True, "http-address": "0.0.0.0", "grpc-address": "0.0.0.0", "metrics-address": "0.0.0.0",
            "http-port": 8000, "grpc-port": 8001, "metrics-port": 8002, "log-verbose": 0, "log-info": True,
            "log-warning": True, "log-error": True, "exit-timeout-secs": 30, "model-control-mode": "none",
            "id": "triton"}
SERVER_VERSION_DEFAULT = "2.71.0"


class ParseError(Exception):
    pass


def parse_args(argv):
    """getopt_long-style long options (``--name=value`` or ``--name value``) -> dict."""
    params = dict(DEFAULTS)
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not arg.startswith("--") or arg == "--":
            raise ParseError("Unexpected argument: %s" % arg)
        name, has_value, value = arg[2:].partition("=")
        kind = OPTIONS.get(name)
        if kind is None:
            print("tritonserver: unrecognized option '%s'" % arg.split("=", 1)[0], file=sys.stderr)
            raise ParseError("")
        if kind == "none":
            if has_value:
                print("tritonserver: option '--%s' doesn't allow an argument" % name, file=sys.stderr)
                raise ParseError("")
            params[name] = True
            continue
        if not has_value:
            if i >= len(argv):
                print("tritonserver: option '--%s' requires an argument" % name, file=sys.stderr)
                raise ParseError("")
            value = argv[i]
            i += 1
        if kind == "bool":
            if value.lower() not in ("true", "on", "1", "false", "off", "0"):
                raise ParseError("invalid value for bool option: %s" % value)
            params[name] = value.lower() in ("true", "on", "1")
        elif kind in ("int", "float"):
            try:
                params[name] = int(value) if kind == "int" else float(value)
            except ValueError:
                raise ParseError("Invalid option value. Got %s" % value) from None
        elif kind == "multi":
            params.setdefault(name, []).append(value)
        else:
            params[name] = value
    if params["model-control-mode"] not in ("none", "poll", "explicit"):
        raise ParseError("invalid argument for --model-control-mode")
    params["repositories"] = params.get("model-repository", []) + params.get("model-store", [])
    return params


def usage():
    lines = ["Usage: tritonserver [options]"]
    for name, kind in sorted(OPTIONS.items()):
        lines.append("  --%s%s" % (name, "" if kind == "none" else " <%s>" % ("string" if kind == "multi" else kind)))
    return "\n".join(lines)


class Triton:
    """The server: its models (name -> {"state", "reason", "model", "version"}), stats and endpoints."""

    def __init__(self, params):
        self.params = params
        self.models = {}
        self.stats = Stats()
        self.stop = threading.Event()
        self.servers = []

    # -- what the endpoints ask ---------------------------------------------------------------
    def ready(self):
        if self.stop.is_set():
            return False
        states = [m["state"] for m in self.models.values()]
        return all(s == "READY" for s in states) if self.params["strict-readiness"] else True

    def model(self, name, version=None):
        entry = self.models.get(name)
        if entry is None:
            raise TritonError("Request for unknown model: '%s' is not found" % name, 400)
        if entry["state"] != "READY":
            raise TritonError("Request for unknown model: '%s' has no available versions" % name, 404)
        if version is not None and int(version) != entry["version"]:
            raise TritonError("Request for unknown model: '%s' version %s is not found" % (name, version), 404)
        return entry["model"]

    def model_ready(self, name, version=None):
        entry = self.models.get(name)
        return bool(entry and entry["state"] == "READY" and (version is None or int(version) == entry["version"]))

    def model_names(self):
        return [(n, e["version"]) for n, e in sorted(self.models.items()) if e["state"] == "READY"]

    def server_metadata(self):
        return {"name": "triton", "version": os.environ.get("TRITON_SERVER_VERSION") or SERVER_VERSION_DEFAULT,
                "extensions": ["classification", "sequence", "model_repository", "model_repository(unload_dependents)",
                               "schedule_policy", "model_configuration", "system_shared_memory",
                               "cuda_shared_memory", "binary_tensor_data", "parameters", "statistics", "trace",
                               "logging"]}

    @staticmethod
    def model_metadata(model):
        return {"name": model.name, "versions": [str(model.version)], "platform": "",
                "inputs": [t.metadata() for t in model.config.inputs],
                "outputs": [t.metadata() for t in model.config.outputs]}

    @staticmethod
    def model_config_json(model):
        config = model.config
        return {"name": model.name, "platform": "", "backend": config.backend, "max_batch_size": config.max_batch_size,
                "input": [t.config() for t in config.inputs], "output": [t.config() for t in config.outputs],
                "model_transaction_policy": {"decoupled": model.decoupled},
                "instance_group": [{"name": model.name + "_0", "kind": "KIND_CPU", "count": 1}]}

    # -- the repository -------------------------------------------------------------------------
    def load_repository(self):
        """Load every model of the repositories (or --load-model ones in explicit mode); False if one failed."""
        wanted = self.params.get("load-model", [])
        for repo in self.params["repositories"]:
            for name in sorted(os.listdir(repo)):
                model_dir = os.path.join(repo, name)
                if not os.path.isfile(os.path.join(model_dir, "config.pbtxt")):
                    continue
                if self.params["model-control-mode"] == "explicit" and "*" not in wanted and name not in wanted:
                    continue
                self.models[name] = self._load(name, model_dir)
        return all(m["state"] == "READY" for m in self.models.values())

    def _load(self, name, model_dir):
        versions = sorted(int(v) for v in os.listdir(model_dir) if v.isdigit()
                          and os.path.isdir(os.path.join(model_dir, v)))
        version = versions[-1] if versions else 1
        LOG.info("model_lifecycle.cc:473", "loading: %s:%d" % (name, version))
        entry = {"state": "UNAVAILABLE", "version": version, "model": None, "reason": ""}
        try:
            if not versions:
                raise LoadError("Internal: at least one version must be available under the version policy of model "
                                "'%s'" % name)
            config = ModelConfig(name, os.path.join(model_dir, "config.pbtxt"))
            if config.backend != "python" or not os.path.isfile(os.path.join(model_dir, str(version), "model.py")):
                raise LoadError("Invalid argument: lab stand-in: only the TensorRT-LLM LLM API python model "
                                "(/app/all_models/llmapi) is simulated; '%s' has backend '%s'" % (name, config.backend))
            LOG.info("python_be.cc:2289", "TRITONBACKEND_ModelInstanceInitialize: %s_0_0 (CPU device 0)" % name)
            model = LlmApiModel(name, model_dir, version, config)
            rank = int(os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("PMI_RANK") or 0)
            if rank > 0:  # a non-leader MPI rank serves the leader's LLM and never finishes loading
                LOG.info("model.py:286", "[trtllm] rank%d is waiting for the leader node..." % rank)
                self.stop.wait()
                raise LoadError("Internal: rank %d stopped" % rank)
            model.load(self.stop)
            entry.update(state="READY", model=model)
            self.stats.load_seconds[name] = model.load_seconds
            LOG.info("model_lifecycle.cc:849", "successfully loaded '%s'" % name)
        except LoadError as exc:
            entry["reason"] = str(exc)
            LOG.error("model_lifecycle.cc:654", "failed to load '%s' version %d: %s" % (name, version, exc))
            LOG.info("model_lifecycle.cc:789", "failed to load '%s'" % name)
        return entry

    def model_table(self):
        rows = [(n, str(e["version"]), "READY" if e["state"] == "READY" else "UNAVAILABLE: " + e["reason"])
                for n, e in sorted(self.models.items())]
        LOG.info("server.cc:674", "", table=table(("Model", "Version", "Status"), rows))

    def unload(self, timeout):
        LOG.info("server.cc:305", "Waiting for in-flight requests to complete.")
        LOG.info("server.cc:321", "Timeout %d: Found 0 model versions that have in-flight inferences" % timeout)
        LOG.info("server.cc:336", "All models are stopped, unloading models")
        live = [n for n, e in self.models.items() if e["state"] == "READY"]
        LOG.info("server.cc:345", "Timeout %d: Found %d live models and 0 in-flight non-inference requests"
                 % (timeout, len(live)))
        for name in sorted(live):
            LOG.info("model.py:567", "[trtllm] Issuing finalize to trtllm backend")
            LOG.info("model_lifecycle.cc:636", "successfully unloaded '%s' version %d"
                     % (name, self.models[name]["version"]))

    # -- endpoints ------------------------------------------------------------------------------
    def start_endpoints(self):
        """gRPC (listening only), HTTP, metrics, in Triton's order; False (logged) if a port is taken."""
        p = self.params
        plan = [("allow-grpc", "grpc", "GRPC", "grpc_server.cc:2584", "Started GRPCInferenceService at %s:%d"),
                ("allow-http", "http", "HTTP", "http_server.cc:4971", "Started HTTPService at %s:%d"),
                ("allow-metrics", "metrics", "Metrics", "http_server.cc:400", "Started Metrics Service at %s:%d")]
        for allow, kind, label, where, message in plan:
            if not p[allow]:
                continue
            address = (p[kind + "-address"], p[kind + "-port"])
            try:
                if kind == "grpc":
                    server = GrpcListener(address)
                else:
                    server = HttpServer(address, Handler if kind == "http" else MetricsHandler, self)
            except OSError:
                LOG.error("main.cc:%d" % {"grpc": 270, "http": 282, "metrics": 318}[kind],
                          "failed to start %s service: Unavailable - Socket '%s:%d' already in use "
                          % (label, address[0], address[1]))
                return False
            threading.Thread(target=server.serve_forever, daemon=True).start()
            self.servers.append(server)
            LOG.info(where, message % address)
        return True

    def stop_endpoints(self):
        for server in self.servers:
            server.shutdown()
            server.server_close()


def _set_process_name(name):
    """comm = tritonserver, whatever started the script (pgrep -x tritonserver finds it)."""
    try:
        import ctypes  # pylint: disable=import-outside-toplevel
        libc = ctypes.CDLL(None)
        libc.prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def main(argv=None):
    _set_process_name("tritonserver")
    argv = sys.argv[1:] if argv is None else argv
    try:
        params = parse_args(argv)
        if params.get("help"):
            raise ParseError("")
    except ParseError as exc:
        print(usage(), file=sys.stderr)
        if str(exc):
            print(str(exc), file=sys.stderr)
        return 1
    LOG.verbose = params["log-verbose"]
    LOG.enabled.update({"I": params["log-info"], "W": params["log-warning"], "E": params["log-error"]})
    if params.get("log-file"):
        LOG.open(params["log-file"])
    if not params["repositories"]:
        print("error: creating server: Invalid argument - --model-repository must be specified", file=sys.stderr)
        return 1
    for repo in params["repositories"]:
        if not os.path.isdir(repo):
            print("error: creating server: Internal - failed to stat file %s" % repo, file=sys.stderr)
            return 1

    # Loading happens inside TRITONSERVER_ServerNew, before the signal handler exists: default actions.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    triton = Triton(params)
    loaded = triton.load_repository()
    triton.model_table()
    if not loaded and params["exit-on-error"]:
        triton.unload(params["exit-timeout-secs"])
        print("error: creating server: Internal - failed to load all models", file=sys.stderr, flush=True)
        return 1

    received = []

    def on_signal(signum, _frame):
        received.append(signum)
        triton.stop.set()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if not triton.start_endpoints():
        return 1
    while not triton.stop.wait(0.5):
        pass
    LOG.raw("Signal (%d) received." % received[0])
    triton.stop_endpoints()
    triton.unload(params["exit-timeout-secs"])
    return 0
