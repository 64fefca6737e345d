"""The model of a Triton repository: its config.pbtxt, and the TensorRT-LLM LLM API backend's model.py.

Loading follows the LLM API backend's ``initialize``: ``triton_config`` of ``<version>/model.yaml`` (or
$LLM_CONFIG_PATH, relative to that directory) tells ``decoupled``; every other key is an argument of
``LLM(**args)``, judged by the TRT-LLM stand-in's model of ``$TRTLLM_VERSION`` (trtllm_standin.release) the
way trtllm-serve's options file is. Models (and the draft) must be in the HF cache or local directories.
Errors read like the Python backend's: ``<ExceptionType>: <message>``.
"""

import os
import time

import yaml

from . import LOG, pbtxt
# The TRT-LLM stand-in's package (importable once this package's __init__ put /opt/trtllm-standin on sys.path).
from trtllm_standin import env_float, hfcache, release, sim, trtllm_version
from trtllm_standin.serve import StartupError, resolve_model
from trtllm_standin.server import Engine

# config.pbtxt data types -> the protocol's names (model metadata, generate conversion).
DTYPES = {"TYPE_BOOL": "BOOL", "TYPE_UINT8": "UINT8", "TYPE_UINT16": "UINT16", "TYPE_UINT32": "UINT32",
          "TYPE_UINT64": "UINT64", "TYPE_INT8": "INT8", "TYPE_INT16": "INT16", "TYPE_INT32": "INT32",
          "TYPE_INT64": "INT64", "TYPE_FP16": "FP16", "TYPE_FP32": "FP32", "TYPE_FP64": "FP64",
          "TYPE_STRING": "BYTES", "TYPE_BF16": "BF16"}
DEFAULT_MAX_TOKENS = 32      # tensorrt_llm.SamplingParams.max_tokens (the backend passes none by default)
DEFAULT_TEMPERATURE = 1.0    # SamplingParams.temperature None = the runtime's 1.0
PERF_KEYS = ("kv_cache_reused_block", "kv_cache_hit_rate", "kv_cache_alloc_new_blocks", "kv_cache_alloc_total_blocks",
             "kv_cache_missed_block", "arrival_time_ns", "first_scheduled_time_ns", "first_token_time_ns",
             "last_token_time_ns", "acceptance_rate", "total_accepted_draft_tokens", "total_draft_tokens")
# time.time() -> the steady clock the release's timing metrics are taken from (ns since boot).
_MONO_OFFSET = time.time() - time.monotonic()


class LoadError(Exception):
    """The model failed to load; the text is the status Triton logs ("Internal: AssertionError: ...")."""


class ModelError(Exception):
    """An error response of the model (code: the HTTP status Triton maps its error code to)."""

    def __init__(self, message, code=500):
        super().__init__(message)
        self.message = message
        self.code = code


class Tensor:
    """One input or output of config.pbtxt."""

    def __init__(self, msg):
        self.name = str(pbtxt.first(msg, "name", ""))
        self.data_type = str(pbtxt.first(msg, "data_type", "TYPE_INVALID"))
        self.dims = [int(d) for d in msg.get("dims", [])]
        self.optional = str(pbtxt.first(msg, "optional", "false")).lower() == "true"

    def metadata(self):
        return {"name": self.name, "datatype": DTYPES.get(self.data_type, self.data_type), "shape": self.dims}

    def config(self):
        out = {"name": self.name, "data_type": self.data_type, "dims": self.dims}
        if self.optional:
            out["optional"] = True
        return out


class ModelConfig:
    """What the stand-in reads of config.pbtxt."""

    def __init__(self, name, path):
        try:
            with open(path, encoding="utf-8") as handle:
                msg = pbtxt.parse(handle.read())
        except (OSError, UnicodeDecodeError, pbtxt.PbtxtError) as exc:
            raise LoadError("Internal: failed to read text proto from %s (%s)" % (path, exc)) from None
        given = pbtxt.first(msg, "name")
        if given is not None and given != name:
            raise LoadError("Invalid argument: unexpected 'name' in model configuration: '%s' (the model directory "
                            "is '%s')" % (given, name))
        self.name = name
        self.backend = str(pbtxt.first(msg, "backend", pbtxt.first(msg, "platform", "")))
        self.max_batch_size = int(pbtxt.first(msg, "max_batch_size", 0))
        self.inputs = [Tensor(m) for m in msg.get("input", [])]
        self.outputs = [Tensor(m) for m in msg.get("output", [])]
        policy = pbtxt.first(msg, "model_transaction_policy", {}) or {}
        self.decoupled = str(pbtxt.first(policy, "decoupled", "false")).lower() == "true"

    def input(self, name):
        return next((t for t in self.inputs if t.name == name), None)


