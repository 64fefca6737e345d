"""Hugging Face cache layout (hub/models--org--name/{blobs,refs,snapshots}) and placeholder checkpoints."""

import hashlib
import json
import os
import re
import struct

from . import hf_hub_cache

REPO_ID_RE = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")


def valid_repo_id(repo_id):
    return bool(REPO_ID_RE.match(repo_id)) and "--" not in repo_id and ".." not in repo_id \
        and not repo_id.endswith((".", "-"))


def looks_like_path(value):
    return value.startswith(("/", "./", "../", "~")) or value in (".", "..") or os.path.isdir(value)


def repo_folder(repo_id, repo_type="model"):
    return "%ss--%s" % (repo_type, repo_id.replace("/", "--"))


def commit_for(repo_id, revision):
    """Deterministic fake commit hash for a repo and revision (a 40-hex revision is used as is)."""
    if re.match(r"^[0-9a-f]{40}$", revision or ""):
        return revision
    return hashlib.sha1(("%s@%s" % (repo_id, revision or "main")).encode()).hexdigest()


def cached_snapshot(repo_id, cache_dir=None, revision=None):
    """Path of a cached snapshot of repo_id that has config.json, or None."""
    root = os.path.join(cache_dir or hf_hub_cache(), repo_folder(repo_id))
    snapshots = os.path.join(root, "snapshots")
    candidates = []
    ref = revision or "main"
    try:
        with open(os.path.join(root, "refs", ref), encoding="utf-8") as handle:
            candidates.append(handle.read().strip())
    except OSError:
        pass
    if revision and re.match(r"^[0-9a-f]{40}$", revision):
        candidates.append(revision)
    if not revision:
        try:
            candidates += sorted(os.listdir(snapshots))
        except OSError:
            pass
    for commit in candidates:
        path = os.path.join(snapshots, commit)
        if os.path.isfile(os.path.join(path, "config.json")):
            return path
    return None


def model_config(path):
    try:
        with open(os.path.join(path, "config.json"), encoding="utf-8") as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


# ----------------------------------------------------------------------------------------
# Placeholder checkpoint: small files with the shape of a real repo.
# ----------------------------------------------------------------------------------------

def _safetensors_stub(repo_id):
    """A valid, tensor-less safetensors file (8-byte header length + JSON header)."""
    header = json.dumps({"__metadata__": {"format": "pt", "standin_repo": repo_id}}).encode()
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header


# The architecture of the repositories the collection's profiles serve, from each one's public config.json (the
# collection checks a cluster's tensor parallelism against the heads): architectures, model_type,
# num_attention_heads, num_key_value_heads, num_hidden_layers, hidden_size (+ DeepSeek-V3's MTP layer). Keyed by
# the lower-case id (the Hub's ids are case-insensitive). Any other repository gets 32 attention and 8 key-value heads.
_LLAMA = ("LlamaForCausalLM", "llama")
_GPT_OSS = ("GptOssForCausalLM", "gpt_oss")
KNOWN_ARCHITECTURES = {
    # nvidia/DeepSeek-R1-FP4 quantizes deepseek-ai/DeepSeek-R1, a DeepSeek-V3 (multi-head latent attention).
    "nvidia/deepseek-r1-fp4": (("DeepseekV3ForCausalLM", "deepseek_v3"), 128, 128, 61, 7168,
                               {"num_nextn_predict_layers": 1}),
    "nvidia/qwen3-235b-a22b-fp4": (("Qwen3MoeForCausalLM", "qwen3_moe"), 64, 4, 94, 4096, {}),
    "meta-llama/llama-3.1-8b-instruct": (_LLAMA, 32, 8, 32, 4096, {}),
    "nvidia/llama-3.1-8b-instruct-fp4": (_LLAMA, 32, 8, 32, 4096, {}),
    "meta-llama/llama-3.2-1b-instruct": (_LLAMA, 32, 8, 16, 2048, {}),
    "nvidia/llama-3.3-70b-instruct-fp4": (_LLAMA, 64, 8, 80, 8192, {}),
    "openai/gpt-oss-120b": (_GPT_OSS, 64, 8, 36, 2880, {}),
    "openai/gpt-oss-20b": (_GPT_OSS, 64, 8, 24, 2880, {}),
}


