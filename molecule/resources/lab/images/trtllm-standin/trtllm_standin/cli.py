"""Command line of ``trtllm-serve`` per release, parsed the way click does (messages, exit code 2)."""

import difflib
import sys

from . import at_least

LOG_LEVELS = ("internal_error", "error", "warning", "info", "verbose", "debug", "trace")
SUBCOMMANDS = ("serve", "disaggregated", "disaggregated_mpi_worker", "mm_embedding_serve")


class Opt:
    """One click option. names: all spellings; dest: parameter name; since: first release with it."""

    def __init__(self, names, dest, kind="str", default=None, choices=None, since=None, help_text="",
                 flag_value=True, deprecated=None):
        self.names = names
        self.dest = dest
        self.kind = kind          # str | int | float | choice | flag
        self.default = default
        self.choices = choices
        self.since = since
        self.help = help_text
        self.flag_value = flag_value
        self.deprecated = deprecated


def _options(version):
    """The serve options of a release: the trtllm-serve command reference of each release,
    https://nvidia.github.io/TensorRT-LLM/<release>/commands/trtllm-serve/trtllm-serve.html, and the click
    options in tensorrt_llm/commands/serve.py (https://github.com/NVIDIA/TensorRT-LLM)."""
    rc6 = at_least(version, "1.2.0rc6")
    v13 = at_least(version, "1.3.0rc0")
    opts = [
        Opt(["--tokenizer"], "tokenizer", help_text="Path | Name of the tokenizer."),
        Opt(["--host"], "host", default="localhost", help_text="Hostname of the server."),
        Opt(["--port"], "port", "int", 8000, help_text="Port of the server."),
        Opt(["--backend"], "backend", "choice", "pytorch", ("pytorch", "tensorrt", "_autodeploy"),
            help_text="The backend to use to serve the model."),
        Opt(["--log_level"], "log_level", "choice", "info", LOG_LEVELS, help_text="The logging level."),
        Opt(["--max_beam_width"], "max_beam_width", "int", 1, help_text="Maximum number of beams for beam search."),
        Opt(["--max_batch_size"], "max_batch_size", "int", 2048, help_text="Maximum number of requests per batch."),
        Opt(["--max_num_tokens"], "max_num_tokens", "int", 8192,
            help_text="Maximum number of batched input tokens after padding is removed."),
        Opt(["--max_seq_len"], "max_seq_len", "int", None, help_text="Maximum total length of one request."),
        Opt(["--tp_size"] + (["--tensor_parallel_size"] if rc6 else []), "tp_size", "int", 1,
            help_text="Tensor parallelism size."),
        Opt(["--pp_size"] + (["--pipeline_parallel_size"] if rc6 else []), "pp_size", "int", 1,
            help_text="Pipeline parallelism size."),
        Opt(["--ep_size"] + (["--moe_expert_parallel_size"] if rc6 else []), "ep_size", "int", None,
            help_text="Expert parallelism size."),
        Opt(["--cluster_size"], "cluster_size", "int", None, help_text="Expert cluster parallelism size.",
            deprecated="--cluster_size is deprecated" if v13 else None),
        Opt(["--gpus_per_node"], "gpus_per_node", "int", None, help_text="Number of GPUs per node."),
        Opt(["--kv_cache_free_gpu_memory_fraction"] + (["--free_gpu_memory_fraction"] if rc6 else []),
            "kv_cache_free_gpu_memory_fraction", "float", 0.9, help_text="Free GPU memory fraction reserved for KV Cache."),
        Opt(["--num_postprocess_workers"], "num_postprocess_workers", "int", 0,
            help_text="Number of workers to postprocess raw responses."),
        Opt(["--trust_remote_code"], "trust_remote_code", "flag", False, help_text="Flag for HF transformers."),
        Opt((["--config"] if rc6 else []) + ["--extra_llm_api_options"], "extra_llm_api_options",
            help_text="Path to a YAML file that overwrites the parameters specified by trtllm-serve."),
        Opt(["--reasoning_parser"], "reasoning_parser", "choice", None,
            ("deepseek-r1", "qwen3") if rc6 else ("deepseek-r1",), help_text="Specify the reasoning parser."),
        Opt(["--server_role"], "server_role", help_text="Server role (CONTEXT, GENERATION) for disaggregated serving."),
        Opt(["--metadata_server_config_file"], "metadata_server_config_file",
            help_text="Path to metadata server config file."),
        Opt(["--enable_chunked_prefill"], "enable_chunked_prefill", "flag", False, help_text="Enable chunked prefill."),
    ]
    if rc6:
        opts += [
            Opt(["--cp_size"], "cp_size", "int", 1, help_text="Context parallelism size."),
            Opt(["--revision"], "revision", help_text="The revision of the model on the Hub."),
            Opt(["--tool_parser"], "tool_parser", help_text="Specify the tool parser."),
            Opt(["--custom_module_dirs"], "custom_module_dirs", help_text="Paths to custom module directories."),
            Opt(["--otlp_traces_endpoint"], "otlp_traces_endpoint", help_text="OpenTelemetry traces endpoint."),
            Opt(["--chat_template"], "chat_template", help_text="Chat template file or string."),
            Opt(["--media_io_kwargs"], "media_io_kwargs", help_text="JSON keyword arguments for media loading."),
            Opt(["--disagg_cluster_uri"], "disagg_cluster_uri", help_text="URI of the disaggregated cluster."),
        ]
    if v13:
        opts += [
            Opt(["--kv_cache_dtype"], "kv_cache_dtype", "choice", "auto", ("auto", "fp8", "nvfp4"),
                help_text="KV cache data type."),
            Opt(["--hf_revision"], "hf_revision", help_text="Hugging Face revision of the model."),
            Opt(["--enable_attention_dp"], "enable_attention_dp", "flag", False, help_text="Enable attention DP."),
            Opt(["--telemetry"], "telemetry", "flag", True, help_text="Enable usage telemetry."),
            Opt(["--no-telemetry"], "telemetry", "flag", True, flag_value=False, help_text="Disable usage telemetry."),
            Opt(["--video_pruning_rate"], "video_pruning_rate", "float", None, help_text="Video token pruning rate."),
        ]
    return opts


