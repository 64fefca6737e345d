# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The TensorRT-LLM release manifest: everything the collection knows of each release, one entry per release.

An entry says which option table judges the release's extra LLM API options (generated from the release's own
``llm_args.py`` by ``tools/llm_args_table.py``, shared where two releases have the same one), which family of rules
(``_trtllm_options.RULES``), the release container (repository, tag, digest where known), the Open MPI major its image
carries, how its ``trtllm-serve`` weighs a command-line flag against the options file, which Prometheus metrics it
serves, and which Triton containers ship it. The plan, the options validator, the endpoint validator, the bench and
the tuner read it from here; the lab reads its stand-in images and Triton pairs from here too
(``python3 _trtllm_releases.py lab-images``).

Adding a release: generate its table, add one entry below (and the table's import in ``_trtllm_options``), run the
unit tests (README, "Adding a TensorRT-LLM release").

Pure data and the standard library: it runs in Ansible modules on the nodes, in the tests and as a script.
"""

from __future__ import annotations

import re
import sys

# NGC's repositories (NVIDIA's DGX Spark playbooks pull these). No digest is pinned: NGC cannot be reached from where
# this collection is tested, and an image's release is checked from its labels on the node instead.
IMAGE_REPOSITORY = "nvcr.io/nvidia/tensorrt-llm/release"
TRITON_REPOSITORY = "nvcr.io/nvidia/tritonserver"
# Labels and environment a release image may carry its release in.
IMAGE_VERSION_LABELS = ("com.nvidia.tensorrt-llm.version", "org.opencontainers.image.version")
IMAGE_VERSION_ENV = ("TRTLLM_VERSION", "TRT_LLM_VERSION", "TENSORRT_LLM_VERSION")

# The release of NVIDIA's DGX Spark speculative-decoding playbook when this collection began; the profiles name theirs.
DEFAULT_VERSION = "1.2.0rc6"

# The option tables come from the rendered llm_args.py of each release on NVIDIA's documentation site
# (https://nvidia.github.io/TensorRT-LLM/<release>/_modules/tensorrt_llm/llmapi/llm_args.html); each table names its page.

# How trtllm-serve weighs a flag given on its command line against the same key in the options file:
# "options_file": the file is merged over the arguments the CLI built, so the file wins (1.2 and 1.3 up to rc16,
#   update_llm_args_with_extra_dict); "cli": explicit CLI flags win, with a warning (PR #14812, "explicit CLI > YAML >
#   defaults": update_llm_args_with_extra_dict(explicit_cli_keys) from the rc20 source on).
# Metrics: "request" the request metrics only (1.2.x: five unprefixed ones, PR #5785; 1.3: trtllm_-prefixed request
# and KV-cache metrics, PRs #11243 and #12132); "spec_decoding" also the speculative-decoding counters (PR #12545),
# which no release below is known to serve: the collection's exporter serves them for every one.


def _release(table, rules, cli="options_file", metrics="request", openmpi=4, before=None):
    return {"table": table, "rules": rules, "cli_precedence": cli, "metrics": metrics, "openmpi": openmpi,
            "before": before}


RELEASES = {
    "1.2.0rc1": _release("1.2.0rc1", "1.2.0rc1"),
    "1.2.0rc6": _release("1.2.0rc6", "1.2.0rc6"),
    "1.2.0": _release("1.2.0", "1.2.0"),
    # 1.2.1's page has 1.2.0's llm_args.py to the character.
    "1.2.1": _release("1.2.0", "1.2.0"),
    "1.3.0rc11": _release("1.3.0rc11", "1.3.0rc11"),
    # No 1.3.0rc12 page is published: judged with rc13's table, a key rc11 lacks is accepted with a warning.
    "1.3.0rc12": _release("1.3.0rc13", "1.3.0rc11", before="1.3.0rc11"),
    "1.3.0rc13": _release("1.3.0rc13", "1.3.0rc11"),
    "1.3.0rc14": _release("1.3.0rc14", "1.3.0rc14"),
    # No 1.3.0rc15 page is published (PyPI has the wheel): rc16's table and rules, rc14's keys for the warning.
    "1.3.0rc15": _release("1.3.0rc16", "1.3.0rc16", before="1.3.0rc14"),
    "1.3.0rc16": _release("1.3.0rc16", "1.3.0rc16"),
    "1.3.0rc20": _release("1.3.0rc20", "1.3.0rc20", cli="cli"),
    "1.3.0rc22": _release("1.3.0rc22", "1.3.0rc22", cli="cli"),
    "1.3.0rc23": _release("1.3.0rc23", "1.3.0rc23", cli="cli"),
    "1.3.0rc24": _release("1.3.0rc24", "1.3.0rc24", cli="cli"),
}

# Releases people run that the collection refuses, and why (the message names the nearest supported one).
_REFERENCE_ONLY = ("its documentation has class reference pages only (field types, no validators or "
                   "before-validators), so whether it accepts a file cannot be told from its source")
_OMPI5 = "; its image also moved to Open MPI 5"
_NO_DOCS = "no documentation of its llm_args.py is published"
KNOWN_UNSUPPORTED = {
    "1.3.0rc25": _NO_DOCS,
    "1.3.0rc26": _REFERENCE_ONLY,
    "1.3.0rc27": _REFERENCE_ONLY + _OMPI5,
    "1.3.0rc28": _REFERENCE_ONLY + _OMPI5,
    "1.3.0rc29": _REFERENCE_ONLY + _OMPI5,
    "1.4.0rc0": _NO_DOCS,
    "1.4.0rc1": _NO_DOCS,
}

# The release images carry Open MPI 4 up to 1.3.0rc26 and Open MPI 5 (HPC-X, PRRTE) from 1.3.0rc27 on, when their
# base moved to NGC PyTorch 26.08 (ai-dynamo/dynamo#15060 lists the versions by tag). For an image not in RELEASES
# (trtllm_container_image naming a build of its own) the plan reads the image's environment first.
OPENMPI_5_FROM = "1.3.0rc27"

# The TensorRT-LLM release inside nvcr.io/nvidia/tritonserver:<yy.mm>-trtllm-python-py3, from Triton's compatibility
# matrix (docs/introduction/compatibility.md of triton-inference-server/server).
TRITON_RELEASES = {
    "25.01": "0.17.0", "25.02": "0.17.0.post1", "25.03": "0.18.0", "25.04": "0.18.2", "25.05": "0.19.0",
    "25.06": "0.20.0", "25.07": "0.20.0", "25.08": "0.21.0", "25.09": "1.0.0", "25.10": "1.0.0",
    "25.11": "1.0.3.2510", "25.12": "1.1.0", "26.01": "1.1.0", "26.02": "1.1.0", "26.03": "1.2.0",
    "26.04": "1.2.1", "26.05": "1.2.1", "26.06": "1.2.1", "26.07": "1.2.1",
}
# The LLM API backend exists from 25.01 on (the Triton tutorial's minimum).
TRITON_FIRST_RELEASE = "25.01"

# The lab's stand-in images (molecule/resources/lab): which releases it impersonates, the default first. The stand-in
# judges options with its own models of these releases, never with the tables above.
LAB_STANDINS = ("1.2.0rc6", "1.2.0rc1", "1.3.0rc12")
LAB_TRITON = ("26.07",)

SUPPORTED_VERSIONS = tuple(RELEASES)


def release_key(version):
    """A release as a sortable tuple: 1.2.0rc6 -> (1, 2, 0, 0, 6); 1.2.0 -> (1, 2, 0, 1, 0) (after its rcs)."""
    match = re.match(r"^(\d+)\.(\d+)\.(\d+)(?:rc(\d+))?", str(version))
    if not match:
        return (0, 0, 0, 0, 0)
    major, minor, patch, rc = match.groups()
    return (int(major), int(minor), int(patch), 0 if rc is not None else 1, int(rc or 0))


def get(version):
    """The manifest entry of ``version`` (KeyError when unknown)."""
    return RELEASES[str(version)]


def image(version, repository=IMAGE_REPOSITORY):
    """The release container: ``{"repository", "tag", "digest", "ref"}`` (the tag is the release)."""
    return {"repository": repository, "tag": str(version), "digest": None, "ref": "%s:%s" % (repository, version)}


def openmpi_major(version):
    """The Open MPI major version the release image of ``version`` carries."""
    entry = RELEASES.get(str(version))
    if entry:
        return entry["openmpi"]
    return 5 if release_key(version) >= release_key(OPENMPI_5_FROM) else 4


def cli_wins(version):
    """Whether an explicit trtllm-serve flag beats the same key in the options file on ``version``."""
    return get(version)["cli_precedence"] == "cli"


def serves_spec_metrics(version):
    """Whether ``version``'s trtllm-serve serves the speculative-decoding counters itself."""
    return get(version)["metrics"] == "spec_decoding"


def triton_releases(version):
    """The Triton containers that ship ``version`` (oldest first)."""
    return [t for t, v in sorted(TRITON_RELEASES.items()) if v == str(version)]


def main(argv):
    """``lab-standins`` / ``lab-triton`` (one per line), ``triton YY.MM`` (its TensorRT-LLM release)."""
    if argv[:1] == ["lab-standins"]:
        sys.stdout.write("\n".join(LAB_STANDINS) + "\n")
    elif argv[:1] == ["lab-triton"]:
        sys.stdout.write("\n".join(LAB_TRITON) + "\n")
    elif argv[:1] == ["triton"] and len(argv) == 2 and argv[1] in TRITON_RELEASES:
        sys.stdout.write(TRITON_RELEASES[argv[1]] + "\n")
    else:
        sys.stderr.write("usage: _trtllm_releases.py lab-standins | lab-triton | triton YY.MM (a known one)\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
