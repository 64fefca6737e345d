# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The plan of one cluster of DGX Sparks, computed once and validated before anything changes.

A cluster is the set of Sparks that serve one endpoint. From the inventory (the variables users set,
``specdec_serve_*``, ``trtllm_container_*``, ``netplan_qsfp_*``, ``openmpi_hostfile_*``), the playbook's
profile (the NVIDIA playbook it reproduces) and what ``spark_facts`` read on each node, ``plan_cluster`` computes
everything the roles apply: the QSFP addresses and netplan document per node, the hostfile, the
container (name, image, mounts, environment, command), the options file and the trtllm-serve/mpirun
command line. Every value that reaches a command, a path or a file name is checked for its format;
each error names the field, the host, the value and what is accepted.

The rank order (head first) is decided here only (``cluster_members``): netplan pairing, the
hostfile, SSH trust, mpirun and the server all take it from the plan.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import posixpath
import re

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _firewall as fw
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _preflight as pre
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _spark_net as net
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _trtllm_options as trt

CONFIG_MOUNT = "/etc/dgx-spark"
MODELS_MOUNT = "/models"
HF_MOUNT = "/root/.cache/huggingface"
HF_MOUNT_HOST_TOKEN = "{0}/token"  # where `huggingface-cli login` writes the token, in the host's HF cache
OPTIONS_FILE = "extra-llm-api-config.yml"
HOSTFILE = "openmpi-hostfile"
ENTRYPOINT = CONFIG_MOUNT + "/entrypoint.sh"
MARKER = ".dgx-spark-complete"
DEFAULT_CLUSTER = "sparks"
DEFAULT_REPOSITORY = "nvcr.io/nvidia/tensorrt-llm/release"
DEFAULT_TRITON_REPOSITORY = "nvcr.io/nvidia/tritonserver"
# Triton's LLM API model repository: copied from the image's template into this host directory (under the
# node's config directory) the first time, and mounted where the Triton tutorial keeps it.
TRITON_REPO_DIR = "llmapi_repo"
TRITON_REPO_MOUNT = "/opt/tritonserver/llmapi_repo"
FRONTENDS = ("trtllm-serve", "triton")
DEFAULT_CUDA_ENV = {"CPATH": "/usr/local/cuda/include", "TRITON_PTXAS_PATH": "/usr/local/cuda/bin/ptxas"}
DEFAULT_MPI_EXPORT = ["CPATH", "TRITON_PTXAS_PATH", "HF_HOME"]
# NCCL over RoCE reaches full bandwidth over one QSFP cable only with MTU 9000 on both ends.
DEFAULT_QSFP_MTU = 9000
# Open MPI 4.1 binds its out-of-band and TCP BTL listeners to the wildcard address whatever
# *_if_include says (open-mpi/ompi#12668): pin them to these ports, which the containers' entrypoint
# closes on every interface but loopback and the QSFP ones.
MPI_OOB_PORT = 50100
MPI_BTL_PORTS = (50101, 32)
# Labels and environment an image may carry its TensorRT-LLM release in (the lab's stand-in sets both).
IMAGE_VERSION_LABELS = ("com.nvidia.tensorrt-llm.version", "org.opencontainers.image.version")
IMAGE_VERSION_ENV = ("TRTLLM_VERSION", "TRT_LLM_VERSION", "TENSORRT_LLM_VERSION")

# Variables that used to name the nodes or the other roles' results. The cluster defines them now.
DEPRECATED_NODE_LISTS = ("trtllm_container_cluster_hosts", "openmpi_hostfile_hosts", "specdec_serve_cluster_hosts",
                         "netplan_qsfp_nodes")
DEPRECATED_IGNORED = ("netplan_qsfp_group", "specdec_serve_multinode", "specdec_serve_container",
                      "openmpi_hostfile_container", "openmpi_hostfile_interfaces", "openmpi_hostfile_dir")


class PlanError(ValueError):
    """The inputs do not make a valid plan; ``errors`` has one message per failed rule."""

    def __init__(self, cluster, errors):
        self.cluster = cluster
        self.errors = list(errors)
        super().__init__("cluster %s: %d problem(s) found before anything changed:\n- %s"
                         % (cluster, len(self.errors), "\n- ".join(self.errors)))


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
_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
_PORT_SPEC = re.compile(r"^(?:(?:[0-9.]+|\[[0-9A-Fa-f:]+\]):)?(?:[0-9]{1,5}(?:-[0-9]{1,5})?:)?[0-9]{1,5}(?:-[0-9]{1,5})?(?:/(?:tcp|udp|sctp))?$")
_DEVICE = re.compile(r"^/dev/[A-Za-z0-9._/-]+(?::/dev/[A-Za-z0-9._/-]+)?(?::[rwm]{1,3})?$")
_NETWORK = re.compile(r"^(?:host|bridge|none|container:[A-Za-z0-9][A-Za-z0-9_.-]*|[A-Za-z0-9][A-Za-z0-9_.-]*)$")
_IPC = re.compile(r"^(?:host|private|shareable|none|container:[A-Za-z0-9][A-Za-z0-9_.-]*)$")


def _is_path(value):
    if not _PATH.match(value) or "//" in value:
        return False
    return not any(part in (".", "..") for part in value.split("/"))


def _is_ip(value):
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        return False


FORMATS = {
    "hf_repo": (lambda v: bool(_HF_REPO.match(v)) and "--" not in v and ".." not in v,
                "a Hugging Face model id (owner/name: letters, digits, '-', '_', '.', at most 96 each, "
                "no '--' or '..')"),
    "model": (lambda v: (bool(_HF_REPO.match(v)) and "--" not in v and ".." not in v) or _is_path(v),
              "a Hugging Face model id (owner/name) or an absolute path inside the container"),
    "path": (_is_path, "an absolute path of letters, digits and ._@+=,- (no '.' or '..' parts, no spaces)"),
    "container": (lambda v: bool(_CONTAINER.match(v)), "a Docker container name ([A-Za-z0-9][A-Za-z0-9_.-]*)"),
    "image": (lambda v: bool(_IMAGE.match(v)), "an image reference [registry/]repository[:tag][@sha256:<64 hex>]"),
    "tag": (lambda v: bool(_TAG.match(v)), "an image tag ([A-Za-z0-9_][A-Za-z0-9_.-]*, at most 128)"),
    "iface": (lambda v: bool(_IFACE.match(v)), "a network interface name (at most 15 of A-Za-z0-9_.:-)"),
    "env_name": (lambda v: bool(_ENV_NAME.match(v)), "an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"),
    "user": (lambda v: bool(_USER.match(v)), "a login name ([a-z_][a-z0-9_-]*)"),
    "bind": (lambda v: _is_ip(v) or (bool(_HOSTNAME.match(v)) and not v.replace(".", "").isdigit()),
             "an IP address or a host name to listen on"),
    "ip": (_is_ip, "an IP address"),
    "port_spec": (lambda v: bool(_PORT_SPEC.match(v)), "a published port [IP:][HOST_PORT:]CONTAINER_PORT[/tcp|udp]"),
    "device": (lambda v: bool(_DEVICE.match(v)), "a device /dev/X[:/dev/Y][:rwm]"),
    "network": (lambda v: bool(_NETWORK.match(v)), "host, bridge, none, container:NAME or a network name"),
    "ipc": (lambda v: bool(_IPC.match(v)), "host, private, shareable, none or container:NAME"),
    "arg": (lambda v: "\n" not in v and "\0" not in v and v != "", "a non-empty string without newlines"),
    "text": (lambda v: "\0" not in v, "a string without NUL characters"),
}