class UsageError(Exception):
    def __init__(self, message, command="serve"):
        super().__init__(message)
        self.message = message
        self.command = command


def _convert(opt, name, raw):
    if opt.kind == "int":
        try:
            return int(raw.strip())
        except ValueError:
            raise UsageError("Invalid value for '%s': '%s' is not a valid integer." % (name, raw))
    if opt.kind == "float":
        try:
            return float(raw.strip())
        except ValueError:
            raise UsageError("Invalid value for '%s': '%s' is not a valid float." % (name, raw))
    if opt.kind == "choice" and raw not in opt.choices:
        raise UsageError("Invalid value for '%s': '%s' is not one of %s."
                         % (name, raw, ", ".join("'%s'" % c for c in opt.choices)))
    return raw


def parse_serve(argv, version):
    """Parse serve's arguments -> (params dict, warnings). Raises UsageError; returns None for --help."""
    opts = _options(version)
    by_name = {name: opt for opt in opts for name in opt.names}
    params = {opt.dest: opt.default for opt in opts}
    warnings = []
    positionals = []
    i = 0
    only_args = False
    while i < len(argv):
        token = argv[i]
        i += 1
        if only_args or not token.startswith("-") or token == "-":
            positionals.append(token)
            continue
        if token == "--":
            only_args = True
            continue
        if token == "--help":
            return None, warnings
        name, has_value, value = token.partition("=")
        opt = by_name.get(name)
        if opt is None:
            close = difflib.get_close_matches(name, list(by_name), n=1)
            hint = " Did you mean %s?" % close[0] if close else ""
            raise UsageError("No such option: %s%s" % (name, hint))
        if opt.kind == "flag":
            if has_value:
                raise UsageError("Option '%s' does not take a value." % name)
            params[opt.dest] = opt.flag_value
        else:
            if not has_value:
                if i >= len(argv):
                    raise UsageError("Option '%s' requires an argument." % name)
                value = argv[i]
                i += 1
            params[opt.dest] = _convert(opt, name, value)
        if opt.deprecated:
            warnings.append(opt.deprecated)
    if not positionals:
        raise UsageError("Missing argument 'MODEL'.")
    if len(positionals) > 1:
        raise UsageError("Got unexpected extra argument%s (%s)"
                         % ("s" if len(positionals) > 2 else "", " ".join(positionals[1:])))
    params["model"] = positionals[0]
    return params, warnings


def usage_error(exc, stream=None):
    stream = stream or sys.stderr
    if exc.command:
        print("Usage: trtllm-serve %s [OPTIONS] MODEL" % exc.command, file=stream)
        print("Try 'trtllm-serve %s --help' for help." % exc.command, file=stream)
    else:
        print("Usage: trtllm-serve [OPTIONS] COMMAND [ARGS]...", file=stream)
        print("Try 'trtllm-serve --help' for help.", file=stream)
    print("", file=stream)
    print("Error: %s" % exc.message, file=stream, flush=True)
    return 2


def serve_help(version, stream=None):
    stream = stream or sys.stdout
    print("Usage: trtllm-serve serve [OPTIONS] MODEL\n\n  Running an OpenAI API compatible server\n\n"
          "  MODEL: model name | HF checkpoint path | TensorRT engine path\n\nOptions:", file=stream)
    for opt in _options(version):
        label = ", ".join(opt.names)
        if opt.kind == "choice":
            label += " [%s]" % "|".join(opt.choices)
        elif opt.kind in ("int", "float"):
            label += " " + opt.kind.upper()
        elif opt.kind == "str":
            label += " TEXT"
        print("  %-48s %s" % (label, opt.help), file=stream)
    print("  %-48s %s" % ("--help", "Show this message and exit."), file=stream)


def group_help(stream=None):
    stream = stream or sys.stdout
    print("Usage: trtllm-serve [OPTIONS] COMMAND [ARGS]...\n\nOptions:\n  --help  Show this message and exit.\n\n"
          "Commands:", file=stream)
    for name in SUBCOMMANDS:
        print("  %s" % name, file=stream)
