"""``trtllm-serve`` stand-in: the release's CLI, options-file rules, model checks and HTTP API.

Environment: TRTLLM_VERSION (release impersonated; set per image tag), STANDIN_STARTUP_SECONDS
(simulated model load, default 3), STANDIN_TIME_SCALE / STANDIN_BASE_TPS / STANDIN_PREFILL_TPS /
STANDIN_ACCEPTANCE / STANDIN_ACCEPTANCE_DECAY / STANDIN_DRAFT_COST (performance model, see sim.py),
HF_HOME / HF_HUB_CACHE (where HF ids are looked up), TRTLLM_STANDIN_WORLD_SIZE (set by
trtllm-llmapi-launch; 1 without it), TIKTOKEN_ENCODINGS_BASE (gpt-oss: openai_harmony's encodings),
STANDIN_ENCODINGS_SHA256SUMS (the lab's fake encodings' checksums, on the host; staged into the image).
"""

import base64
import binascii
import copy
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

from . import cli, env_float, hf_hub_cache, hfcache, release, trtllm_log, trtllm_version
from .server import App, Engine, Server


class StartupError(Exception):
    pass


def load_options_file(path, version, backend):
    """Load and validate the YAML options file -> (normalized dict, warnings)."""
    import yaml  # pylint: disable=import-outside-toplevel

    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except FileNotFoundError:
        raise StartupError("FileNotFoundError: [Errno 2] No such file or directory: '%s'" % path)
    except OSError as exc:
        raise StartupError("OSError: cannot read extra LLM API options %s: %s" % (path, exc))
    except yaml.YAMLError as exc:
        raise StartupError("yaml.YAMLError: %s is not valid YAML: %s" % (path, exc))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise StartupError("ValueError: %s must contain a YAML mapping of LLM API options, got %s"
                           % (path, type(data).__name__))
    # The stand-in's own pydantic models of the release (release.py), never the collection's tables:
    # when the two disagree, the lab's server refuses to start and molecule fails.
    try:
        return release.check(data, version, backend)
    except release.ReleaseError as exc:
        raise StartupError("invalid extra LLM API options in %s:\n%s" % (path, exc))


def resolve_model(name, what="model"):
    """Directory of a model given as a local path or a cached HF id; StartupError like an offline hub."""
    if hfcache.looks_like_path(name):
        path = os.path.expanduser(name)
        if os.path.isfile(os.path.join(path, "config.json")):
            return os.path.abspath(path)
        raise StartupError(
            "OSError: Can't load the configuration of '%s' (%s). If you were trying to load it from "
            "'https://huggingface.co/models', make sure you don't have a local directory with the same name. "
            "Otherwise, make sure '%s' is the correct path to a directory containing a config.json file"
            % (name, what, name))
    if not hfcache.valid_repo_id(name):
        raise StartupError("huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
                           "'namespace/repo_name': '%s' (%s)." % (name, what))
    path = hfcache.cached_snapshot(name)
    if path:
        return path
    raise StartupError(
        "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk cache and "
        "outgoing traffic has been disabled (%s '%s' is not in %s; download it first, e.g. `hf download %s`). "
        "To enable hf.co look-ups and downloads online, set 'local_files_only' to False."
        % (what, name, hf_hub_cache(), name))


