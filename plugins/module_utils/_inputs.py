# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The input catalogue: every variable the collection reads from inventory or extra vars, declared once.

Each ``Input`` says its type, default (or the profile key that supplies it), format, bounds or choices, its
**scope** and one line of description:

* ``cluster``: the same on every node of a cluster (what is served, the image, the link plan). The plan reads it
  once, and refuses a cluster whose nodes disagree, naming each host and its value.
* ``node``: read on its own node (interface names, addresses, directories, the container name).

``applied`` says who reads it: ``plan`` (dgx_spark.specdec.specdec_plan, which hands each role its part as the role's
``*_spec`` parameter), ``role`` (the role itself, at apply time: its ``defaults/main.yml``) or ``playbook``.

Everything else is generated from this table by ``tools/gen_docs.py`` (``make docs``): the plan module's option
documentation, each role's ``meta/argument_specs.yml`` and ``defaults/main.yml``, and the variable tables of the
role READMEs. The plan reads variables only through ``Reader`` below.
"""

from __future__ import annotations

import copy
import difflib
import ipaddress
import json
import re

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _spark_net as net
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _trtllm_options as trt
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _trtllm_releases as rel

CLUSTER = "cluster"
NODE = "node"
PREFIXES = ("specdec_", "netplan_qsfp_", "trtllm_container_", "openmpi_hostfile_", "docker_group_", "fabric_check_")
# Set by the collection itself (facts and play variables), never by a user: not inputs, never "misspelt".
PRODUCED = ("specdec_plan", "specdec_plans", "specdec_profile", "specdec_fleet_started", "specdec_fleet_failure", "specdec_fleet_done",
            "specdec_fleet_serving", "specdec_serve_endpoint", "specdec_serve_memory", "netplan_qsfp_link_check",
            "specdec_serve_spec", "trtllm_container_spec", "netplan_qsfp_spec", "openmpi_hostfile_spec",
            # play variables of playbooks/converge.yml, set by the playbooks that import it
            "specdec_converge_hosts", "specdec_converge_scope", "specdec_converge_title", "specdec_profile_fixed")

# ---------------------------------------------------------------------------
# Formats of the values that reach commands, paths and file names
# ---------------------------------------------------------------------------

_HF_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?"
_HF_REPO = re.compile(r"^%s/%s$" % (_HF_PART, _HF_PART))
_PATH = re.compile(r"^/(?:[A-Za-z0-9._@+=,-]+/?)*$")
_CONTAINER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_DOMAIN = r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]{1,5})?"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE = re.compile(r"^(?:%s/)?%s(?:/%s)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$"
                    % (_DOMAIN, _COMPONENT, _COMPONENT))
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_IFACE = re.compile(r"^(?!\.{1,2}$)[A-Za-z0-9_.:-]{1,15}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                       r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
_PORT_SPEC = re.compile(r"^(?:(?:[0-9.]+|\[[0-9A-Fa-f:]+\]):)?(?:[0-9]{1,5}(?:-[0-9]{1,5})?:)?[0-9]{1,5}"
                        r"(?:-[0-9]{1,5})?(?:/(?:tcp|udp|sctp))?$")
_DEVICE = re.compile(r"^/dev/[A-Za-z0-9._/-]+(?::/dev/[A-Za-z0-9._/-]+)?(?::[rwm]{1,3})?$")
_NETWORK = re.compile(r"^(?:host|bridge|none|container:[A-Za-z0-9][A-Za-z0-9_.-]*|[A-Za-z0-9][A-Za-z0-9_.-]*)$")
_IPC = re.compile(r"^(?:host|private|shareable|none|container:[A-Za-z0-9][A-Za-z0-9_.-]*)$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_DURATION = re.compile(r"^(?:[0-9]+(?:ms|s|m|h|d|w|y))+$")


def is_path(value):
    if not _PATH.match(value) or "//" in value:
        return False
    return not any(part in (".", "..") for part in value.split("/"))


def is_ip(value):
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        return False


def is_hf_repo(value):
    return bool(_HF_REPO.match(value)) and "--" not in value and ".." not in value


FORMATS = {
    "hf_repo": (is_hf_repo, "a Hugging Face model id (owner/name: letters, digits, '-', '_', '.', at most 96 each, "
                            "no '--' or '..')"),
    "model": (lambda v: is_hf_repo(v) or is_path(v),
              "a Hugging Face model id (owner/name) or an absolute path inside the container"),
    "path": (is_path, "an absolute path of letters, digits and ._@+=,- (no '.' or '..' parts, no spaces)"),
    "container": (lambda v: bool(_CONTAINER.match(v)), "a Docker container name ([A-Za-z0-9][A-Za-z0-9_.-]*)"),
    "image": (lambda v: bool(_IMAGE.match(v)), "an image reference [registry/]repository[:tag][@sha256:<64 hex>]"),
    "tag": (lambda v: bool(_TAG.match(v)), "an image tag ([A-Za-z0-9_][A-Za-z0-9_.-]*, at most 128)"),
    "iface": (lambda v: bool(_IFACE.match(v)), "a network interface name (at most 15 of A-Za-z0-9_.:-)"),
    "env_name": (lambda v: bool(_ENV_NAME.match(v)), "an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"),
    "user": (lambda v: bool(USER.match(v)), "a login name ([a-z_][a-z0-9_-]*)"),
    "bind": (lambda v: is_ip(v) or (bool(_HOSTNAME.match(v)) and not v.replace(".", "").isdigit()),
             "an IP address or a host name to listen on"),
    "ip": (is_ip, "an IP address"),
    "port_spec": (lambda v: bool(_PORT_SPEC.match(v)), "a published port [IP:][HOST_PORT:]CONTAINER_PORT[/tcp|udp]"),
    "device": (lambda v: bool(_DEVICE.match(v)), "a device /dev/X[:/dev/Y][:rwm]"),
    "network": (lambda v: bool(_NETWORK.match(v)), "host, bridge, none, container:NAME or a network name"),
    "ipc": (lambda v: bool(_IPC.match(v)), "host, private, shareable, none or container:NAME"),
    "name": (lambda v: bool(_NAME.match(v)), "a name of letters, digits and _.- (at most 128)"),
    "duration": (lambda v: bool(_DURATION.match(v)), "a Prometheus duration such as 15s, 5m, 15d (ms, s, m, h, d, w, y)"),
    "arg": (lambda v: "\n" not in v and "\0" not in v and v != "", "a non-empty string without newlines"),
    "text": (lambda v: "\0" not in v, "a string without NUL characters"),
}


# ---------------------------------------------------------------------------
# The declaration
# ---------------------------------------------------------------------------

KINDS = ("str", "int", "float", "fraction", "bool", "list", "dict", "env", "raw")
APPLIED = ("plan", "role", "playbook")
# What a kind is in an argument spec (ansible-doc), and how it reads in a table.
SPEC_TYPES = {"str": "str", "int": "int", "float": "float", "fraction": "float", "bool": "bool", "list": "list",
              "dict": "dict", "env": "dict", "raw": "raw"}


class Input:
    """One variable: what it is, where it applies, what is accepted."""

    __slots__ = ("name", "kind", "doc", "scope", "default", "profile", "fmt", "choices", "minimum", "maximum",
                 "nullable", "applied", "aliases", "default_doc", "secret", "deprecated", "entry_points", "template",
                 "elements")

    def __init__(self, name, kind, doc, **kw):
        self.name = name
        self.kind = kind
        self.doc = doc
        self.scope = kw.pop("scope", CLUSTER)
        self.default = kw.pop("default", None)
        self.profile = kw.pop("profile", None)
        self.fmt = kw.pop("fmt", None)
        self.choices = tuple(kw.pop("choices", ()) or ())
        self.minimum = kw.pop("minimum", None)
        self.maximum = kw.pop("maximum", None)
        self.nullable = kw.pop("nullable", False)
        self.applied = kw.pop("applied", "plan")
        self.aliases = dict(kw.pop("aliases", {}) or {})   # old name -> the version that removes it
        self.default_doc = kw.pop("default_doc", None)     # a default computed by the plan, in words
        self.secret = kw.pop("secret", False)
        self.deprecated = kw.pop("deprecated", None)       # why, for a variable that is going away
        self.entry_points = tuple(kw.pop("entry_points", ("main",)))
        self.template = kw.pop("template", None)           # a role default computed by Jinja (defaults/main.yml)
        self.elements = kw.pop("elements", "str")          # a list's items (argument spec)
        if kw:
            raise ValueError("%s: unknown fields %s" % (name, ", ".join(sorted(kw))))
        if kind not in KINDS or self.scope not in (CLUSTER, NODE) or self.applied not in APPLIED:
            raise ValueError("%s: bad kind, scope or applied" % name)
        if self.fmt and self.fmt not in FORMATS:
            raise ValueError("%s: unknown format %s" % (name, self.fmt))
        if not name.startswith(PREFIXES):
            raise ValueError("%s: not a variable of the collection (prefixes %s)" % (name, ", ".join(PREFIXES)))

    @property
    def role(self):
        """The role whose documentation carries it (None: the plan's or a playbook's own)."""
        for role in ("specdec_serve", "specdec_monitoring", "trtllm_container", "netplan_qsfp", "openmpi_hostfile",
                     "docker_group"):
            if self.name.startswith(role + "_"):
                return role
        return None

    def accepted(self):
        """What is accepted, in words (error messages and documentation)."""
        if self.choices:
            text = "one of " + ", ".join(str(c) for c in self.choices)
        elif self.kind == "int":
            text = "an integer" + _range(self.minimum, self.maximum)
        elif self.kind == "float":
            text = "a number >= %s" % (self.minimum if self.minimum is not None else 0)
        elif self.kind == "fraction":
            text = "a number in (0, 1]"
        elif self.kind == "bool":
            text = "a boolean (true or false)"
        elif self.kind == "list":
            text = "a list, each " + FORMATS[self.fmt][1] if self.fmt else "a list of strings"
        elif self.kind == "env":
            text = "a mapping of environment variable names to single-line strings"
        elif self.kind == "dict":
            text = "a mapping"
        elif self.fmt:
            text = FORMATS[self.fmt][1]
        elif self.kind == "raw":
            text = "as described"
        else:
            text = "a string"
        return text + (" or null" if self.nullable else "")


def _range(minimum, maximum):
    if minimum is not None and maximum is not None:
        return " from %d to %d" % (minimum, maximum)
    if minimum is not None:
        return " >= %d" % minimum
    return ""


_PROFILE = "the profile's"
_I = Input

INPUTS = (
    # -- clusters and profiles (the plan) -------------------------------------------------------------------------
    _I("specdec_cluster", "str", "The cluster this Spark belongs to: the Sparks that serve one endpoint. Set it on "
       "the cluster's group.", scope=NODE, fmt="name", default_doc="sparks (one-Spark profiles: each host alone)"),
    _I("specdec_cluster_head", "str", "The cluster's head (rank 0, netplan's node 1, the first hostfile line); "
       "default the cluster's one host in group spark_head, else its only host.", fmt="name"),
    _I("specdec_profile_name", "str", "The profile a cluster serves (a file of playbooks/vars/); a playbook that "
       "reproduces one NVIDIA playbook sets its own, the fleet reads it per cluster.", fmt="name"),
    _I("specdec_topology", "str", "How the cluster's Sparks are cabled: direct (two Sparks, one QSFP cable), switch "
       "(2 to 8 Sparks, each cabled on the same port to one switch) or ring (three Sparks, each one's port 0 to the "
       "next one's port 1). Set it on the cluster's group.", default="direct", choices=net.TOPOLOGIES),
    _I("specdec_strict_inputs", "bool", "Fail instead of warn when a variable with one of the collection's prefixes "
       "is not one the collection knows (a misspelling); for CI and AWX.", default=False),
    # -- what is served (specdec_serve) ---------------------------------------------------------------------------
    _I("specdec_serve_frontend", "str", "The server: trtllm-serve, or Triton Inference Server's LLM API backend "
       "(one Spark).", profile="frontend", default="trtllm-serve", choices=("trtllm-serve", "triton")),
    _I("specdec_serve_trtllm_version", "str", "The TensorRT-LLM release of the image; selects the option table and "
       "the image tag. Required, except with Triton (the release its Triton release ships).",
       profile="trtllm_version", choices=rel.SUPPORTED_VERSIONS),
    _I("specdec_serve_triton_release", "str", "Triton release YY.MM (frontend triton); its TensorRT-LLM comes from "
       "Triton's compatibility matrix.", profile="triton_release"),
    _I("specdec_serve_triton_config", "dict", "Triton model settings (max_batch_size 0, decoupled, "
       "cancellation_check_period_ms).", profile="triton_config", default={}),
    _I("specdec_serve_triton_grpc_port", "int", "Triton's gRPC port, unlike the HTTP and metrics ports.",
       profile="triton_grpc_port", default=8001, minimum=1, maximum=65535),
    _I("specdec_serve_triton_metrics_port", "int", "Triton's metrics port, unlike the HTTP and gRPC ports.",
       profile="triton_metrics_port", default=8002, minimum=1, maximum=65535),
    _I("specdec_serve_method", "str", "The speculative-decoding method.", profile="method", default="none",
       choices=trt.METHODS),
    _I("specdec_serve_model", "str", "The target model: a Hugging Face id, downloaded into the HF cache, or a path "
       "inside the container.", profile="model", fmt="model"),
    _I("specdec_serve_draft_model", "str", "The draft model (eagle3, draft_target): a Hugging Face id, downloaded "
       "into specdec_serve_draft_dir, or a path inside the container.", profile="draft_model", fmt="model"),
    _I("specdec_serve_draft_dir", "str", "Where the draft is downloaded, a directory under /models (e.g. "
       "/models/NAME/); it becomes speculative_model_dir.", profile="draft_dir", fmt="path"),
    _I("specdec_serve_model_revision", "str", "The target model's revision on Hugging Face (a branch, tag or commit); "
       "downloaded at it and given to the server as the revision option. Null: the default branch.", nullable=True),
    _I("specdec_serve_draft_revision", "str", "The draft model's revision on Hugging Face (a branch, tag or commit). "
       "Null: the default branch.", nullable=True),
    _I("specdec_serve_max_draft_len", "int", "Tokens the draft proposes per step. Required unless the method is "
       "none.", profile="max_draft_len", minimum=1, maximum=64),
    _I("specdec_serve_options", "dict", "Extra LLM API options (the extra-llm-api-config.yml); when set, replaces "
       "the profile's.", profile="options", default={}),
    _I("specdec_serve_extra_options", "dict", "A mapping deep-merged over specdec_serve_options.", default={}),
    _I("specdec_serve_tp_size", "int", "Tensor-parallel size: 1 on one Spark; on a cluster tp_size x pp_size is "
       "the number of nodes, and tp_size divides the model's attention heads.", profile="tp_size", default=1,
       minimum=1, maximum=64, default_doc="1; on a cluster the number of nodes / pp_size"),
    _I("specdec_serve_ep_size", "int", "Expert-parallel size (--ep_size, MoE models; divides the tensor-parallel "
       "size); null leaves it out.", profile="ep_size", minimum=1, maximum=64, nullable=True),
    _I("specdec_serve_pp_size", "int", "Pipeline-parallel size (--pp_size): tp_size x pp_size is the number of nodes; "
       "1 with speculative decoding (TensorRT-LLM does not combine them).", profile="pp_size", default=1, minimum=1,
       maximum=8),
    _I("specdec_serve_attention_heads", "int", "The target model's attention heads (num_attention_heads of its "
       "config.json), which the tensor-parallel size must divide; the downloaded config.json wins once it is on the "
       "node.", profile="attention_heads", minimum=1, nullable=True),
    _I("specdec_serve_kv_heads", "int", "The target model's key-value heads (num_key_value_heads); the "
       "tensor-parallel size must divide them or be a multiple of them.", profile="kv_heads", minimum=1,
       nullable=True),
    _I("specdec_serve_max_batch_size", "int", "--max_batch_size; null leaves it out.", profile="max_batch_size",
       minimum=1, nullable=True),
    _I("specdec_serve_max_num_tokens", "int", "--max_num_tokens; null leaves it out.", profile="max_num_tokens",
       minimum=1, nullable=True),
    _I("specdec_serve_kv_cache_free_gpu_memory_fraction", "fraction", "--kv_cache_free_gpu_memory_fraction; null "
       "leaves it out.", profile="kv_cache_free_gpu_memory_fraction", nullable=True),
    _I("specdec_serve_trust_remote_code", "bool", "--trust_remote_code.", profile="trust_remote_code",
       default=False),
    _I("specdec_serve_host", "str", "The address the server listens on.", profile="host", default="0.0.0.0",
       fmt="bind"),
    _I("specdec_serve_port", "int", "The server's (HTTP) port.", profile="port", default=8000, minimum=1,
       maximum=65535),
    _I("specdec_serve_metrics", "bool", "Serve Prometheus metrics (trtllm-serve's /prometheus/metrics with iteration "
       "stats; on releases without the speculative-decoding metrics, the collection's exporter next to the server).",
       default=True),
    _I("specdec_serve_metrics_port", "int", "Port of the collection's metrics exporter (releases without native "
       "speculative-decoding metrics), on the head, at specdec_serve_host.", default=9464, minimum=1, maximum=65535),
    _I("specdec_serve_extra_args", "list", "Arguments appended to the trtllm-serve command line; flags the plan sets "
       "(host, port, parallel sizes, the options file, the backend, the model) are refused here.", default=[],
       fmt="arg"),
    _I("specdec_serve_mpi_export", "list", "Environment variables mpirun passes on with -x (a cluster; "
       "HF_TOKEN_PATH is added).", default=["CPATH", "TRITON_PTXAS_PATH", "HF_HOME"], fmt="env_name"),
    _I("specdec_serve_validate_api", "str", "The API the endpoint validation calls (triton with the Triton "
       "frontend).", profile="api", choices=("completions", "chat", "both", "triton"),
       default_doc="completions; triton with Triton"),
    _I("specdec_serve_validate_prompt", "str", "The validation request's prompt.", profile="prompt",
       default="Explain the benefits of speculative decoding:", fmt="text"),
    _I("specdec_serve_validate_max_tokens", "int", "The validation request's max_tokens.", profile="max_tokens",
       default=64, minimum=1),
    _I("specdec_serve_validate_requests", "int", "Validation requests sent.", default=1, minimum=1, maximum=1000),
    _I("specdec_serve_allowed_clients", "list", "IPv4 or IPv6 addresses or networks admitted to the serving ports "
       "(chain DGX-SPECDEC of iptables and ip6tables, applied by the container before the server listens and kept by "
       "it after a reboot, a restart or a flush); empty: no rules, and rules of an earlier list are removed.",
       profile="allowed_clients", default=[]),
    _I("specdec_serve_liveness_timeout", "int", "Once the server answered its health check, seconds without an "
       "answer (a hang, a stopped process) after which the container ends it and Docker starts it again (checked "
       "every 10 s with a 5 s timeout, so the restart begins within this many seconds plus 15); 0: never.", default=120, minimum=0,
       maximum=3600),
    _I("specdec_serve_memory_check", "str", "What a model that cannot fit in memory does, in the pre-flight and "
       "right before the server starts.", scope=NODE, default="fail", choices=("fail", "warn", "skip")),
    _I("specdec_serve_memory_headroom_gib", "float", "Memory the server needs beyond the weights (GiB).",
       scope=NODE, default=8, minimum=0),
    _I("specdec_serve_weights_gib", "float", "The weights' size before they are downloaded (afterwards they are "
       "measured on disk).", scope=NODE, profile="weights_gib", minimum=0, nullable=True),
    _I("specdec_serve_drop_caches", "bool", "Drop the page cache right before the server starts (NVIDIA's advice "
       "for unified memory).", scope=NODE, default=True),
    _I("specdec_serve_memory_guard", "bool", "A background guard drops the page cache while MemAvailable is low, "
       "until the server is ready.", scope=NODE, default=False),
    _I("specdec_serve_memory_guard_below_gib", "float", "The guard drops the page cache below this MemAvailable "
       "(GiB).", scope=NODE, default=8, minimum=0),
    _I("specdec_serve_memory_guard_timeout", "int", "Seconds the guard runs at most.", scope=NODE, default=3600,
       minimum=1),
    _I("specdec_serve_tiktoken_encodings", "bool", "Fetch o200k_base and cl100k_base once with their SHA-256 and "
       "set TIKTOKEN_ENCODINGS_BASE (gpt-oss).", profile="tiktoken_encodings", default=False),
    _I("specdec_serve_tiktoken_base_url", "str", "An http(s) URL of the directory holding <name>.tiktoken.",
       default="https://openaipublic.blob.core.windows.net/encodings"),
    _I("specdec_serve_tiktoken_sha256", "raw", "A mapping of encoding name to its SHA-256.",
       default_doc="OpenAI's published SHA-256 of both"),
    # the role's own
    _I("specdec_serve_download", "bool", "Download the target and draft models.", scope=NODE, applied="role",
       default=True, entry_points=("main", "fetch")),
    _I("specdec_serve_hub_check", "bool", "Ask the Hugging Face hub, in the pre-flight, whether this node's token may "
       "read every repository it downloads (at its revision); false for a mirror the check cannot reach.",
       scope=NODE, applied="role", default=True),
    _I("specdec_serve_download_timeout", "int", "Seconds allowed for the downloads.", scope=NODE, applied="role",
       default=7200, minimum=1, entry_points=("main", "fetch")),
    _I("specdec_serve_download_poll", "int", "Seconds between the progress lines of running downloads (GiB done of "
       "the expected size, rate, estimate).", scope=NODE, applied="role", default=15, minimum=5, maximum=30,
       entry_points=("main", "fetch")),
    _I("specdec_serve_validate", "bool", "Validate the endpoint (entry point endpoint).", applied="role",
       default=True, entry_points=("main", "endpoint")),
    _I("specdec_serve_ready_timeout", "int", "Seconds to wait for the server's health endpoint (loading a 120B+ "
       "model takes minutes).", applied="role", default=1800, minimum=1, entry_points=("main", "endpoint")),
    _I("specdec_serve_memory_drop", "bool", "Entry point memory: also drop the page cache (main sets it right "
       "before the server starts; the pre-flight does not).", scope=NODE, applied="role", default=False,
       entry_points=("memory",)),
    # -- the container (trtllm_container) --------------------------------------------------------------------------
    _I("trtllm_container_mode", "str", "single (one Spark) or multinode (mpirun across the cluster); the profiles "
       "set it.", profile="container_mode", default="single", choices=("single", "multinode")),
    _I("trtllm_container_name", "str", "The container's name.", scope=NODE, fmt="container",
       default_doc="trtllm-specdec; trtllm-multinode on a cluster; triton-specdec with Triton"),
    _I("trtllm_container_image", "str", "The image; when set, replaces repository and tag.", fmt="image"),
    _I("trtllm_container_image_repository", "str", "The TensorRT-LLM release repository.",
       default=rel.IMAGE_REPOSITORY, fmt="image"),
    _I("trtllm_container_image_tag", "str", "The image tag; a profile may name its guide's own "
       "(spark-single-gpu-dev).", profile="image_tag", fmt="tag",
       default_doc="the release; with Triton <release>-trtllm-python-py3"),
    _I("trtllm_container_triton_repository", "str", "The repository of the Triton image (frontend triton).",
       default=rel.TRITON_REPOSITORY, fmt="image"),
    _I("trtllm_container_pull", "bool", "Pull the image when missing; with false it must be on the node.",
       scope=NODE, default=True),
    _I("trtllm_container_gpus", "str", "auto: all GPUs when Docker lists the nvidia runtime.", scope=NODE,
       default="auto", choices=("auto", "always", "never")),
    _I("trtllm_container_network_mode", "str", "The container's network.", scope=NODE, profile="network_mode",
       default="host", fmt="network"),
    _I("trtllm_container_published_ports", "list", "Published ports, with a network of the container's own.",
       scope=NODE, profile="published_ports", default=[], fmt="port_spec"),
    _I("trtllm_container_ipc_mode", "str", "The container's IPC mode.", scope=NODE, default="host", fmt="ipc"),
    _I("trtllm_container_memlock", "int", "The memlock ulimit: -1 (unlimited) or bytes > 0.", scope=NODE,
       default=-1, minimum=-1),
    _I("trtllm_container_stack", "int", "The stack ulimit (bytes).", scope=NODE, default=67108864, minimum=1),
    _I("trtllm_container_restart_policy", "str", "Docker supervises the server; no is refused.", scope=NODE,
       default="unless-stopped", choices=("always", "unless-stopped", "on-failure")),
    _I("trtllm_container_env", "env", "Environment of the container.", profile="container_env", default={}),
    _I("trtllm_container_cuda_env", "env", "CUDA environment on a cluster.",
       default={"CPATH": "/usr/local/cuda/include", "TRITON_PTXAS_PATH": "/usr/local/cuda/bin/ptxas"}),
    _I("trtllm_container_devices", "list", "Devices of the container (/dev/infiniband is added on a cluster).",
       scope=NODE, default=[], fmt="device"),
    _I("trtllm_container_hf_cache_dir", "str", "The Hugging Face cache on the node (mounted at "
       "/root/.cache/huggingface).", scope=NODE, fmt="path", default_doc="<home>/.cache/huggingface"),
    _I("trtllm_container_models_dir", "str", "The models directory on the node (mounted at /models).", scope=NODE,
       fmt="path", default_doc="<home>/models"),
    _I("trtllm_container_config_dir", "str", "The configuration directory on the node (mounted read-only at "
       "/etc/dgx-spark).", scope=NODE, fmt="path", default_doc="<home>/.dgx-spark"),
    _I("trtllm_container_install_sshd", "bool", "On a cluster, install openssh-server and iptables in the "
       "container if the image lacks them.", default=True),
    _I("trtllm_container_mpi_firewall", "bool", "Close Open MPI's pinned ports (50100-50132) to every interface but "
       "loopback and, on a cluster, the QSFP ones (one Spark's server and Triton start Open MPI too: their listeners "
       "are pinned there and bound to loopback where Open MPI allows it).", default=True),
    _I("trtllm_container_ssh_port", "int", "The containers' sshd port on a cluster.", default=2233, minimum=1,
       maximum=65535),
    _I("trtllm_container_nccl_ib_hca", "list", "RDMA devices joined into NCCL_IB_HCA on a cluster.", scope=NODE,
       default_doc="the RoCE devices of the Up QSFP netdevs (ibdev2netdev)"),
    _I("trtllm_container_hf_token_source", "str", "file (a root-only file in the configuration directory) or login "
       "(~/.cache/huggingface/token, where huggingface-cli login stores it; never removed).", scope=NODE,
       profile="hf_token_source", default="file", choices=("file", "login")),
    _I("trtllm_container_qsfp_interfaces", "list", "QSFP netdevs for UCX, NCCL and Open MPI on a cluster.",
       scope=NODE, fmt="iface", default_doc="the node's Up QSFP netdevs"),
    _I("trtllm_container_qsfp_addresses", "list", "The node's QSFP addresses (where sshd listens on a cluster).",
       scope=NODE, fmt="ip", default_doc="the node's planned QSFP addresses"),
    # the role's own
    _I("trtllm_container_hf_token", "str", "Hugging Face token for gated models; empty means none. Never logged, "
       "never in argv or the container's environment.", scope=NODE, applied="role", secret=True,
       default_doc="HF_TOKEN from the controller's environment, else the content of the file HF_TOKEN_FILE names",
       # A file, so the token is in no job environment AWX or ansible-runner stores (the AWX credential type).
       template="{{ lookup('dgx_spark.specdec.hf_token') }}", entry_points=("main", "prepare")),
    _I("trtllm_container_pull_timeout", "int", "Seconds allowed for pulling the image.", scope=NODE,
       applied="role", default=7200, minimum=1, entry_points=("main", "prepare")),
    _I("trtllm_container_log_max_size", "str", "Size at which Docker rotates the server's log.", scope=NODE,
       applied="role", default="50m", entry_points=("main", "start")),
    _I("trtllm_container_log_max_files", "int", "Rotated log files Docker keeps.", scope=NODE, applied="role",
       default=3, minimum=1, entry_points=("main", "start")),
    _I("trtllm_container_fetch_timeout", "int", "Seconds allowed for each small file the container needs (the "
       "gpt-oss tiktoken encodings).", scope=NODE, applied="role", default=60, minimum=1, entry_points=("main", "prepare")),
    # -- the QSFP link (netplan_qsfp) --------------------------------------------------------------------------------
    _I("netplan_qsfp_plan", "str", "addresses (static), link_local, or dhcp (a switch's DHCP server).",
       default="addresses", choices=net.PLANS),
    _I("netplan_qsfp_subnets", "list", "The subnets of a switch (one per netdev of the cabled port: node N gets host "
       "N) or a ring (one per twin of each cable, cables numbered by node pair: the lower node .1, the higher .2).",
       default_doc="NVIDIA's: 192.168.100.0/24 and 192.168.101.0/24 on a switch, 192.168.0.0/24 to 192.168.5.0/24 "
       "on a ring", nullable=True),
    _I("netplan_qsfp_preset", "str", "The address preset for a node of a direct pair whose netplan_qsfp_addresses "
       "is empty.",
       default="seed", choices=tuple(sorted(net.PRESETS))),
    _I("netplan_qsfp_addresses", "raw", "This node's addresses: a mapping of QSFP netdev to A.B.C.D/N; replaces "
       "the preset.", scope=NODE, default={}),
    _I("netplan_qsfp_interfaces", "list", "The QSFP netdevs considered or written.", fmt="iface",
       default=list(net.QSFP_INTERFACES)),
    _I("netplan_qsfp_mtu", "int", "MTU of the QSFP netdevs (NCCL over RoCE needs 9000 on both ends); null leaves "
       "it alone.", default=9000, minimum=576, maximum=9216, nullable=True),
    _I("netplan_qsfp_source_routing", "bool", "A routing table per QSFP netdev.", default=True),
    _I("netplan_qsfp_routing_table_base", "int", "The first routing table (one per netdev; 253-255 avoided).",
       default=101, minimum=1),
    _I("netplan_qsfp_allow_disruptive", "bool", "Allow a plan that may cut the management path.", default=False),
    _I("netplan_qsfp_management_address", "str", "The address the controller reaches the node at.", scope=NODE,
       fmt="ip", default_doc="ansible_host when it is an address, else the default route's"),
    _I("netplan_qsfp_file", "str", "The netplan file written.", default="/etc/netplan/40-cx7.yaml", fmt="path"),
    # the role's own
    _I("netplan_qsfp_apply_command", "str", "How the file is applied (the lab uses its networkd emulation).",
       scope=NODE, applied="role", default="netplan apply"),
    _I("netplan_qsfp_generate_before_apply", "bool", "Run netplan generate right before the apply command.",
       scope=NODE, applied="role", default=True),
    _I("netplan_qsfp_rollback", "bool", "Save the previous file, and restore it unless the controller still reaches "
       "the node after the apply.", scope=NODE, applied="role", default=True),
    _I("netplan_qsfp_confirm_timeout", "int", "Seconds before the node rolls back an apply that was not "
       "confirmed.", scope=NODE, applied="role", default=120, minimum=20),
    _I("netplan_qsfp_state_dir", "str", "Holds the rollback helper and the saved file (0700).", scope=NODE,
       applied="role", default="/var/lib/netplan_qsfp"),
    _I("netplan_qsfp_verify", "bool", "After an apply, fail when a planned address is missing from its netdev.",
       scope=NODE, applied="role", default=True),
    _I("netplan_qsfp_verify_retries", "int", "Reads of the addresses after an apply, 2 s apart.", scope=NODE,
       applied="role", default=10, minimum=1),
    _I("netplan_qsfp_check_links", "bool", "After netplan, check each QSFP link from both ends (MTU, a "
       "don't-fragment ping at that size, speed).", applied="role", default=True),
    # -- the hostfile (openmpi_hostfile) -----------------------------------------------------------------------------
    _I("openmpi_hostfile_address", "str", "This node's hostfile address, one of its QSFP addresses (mpirun hangs "
       "when the hostfile IPs differ from the interface IPs).", scope=NODE, fmt="ip",
       default_doc="the node's first QSFP address"),
    _I("openmpi_hostfile_slots", "int", "Slots of this node in the hostfile.", scope=NODE, default=1, minimum=1),
    _I("openmpi_hostfile_verify", "bool", "Run mpirun -np N hostname in the head container (entry point verify).",
       applied="role", default=True, entry_points=("main", "verify")),
    _I("openmpi_hostfile_verify_timeout", "int", "Seconds before the mpirun check is declared hung.",
       applied="role", default=60, minimum=1, entry_points=("main", "verify")),
    # -- the docker group (docker_group) -----------------------------------------------------------------------------
    _I("docker_group_users", "list", "Users to add to the group; empty means the login user.", scope=NODE,
       applied="role", default=[]),
    _I("docker_group_name", "str", "The group that owns the Docker socket.", scope=NODE, applied="role",
       default="docker"),
    _I("docker_group_verify", "bool", "After a user is added, run docker ps as that user.", scope=NODE,
       applied="role", default=True),
    # -- specdec_monitoring (the monitoring host) --------------------------------------------------------------------
    _I("specdec_monitoring_targets", "list", "Prometheus file_sd entries to scrape, each {targets, labels}; "
       "playbooks/monitoring.yml sets them from the clusters' plans (dgx_spark.specdec.scrape_targets).", scope=NODE,
       applied="role", default=[], elements="dict"),
    _I("specdec_monitoring_install", "bool", "Install Debian's prometheus package with apt (false - Prometheus is "
       "installed already, from its package; the role writes its configuration).", scope=NODE, applied="role",
       default=True),
    _I("specdec_monitoring_port", "int", "The port Prometheus listens on.", scope=NODE, applied="role", default=9090,
       minimum=1, maximum=65535),
    _I("specdec_monitoring_scrape_interval", "str", "How often every cluster is scraped (also the rules' evaluation "
       "interval).", scope=NODE, applied="role", default="15s", fmt="duration"),
    _I("specdec_monitoring_retention", "str", "How long Prometheus keeps samples (--storage.tsdb.retention.time).",
       scope=NODE, applied="role", default="15d", fmt="duration"),
    _I("specdec_monitoring_config_dir", "str", "Prometheus' configuration directory (prometheus.yml is written there, "
       "the rules and targets in dgx_spark_specdec/).", scope=NODE, applied="role",
       default="/etc/prometheus", fmt="path"),
    _I("specdec_monitoring_grafana_dir", "str", "Where the Grafana dashboard and its provisioning files go "
       "(its provisioning/ and dashboards/); null - not written.", scope=NODE,
       applied="role", nullable=True, fmt="path"),
    # -- playbooks ---------------------------------------------------------------------------------------------------
    _I("specdec_teardown_remove_models", "bool", "playbooks/teardown.yml also removes the models the collection "
       "downloaded (what the node's record lists as its downloads; never a model it did not download).", scope=NODE,
       applied="playbook", default=False),
    _I("specdec_lock_max_age", "int", "Seconds after which a run's lock on a node is taken over although its run may "
       "still be going (the longest run: downloads of up to two hours, then the load); a lock whose ansible-playbook "
       "is gone on the same controller is taken over at once.", scope=NODE, applied="playbook", default=21600,
       minimum=60),
    _I("specdec_tune_candidates", "list", "max_draft_len values the tuner considers.", applied="playbook",
       default=[1, 2, 3, 4, 8]),
    _I("specdec_tune_mode", "str", "tune (predict, then confirm the best) or sweep (measure every candidate).",
       applied="playbook", default="tune", choices=("tune", "sweep")),
    _I("specdec_tune_confirm", "int", "Predictions the tuner confirms by measurement.", applied="playbook",
       default=2, minimum=0),
    _I("specdec_tune_apply", "bool", "Leave the chosen max_draft_len served (else the profile's own).",
       applied="playbook", default=False),
    _I("specdec_tune_force", "bool", "Measure again although an earlier result has the same inputs.",
       applied="playbook", default=False),
    _I("specdec_tune_max_tokens", "int", "max_tokens of each measured request.", applied="playbook", default=256,
       minimum=1),
    _I("specdec_tune_concurrency", "int", "Concurrent requests while measuring.", applied="playbook", default=1,
       minimum=1),
    _I("specdec_tune_results_dir", "str", "Where tune.json, report.md, measurements.json and the plots go on the "
       "controller (under AWX, the execution environment: a persistent, mounted path, or they go with the job).",
       applied="playbook", default_doc="{{ playbook_dir }}/../tune-results/<host> (the project's tune-results/)"),
    _I("specdec_tune_plots", "bool", "Draw the tuner's plots (matplotlib on the controller or in the EE); true and "
       "matplotlib missing stops the tuner before its first restart.", applied="playbook", default=True),
    _I("fabric_check_report", "str", "playbooks/fabric_check.yml: where the JSON report goes on the controller.",
       applied="playbook", default_doc="./fabric-report.json (the directory ansible-playbook started in)"),
    _I("fabric_check_ping_count", "int", "playbooks/fabric_check.yml: don't-fragment pings per link.",
       applied="playbook", default=2, minimum=1),
    _I("fabric_check_ping_timeout", "int", "playbooks/fabric_check.yml: seconds each ping waits for its reply.",
       applied="playbook", default=2, minimum=1),
    _I("fabric_check_bandwidth", "bool", "playbooks/fabric_check.yml: measure each link with perftest's ib_write_bw "
       "where both ends have it and an RDMA device.", applied="playbook", default=False),
    _I("fabric_check_bandwidth_seconds", "int", "playbooks/fabric_check.yml: seconds of each measurement (-D).",
       applied="playbook", default=5, minimum=1),
    _I("fabric_check_bandwidth_timeout", "int", "playbooks/fabric_check.yml: seconds after which each ib_write_bw end "
       "is stopped.", applied="playbook", default=60, minimum=5),
    _I("fabric_check_bandwidth_port", "int", "playbooks/fabric_check.yml: the first TCP port of ib_write_bw (one per "
       "measured link).", applied="playbook", default=18515, minimum=1024, maximum=65000),
    _I("specdec_bench_prompts", "list", "The prompts the tuner measures with (playbooks/bench/prompts.yml).",
       applied="playbook", default_doc="playbooks/bench/prompts.yml"),
    # -- deprecated: the cluster defines the nodes, the plan the rest ------------------------------------------------
    _I("trtllm_container_cluster_hosts", "list", "Deprecated: the cluster defines the nodes, head first.",
       scope=NODE, deprecated="nodes"),
    _I("openmpi_hostfile_hosts", "list", "Deprecated: the cluster defines the nodes, head first.",
       scope=NODE, deprecated="nodes"),
    _I("specdec_serve_cluster_hosts", "list", "Deprecated: the cluster defines the nodes, head first.",
       scope=NODE, deprecated="nodes"),
    _I("netplan_qsfp_nodes", "list", "Deprecated: the cluster defines the nodes, head first.", scope=NODE, deprecated="nodes"),
    _I("netplan_qsfp_group", "raw", "Deprecated and ignored: the plan derives it.", scope=NODE, deprecated="ignored"),
    _I("specdec_serve_multinode", "raw", "Deprecated and ignored: the plan derives it.", scope=NODE, deprecated="ignored"),
    _I("specdec_serve_container", "raw", "Deprecated and ignored: the plan derives it.", scope=NODE, deprecated="ignored"),
    _I("openmpi_hostfile_container", "raw", "Deprecated and ignored: the plan derives it.", scope=NODE, deprecated="ignored"),
    _I("openmpi_hostfile_interfaces", "raw", "Deprecated and ignored: the plan derives it.", scope=NODE, deprecated="ignored"),
    _I("openmpi_hostfile_dir", "raw", "Deprecated and ignored: the plan derives it.", scope=NODE, deprecated="ignored"),
)

CATALOGUE = {i.name: i for i in INPUTS}
ALIASES = {alias: i.name for i in INPUTS for alias in i.aliases}
PROFILE_KEYS = {i.profile: i.name for i in INPUTS if i.profile}
# Profile keys that are no variable: the releases NVIDIA has run the profile's playbook on since.
PROFILE_ONLY = ("releases",)


def lookup(name):
    try:
        return CATALOGUE[name]
    except KeyError:
        raise KeyError("%s is not in the input catalogue (plugins/module_utils/_inputs.py)" % name) from None


def show(value):
    text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= 100 else text[:97] + "..."


# ---------------------------------------------------------------------------
# Checks across a cluster's variables, before anything is read
# ---------------------------------------------------------------------------

def known(name):
    return name in CATALOGUE or name in ALIASES or name in PRODUCED


def misspelt(names):
    """[(name, closest known variable or None)] for every prefixed name the catalogue does not know."""
    out = []
    candidates = sorted(CATALOGUE) + sorted(ALIASES)
    for name in sorted(set(names)):
        if not name.startswith(PREFIXES) or known(name):
            continue
        close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
        out.append((name, close[0] if close else None))
    return out


def misspelling_message(host, name, suggestion, strict=False):
    """The warning about a variable the catalogue does not know, or (``strict``) the error."""
    return "%s on %s is not a variable of dgx_spark.specdec%s%s" % (
        name, host, " (did you mean %s?)" % suggestion if suggestion else "",
        " (specdec_strict_inputs is true)" if strict else
        "; it is ignored (specdec_strict_inputs: true makes this an error)")


def canonical(host, variables):
    """``variables`` with deprecated aliases renamed -> (variables, warnings, errors)."""
    out = dict(variables)
    warnings = []
    errors = []
    for alias, name in ALIASES.items():
        if alias not in variables:
            continue
        removed = CATALOGUE[name].aliases[alias]
        if name in variables and variables[name] != variables[alias]:
            errors.append("%s on %s: both it and its deprecated alias %s are set, to %s and %s; remove %s"
                          % (name, host, alias, show(variables[name]), show(variables[alias]), alias))
            continue
        warnings.append("%s on %s is deprecated and will be removed in %s: rename it %s" % (alias, host, removed, name))
        out[name] = out.pop(alias)
    return out, warnings, errors


def scope_conflicts(cluster, nodes, node_vars):
    """One message per cluster-scope variable whose value differs between the nodes of ``cluster``."""
    if len(nodes) < 2:
        return []
    errors = []
    for item in INPUTS:
        if item.scope != CLUSTER or item.secret:
            continue
        values = {}
        for host in nodes:
            variables = node_vars[host]
            key = show(variables[item.name]) if item.name in variables else None
            values.setdefault(key, []).append(host)
        if len(values) > 1:
            errors.append("%s of cluster %s differs between its nodes (%s); it applies to the whole cluster: set it "
                          "once, on the cluster's group" % (item.name, cluster, "; ".join(
                              "%s on %s" % (value if value is not None else "not set", ", ".join(hosts))
                              for value, hosts in values.items())))
    return errors


def profile_errors(profile):
    """The profile's keys that name no variable (a profile is data the plan reads through this table)."""
    return ["specdec_profile: %s is not a profile key (known: %s)" % (key, ", ".join(sorted(PROFILE_KEYS)))
            for key in sorted(profile or {}) if key not in PROFILE_KEYS and key not in PROFILE_ONLY]