def _show(value):
    text = json.dumps(value, default=str)
    return text if len(text) <= 100 else text[:97] + "..."


_TRUE = ("true", "yes", "on", "1", "y", "t")
_FALSE = ("false", "no", "off", "0", "n", "f")


class _Reader:
    """Reads one node's variables (else the profile's value, else a default), checking each value.

    Values templated by Ansible often arrive as strings: "4" is read as 4 and "true" as True where
    an int or a bool is wanted. Every failed check adds one message to ``errors``.
    """

    def __init__(self, where, variables, profile, errors):
        self.where = where
        self.vars = variables
        self.profile = profile or {}
        self.errors = errors

    def raw(self, name, profile_key=None, default=None):
        if name in self.vars and self.vars[name] is not None and self.vars[name] != "":
            return self.vars[name]
        if profile_key is not None and self.profile.get(profile_key) is not None:
            return self.profile[profile_key]
        return default

    def fail(self, name, value, accepted):
        self.errors.append("%s on %s: %s is not %s" % (name, self.where, _show(value), accepted))

    def string(self, name, profile_key=None, default=None, fmt=None, required=True):
        value = self.raw(name, profile_key, default)
        if value is None or value == "":
            if required:
                self.errors.append("%s on %s: not set (needed: %s)" % (
                    name, self.where, FORMATS[fmt][1] if fmt else "a string"))
            return None
        if isinstance(value, (bool, list, dict)):
            self.fail(name, value, FORMATS[fmt][1] if fmt else "a string")
            return None
        value = str(value)
        if fmt and not FORMATS[fmt][0](value):
            self.fail(name, value, FORMATS[fmt][1])
            return None
        return value

    def choice(self, name, profile_key, default, choices):
        value = self.raw(name, profile_key, default)
        if value is None:
            self.errors.append("%s on %s: not set (accepted: %s)" % (name, self.where, ", ".join(choices)))
            return None
        if str(value) not in choices:
            self.fail(name, value, "one of " + ", ".join(choices))
            return None
        return str(value)

    def unset(self, name):
        """The inventory sets ``name`` to null: for an optional flag, leave it out whatever the profile says."""
        return name in self.vars and self.vars[name] is None

    def integer(self, name, profile_key=None, default=None, minimum=None, maximum=None, nullable=False):
        value = self.raw(name, profile_key, default)
        if nullable and (value is None or self.unset(name)):
            return None
        number = _as_int(value)
        accepted = "an integer" + _range(minimum, maximum)
        if number is None or (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
            self.fail(name, value, accepted + (" or null" if nullable else ""))
            return None
        return number

    def fraction(self, name, profile_key=None):
        value = self.raw(name, profile_key, None)
        if value is None or self.unset(name):
            return None
        try:
            number = float(value) if not isinstance(value, bool) else None
        except (TypeError, ValueError):
            number = None
        if number is None or not 0 < number <= 1:
            self.fail(name, value, "a number in (0, 1] or null")
            return None
        return number

    def number(self, name, profile_key=None, default=None, minimum=0, nullable=False):
        value = self.raw(name, profile_key, default)
        if nullable and (value is None or self.unset(name)):
            return None
        try:
            number = float(value) if not isinstance(value, bool) else None
        except (TypeError, ValueError):
            number = None
        if number is None or number < minimum:
            self.fail(name, value, "a number >= %s%s" % (minimum, " or null" if nullable else ""))
            return None
        return number

    def boolean(self, name, profile_key=None, default=False):
        value = self.raw(name, profile_key, default)
        if isinstance(value, bool):
            return value
        if str(value).lower() in _TRUE:
            return True
        if str(value).lower() in _FALSE:
            return False
        self.fail(name, value, "a boolean (true or false)")
        return default

    def strings(self, name, profile_key=None, default=None, fmt=None):
        value = self.raw(name, profile_key, default if default is not None else [])
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            self.fail(name, value, "a list of " + (FORMATS[fmt][1] if fmt else "strings"))
            return []
        out = []
        for item in value:
            if isinstance(item, (dict, list, bool)) or item is None or (fmt and not FORMATS[fmt][0](str(item))):
                self.fail("%s item" % name, item, FORMATS[fmt][1] if fmt else "a string")
                continue
            out.append(str(item))
        return out

    def mapping(self, name, profile_key=None, default=None):
        value = self.raw(name, profile_key, default if default is not None else {})
        if not isinstance(value, dict):
            self.fail(name, value, "a mapping")
            return {}
        return value

    def env(self, name, profile_key=None, default=None):
        out = {}
        for key, value in self.mapping(name, profile_key, default).items():
            if not FORMATS["env_name"][0](str(key)):
                self.fail("%s key" % name, key, FORMATS["env_name"][1])
            elif isinstance(value, (dict, list)) or value is None or "\0" in str(value) or "\n" in str(value):
                self.fail("%s.%s" % (name, key), value, "a single-line string")
            else:
                out[str(key)] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        return out


def _as_int(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.match(r"^-?[0-9]+$", value.strip()):
        return int(value.strip())
    return None


def _range(minimum, maximum):
    if minimum is not None and maximum is not None:
        return " from %d to %d" % (minimum, maximum)
    if minimum is not None:
        return " >= %d" % minimum
    return ""


def sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------
# Clusters: which Sparks serve one endpoint, head first
# ---------------------------------------------------------------------------

def cluster_members(host, candidates, host_vars, groups, single=False):
    """(cluster name, nodes in rank order) for ``host``; raises PlanError when the inventory is ambiguous.

    ``candidates`` are the inventory's Sparks in inventory order (group ``sparks``, else the play's hosts);
    ``host_vars`` maps each to its variables. A host's cluster is ``specdec_cluster`` (default "sparks");
    the head is ``specdec_cluster_head`` (set once, usually on the cluster's group), else the cluster's one
    host in group ``spark_head``, else the only member. The other members follow in inventory order.
    With ``single`` (a one-Spark profile) every host serves alone.
    """
    name = str(host_vars.get(host, {}).get("specdec_cluster") or DEFAULT_CLUSTER)
    members = [h for h in candidates if str(host_vars.get(h, {}).get("specdec_cluster") or DEFAULT_CLUSTER) == name]
    if host not in members:
        members.append(host)
    # A fleet names each cluster's profile (specdec_profile_name): one cluster, one profile.
    profiles = {}
    for member in members:
        profiles.setdefault(str(host_vars.get(member, {}).get("specdec_profile_name") or ""), []).append(member)
    if len(profiles) > 1 and host_vars.get(host, {}).get("specdec_cluster"):
        raise PlanError(name, ["specdec_profile_name of cluster %s: its nodes name different profiles (%s); a cluster "
                               "serves one profile: set it once, on the cluster's group" % (name, "; ".join(
                                   "%s on %s" % (_show(p) if p else "none", ", ".join(hosts))
                                   for p, hosts in sorted(profiles.items())))])
    if single:
        return str(host_vars.get(host, {}).get("specdec_cluster") or host), [host]
    errors = []
    named = sorted({str(host_vars[h]["specdec_cluster_head"]) for h in members
                    if host_vars.get(h, {}).get("specdec_cluster_head")})
    if len(named) > 1:
        errors.append("specdec_cluster_head of cluster %s: the members name different heads (%s); set it once, on "
                      "the cluster's group" % (name, ", ".join(named)))
    elif named:
        head = named[0]
        if head not in members:
            errors.append("specdec_cluster_head of cluster %s: %s is not a member (members: %s)"
                          % (name, _show(head), ", ".join(members)))
    else:
        heads = [h for h in members if h in groups.get("spark_head", [])]
        if len(heads) == 1:
            head = heads[0]
        elif len(members) == 1:
            head = members[0]
        else:
            errors.append("cluster %s (%s) has %s: set specdec_cluster_head on the cluster's group, or put exactly "
                          "one of its hosts in group spark_head" % (
                              name, ", ".join(members),
                              "several hosts in spark_head (%s)" % ", ".join(heads) if heads else "no head"))
    if errors:
        raise PlanError(name, errors)
    return name, [head] + [h for h in members if h != head]


# ---------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------

def _deprecations(nodes, node_vars, errors, warnings):
    for host in nodes:
        variables = node_vars[host]
        for name in DEPRECATED_NODE_LISTS:
            if variables.get(name) in (None, "", []):
                continue
            given = [str(h) for h in variables[name]] if isinstance(variables[name], list) else variables[name]
            if given != nodes:
                errors.append("%s on %s: %s differs from the cluster's nodes, head first (%s); remove it: the "
                              "cluster (specdec_cluster, specdec_cluster_head or group spark_head) defines the nodes"
                              % (name, host, _show(variables[name]), ", ".join(nodes)))
            else:
                warnings.append("%s is deprecated (set on %s): the cluster defines the nodes, head first; remove it"
                                % (name, host))
        for name in DEPRECATED_IGNORED:
            if variables.get(name) not in (None, ""):
                warnings.append("%s is deprecated and ignored (set on %s): the plan (dgx_spark.specdec.specdec_plan) "
                                "derives it" % (name, host))


def _image_version(image_facts):
    labels = image_facts.get("labels") or {}
    for key in IMAGE_VERSION_LABELS:
        if labels.get(key):
            return str(labels[key])
    env = image_facts.get("env") or {}
    for key in IMAGE_VERSION_ENV:
        if env.get(key):
            return str(env[key])
    return None


def _hub_dir(repo):
    return "models--" + repo.replace("/", "--")


def _require_facts(cluster, nodes, facts):
    missing = [h for h in nodes if not facts.get(h)]
    if missing:
        raise PlanError(cluster, ["%s: no node facts (run dgx_spark.specdec.spark_facts on every node of the "
                                  "cluster first; is the node in the play?)" % ", ".join(missing)])


def plan_network(cluster, nodes, node_vars, facts):
    """Only the QSFP link of a cluster (netplan documents and addresses) -> ({host: node plan}, warnings)."""
    errors = []
    warnings = []
    _require_facts(cluster, nodes, facts)
    _deprecations(nodes, node_vars, errors, warnings)
    if len(nodes) < 2:
        errors.append("cluster %s: the QSFP link joins two or more Sparks, found %s" % (cluster, ", ".join(nodes)))
    top = _Reader("%s (cluster %s)" % (nodes[0], cluster), node_vars[nodes[0]], {}, errors)
    links = _plan_links(nodes, node_vars, facts, top, errors, need_addresses=False) if not errors else {}
    if errors:
        raise PlanError(cluster, errors)
    plans = {}
    for rank, host in enumerate(nodes):
        links[host].pop("node")
        plans[host] = {"cluster": cluster, "nodes": list(nodes), "head": nodes[0], "rank": rank, "is_head": rank == 0,
                       "multinode": True, "netplan": links[host], "container": None, "hostfile": None, "serve": None}
    return plans, warnings


def plan_cluster(cluster, nodes, profile, node_vars, facts):
    """Plan of every node of one cluster -> ({host: node plan}, warnings). Raises PlanError.

    ``nodes``: rank order (see ``cluster_members``); ``node_vars``: {host: variables}; ``facts``:
    {host: the ``spark`` fact of ``spark_facts``}. The Hugging Face token never reaches the plan: the
    containers always name its file (HF_TOKEN_PATH), which holds the token where the node has one.
    """
    errors = []
    warnings = []
    profile = profile or {}
    if not isinstance(profile, dict):
        raise PlanError(cluster, ["specdec_profile: %s is not a mapping (the playbook's vars file sets it)"
                                  % _show(profile)])
    _require_facts(cluster, nodes, facts)
    head = nodes[0]
    _deprecations(nodes, node_vars, errors, warnings)
    where = "%s (cluster %s)" % (head, cluster)
    top = _Reader(where, node_vars[head], profile, errors)

    # -- what is served (cluster-wide, read where the head is)
    frontend = top.choice("specdec_serve_frontend", "frontend", "trtllm-serve", FRONTENDS)
    triton = frontend == "triton"
    triton_release = None
    version = top.raw("specdec_serve_trtllm_version", "trtllm_version")
    version_field = "specdec_serve_trtllm_version on %s" % where
    if triton:
        # The image is tritonserver:<release>-trtllm-python-py3; its TensorRT-LLM release judges model.yaml.
        triton_release = str(top.raw("specdec_serve_triton_release", "triton_release", ""))
        try:
            shipped = trt.triton_trtllm_version(triton_release)
        except ValueError as exc:
            shipped = None
            if version is None:
                errors.append("%s on %s" % (exc, where))
        if version is None and shipped:
            version = shipped
            version_field = "the TensorRT-LLM release of Triton %s (specdec_serve_triton_release on %s)" % (
                triton_release, where)
        elif shipped and str(version) != shipped:
            warnings.append("specdec_serve_trtllm_version on %s: %s, but Triton %s ships TensorRT-LLM %s (right for an "
                            "image built with another release)" % (where, version, triton_release, shipped))
    if version is None:
        if not triton:
            errors.append("specdec_serve_trtllm_version on %s: not set (known releases: %s)"
                          % (where, ", ".join(trt.SUPPORTED_VERSIONS)))
    elif str(version) not in trt.SUPPORTED_VERSIONS:
        errors.append(trt.unknown_release_message(version, version_field))
        version = None
    else:
        version = str(version)
        # A profile names the release its NVIDIA playbook was written for and the ones NVIDIA runs it on since.
        known = [str(profile.get("trtllm_version"))] + [str(r) for r in profile.get("releases") or ()]
        if profile.get("trtllm_version") and version not in known:
            warnings.append("specdec_serve_trtllm_version on %s: %s; the profile's NVIDIA playbook runs on %s (its "
                            "options are checked for %s all the same)" % (where, version, ", ".join(known), version))
    mode = top.choice("trtllm_container_mode", "container_mode", "single", ("single", "multinode"))
    multinode = mode == "multinode"
    if triton and multinode:
        top.fail("specdec_serve_frontend", frontend, "trtllm-serve for a multinode profile (the Triton LLM API "
                 "profiles serve on one Spark)")
    method = top.choice("specdec_serve_method", "method", "none", trt.METHODS)
    speculative = method not in (None, "none")
    needs_draft = method in ("eagle3", "draft_target")
    model = top.string("specdec_serve_model", "model", fmt="model")
    draft_model = top.string("specdec_serve_draft_model", "draft_model", fmt="model") if needs_draft else None
    # A draft given as a path inside the container is used where it is; a Hugging Face id is downloaded to draft_dir.
    draft_is_path = bool(draft_model) and _is_path(draft_model)
    if draft_is_path:
        draft_dir = draft_model
    else:
        draft_dir = top.string("specdec_serve_draft_dir", "draft_dir", fmt="path") if needs_draft else None
    if draft_dir and not draft_is_path and not (draft_dir.startswith(MODELS_MOUNT + "/") and len(draft_dir.rstrip("/")) > len(MODELS_MOUNT)):
        top.fail("specdec_serve_draft_dir", draft_dir, "a directory under the %s mount (e.g. /models/NAME/)" % MODELS_MOUNT)
        draft_dir = None
    max_draft_len = top.integer("specdec_serve_max_draft_len", "max_draft_len", None, 1, 64) if speculative else None
    options = trt.merge(top.mapping("specdec_serve_options", "options"), top.mapping("specdec_serve_extra_options"))
    tp_size = top.integer("specdec_serve_tp_size", "tp_size", 1, 1, 64)
    flags = {
        "ep_size": top.integer("specdec_serve_ep_size", "ep_size", None, 1, 64, nullable=True),
        "max_batch_size": top.integer("specdec_serve_max_batch_size", "max_batch_size", None, 1, nullable=True),
        "max_num_tokens": top.integer("specdec_serve_max_num_tokens", "max_num_tokens", None, 1, nullable=True),
        "kv_cache_free_gpu_memory_fraction": top.fraction("specdec_serve_kv_cache_free_gpu_memory_fraction",
                                                          "kv_cache_free_gpu_memory_fraction"),
    }
    trust_remote_code = top.boolean("specdec_serve_trust_remote_code", "trust_remote_code", False)
    bind = top.string("specdec_serve_host", "host", "0.0.0.0", fmt="bind")
    port = top.integer("specdec_serve_port", "port", 8000, 1, 65535)
    extra_args = top.strings("specdec_serve_extra_args", fmt="arg")
    mpi_export = top.strings("specdec_serve_mpi_export", default=DEFAULT_MPI_EXPORT, fmt="env_name")
    # Who may reach the endpoint: nobody is filtered unless an allow-list is given.
    allowed, bad_clients = fw.normalize_clients(top.strings("specdec_serve_allowed_clients", "allowed_clients"))
    for value in bad_clients:
        top.fail("specdec_serve_allowed_clients item", value, "an IPv4 address or network (A.B.C.D or A.B.C.D/N)")
    if allowed and bind in ("localhost", "127.0.0.1", "::1"):
        warnings.append("specdec_serve_allowed_clients on %s: the server listens on %s only, so no other client can "
                        "reach it anyway (set specdec_serve_host: 0.0.0.0 to serve the allowed clients)" % (where, bind))
    # gpt-oss tokenizes with openai_harmony, which reads its tiktoken encodings from TIKTOKEN_ENCODINGS_BASE.
    encodings = None
    if top.boolean("specdec_serve_tiktoken_encodings", "tiktoken_encodings", False):
        encodings = (top.raw("specdec_serve_tiktoken_base_url", None, pre.TIKTOKEN_BASE_URL),
                     top.raw("specdec_serve_tiktoken_sha256", None, dict(pre.TIKTOKEN_SHA256)))
        for field, value, accepted in pre.encodings_errors(*encodings):
            top.fail(field, value, accepted)
    if triton:
        api = top.choice("specdec_serve_validate_api", "api", "triton", ("triton",))
        ports = {"http": port,
                 "grpc": top.integer("specdec_serve_triton_grpc_port", "triton_grpc_port", 8001, 1, 65535),
                 "metrics": top.integer("specdec_serve_triton_metrics_port", "triton_metrics_port", 8002, 1, 65535)}
        triton_config = top.mapping("specdec_serve_triton_config", "triton_config")
        if None not in ports.values() and len(set(ports.values())) < 3:
            top.fail("specdec_serve_triton_metrics_port", ports["metrics"], "three different ports for HTTP "
                     "(specdec_serve_port), gRPC and metrics (now %(http)s, %(grpc)s, %(metrics)s)" % ports)
        if bind not in ("0.0.0.0", "::"):
            top.fail("specdec_serve_host", bind, "0.0.0.0 with the Triton frontend (launch_triton_server.py has "
                     "no address option: Triton listens on every address)")
        if extra_args:
            top.fail("specdec_serve_extra_args", extra_args, "none with the Triton frontend (its LLM API arguments "
                     "go in model.yaml: specdec_serve_options)")
    else:
        api = top.choice("specdec_serve_validate_api", "api", "completions", ("completions", "chat", "both"))
    prompt = top.string("specdec_serve_validate_prompt", "prompt", "Explain the benefits of speculative decoding:",
                        fmt="text")
    max_tokens = top.integer("specdec_serve_validate_max_tokens", "max_tokens", 64, 1)
    requests = top.integer("specdec_serve_validate_requests", None, 1, 1, 1000)

    if tp_size is not None:
        if multinode and tp_size != len(nodes):
            top.fail("specdec_serve_tp_size", tp_size, "the number of nodes of the cluster (%d: %s): mpirun starts "
                     "one rank per node and trtllm-serve refuses a world size other than --tp_size"
                     % (len(nodes), ", ".join(nodes)))
        elif not multinode and tp_size != 1:
            top.fail("specdec_serve_tp_size", tp_size, "1 on a single Spark (one GPU); use the two-Spark playbook "
                     "for --tp_size 2")
    if multinode and len(nodes) < 2:
        errors.append("cluster %s: a multinode profile needs at least two Sparks, found %s" % (cluster, ", ".join(nodes)))

    options_content = None
    # Only when its inputs passed their own checks: one mistake, one message.
    if version and method and (draft_dir or not needs_draft) and (max_draft_len or not speculative):
        draft = draft_dir if needs_draft else None
        length = max_draft_len if speculative else None
        try:
            if triton:
                llm_args = trt.merge(trt.flags_as_llm_args(flags, trust_remote_code), options)
                options_content, validated = trt.triton_model_yaml(version, model, method, draft, length, llm_args,
                                                                   tp_size or 1, 1, triton_config)
            else:
                options_content, validated = trt.options_file(version, method, draft, length, options)
            warnings.extend("%s: %s" % ("model.yaml" if triton else "options file", w) for w in validated.warnings)
        except trt.OptionsError as exc:
            what = ("Triton's model.yaml (specdec_serve_model, specdec_serve_options, specdec_serve_triton_config and "
                    "the speculative method)" if triton else
                    "options file (specdec_serve_options, specdec_serve_extra_options and the speculative method)")
            errors.extend("%s for TensorRT-LLM %s: %s" % (what, version, e) for e in exc.errors)

    # -- per node: directories, image, container settings
    per = {}
    for rank, host in enumerate(nodes):
        per[host] = _node_settings(host, rank, multinode, version, node_vars[host], profile, facts[host],
                                   errors, triton_release)
        per[host]["memory"] = _memory_settings(_Reader(host, node_vars[host], profile, errors))

    # -- QSFP links, addresses and the hostfile (two or more Sparks)
    links = {}
    if multinode and len(nodes) >= 2:
        links = _plan_links(nodes, node_vars, facts, top, errors)

    if allowed and not (facts[head].get("tools") or {}).get("iptables"):
        errors.append("specdec_serve_allowed_clients on %s: the allow-list is enforced with iptables, which is not "
                      "installed on %s (install the iptables package, or leave the list empty)" % (where, head))
    if errors:
        raise PlanError(cluster, errors)
    for host, link in links.items():
        per[host].update(link.pop("node"))

    # -- assemble each node's part
    plans = {}
    options_sha = sha256(options_content)
    hostfile = None
    if multinode:
        lines = ["# Managed by dgx_spark.specdec (openmpi_hostfile): one line per Spark of cluster %s, head first."
                 % cluster]
        for host in nodes:
            lines.append("%s slots=%d" % (per[host]["hostfile_address"], per[host]["slots"]))
        hostfile = "\n".join(lines) + "\n"
    all_addresses = [a for host in nodes for a in per[host]["qsfp_addresses"]]
    for rank, host in enumerate(nodes):
        node = per[host]
        downloads, waits = _downloads(node, model, draft_model if needs_draft else None, draft_dir)
        if triton:
            container_opts = TRITON_REPO_MOUNT + "/" + trt.TRITON_MODEL_YAML
            serve = trt.triton_launch_argv(TRITON_REPO_MOUNT + "/", ports["http"], ports["grpc"], ports["metrics"])
        else:
            container_opts = CONFIG_MOUNT + "/" + OPTIONS_FILE
            serve = trt.serve_argv(model, container_opts, tp_size, bind, port, flags, trust_remote_code, extra_args)
        env = dict(node["env"])
        # huggingface_hub reads the token from this file when it exists (a missing file means no token):
        # ours, or the one `huggingface-cli login` stored in the login user's cache (mounted at HF_MOUNT).
        login_token = node["hf_token_source"] == "login"
        if login_token and not facts[host].get("hf_login_token"):
            warnings.append("trtllm_container_hf_token_source on %s: login, but %s has no token stored by "
                            "`huggingface-cli login` (~/.cache/huggingface/token); gated models need one, unless "
                            "trtllm_container_hf_token is set (the role then writes that file)" % (host, node["login_user"]))
        env["HF_TOKEN_PATH"] = HF_MOUNT + "/token" if login_token else CONFIG_MOUNT + "/hf_token"
        fetch = []
        if encodings:
            tiktoken = pre.encodings_spec(node["config_dir"], CONFIG_MOUNT, *encodings)
            env.update(tiktoken["env"])
            fetch = tiktoken["files"]
        entry = ["/bin/bash", ENTRYPOINT]
        if node["install_sshd"] and multinode:
            entry.append("--install-missing")
        if multinode:
            env.update(node["cuda_env"])
            ifaces = ",".join(node["qsfp_interfaces"])
            env.update({
                "UCX_NET_DEVICES": ifaces,
                "NCCL_SOCKET_IFNAME": ifaces,
                "OMPI_MCA_btl_tcp_if_include": ifaces,
                "OMPI_MCA_oob_tcp_if_include": ifaces,
                "OMPI_MCA_orte_default_hostfile": "/etc/openmpi-hostfile",
                "OMPI_MCA_rmaps_ppr_n_pernode": "1",
                "OMPI_MCA_plm_rsh_args": "-F %s/ssh/config" % CONFIG_MOUNT,
                "OMPI_ALLOW_RUN_AS_ROOT": "1",
                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            })
            # One QSFP cable is two PCIe x4 halves: NCCL needs both RoCE devices of the Up pair for full bandwidth.
            if node["nccl_ib_hca"]:
                env["NCCL_IB_HCA"] = ",".join(node["nccl_ib_hca"])
            else:
                warnings.append("NCCL_IB_HCA on %s: not set, ibdev2netdev named no RoCE device of the Up QSFP "
                                "netdevs (%s); NCCL may use one half of the port. Set trtllm_container_nccl_ib_hca"
                                % (host, ", ".join(node["qsfp_interfaces"]) or "none"))
            entry += ["--sshd", "%s/ssh/sshd_config" % CONFIG_MOUNT]
            if node["mpi_firewall"]:
                entry += ["--firewall", "%d:%d" % (MPI_OOB_PORT, MPI_BTL_PORTS[0] + MPI_BTL_PORTS[1] - 1),
                          ",".join(node["qsfp_interfaces"])]
        expect = []
        if rank == 0:
            expect.append((container_opts, options_sha))
            if multinode:
                expect.append((CONFIG_MOUNT + "/" + HOSTFILE, sha256(hostfile)))
                exports = mpi_export + ["HF_TOKEN_PATH"] + sorted(tiktoken["env"] if encodings else [])
                # The server's launch only, so `mpirun -np 2 hostname` by hand still finds a free port.
                command = trt.mpirun_argv(exports, serve, mca=[
                    ("oob_tcp_static_ipv4_ports", MPI_OOB_PORT), ("oob_tcp_static_ipv6_ports", MPI_OOB_PORT),
                    ("btl_tcp_port_min_v4", MPI_BTL_PORTS[0]), ("btl_tcp_port_range_v4", MPI_BTL_PORTS[1]),
                    ("btl_tcp_disable_family", 6)])
                for peer in nodes[1:]:
                    entry += ["--peer", per[peer]["hostfile_address"]]
            else:
                command = serve
            for path, digest in expect:
                entry += ["--expect", "%s=%s" % (path, digest)]
            for path in waits:
                entry += ["--exists", path]
            if triton:
                entry += ["--daemon", "tritonserver"]
            entry += ["--"] + command
        else:
            command = None

        ssh = None
        files = []
        if multinode:
            ssh_dir = node["config_dir"] + "/ssh"
            ssh = {
                "dir": ssh_dir,
                "port": node["ssh_port"],
                "addresses": all_addresses,
                "nodes": [{"name": h, "addresses": per[h]["qsfp_addresses"]} for h in nodes],
                # Generated on the node, where they stay; only the public halves travel.
                "host_key": ssh_dir + "/ssh_host_ed25519_key",
                "client_key": ssh_dir + "/id_ed25519",
                "key_pairs": [{"path": ssh_dir + "/ssh_host_ed25519_key", "comment": "%s@%s" % (node["name"], host)},
                              {"path": ssh_dir + "/id_ed25519", "comment": "dgx-spark-specdec@%s" % host}],
            }
            files.append({"path": ssh_dir + "/sshd_config", "mode": "0644",
                          "content": _sshd_config(node["name"], node["qsfp_addresses"], node["ssh_port"])})
            files.append({"path": ssh_dir + "/config", "mode": "0644",
                          "content": _ssh_config(all_addresses, node["ssh_port"])})

        volumes = ["%s:%s" % (node["hf_cache_dir"], HF_MOUNT), "%s:%s" % (node["models_dir"], MODELS_MOUNT),
                   "%s:%s:ro" % (node["config_dir"], CONFIG_MOUNT)]
        repo_dir = node["config_dir"] + "/" + TRITON_REPO_DIR
        if triton:
            volumes.append("%s:%s" % (repo_dir, TRITON_REPO_MOUNT))
        # The allow-list guards the node that listens: the head (a worker's rules, if any, are removed).
        serving_ports = sorted(set(ports.values())) if triton else [port]
        clients = list(allowed)
        if allowed and multinode:
            # The workers wait for the head's readiness over the QSFP link (the memory guard).
            clients += [a + "/32" for a in all_addresses if a + "/32" not in clients]
        published = [p for p in (_host_port(spec) for spec in node["published_ports"]) if p] if node["own_network"] else []
        firewall = fw.plan_rules(serving_ports, clients if rank == 0 else [], published or None)
        # What differs from the node's rules (read by spark_facts): a run that changes nothing touches no rule.
        firewall["changes"] = fw.changes("\n".join(facts[host].get("firewall") or []), firewall)
        found = (facts[host].get("images") or {}).get(node["image"]) or {}
        drift = pre.image_drift(node["image"], found, (facts[host].get("containers") or {}).get(node["name"]))
        if drift:
            warnings.append("trtllm_container_image on %s: %s" % (host, drift))
        ready_url = _health_url(triton, bind, port, None if rank == 0 else per[head]["hostfile_address"])
        what = " and its draft ".join([m for m in (model, draft_model if needs_draft else None) if m])
        memory = node["memory"]
        docker = {
            "name": node["name"],
            "image": node["image"],
            "command": entry,
            "env": env,
            "volumes": volumes,
            "network_mode": node["network_mode"],
            "published_ports": node["published_ports"] if node["own_network"] else [],
            "ipc_mode": node["ipc_mode"],
            "ulimits": ["memlock:%d:%d" % (node["memlock"], node["memlock"]),
                        "stack:%d:%d" % (node["stack"], node["stack"])],
            "devices": node["devices"],
            "device_requests": ([{"driver": "nvidia", "count": -1, "capabilities": [["gpu"]]}]
                                if node["gpu"] else []),
            "restart_policy": node["restart_policy"],
            # The entrypoint closes the MPI ports to the management network in the node's network namespace.
            "capabilities": ["NET_ADMIN"] if multinode and node["mpi_firewall"] else [],
            "labels": {"dgx-spark.specdec/cluster": cluster, "dgx-spark.specdec/rank": str(rank),
                       "dgx-spark.specdec/role": ("head" if rank == 0 else "worker") if multinode else "single"},
        }
        plans[host] = {
            "cluster": cluster,
            "nodes": list(nodes),
            "head": head,
            "rank": rank,
            "is_head": rank == 0,
            "multinode": multinode,
            "trtllm_version": version,
            "netplan": links.get(host),
            "container": {
                "name": node["name"],
                "image": node["image"],
                "pull": node["pull"],
                "login_user": node["login_user"],
                "dirs": [
                    {"path": node["hf_cache_dir"], "owner": node["login_user"], "mode": "0755"},
                    {"path": node["models_dir"], "owner": node["login_user"], "mode": "0755"},
                    {"path": node["config_dir"], "owner": "root", "mode": "0755"},
                ] + ([{"path": node["config_dir"] + "/ssh", "owner": "root", "mode": "0700"}] if multinode else [])
                  + ([{"path": repo_dir, "owner": "root", "mode": "0755"}] if triton else [])
                  + ([{"path": tiktoken["dir"], "owner": "root", "mode": "0755"}] if encodings else []),
                "config_dir": node["config_dir"],
                "token_file": HF_MOUNT_HOST_TOKEN.format(node["hf_cache_dir"]) if login_token
                else node["config_dir"] + "/hf_token",
                # The login token belongs to the user (their own hf CLI reads it) and is never removed here.
                "token_owner": node["login_user"] if login_token else "root",
                "token_keep": login_token,
                "fetch": fetch,
                "firewall": firewall,
                "image_report": pre.image_report(node["image"], found, _image_version(found) if found else None),
                "files": files,
                "ssh": ssh,
                "docker": docker,
            },
            "hostfile": None if not multinode else {
                "path": node["config_dir"] + "/" + HOSTFILE,
                "content": hostfile,
                "container": node["name"],
                "hostnames": [facts[h].get("hostname", h) for h in nodes],
                "ssh_port": node["ssh_port"],
            },
            "serve": {
                "container": node["name"],
                "frontend": frontend,
                "downloads": downloads,
                "options_file": {"path": (repo_dir + "/" + trt.TRITON_MODEL_YAML) if triton
                                 else node["config_dir"] + "/" + OPTIONS_FILE, "content": options_content},
                # Triton: the model repository is copied from the image's template once (in the container, which
                # waits for model.yaml), and never again: the marker is the template's config.pbtxt.
                "template": None if not triton else {
                    "marker": repo_dir + "/" + trt.TRITON_TEMPLATE_MARKER,
                    "argv": ["cp", "-R", "-n", trt.TRITON_TEMPLATE + "/.", TRITON_REPO_MOUNT + "/"],
                },
                "argv": command,
                "memory": pre.memory_spec(memory["check"], memory["headroom_gib"],
                                          _weights_on_host(node, model, draft_model if needs_draft else None, draft_dir),
                                          round(1.0 / (tp_size or 1), 6), memory["weights_gib"], memory["drop_caches"],
                                          memory["guard"], memory["guard_below_gib"], memory["guard_timeout"],
                                          ready_url, what),
                "endpoint": None if rank else _endpoint(triton, bind, port, ports if triton else None, model, api,
                                                        prompt, max_tokens, requests, node["name"]),
            },
        }
    return plans, warnings


def _memory_settings(r):
    """One node's memory pre-flight and load guard settings (UMA: the GPU's memory is the system's)."""
    return {
        "check": r.choice("specdec_serve_memory_check", None, "fail", ("fail", "warn", "skip")) or "fail",
        "headroom_gib": r.number("specdec_serve_memory_headroom_gib", None, 8),
        "weights_gib": r.number("specdec_serve_weights_gib", "weights_gib", None, nullable=True),
        # NVIDIA's guides flush the page cache when UMA memory runs short; owners do it before every launch.
        "drop_caches": r.boolean("specdec_serve_drop_caches", None, True),
        "guard": r.boolean("specdec_serve_memory_guard", None, False),
        "guard_below_gib": r.number("specdec_serve_memory_guard_below_gib", None, 8),
        "guard_timeout": r.integer("specdec_serve_memory_guard_timeout", None, 3600, 1),
    }


def _weights_on_host(node, model, draft_model, draft_dir):
    """The host directories of the weights the server loads (those the node can measure)."""
    paths = []
    for ref in [model] + ([draft_dir if draft_model and not _is_path(draft_model) else draft_model]
                          if draft_model else []):
        if not ref:
            continue
        if not _is_path(ref):
            paths.append("%s/hub/%s" % (node["hf_cache_dir"], _hub_dir(ref)))
        elif ref.rstrip("/").startswith(MODELS_MOUNT + "/"):
            paths.append(node["models_dir"] + posixpath.normpath(ref)[len(MODELS_MOUNT):])
        elif ref.rstrip("/").startswith(HF_MOUNT + "/"):
            paths.append(node["hf_cache_dir"] + posixpath.normpath(ref)[len(HF_MOUNT):])
    return paths


def _local_address(bind):
    """The address that reaches a server listening on ``bind`` from its own node."""
    return "127.0.0.1" if bind in ("0.0.0.0", "localhost", "::") else bind


def _health_url(triton, bind, port, host=None):
    """The URL that answers 2xx once the server is ready (from the node itself, or from ``host``)."""
    address = host or _local_address(bind)
    return "http://%s:%d%s" % (address, port, "/v2/health/ready" if triton else "/health")


def _endpoint(triton, bind, port, ports, model, api, prompt, max_tokens, requests, container):
    """What specdec_endpoint checks on the head: trtllm-serve's OpenAI API, or Triton's generate API and metrics."""
    host = _local_address(bind)
    endpoint = {"url": "http://%s:%d" % (host, port), "model": model, "api": api, "prompt": prompt,
                "max_tokens": max_tokens, "requests": requests, "metrics_url": None, "tokenizer": None}
    if triton:
        endpoint.update(model=trt.TRITON_MODEL, metrics_url="http://%s:%d" % (host, ports["metrics"]),
                        # Triton's answer has text only: its tokens are counted with the model's tokenizer in the
                        # serving container, as the Triton tutorial's genai-perf --tokenizer does.
                        tokenizer={"container": container, "model": model})
    return endpoint


def _downloads(node, model, draft_model, draft_dir):
    """What ``hf download`` fetches on a node, and the container paths the server waits for."""
    downloads = []
    waits = []
    if _is_path(model):
        waits.append(model)
    else:
        hub = _hub_dir(model)
        downloads.append({"repo": model, "local_dir": "",
                          "marker": "%s/hub/%s/%s" % (node["hf_cache_dir"], hub, MARKER)})
        waits.append("%s/hub/%s/%s" % (HF_MOUNT, hub, MARKER))
    if draft_model and draft_dir:
        if _is_path(draft_model):
            waits.append(draft_model)
        else:
            relative = posixpath.normpath(draft_dir)[len(MODELS_MOUNT) + 1:]
            downloads.append({"repo": draft_model, "local_dir": draft_dir,
                              "marker": "%s/%s/%s" % (node["models_dir"], relative, MARKER)})
            waits.append("%s/%s/%s" % (MODELS_MOUNT, relative, MARKER))
    for item in downloads:
        # Written after a successful download (one spark_files call for all): later runs skip it.
        item["marker_file"] = {"path": item["marker"], "content": item["repo"] + "\n", "mode": "0644"}
    return downloads, waits


def _node_settings(host, rank, multinode, version, variables, profile, spark, errors, triton_release=None):
    """One node's container settings, checked, with its facts (home, image, runtimes)."""
    r = _Reader(host, variables, profile, errors)
    login_user = spark.get("login_user") or ""
    home = spark.get("home") or ""
    default_name = "triton-specdec" if triton_release else "trtllm-multinode" if multinode else "trtllm-specdec"
    name = r.string("trtllm_container_name", None, default_name, fmt="container") or default_name
    image = _image(r, version, triton_release)
    pull = r.boolean("trtllm_container_pull", None, True)
    docker = spark.get("docker") or {}
    if not docker.get("ok", False):
        errors.append("docker on %s: the engine does not answer (%s); install and start Docker first"
                      % (host, docker.get("error") or "unknown error"))
    if image:
        found = (spark.get("images") or {}).get(image) or {}
        if not found.get("present") and not pull:
            errors.append("trtllm_container_image on %s: %s is not on the node and trtllm_container_pull is false "
                          "(accepted: an image present on the node, or trtllm_container_pull: true)" % (host, image))
        reported = _image_version(found) if found.get("present") else None
        if reported and version and reported != version:
            errors.append("trtllm_container_image on %s: %s reports TensorRT-LLM %s but specdec_serve_trtllm_version "
                          "is %s (the options would be checked for the wrong release); make them agree"
                          % (host, image, reported, version))
    gpus = r.choice("trtllm_container_gpus", None, "auto", ("auto", "always", "never"))
    network_mode = r.string("trtllm_container_network_mode", "network_mode", "host", fmt="network") or "host"
    own_network = network_mode not in ("host", "none") and not network_mode.startswith("container:")
    memlock = r.integer("trtllm_container_memlock", None, -1, -1)
    if memlock == 0:
        r.fail("trtllm_container_memlock", 0, "-1 (unlimited) or a positive number of bytes")
    if str(variables.get("trtllm_container_restart_policy")) in ("no", "False"):
        r.fail("trtllm_container_restart_policy", "no", "always, unless-stopped or on-failure: Docker supervises the "
               "server, with 'no' it would not come back after a crash or a reboot")
        restart = None
    else:
        restart = r.choice("trtllm_container_restart_policy", None, "unless-stopped",
                           ("always", "unless-stopped", "on-failure"))
    dirs = {}
    if not _USER.match(login_user):
        errors.append("login user on %s: %s is not %s" % (host, _show(login_user), FORMATS["user"][1]))
        home = "/nonexistent"  # its directories are not checked: the one mistake is the user
    for key, default in (("hf_cache_dir", home + "/.cache/huggingface"), ("models_dir", home + "/models"),
                         ("config_dir", home + "/.dgx-spark")):
        dirs[key] = r.string("trtllm_container_" + key, None, default, fmt="path") or default
    settings = {
        "name": name,
        "image": image,
        "pull": pull,
        "login_user": login_user,
        "gpu": gpus == "always" or (gpus == "auto" and "nvidia" in (docker.get("runtimes") or [])),
        "network_mode": network_mode,
        "own_network": own_network,
        "published_ports": r.strings("trtllm_container_published_ports", "published_ports", fmt="port_spec"),
        "ipc_mode": r.string("trtllm_container_ipc_mode", None, "host", fmt="ipc") or "host",
        "memlock": memlock if memlock is not None else -1,
        "stack": r.integer("trtllm_container_stack", None, 67108864, 1) or 67108864,
        "restart_policy": restart or "unless-stopped",
        "env": r.env("trtllm_container_env", "container_env"),
        "devices": r.strings("trtllm_container_devices", fmt="device"),
        "install_sshd": r.boolean("trtllm_container_install_sshd", None, True),
        "mpi_firewall": r.boolean("trtllm_container_mpi_firewall", None, True),
        "ssh_port": r.integer("trtllm_container_ssh_port", None, 2233, 1, 65535) or 2233,
        "cuda_env": r.env("trtllm_container_cuda_env", None, DEFAULT_CUDA_ENV),
        "slots": r.integer("openmpi_hostfile_slots", None, 1, 1) or 1,
        "qsfp_interfaces": [],
        "qsfp_addresses": [],
        "hostfile_address": None,
        # `huggingface-cli login` (NVIDIA's older single-Spark guide) keeps the token in the user's HF cache.
        "hf_token_source": r.choice("trtllm_container_hf_token_source", "hf_token_source", "file", ("file", "login")),
        "nccl_ib_hca": r.strings("trtllm_container_nccl_ib_hca", default=list((spark.get("qsfp") or {}).get("rdma") or [])),
    }
    if multinode and spark.get("infiniband") and "/dev/infiniband:/dev/infiniband" not in settings["devices"]:
        settings["devices"].append("/dev/infiniband:/dev/infiniband")
    settings.update(dirs)
    return settings


def _host_port(spec):
    """The host port of a published port spec ([IP:][HOST_PORT:]CONTAINER_PORT[/proto]), None for a range or UDP."""
    text = str(spec)
    if "/" in text and not text.endswith("/tcp"):
        return None
    parts = text.split("/", maxsplit=1)[0].rsplit(":", 2)
    port = parts[-2] if len(parts) >= 2 else parts[-1]
    return int(port) if port.isdigit() else None


def _image(reader, version, triton_release=None):
    """The image reference: trtllm_container_image, else repository:tag (the tag follows the release).

    With the Triton frontend: trtllm_container_triton_repository:<release>-trtllm-python-py3.
    """
    given = reader.string("trtllm_container_image", None, None, fmt="image", required=False)
    if given:
        return given
    if triton_release:
        repository = reader.string("trtllm_container_triton_repository", None, DEFAULT_TRITON_REPOSITORY, fmt="image")
        default_tag = "%s-trtllm-python-py3" % triton_release
    else:
        repository = reader.string("trtllm_container_image_repository", None, DEFAULT_REPOSITORY, fmt="image")
        default_tag = version
    if not default_tag and not reader.raw("trtllm_container_image_tag", "image_tag"):
        return None  # the tag follows the release, whose own check failed
    # A profile may name its guide's own tag (spark-single-gpu-dev); the inventory's wins.
    tag = reader.string("trtllm_container_image_tag", None if triton_release else "image_tag", default_tag, fmt="tag")
    if repository and tag:
        image = "%s:%s" % (repository, tag)
        if FORMATS["image"][0](image):
            return image
        reader.fail("trtllm_container_image_repository", repository, "a repository that takes a tag")
    return None


def _plan_links(nodes, node_vars, facts, top, errors, need_addresses=True):
    """Netplan documents, QSFP addresses and hostfile addresses of a multi-node cluster.

    ``need_addresses``: the serving plan needs every node's QSFP addresses now (sshd, the hostfile); with the
    link-local plan they exist only once the link is applied, so plan the link alone first (qsfp_link.yml).
    """
    plan = top.choice("netplan_qsfp_plan", None, "addresses", ("addresses", "link_local"))
    preset = top.choice("netplan_qsfp_preset", None, "seed", tuple(net.PRESETS))
    interfaces = top.strings("netplan_qsfp_interfaces", default=list(net.QSFP_INTERFACES), fmt="iface")
    # NCCL over RoCE reaches full bandwidth only with MTU 9000 on both ends of the cable.
    mtu = top.integer("netplan_qsfp_mtu", None, DEFAULT_QSFP_MTU, 576, 9216, nullable=True)
    source_routing = top.boolean("netplan_qsfp_source_routing", None, True)
    table_base = top.integer("netplan_qsfp_routing_table_base", None, 101, 1)
    allow = top.boolean("netplan_qsfp_allow_disruptive", None, False)
    path = top.string("netplan_qsfp_file", None, "/etc/netplan/40-cx7.yaml", fmt="path")
    if None in (plan, preset, table_base, path):
        return {}
    inputs = []
    for host in nodes:
        spark = facts[host]
        qsfp = spark.get("qsfp") or {}
        variables = node_vars[host]
        addresses = variables.get("netplan_qsfp_addresses") or {}
        if not isinstance(addresses, dict):
            errors.append("netplan_qsfp_addresses on %s: %s is not a mapping of QSFP netdev to A.B.C.D/N"
                          % (host, _show(addresses)))
            addresses = {}
        management = _Reader(host, variables, {}, errors).string("netplan_qsfp_management_address", fmt="ip",
                                                                 required=False) or ""
        if not management:
            candidate = str(variables.get("ansible_host") or "")
            management = candidate if _is_ip(candidate) else (spark.get("default_ipv4") or {}).get("address", "")
        inputs.append({
            "name": host,
            "up": list(qsfp.get("up") or []),
            "up_source": qsfp.get("source") or "ibdev2netdev",
            "addresses": addresses,
            "current": spark.get("ipv4") or {},
            "management_address": management,
            "default_interface": (spark.get("default_ipv4") or {}).get("interface", ""),
        })
    per_node, link_errors = net.plan_links(inputs, plan=plan, preset=preset, interfaces=tuple(interfaces), mtu=mtu,
                                           source_routing=source_routing, table_base=table_base,
                                           allow_disruptive=allow)
    errors.extend(link_errors)
    if link_errors:
        return {}
    out = {}
    return_errors = []
    for host in nodes:
        planned = per_node[host]
        reader = _Reader(host, node_vars[host], {}, return_errors)
        ifaces = reader.strings("trtllm_container_qsfp_interfaces", default=planned["up"], fmt="iface")
        addresses = planned["addresses"]
        override = reader.strings("trtllm_container_qsfp_addresses", default=[], fmt="ip")
        if override:
            addresses = override
        if not addresses and need_addresses:
            return_errors.append("QSFP addresses of %s: none yet on %s (netplan_qsfp_plan=%s assigns them when the "
                                 "link is applied): run playbooks/qsfp_link.yml first, or use the addresses plan"
                                 % (host, ", ".join(planned["up"]), plan))
            continue
        hostfile_address = reader.string("openmpi_hostfile_address", None, addresses[0] if addresses else None,
                                         fmt="ip", required=need_addresses)
        if hostfile_address and hostfile_address not in addresses:
            reader.fail("openmpi_hostfile_address", hostfile_address,
                        "one of this node's QSFP addresses (%s): mpirun hangs when the hostfile IPs differ from the "
                        "interface IPs" % ", ".join(addresses))
        node = {"qsfp_interfaces": ifaces, "qsfp_addresses": addresses, "hostfile_address": hostfile_address}
        installed = (facts[host].get("netplan") or {}).get(path) or {}
        out[host] = {
            "file": path,
            "content": planned["content"],
            # The file on the node is already this one (content, 0600 root:root): nothing to check or write.
            "up_to_date": (installed.get("sha256") == sha256(planned["content"])
                           and (installed.get("mode"), installed.get("owner"), installed.get("group"))
                           == ("0600", "root", "root")),
            "plan": plan,
            "up": planned["up"],
            "entries": [{"iface": e["iface"], "cidr": e["cidr"]} for e in planned["entries"]],
            "addresses": addresses,
            "missing": planned["missing"],
            "node": node,
        }
    errors.extend(return_errors)
    if return_errors:
        return out
    # Both ends of each link: the pre-flight stops when their MTUs would differ after this run; spark_link
    # checks them again after netplan (MTU, a ping with don't-fragment at that size, the link speed).
    pairs = pre.pair_links({h: out[h]["entries"] for h in out})
    applies = {h: not out[h]["up_to_date"] or bool(out[h]["missing"]) for h in out}
    errors.extend(pre.mtu_errors(pairs, {h: facts[h].get("mtu") or {} for h in out}, mtu, applies))
    for host in out:
        out[host]["mtu"] = mtu
        out[host]["links"] = [{"iface": link["iface"], "address": link["address"], "peer": link["peer"],
                               "peer_address": link["peer_address"], "mtu": mtu} for link in pairs.get(host, [])]
    return out


def _sshd_config(container, addresses, port):
    lines = ["# Managed by dgx_spark.specdec (trtllm_container): sshd of the %s container," % container,
             "# for mpirun between the Sparks over the QSFP link only: key-only, on the QSFP addresses."]
    lines += ["ListenAddress %s:%d" % (a, port) for a in addresses]
    lines += [
        "HostKey %s/ssh/ssh_host_ed25519_key" % CONFIG_MOUNT,
        "AuthorizedKeysFile %s/ssh/authorized_keys" % CONFIG_MOUNT,
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "X11Forwarding no",
        "AllowTcpForwarding no",
        "PidFile /run/sshd-dgx-spark.pid",
    ]
    return "\n".join(lines) + "\n"


def _ssh_config(addresses, port):
    return "\n".join([
        "# Managed by dgx_spark.specdec (trtllm_container): mpirun's ssh between the containers.",
        "Host %s" % " ".join(addresses),
        "    Port %d" % port,
        "    User root",
        "    IdentityFile %s/ssh/id_ed25519" % CONFIG_MOUNT,
        "    IdentitiesOnly yes",
        "    UserKnownHostsFile %s/ssh/known_hosts" % CONFIG_MOUNT,
        "    StrictHostKeyChecking yes",
        "    BatchMode yes",
        "    ConnectTimeout 10",
    ]) + "\n"


def ssh_trust(ssh, keys):
    """authorized_keys and known_hosts of one node from every node's public keys.

    ``ssh``: the node plan's ``container.ssh``; ``keys``: {host: {"client": "ssh-ed25519 ...", "host": "ssh-ed25519 ..."}}
    for every node of the cluster. Only public keys: each node's private keys stay where
    they were generated. Returns {path: content}.
    """
    sources = ",".join(ssh["addresses"])
    authorized = []
    known = []
    for peer in ssh["nodes"]:
        host = peer["name"]
        node = dict(keys.get(host) or {}, addresses=peer["addresses"])
        client = " ".join(str(node.get("client", "")).split()[:2])
        host_key = " ".join(str(node.get("host", "")).split()[:2])
        if not client or not host_key:
            raise ValueError("the public keys of %s are missing" % host)
        authorized.append('from="%s",no-agent-forwarding,no-X11-forwarding %s dgx-spark-specdec@%s'
                          % (sources, client, host))
        known.append("%s %s" % (",".join("[%s]:%d" % (a, ssh["port"]) for a in node.get("addresses") or []),
                                host_key))
    header = "# Managed by dgx_spark.specdec (trtllm_container): public keys of the cluster's nodes.\n"
    return {
        ssh["dir"] + "/authorized_keys": header + "\n".join(authorized) + "\n",
        ssh["dir"] + "/known_hosts": "\n".join(known) + "\n",
    }