def effective_args(params, options):
    """CLI args as the LLM API sees them, with the YAML merged over them (YAML wins)."""
    base = {
        "backend": params["backend"],
        "max_batch_size": params["max_batch_size"],
        "max_num_tokens": params["max_num_tokens"],
        "max_seq_len": params["max_seq_len"],
        "max_beam_width": params["max_beam_width"],
        "tensor_parallel_size": params["tp_size"],
        "pipeline_parallel_size": params["pp_size"],
        "context_parallel_size": params.get("cp_size") or 1,
        "moe_expert_parallel_size": params["ep_size"],
        "trust_remote_code": params["trust_remote_code"],
        "enable_chunked_prefill": params["enable_chunked_prefill"],
        "kv_cache_config": {"free_gpu_memory_fraction": params["kv_cache_free_gpu_memory_fraction"]},
    }
    out = copy.deepcopy(base)
    for key, value in options.items():
        if key == "kv_cache_config" and isinstance(value, dict):
            out["kv_cache_config"].update(value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# gpt-oss: openai_harmony's tiktoken encodings. What harmony does, from openai/harmony
# src/tiktoken_ext/public_encodings.rs (identical from the initial commit 253cdca to v0.0.8):
#
#     let (vocab_file_path, check_hash) =
#         if let Ok(base_dir) = std::env::var(TIKTOKEN_ENCODINGS_BASE_VAR) {
#             (PathBuf::from(base_dir).join(self.vocab_file_name()), true)
#         } else {
#             let url = self.public_vocab_file_url();   // https://openaipublic.blob.core.windows.net/encodings/
#             (download_or_find_cached_file(&url, Some(self.expected_hash()))
#                  .map_err(LoadError::DownloadOrLoadVocabFile)?, false)
#         };
#     #[error("error downloading or loading vocab file: {0}")]  DownloadOrLoadVocabFile(RemoteVocabFileError)
#     #[error("failed to download or load vocab file")]          FailedToDownloadOrLoadVocabFile(reqwest error)
#     #[error("invalid tiktoken vocab file: {0}")]               InvalidTiktokenVocabFile(std::io::Error)
#     "expected token and rank, could not split on ' ' at line {lin_no}"
#     "failed to decode base64 token at line {lin_no}: {e}"
#     "failed to parse rank at line {lin_no}: {e}"
#     "hash mismatch: computed={computed_hash}, expected={expected_hash}"
#
# and src/py_module.rs raises it as openai_harmony.HarmonyError(e.to_string()) (anyhow: the outer message only). So
# offline without TIKTOKEN_ENCODINGS_BASE the server dies with "openai_harmony.HarmonyError: error downloading or
# loading vocab file: failed to download or load vocab file"; with it, a missing, malformed or altered file gives
# "invalid tiktoken vocab file: ..." (harmony checks the sha256 of a local file too). The gpt-oss encoding
# (O200kHarmony) reads o200k_base.tiktoken; NVIDIA's guide puts cl100k_base.tiktoken in the same directory, and the
# stand-in requires both. Not simulated: harmony's download cache (TIKTOKEN_RS_CACHE_DIR).
HARMONY_ENCODINGS = ("o200k_base", "cl100k_base")
HARMONY_URL = "https://openaipublic.blob.core.windows.net/encodings/%s.tiktoken"
# OpenAI's published sha256 (harmony's expected_hash()).
HARMONY_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
_BASE64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def lab_encodings_sums():
    """(path, {file name: sha256}) of the lab's fake encodings, which the stand-in accepts besides OpenAI's: the
    SHA256SUMS staged into the image (lab_encodings.sha256), else $STANDIN_ENCODINGS_SHA256SUMS, else the checkout's
    molecule/resources/lab/files/encodings/SHA256SUMS."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(here, "lab_encodings.sha256"), os.environ.get("STANDIN_ENCODINGS_SHA256SUMS", ""),
                  os.path.join(here, "..", "..", "..", "files", "encodings", "SHA256SUMS")]
    for path in candidates:
        if path and os.path.isfile(path):
            sums = {}
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    parts = line.split()
                    if len(parts) == 2:
                        sums[parts[1].lstrip("*")] = parts[0].lower()
            return os.path.normpath(path), sums
    return None, {}


def _base64_error(token):
    """base64 0.22's DecodeError text for a token STANDARD (padded) decoding refuses, or None."""
    data = token.encode("utf-8")
    body = data.rstrip(b"=")
    for index, byte in enumerate(body):
        if byte not in _BASE64:
            return "Invalid symbol %d, offset %d." % (byte, index)
    if len(body) % 4 == 1:
        return "Invalid input length: %d" % len(body)
    if len(data) % 4 or len(data) - len(body) > 2:
        return "Invalid padding"
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return "Invalid padding"
    return None


def _rank_error(text):
    """Rust's ParseIntError text for u32::from_str, or None."""
    digits = text[1:] if text.startswith("+") else text
    if not text:
        return "cannot parse integer from empty string"
    if not digits or not digits.isascii() or not digits.isdigit():
        return "invalid digit found in string"
    if int(digits) > 0xFFFFFFFF:
        return "number too large to fit in target type"
    return None


def tiktoken_file_error(path, name, accepted):
    """harmony's load_tiktoken_vocab_file(path, expected_hash) -> None, or its io::Error text."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        return "%s (os error %d)" % (exc.strerror, exc.errno)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "stream did not contain valid UTF-8"
    for number, line in enumerate(text.splitlines(), 1):
        token, sep, rank = line.rstrip().partition(" ")
        if not sep:
            return "expected token and rank, could not split on ' ' at line %d" % number
        error = _base64_error(token)
        if error:
            return "failed to decode base64 token at line %d: %s" % (number, error)
        error = _rank_error(rank)
        if error:
            return "failed to parse rank at line %d: %s" % (number, error)
    computed = hashlib.sha256(raw).hexdigest()
    if computed not in accepted:
        return "hash mismatch: computed=%s, expected=%s" % (computed, HARMONY_SHA256[name])
    return None


def check_harmony_encodings():
    """gpt-oss: load the encodings as openai_harmony does at start-up, offline (the lab has no internet)."""
    base = os.environ.get("TIKTOKEN_ENCODINGS_BASE")
    sums_path, lab_sums = lab_encodings_sums()
    for name in HARMONY_ENCODINGS:
        if base is None:
            raise StartupError(
                "openai_harmony.HarmonyError: error downloading or loading vocab file: failed to download or load "
                "vocab file\n(lab stand-in: TIKTOKEN_ENCODINGS_BASE is not set, so harmony downloads %s, and there "
                "is no internet here)" % (HARMONY_URL % name))
        path = os.path.join(base, name + ".tiktoken")
        accepted = {HARMONY_SHA256[name]}
        if lab_sums.get(name + ".tiktoken"):
            accepted.add(lab_sums[name + ".tiktoken"])
        error = tiktoken_file_error(path, name, accepted)
        if error:
            if not os.path.exists(path):
                hint = "%s: no such file" % path
            elif os.path.isfile(path) and os.path.getsize(path) == 0:
                hint = "%s is empty" % path
            elif error.startswith("hash mismatch"):
                hint = "%s is neither OpenAI's file nor the lab's fake (%s)" % (path, sums_path or "no SHA256SUMS")
            else:
                hint = "%s is not a tiktoken file ('<base64 token> <rank>' lines)" % path
            raise StartupError("openai_harmony.HarmonyError: invalid tiktoken vocab file: %s\n(lab stand-in: %s; "
                               "TIKTOKEN_ENCODINGS_BASE=%s)" % (error, hint, base))
    trtllm_log("I", "harmony encodings from %s" % base)


def _spawn_mpi_workers():
    """One Spark, no mpirun: the real server spawns its executor worker through MPI (the LLM API's MpiPoolSession),
    which starts Open MPI's runtime in the container, with its listeners. The stand-in starts the same runtime (the
    image's Open MPI, so its listeners follow the same MCA settings), with a worker that only waits."""
    mpirun = shutil.which("mpirun")
    if not mpirun:
        return None
    argv = [mpirun, "--allow-run-as-root", "-n", "1", "sleep", "infinity"]
    trtllm_log("I", "Spawning the executor worker through MPI (%s)" % " ".join(argv[:4]))
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run(argv):
    version = trtllm_version()
    args = list(argv)
    if args and args[0] == "--help":
        cli.group_help()
        return 0
    if args and args[0] in cli.SUBCOMMANDS:
        command = args.pop(0)
        if command != "serve":
            print("Error: 'trtllm-serve %s' is not simulated by the DGX Spark lab stand-in." % command,
                  file=sys.stderr)
            return 2
    try:
        params, cli_warnings = cli.parse_serve(args, version)
    except cli.UsageError as exc:
        return cli.usage_error(exc)
    if params is None:
        cli.serve_help(version)
        return 0

    print("[TensorRT-LLM] TensorRT-LLM version: %s" % version, flush=True)
    for warning in cli_warnings:
        trtllm_log("W", warning)
    try:
        options, warnings = ({}, [])
        if params["extra_llm_api_options"]:
            options, warnings = load_options_file(params["extra_llm_api_options"], version, params["backend"])
        for warning in warnings:
            trtllm_log("W", warning)
        llm_args = effective_args(params, options)

        world = int(os.environ.get("TRTLLM_STANDIN_WORLD_SIZE", "1") or 1)
        tp = llm_args.get("tensor_parallel_size") or 1
        pp = llm_args.get("pipeline_parallel_size") or 1
        cp = llm_args.get("context_parallel_size") or 1
        if world != tp * pp * cp:
            raise StartupError(
                "RuntimeError: MPI world size (%d) does not match tp_size x pp_size%s = %d. Start %d rank(s) with "
                "`mpirun -np %d ... trtllm-llmapi-launch trtllm-serve ...` (one rank per Spark GPU), or lower "
                "--tp_size/--pp_size." % (world, " x cp_size" if cp != 1 else "", tp * pp * cp, tp * pp * cp,
                                          tp * pp * cp))
        ep = llm_args.get("moe_expert_parallel_size")
        if ep not in (None, -1) and (ep < 1 or tp % ep):
            raise StartupError("ValueError: moe_expert_parallel_size (%s) must divide tensor_parallel_size (%s)"
                               % (ep, tp))

        trtllm_log("I", "Using LLM with %s backend" % {"pytorch": "PyTorch", "tensorrt": "TensorRT",
                                                       "_autodeploy": "AutoDeploy"}[params["backend"]])
        if world > 1:
            trtllm_log("I", "Multi-node run: MPI world size %d, tp_size %d, pp_size %d" % (world, tp, pp))
        model_dir = resolve_model(params["model"])
        trtllm_log("I", "Loading model %s from %s" % (params["model"], model_dir))
        if "gpt-oss" in str(params["model"]).lower():
            check_harmony_encodings()
        config = hfcache.model_config(model_dir)
        if not llm_args.get("max_seq_len"):
            llm_args["max_seq_len"] = int(config.get("max_position_embeddings") or 4096)
        spec = llm_args.get("speculative_config")
        if spec:
            for key in ("speculative_model_dir", "speculative_model"):
                if spec.get(key):
                    draft_dir = resolve_model(str(spec[key]), what="speculative_config.%s" % key)
                    trtllm_log("I", "Loading draft model %s from %s" % (spec[key], draft_dir))
            trtllm_log("I", "Speculative decoding: decoding_type=%s max_draft_len=%s"
                       % (spec.get("decoding_type"), spec.get("max_draft_len")))
    except StartupError as exc:
        print(str(exc), file=sys.stderr, flush=True)
        trtllm_log("E", "trtllm-serve failed to start", stream=sys.stderr)
        return 1

    def log(line):
        print(line, flush=True)

    app = App(params["model"], version, lambda: Engine(params["model"], version, llm_args), log)
    host = params["host"]
    try:
        server = Server((host, params["port"]), app)
    except OSError as exc:
        print("ERROR:    [Errno %s] error while attempting to bind on address ('%s', %d): %s"
              % (exc.errno, host, params["port"], exc.strerror), file=sys.stderr, flush=True)
        return 1

    stop = threading.Event()
    workers = _spawn_mpi_workers() if world == 1 else None

    def on_signal(signum, _frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()

    startup = env_float("STANDIN_STARTUP_SECONDS", 3.0)
    # The real server's log says it is loading the weights (the loading's progress lines show the last such line).
    trtllm_log("I", "Loading model weights (the lab stand-in takes %.0f s)" % max(0.0, startup))
    deadline = time.time() + max(0.0, startup)
    while time.time() < deadline and not stop.is_set():
        time.sleep(min(0.05, max(0.0, deadline - time.time())))
    if not stop.is_set():
        app.load()
        log("INFO:     Started server process [%d]" % os.getpid())
        log("INFO:     Waiting for application startup.")
        log("INFO:     Uvicorn running on http://%s:%d (Press CTRL+C to quit)" % (host, params["port"]))
        log("INFO:     Application startup complete.")
    stop.wait()
    if workers is not None and workers.poll() is None:
        workers.terminate()
    log("INFO:     Shutting down")
    server.shutdown()
    server.server_close()
    log("INFO:     Finished server process [%d]" % os.getpid())
    return 0


def main(argv=None):
    return run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