# ---------------------------------------------------------------------------
# Reading: the inventory's value, else the profile's, else the catalogue's default
# ---------------------------------------------------------------------------

_TRUE = ("true", "yes", "on", "1", "y", "t")
_FALSE = ("false", "no", "off", "0", "n", "f")


def as_int(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.match(r"^-?[0-9]+$", value.strip()):
        return int(value.strip())
    return None


def _as_float(value):
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def role_errors(role, where, variables):
    """The messages for the inputs of ``role`` that the role reads itself (applied: role) and ``variables`` set
    wrong: its first task names them before anything changes, as the plan does for the plan's inputs."""
    errors = []
    reader = Reader(where, variables, {}, errors)
    for item in INPUTS:
        if item.role == role and item.applied == "role" and item.name in variables:
            reader.get(item.name)
    return errors


class Reader:
    """Reads one node's variables (else the profile's value, else the default), checking each value.

    ``where`` names the node (or the cluster's head) in messages. Values templated by Ansible often arrive as
    strings: "4" is read as 4 and "true" as True where an int or a bool is wanted. Every failed check adds one
    message to ``errors`` and reads as None (or the kind's empty value).
    """

    def __init__(self, where, variables, profile, errors):
        self.where = where
        self.vars = variables
        self.profile = profile or {}
        self.errors = errors

    def raw(self, name, default=None):
        item = lookup(name)
        if name in self.vars and self.vars[name] is not None and self.vars[name] != "":
            return self.vars[name]
        if item.profile is not None and self.profile.get(item.profile) is not None:
            return self.profile[item.profile]
        return copy.deepcopy(item.default) if default is None else default

    def unset(self, name):
        """The inventory sets ``name`` to null: for an optional flag, leave it out whatever the profile says."""
        return name in self.vars and self.vars[name] is None

    def fail(self, name, value, accepted):
        self.errors.append("%s on %s: %s is not %s" % (name, self.where, show(value), accepted))

    def missing(self, name, accepted):
        self.errors.append("%s on %s: not set (%s)" % (name, self.where, accepted))

    def get(self, name, default=None, required=True, choices=None):
        """The checked value of ``name``.

        ``default`` replaces a default the plan computes (the catalogue's default_doc); ``required=False`` reads an
        unset string as None without an error; ``choices`` narrows the catalogue's choices in this context.
        """
        item = lookup(name)
        if choices is not None:
            item = copy.copy(item)
            item.choices = tuple(choices)
        value = self.raw(name, default)
        if item.nullable and (value is None or self.unset(name)):
            return None
        reader = getattr(self, "_" + item.kind)
        return reader(item, value, required)

    # one method per kind
    def _str(self, item, value, required):
        if value is None or value == "":
            if not required:
                return None
            if item.choices:
                self.missing(item.name, "accepted: " + ", ".join(item.choices))
            else:
                self.missing(item.name, "needed: " + item.accepted())
            return None
        if isinstance(value, (bool, list, dict)):
            self.fail(item.name, value, item.accepted())
            return None
        value = str(value)
        if item.choices and value not in item.choices:
            self.fail(item.name, value, item.accepted())
            return None
        if item.fmt and not FORMATS[item.fmt][0](value):
            self.fail(item.name, value, FORMATS[item.fmt][1])
            return None
        return value

    def _int(self, item, value, required):
        number = as_int(value)
        if number is None or (item.minimum is not None and number < item.minimum) or \
                (item.maximum is not None and number > item.maximum):
            self.fail(item.name, value, item.accepted())
            return None
        return number

    def _float(self, item, value, required):
        number = _as_float(value)
        if number is None or number < (item.minimum or 0):
            self.fail(item.name, value, item.accepted())
            return None
        return number

    def _fraction(self, item, value, required):
        number = _as_float(value)
        if number is None or not 0 < number <= 1:
            self.fail(item.name, value, item.accepted())
            return None
        return number

    def _bool(self, item, value, required):
        if isinstance(value, bool):
            return value
        if str(value).lower() in _TRUE:
            return True
        if str(value).lower() in _FALSE:
            return False
        self.fail(item.name, value, item.accepted())
        return item.default

    def _list(self, item, value, required):
        value = [] if value is None else value
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            self.fail(item.name, value, item.accepted())
            return []
        if item.elements == "dict":
            bad = [element for element in value if not isinstance(element, dict)]
            for element in bad:
                self.fail("%s item" % item.name, element, "a mapping")
            return [] if bad else list(value)
        out = []
        for element in value:
            if isinstance(element, (dict, list, bool)) or element is None or \
                    (item.fmt and not FORMATS[item.fmt][0](str(element))):
                self.fail("%s item" % item.name, element, FORMATS[item.fmt][1] if item.fmt else "a string")
                continue
            out.append(str(element))
        return out

    def _dict(self, item, value, required):
        value = {} if value is None else value
        if not isinstance(value, dict):
            self.fail(item.name, value, item.accepted())
            return {}
        return value

    def _env(self, item, value, required):
        out = {}
        for key, element in self._dict(item, value, required).items():
            if not FORMATS["env_name"][0](str(key)):
                self.fail("%s key" % item.name, key, FORMATS["env_name"][1])
            elif isinstance(element, (dict, list)) or element is None or "\0" in str(element) or "\n" in str(element):
                self.fail("%s.%s" % (item.name, key), element, "a single-line string")
            else:
                out[str(key)] = ("true" if element else "false") if isinstance(element, bool) else str(element)
        return out

    def _raw(self, item, value, required):
        return value


# ---------------------------------------------------------------------------
# The plan's parts: what each role receives as its *_spec parameter
# ---------------------------------------------------------------------------

# (key, type, elements, description); the roles' argument specs are generated from these, and the plan's unit tests
# check that each part has exactly these keys.
PARTS = {
    "netplan_qsfp": ("netplan_qsfp_spec", "This node's specdec_plan.netplan (the plan of its QSFP link).", (
        ("file", "str", None, "The netplan file."),
        ("content", "str", None, "The netplan document."),
        ("up_to_date", "bool", None, "The node's file is already this one (content, 0600 root:root)."),
        ("check_links", "bool", None, "Ping both ends after netplan (when it applied something, or the run is about "
                                      "the link only)."),
        ("plan", "str", None, "addresses, link_local or dhcp."),
        ("topology", "str", None, "How the cluster is cabled - direct, switch or ring."),
        ("sysctl", "dict", None, "On a switch, the QSFP netdevs' ARP settings - file, content, settings (name to "
                                 "value) and up_to_date; null elsewhere."),
        ("up", "list", "str", "The Up QSFP netdevs."),
        ("entries", "list", "dict", "The planned addresses - iface, cidr."),
        ("addresses", "list", "str", "This node's QSFP addresses."),
        ("missing", "list", "str", "Planned addresses not on their netdev now."),
        ("mtu", "int", None, "The planned MTU (null leaves it alone)."),
        ("links", "list", "dict", "Each link of this node to another (every other Spark on a switch, the neighbours "
                                  "in a ring) - iface, address, peer, peer_address, mtu."),
    )),
    "trtllm_container": ("trtllm_container_spec", "This node's specdec_plan.container (its TensorRT-LLM container).", (
        ("name", "str", None, "The container's name."),
        ("image", "str", None, "The image reference."),
        ("pull", "bool", None, "Pull the image when it is missing."),
        ("pull_needed", "bool", None, "The image is missing and pulled (in the background, with progress lines)."),
        ("pull_log", "str", None, "Where docker pull's output goes while it pulls (read for the progress lines)."),
        ("login_user", "str", None, "The Spark's login user."),
        ("dirs", "list", "dict", "Host directories to create - path, owner, mode."),
        ("config_dir", "str", None, "The configuration directory (mounted read-only at /etc/dgx-spark)."),
        ("token_file", "str", None, "Where the Hugging Face token is written."),
        ("token_owner", "str", None, "The token file's owner."),
        ("token_keep", "bool", None, "The token file is the user's own (huggingface-cli login): never removed."),
        ("fetch", "list", "dict", "Files fetched once with their checksum - url, dest, checksum."),
        ("firewall", "dict", None, "The firewall spec the entrypoint applies and keeps (the endpoint's allow-list, "
                                   "Open MPI's ports) - enabled, clients, ports, bridge, mpi, file, active, and "
                                   "changes (rules of ours to remove)."),
        ("image_report", "str", None, "Which image the node runs (ID, digest, release)."),
        ("files", "list", "dict", "Files to write - path, mode, content."),
        ("programs", "list", "dict", "The collection's programs the containers run, written from its module_utils - "
                                     "path, source, sha256, mode."),
        ("no_restart", "list", "str", "Files whose change needs no restart of a running server (the token, the "
                                      "exporter's program, the firewall spec)."),
        ("record", "str", None, "The node's record of what the collection created (the teardown removes that)."),
        ("replaced", "list", "str", "The collection's other containers on this node, removed (one server per node)."),
        ("ssh", "dict", None, "SSH trust on a cluster (null on one Spark) - dir, port, addresses, nodes, host_key, "
                              "client_key, key_pairs."),
        ("docker", "dict", None, "The settings of community.docker.docker_container, the command included."),
        ("current", "bool", None, "The container already runs this image with exactly these settings."),
        ("exporter", "dict", None, "The metrics exporter's container on the head (null where trtllm-serve serves the "
                                   "speculative-decoding metrics itself) - the docker_container settings, current, file."),
        ("exporter_absent", "list", "str", "Metrics exporter containers of this node to remove."),
    )),
    "openmpi_hostfile": ("openmpi_hostfile_spec", "This node's specdec_plan.hostfile (the cluster's hostfile).", (
        ("path", "str", None, "Where the hostfile is written."),
        ("content", "str", None, "One line per node, head first - ADDRESS slots=N."),
        ("container", "str", None, "The head's container (mpirun runs there)."),
        ("hostnames", "list", "str", "Every node's host name, rank order."),
        ("ssh_port", "int", None, "The containers' sshd port."),
        ("record", "str", None, "The node's record of what the collection created."),
    )),
    "specdec_serve": ("specdec_serve_spec", "This node's specdec_plan.serve (what it serves).", (
        ("container", "str", None, "The server's container."),
        ("frontend", "str", None, "trtllm-serve or triton."),
        ("downloads", "list", "dict", "What hf download fetches - repo, revision, field, local_dir, host_dir, dir, "
         "directory, argv, marker, marker_file, current, fetch_container, watch (what its progress lines read)."),
        ("fetcher", "dict", None, "The container hf download runs in (name, image, env, network_mode, volumes, labels), "
                                  "apart from the server's."),
        ("approval", "dict", None, "The file the server waits for, written after the memory check - path, content, "
                                   "mode."),
        ("serving_before", "bool", None, "A server of this node was running when the run began."),
        ("record", "str", None, "The node's record of what the collection created."),
        ("hub_check", "list", "dict", "What the pre-flight asks the Hugging Face hub about - repo, revision, field, "
         "marker."),
        ("options_file", "dict", None, "The options file (Triton - model.yaml) - path, content."),
        ("template", "dict", None, "Triton - the model repository's template (marker, argv); else null."),
        ("argv", "list", "str", "The server's command line (on the head)."),
        ("memory", "dict", None, "The dgx_spark.specdec.spark_memory parameters."),
        ("endpoint", "dict", None, "What the head validates - url, port, model, api, prompt, max_tokens, requests, "
                                   "metrics_url, tokenizer, prometheus_url, ready (what the loading's progress lines read); null on a worker."),
        ("current", "bool", None, "The container already runs this image with exactly these settings."),
    )),
}