def placeholder_files(repo_id):
    """{filename: bytes} of the placeholder checkpoint for repo_id."""
    name = repo_id.split("/")[-1].lower()
    draft = "eagle" in name
    if draft:
        arch, model_type, layers = "LlamaForCausalLMEagle3", "llama", 1
    elif "qwen" in name:
        arch, model_type, layers = ("Qwen3MoeForCausalLM", "qwen3_moe", 94) if "a22b" in name or "moe" in name \
            else ("Qwen3ForCausalLM", "qwen3", 36)
    elif "llama" in name:
        arch, model_type, layers = "LlamaForCausalLM", "llama", 32
    else:
        arch, model_type, layers = "LlamaForCausalLM", "llama", 16
    config = {
        "architectures": [arch],
        "model_type": model_type,
        "hidden_size": 4096,
        "num_hidden_layers": layers,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 40960 if "qwen" in name else 131072,
        "vocab_size": 151936 if "qwen" in name else 128256,
        "torch_dtype": "bfloat16",
        "_standin": {"repo_id": repo_id, "placeholder": True},
    }
    known = KNOWN_ARCHITECTURES.get(repo_id.lower())
    if known:
        (arch, model_type), heads, kv_heads, layers, hidden, extra = known
        config.update({"architectures": [arch], "model_type": model_type, "num_attention_heads": heads,
                       "num_key_value_heads": kv_heads, "num_hidden_layers": layers, "hidden_size": hidden}, **extra)
    if draft:
        config["draft_vocab_size"] = 32000
    files = {
        "config.json": json.dumps(config, indent=2).encode() + b"\n",
        "generation_config.json": json.dumps({"do_sample": False, "max_new_tokens": 2048}).encode() + b"\n",
        "tokenizer_config.json": json.dumps({"tokenizer_class": "PreTrainedTokenizerFast",
                                             "model_max_length": config["max_position_embeddings"]}).encode() + b"\n",
        "tokenizer.json": json.dumps({"version": "1.0", "model": {"type": "BPE", "vocab": {}}}).encode() + b"\n",
        "model.safetensors": _safetensors_stub(repo_id),
        "README.md": ("# %s\n\nPlaceholder checkpoint written by the DGX Spark lab's `hf` stand-in.\n"
                      % repo_id).encode(),
    }
    if "fp4" in name or "fp8" in name:
        files["hf_quant_config.json"] = json.dumps(
            {"quantization": {"quant_algo": "NVFP4" if "fp4" in name else "FP8"}}).encode() + b"\n"
    return files


def write_cache_file(cache_dir, repo_id, commit, revision, filename, data):
    """Store one file in the hub cache layout (blob + snapshot symlink + ref)."""
    root = os.path.join(cache_dir, repo_folder(repo_id))
    blob = hashlib.sha256(data).hexdigest()
    blob_path = os.path.join(root, "blobs", blob)
    os.makedirs(os.path.dirname(blob_path), exist_ok=True)
    if not os.path.exists(blob_path):
        tmp = blob_path + ".incomplete"
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, blob_path)
    link = os.path.join(root, "snapshots", commit, filename)
    os.makedirs(os.path.dirname(link), exist_ok=True)
    target = os.path.relpath(blob_path, os.path.dirname(link))
    if os.path.islink(link) or os.path.exists(link):
        os.remove(link)
    os.symlink(target, link)
    if revision and revision != commit:
        os.makedirs(os.path.join(root, "refs"), exist_ok=True)
        with open(os.path.join(root, "refs", revision), "w", encoding="utf-8") as handle:
            handle.write(commit)


def cache_file_complete(cache_dir, repo_id, commit, filename, data):
    path = os.path.join(cache_dir, repo_folder(repo_id), "snapshots", commit, filename)
    try:
        with open(path, "rb") as handle:
            return handle.read() == data
    except OSError:
        return False


def local_dir_metadata(local_dir, filename):
    return os.path.join(local_dir, ".cache", "huggingface", "download", filename + ".metadata")


def write_local_file(local_dir, commit, filename, data, timestamp):
    path = os.path.join(local_dir, filename)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".incomplete"
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)
    meta = local_dir_metadata(local_dir, filename)
    os.makedirs(os.path.dirname(meta), exist_ok=True)
    with open(meta, "w", encoding="utf-8") as handle:
        handle.write("%s\n%s\n%s\n" % (commit, hashlib.sha256(data).hexdigest(), timestamp))


def local_file_complete(local_dir, commit, filename, data):
    try:
        with open(os.path.join(local_dir, filename), "rb") as handle:
            if handle.read() != data:
                return False
        with open(local_dir_metadata(local_dir, filename), encoding="utf-8") as handle:
            return handle.readline().strip() == commit
    except OSError:
        return False