def _python_error(exc):
    """How the Python backend reports an exception raised in initialize()."""
    return "Internal: %s: %s" % (type(exc).__name__, exc)


class TritonModelException(Exception):
    """pb_utils.TritonModelException."""


class LlmApiModel:
    """One loaded model: its version directory, triton_config, the LLM's arguments and the simulated engine."""

    def __init__(self, name, model_dir, version, config):
        self.name = name
        self.model_dir = model_dir
        self.version = version
        self.config = config
        self.version_dir = os.path.join(model_dir, str(version))   # pb_utils.get_model_dir()
        self.decoupled = False
        self.llm_args = {}
        self.engine = None
        self.load_seconds = 0.0
        self.trtllm_version = trtllm_version()

    # -- loading ---------------------------------------------------------------------------
    def _engine_config(self, include=None, exclude=None):
        """get_model_config() of the backend's model.py."""
        filename = os.environ.get("LLM_CONFIG_PATH", "model.yaml")
        path = os.path.join(self.version_dir, filename)
        config = None
        if os.path.isfile(path):
            try:
                with open(path, encoding="utf-8") as handle:
                    config = yaml.safe_load(handle)
            except Exception as exc:  # pylint: disable=broad-except
                raise TritonModelException("Failed to parse YAML engine config: %s" % exc) from None
        if config is None:
            raise AssertionError("'%s' containing TRT-LLM engine args not found in '%s'" % (filename, self.version_dir))
        if include:
            config = {k: v for k, v in config.items() if k in include}
        if exclude:
            config = {k: v for k, v in config.items() if k not in exclude}
        return config

    def load(self, stop):
        """Load like initialize(); raises LoadError. ``stop`` (an Event) cuts the simulated load short."""
        started = time.time()
        try:
            triton_config = self._engine_config(include=["triton_config"])["triton_config"]
            self.decoupled = bool(triton_config["decoupled"])
            int(triton_config["max_batch_size"])  # auto_complete_config's read (also required here)
            args = self._engine_config(exclude=["triton_config"])
            self.llm_args = self._check_llm_args(args)
        except LoadError:
            raise
        except StartupError as exc:
            raise LoadError("Internal: %s" % exc) from None
        except Exception as exc:  # pylint: disable=broad-except
            raise LoadError(_python_error(exc)) from None
        LOG.info("model.py:238", "[trtllm] Starting trtllm engine with args: %s" % self.llm_args)
        # The simulated model load (same setting as trtllm-serve's stand-in).
        stop.wait(max(0.0, env_float("STANDIN_STARTUP_SECONDS", 3.0)))
        self.engine = Engine(self.llm_args["model"], self.trtllm_version, self.llm_args)
        self.load_seconds = time.time() - started

    def _check_llm_args(self, args):
        """LLM(**update_llm_args_with_extra_dict({}, args)), as far as the stand-in can tell."""
        if "model" not in args:
            raise TypeError("LLM.__init__() missing 1 required positional argument: 'model'")
        backend = args.get("backend") or "pytorch"
        if backend != "pytorch":
            raise ValueError("lab stand-in: backend %r is not simulated (model.yaml's template and the lab use "
                             "backend: pytorch)" % backend)
        LOG.raw("[TensorRT-LLM] TensorRT-LLM version: %s" % self.trtllm_version)
        try:
            normalized, warnings = release.check(args, self.trtllm_version, "pytorch")
        except release.ReleaseError as exc:
            text = str(exc)
            if " validation error" in text.split("\n", 1)[0]:
                text = "ValidationError: " + text
            raise LoadError("Internal: %s" % text) from None
        for warning in warnings:
            LOG.raw("[%s] [TRT-LLM] [W] %s" % (time.strftime("%m/%d/%Y-%H:%M:%S"), warning))
        llm_args = dict(normalized, model=str(args["model"]), backend="pytorch")
        tp = llm_args.get("tensor_parallel_size") or 1
        pp = llm_args.get("pipeline_parallel_size") or 1
        cp = llm_args.get("context_parallel_size") or 1
        if tp * pp * cp != 1:
            raise RuntimeError("tensor_parallel_size x pipeline_parallel_size%s = %d needs %d GPUs, but a Spark has "
                               "one (the lab simulates one GPU per node)"
                               % (" x context_parallel_size" if cp != 1 else "", tp * pp * cp, tp * pp * cp))
        model_dir = resolve_model(llm_args["model"])
        LOG.raw("[%s] [TRT-LLM] [I] Loading model %s from %s"
                % (time.strftime("%m/%d/%Y-%H:%M:%S"), llm_args["model"], model_dir))
        if not llm_args.get("max_seq_len"):
            llm_args["max_seq_len"] = int(hfcache.model_config(model_dir).get("max_position_embeddings") or 4096)
        spec = llm_args.get("speculative_config")
        if spec:
            for key in ("speculative_model_dir", "speculative_model"):
                if spec.get(key):
                    resolve_model(str(spec[key]), what="speculative_config.%s" % key)
        return llm_args

    # -- requests ----------------------------------------------------------------------------
    def execute(self, inputs, emit):
        """Serve one request (inputs: name -> list of values) like _execute_single_request.

        ``emit(outputs, final)`` is called per response (several when streaming). Raises ModelError.
        """
        try:
            prompt, params, streaming = self._convert(inputs)
            if streaming and not self.decoupled:
                raise TritonModelException("Streaming is only supported in decoupled mode.")
            prompt_tokens = sim.count_tokens(prompt) + 1  # + BOS, as trtllm-serve's stand-in counts
            if params["max_tokens"] < 1:
                raise ValueError("max_tokens must be positive, got %d" % params["max_tokens"])
            if prompt_tokens + params["max_tokens"] > self.engine.max_seq_len:
                raise ValueError("The sum of prompt length (%d) and max_tokens (%d) should not exceed max_seq_len "
                                 "(%d)" % (prompt_tokens, params["max_tokens"], self.engine.max_seq_len))
        except Exception as exc:  # pylint: disable=broad-except
            LOG.error("model.py:414", "[trtllm] Error generating request: %s" % exc)
            raise ModelError("Error generating request: %s" % exc) from None

        produced = []
        total = len(sim.generate_words(self.engine.model, prompt, params["max_tokens"])[0])

        def on_step(words):
            # Streaming: one response per step with the text so far (RequestOutput.outputs[0].text, not its
            # text_diff); the last one is sent below, with the perf metrics, once the request is finished.
            produced.extend(words)
            if streaming and len(produced) < total:
                emit({"text_output": sim.render(produced)}, False)

        words, _finish, stats = self.engine.generate(prompt, prompt_tokens, params["max_tokens"],
                                                     params["temperature"], on_step=on_step)
        text = sim.render(words)
        if not streaming and not params["exclude_input_from_output"]:
            text = prompt + text
        outputs = {"text_output": text}
        if params["return_perf_metrics"]:
            outputs.update(perf_outputs(stats))
        emit(outputs, True)

    @staticmethod
    def _convert(inputs):
        """_convert_request(): prompt, SamplingParams arguments, streaming."""
        if "text_input" not in inputs:
            raise TritonModelException("text_input is missing from the request")
        prompt = inputs["text_input"][0] if inputs["text_input"] else ""

        def scalar(name, default):
            values = inputs.get(name)
            if values is None:
                return default
            if len(values) != 1:
                raise TritonModelException("Expected a scalar tensor for tensor %s" % name)
            return values[0]
        params = {
            "max_tokens": scalar("sampling_param_max_tokens", DEFAULT_MAX_TOKENS),
            "temperature": scalar("sampling_param_temperature", DEFAULT_TEMPERATURE),
            "exclude_input_from_output": bool(scalar("sampling_param_exclude_input_from_output", False)),
            "return_perf_metrics": bool(scalar("sampling_param_return_perf_metrics", False)),
        }
        for name in ("best_of", "top_k", "top_p", "frequency_penalty", "presence_penalty", "seed"):
            scalar("sampling_param_" + name, None)  # accepted (scalars), not simulated
        return prompt, params, bool(scalar("streaming", False))


def _ns(seconds):
    return int((seconds - _MONO_OFFSET) * 1e9)


def perf_outputs(stats):
    """The perf-metric outputs of model.py: every value sent with text_output's dtype, i.e. as a string."""
    reused, missed = stats["reused_blocks"], stats["missed_blocks"]
    drafted, accepted = stats["drafted"], stats["accepted"]
    values = {
        "kv_cache_reused_block": reused,
        "kv_cache_hit_rate": (reused / float(reused + missed)) if (reused + missed) else 0.0,
        "kv_cache_alloc_new_blocks": stats["new_blocks"],
        "kv_cache_alloc_total_blocks": stats["total_blocks"],
        "kv_cache_missed_block": missed,
        "arrival_time_ns": _ns(stats["arrival_time"]),
        "first_scheduled_time_ns": _ns(stats["first_scheduled_time"]),
        "first_token_time_ns": _ns(stats["first_token_time"]),
        "last_token_time_ns": _ns(stats["last_token_time"]),
        "acceptance_rate": (accepted / float(drafted)) if drafted else 0.0,
        "total_accepted_draft_tokens": accepted,
        "total_draft_tokens": drafted,
    }
    return {key: str(values[key]) for key in PERF_KEYS}
