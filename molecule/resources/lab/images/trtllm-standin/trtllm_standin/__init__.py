"""Stand-in for the TensorRT-LLM release container's command-line interface (lab only).

Python 3 standard library plus PyYAML. Commands: ``trtllm-serve`` (serve.py), ``trtllm-llmapi-launch``
(launch.py), ``hf`` / ``huggingface-cli`` (hf_cli.py). The release it impersonates is
``$TRTLLM_VERSION`` (baked into each image tag). See molecule/resources/lab/README.md.
"""

import os
import re
import sys
import time

DEFAULT_VERSION = "1.2.0rc6"


def trtllm_version():
    return os.environ.get("TRTLLM_VERSION") or DEFAULT_VERSION


def version_key(version):
    """Sortable key for versions like 1.2.0rc6, 1.3.0rc12, 1.2.0 (a final release sorts after its rcs)."""
    match = re.match(r"^(\d+)\.(\d+)\.(\d+)(?:(rc|a|b)(\d+))?(?:\.post(\d+))?", version)
    if not match:
        return (0, 0, 0, 0, 0, 0)
    major, minor, patch, pre, pre_n, post = match.groups()
    pre_rank = {"a": 0, "b": 1, "rc": 2, None: 3}[pre]
    return (int(major), int(minor), int(patch), pre_rank, int(pre_n or 0), int(post or 0))


def at_least(version, floor):
    return version_key(version) >= version_key(floor)


def env_float(name, default):
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return float(default)


def trtllm_log(level, message, stream=None):
    """One log line in TRT-LLM's format: [MM/DD/YYYY-HH:MM:SS] [TRT-LLM] [I] message."""
    stamp = time.strftime("%m/%d/%Y-%H:%M:%S")
    print("[%s] [TRT-LLM] [%s] %s" % (stamp, level, message), file=stream or sys.stdout, flush=True)


def hf_home():
    return os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")


def hf_hub_cache():
    return os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE") or os.path.join(hf_home(), "hub")
