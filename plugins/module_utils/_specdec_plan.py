# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The plan of one cluster of DGX Sparks, computed once and validated before anything changes.

A cluster is the set of Sparks that serve one endpoint. From the inventory (read only through the input
catalogue, ``_inputs``), the playbook's profile (the NVIDIA playbook it reproduces) and what ``spark_facts`` read
on each node, ``plan_cluster`` computes everything the roles apply, in named steps:

1. ``_Plan``: the inputs - the cluster's variables agree on every node, the profile names only known keys;
2. ``_served``: what is served (frontend, release, method, models, flags, endpoint settings);
3. ``_check_topology``: the parallel sizes against the nodes;
4. ``_options``: the options file (or Triton's model.yaml) for the release;
5. ``_node_settings`` and ``_plan_links``: per node the container settings, the QSFP addresses and netplan;
6. ``_command``, ``_container_part``, ``_serve_part``: each node's part, assembled.

Every value that reaches a command, a path or a file name is checked for its format; each error names the field,
the host, the value and what is accepted. The rank order (head first) is decided here only (``cluster_members``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import posixpath

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _firewall as fw
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _paths as paths
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _inputs as inputs
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _preflight as pre
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _records as records
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _spark_net as net
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _trtllm_options as trt
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _trtllm_releases as rel

CONFIG_MOUNT = "/etc/dgx-spark"
MODELS_MOUNT = "/models"
HF_MOUNT = "/root/.cache/huggingface"
HF_MOUNT_HOST_TOKEN = "{0}/token"  # where `huggingface-cli login` writes the token, in the host's HF cache
OPTIONS_FILE = "extra-llm-api-config.yml"
FIREWALL_SPEC = "firewall.json"
# Written once the node's memory check passed for the planned server (its content names what was checked).
APPROVAL = "start-approved"
FIREWALL_PROGRAM = "firewall.py"
HOSTFILE = "openmpi-hostfile"
ENTRYPOINT = CONFIG_MOUNT + "/entrypoint.sh"
MARKER = ".dgx-spark-complete"
DEFAULT_CLUSTER = "sparks"
# Triton's LLM API model repository: copied from the image's template into this host directory (under the
# node's config directory) the first time, and mounted where the Triton tutorial keeps it.
TRITON_REPO_DIR = "llmapi_repo"
TRITON_REPO_MOUNT = "/opt/tritonserver/llmapi_repo"
SPEC_LABEL = "dgx-spark.specdec/spec"
NODE_LABEL = "dgx-spark.specdec/node"
# The containers the collection may have created on a node, by mode (teardown looks for each).
CONTAINER_NAMES = {"single": "trtllm-specdec", "multinode": "trtllm-multinode", "triton": "triton-specdec"}
# Open MPI 4.1 binds its out-of-band and TCP BTL listeners to the wildcard address whatever
# *_if_include says (open-mpi/ompi#12668): pin them to these ports, which the containers' entrypoint
# closes on every interface but loopback and the QSFP ones.
MPI_OOB_PORT = 50100
MPI_BTL_PORTS = (50101, 32)
# Open MPI 4 (ORTE) and 5 (PRRTE) name the same settings differently, and Open MPI 5 ignores the ORTE-era names
# without a word: the hostfile is not read and every rank runs on the launcher (open-mpi/ompi#12873; checked
# with Open MPI 5.0.11's prte_info). An image with Open MPI 5 says so in its environment (PRTE_PREFIX, as
# HPC-X's ompi5 in the 1.3.0rc27 release image) or in a label.
MPI_ENV = {
    4: {"hostfile": "OMPI_MCA_orte_default_hostfile", "ssh_args": "OMPI_MCA_plm_rsh_args",
        "oob_if": "OMPI_MCA_oob_tcp_if_include", "per_node": "OMPI_MCA_rmaps_ppr_n_pernode"},
    5: {"hostfile": "PRTE_MCA_prte_default_hostfile", "ssh_args": "PRTE_MCA_plm_ssh_args",
        "oob_if": "PRTE_MCA_oob_tcp_if_include", "per_node": None},
}
# One Spark: the server still starts Open MPI's runtime (the LLM API spawns its executor worker through MPI; Triton's
# launch_triton_server.py runs mpirun -n 1). Its listeners go to loopback where Open MPI honours *_if_include (5.x);
# Open MPI 4.1 binds the wildcard all the same, so they are pinned to the ports the firewall spec closes to all but lo.
LOCAL_MPI_ENV = {
    "OMPI_MCA_oob_tcp_if_include": "lo", "OMPI_MCA_btl_tcp_if_include": "lo",
    "OMPI_MCA_oob_tcp_static_ipv4_ports": str(MPI_OOB_PORT), "OMPI_MCA_oob_tcp_static_ipv6_ports": str(MPI_OOB_PORT),
    "OMPI_MCA_btl_tcp_port_min_v4": str(MPI_BTL_PORTS[0]), "OMPI_MCA_btl_tcp_port_range_v4": str(MPI_BTL_PORTS[1]),
    "PRTE_MCA_oob_tcp_if_include": "lo", "PRTE_MCA_oob_tcp_static_ipv4_ports": str(MPI_OOB_PORT),
    "PRTE_MCA_oob_tcp_static_ipv6_ports": str(MPI_OOB_PORT),
}
OPENMPI_LABEL = "org.open-mpi.version"
# A DGX Spark's unified memory: 128 GB, of which about 119 GiB are MemTotal (what the weights share with the rest).
SPARK_MEMORY_GIB = 119.0
# On a switch both netdevs of a Spark's cable are in one L2 segment: with Linux's defaults each answers ARP for the
# other's address, a peer may cache the wrong twin's MAC and a ping or NCCL connection bound to one netdev misses its
# replies ("ARP flux"). Each netdev answers and announces only its own address (kernel ip-sysctl documentation).
SYSCTL_FILE = "/etc/sysctl.d/60-dgx-spark-qsfp.conf"
SWITCH_ARP = (("arp_ignore", "1"), ("arp_announce", "2"))

# The formats live with the catalogue; these names stay for the modules that import them from here.
FORMATS = inputs.FORMATS
_is_path = inputs.is_path
_show = inputs.show
Reader = inputs.Reader


class PlanError(ValueError):
    """The inputs do not make a valid plan; ``errors`` has one message per failed rule."""

    def __init__(self, cluster, errors):
        self.cluster = cluster
        self.errors = list(errors)
        super().__init__("cluster %s: %d problem(s) found before anything changed:\n- %s"
                         % (cluster, len(self.errors), "\n- ".join(self.errors)))


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
    head, errors = _head(name, members, host_vars, groups)
    if errors:
        raise PlanError(name, errors)
    return name, [head] + [h for h in members if h != head]


def _head(name, members, host_vars, groups):
    """(the cluster's head, errors)."""
    named = sorted({str(host_vars[h]["specdec_cluster_head"]) for h in members
                    if host_vars.get(h, {}).get("specdec_cluster_head")})
    if len(named) > 1:
        return None, ["specdec_cluster_head of cluster %s: the members name different heads (%s); set it once, on "
                      "the cluster's group" % (name, ", ".join(named))]
    if named:
        if named[0] not in members:
            return None, ["specdec_cluster_head of cluster %s: %s is not a member (members: %s)"
                          % (name, _show(named[0]), ", ".join(members))]
        return named[0], []
    heads = [h for h in members if h in groups.get("spark_head", [])]
    if len(heads) == 1:
        return heads[0], []
    if len(members) == 1:
        return members[0], []
    return None, ["cluster %s (%s) has %s: set specdec_cluster_head on the cluster's group, or put exactly one of "
                  "its hosts in group spark_head" % (name, ", ".join(members), "several hosts in spark_head (%s)"
                                                     % ", ".join(heads) if heads else "no head")]


# ---------------------------------------------------------------------------
# Step 1: the inputs
# ---------------------------------------------------------------------------

class _Plan:
    """One cluster's planning: its inputs, the errors and warnings found so far, and the parts computed."""

    def __init__(self, cluster, nodes, profile, node_vars, facts):
        self.cluster = cluster
        self.nodes = list(nodes)
        self.head = self.nodes[0]
        self.profile = profile or {}
        self.facts = facts
        self.errors = []
        self.warnings = []
        self.per = {}        # each node's settings, once read (step 5)
        self.hostfile = None
        self.qsfp_addresses = []  # every node's, rank order
        if not isinstance(self.profile, dict):
            raise PlanError(cluster, ["specdec_profile: %s is not a mapping (the playbook's vars file sets it)"
                                      % _show(profile)])
        missing = [h for h in self.nodes if not facts.get(h)]
        if missing:
            raise PlanError(cluster, ["%s: no node facts (run dgx_spark.specdec.spark_facts on every node of the "
                                      "cluster first; is the node in the play?)" % ", ".join(missing)])
        # Deprecated aliases take their new names; then the cluster's variables must agree on every node.
        self.vars = {}
        for host in self.nodes:
            self.vars[host], warnings, errors = inputs.canonical(host, node_vars[host])
            self.warnings += warnings
            self.errors += errors
        self.errors += inputs.profile_errors(self.profile)
        self.errors += inputs.scope_conflicts(cluster, self.nodes, self.vars)
        _deprecations(self)
        self.where = "%s (cluster %s)" % (self.head, cluster)
        self.top = Reader(self.where, self.vars[self.head], self.profile, self.errors)

    def node(self, host):
        """The reader of one node's own (node-scope) variables."""
        return Reader(host, self.vars[host], self.profile, self.errors)

    def fail(self, message):
        self.errors.append(message)

    def check(self):
        if self.errors:
            raise PlanError(self.cluster, self.errors)


def _deprecations(plan):
    for host in plan.nodes:
        variables = plan.vars[host]
        for item in inputs.INPUTS:
            if not item.deprecated or variables.get(item.name) in (None, "", []):
                continue
            if item.deprecated == "ignored":
                plan.warnings.append("%s is deprecated and ignored (set on %s): the plan (dgx_spark.specdec."
                                     "specdec_plan) derives it" % (item.name, host))
                continue
            value = variables[item.name]
            given = [str(h) for h in value] if isinstance(value, list) else value
            if given != plan.nodes:
                plan.fail("%s on %s: %s differs from the cluster's nodes, head first (%s); remove it: the cluster "
                          "(specdec_cluster, specdec_cluster_head or group spark_head) defines the nodes"
                          % (item.name, host, _show(value), ", ".join(plan.nodes)))
            else:
                plan.warnings.append("%s is deprecated (set on %s): the cluster defines the nodes, head first; "
                                     "remove it" % (item.name, host))


# ---------------------------------------------------------------------------
# Step 2: what is served (cluster-wide)
# ---------------------------------------------------------------------------

class _Served:
    """What the cluster serves: read once, where the head is."""

    __slots__ = ("topology", "pp_size", "openmpi",
                 "frontend", "triton", "triton_release", "version", "multinode", "method", "speculative",
                 "needs_draft", "model", "draft_model", "draft_dir", "revisions", "max_draft_len", "options", "tp_size", "flags",
                 "trust_remote_code", "bind", "port", "ports", "extra_args", "mpi_export", "allowed", "encodings",
                 "triton_config", "api", "prompt", "max_tokens", "requests", "image", "container", "options_content",
                 "metrics", "metrics_source", "metrics_port", "liveness")


def _served(plan):
    top = plan.top
    s = _Served()
    s.frontend = top.get("specdec_serve_frontend")
    s.triton = s.frontend == "triton"
    s.triton_release, s.version = _release(plan, s.triton)
    s.multinode = top.get("trtllm_container_mode") == "multinode"
    s.image = _image(plan, s)
    # The container settings every node shares (the node's own are read in _node_settings).
    s.container = {key: top.get("trtllm_container_" + key)
                   for key in ("env", "cuda_env", "install_sshd", "mpi_firewall", "ssh_port")}
    if s.triton and s.multinode:
        top.fail("specdec_serve_frontend", s.frontend, "trtllm-serve for a multinode profile (the Triton LLM API "
                 "profiles serve on one Spark)")
    s.method = top.get("specdec_serve_method")
    s.speculative = s.method not in (None, "none")
    s.needs_draft = s.method in ("eagle3", "draft_target")
    s.model = top.get("specdec_serve_model")
    s.draft_model, s.draft_dir = _draft(top, s.needs_draft)
    s.revisions = {"model": top.get("specdec_serve_model_revision"), "draft": top.get("specdec_serve_draft_revision")}
    s.max_draft_len = top.get("specdec_serve_max_draft_len") if s.speculative else None
    s.options = trt.merge(top.get("specdec_serve_options"), top.get("specdec_serve_extra_options"))
    s.pp_size = top.get("specdec_serve_pp_size") or 1
    # On a cluster the split defaults to one tensor-parallel rank per node.
    s.tp_size = top.get("specdec_serve_tp_size", default=max(1, len(plan.nodes) // s.pp_size) if s.multinode else None)
    s.topology = top.get("specdec_topology") or "direct"
    s.openmpi = 4
    s.flags = {flag: top.get("specdec_serve_" + flag) for flag in trt.SERVE_FLAGS}
    s.trust_remote_code = top.get("specdec_serve_trust_remote_code")
    s.bind = top.get("specdec_serve_host")
    s.port = top.get("specdec_serve_port")
    s.extra_args = top.get("specdec_serve_extra_args")
    s.mpi_export = top.get("specdec_serve_mpi_export")
    s.allowed = _allow_list(plan, s.bind)
    s.liveness = top.get("specdec_serve_liveness_timeout")
    s.encodings = _encodings(top)
    _endpoint_settings(top, s)
    _metrics_settings(top, s)
    return s


def _metrics_settings(top, s):
    """Who serves the Prometheus metrics: trtllm-serve itself, or the collection's exporter next to it (releases
    without the speculative-decoding metrics). Triton's backend serves its own metrics port instead."""
    s.metrics = bool(top.get("specdec_serve_metrics")) and not s.triton
    s.metrics_source = trt.metrics_source(s.version) if s.metrics and s.version else None
    s.metrics_port = None
    if s.metrics_source == "exporter":
        s.metrics_port = top.get("specdec_serve_metrics_port")
        if s.metrics_port is not None and s.metrics_port == s.port:
            top.fail("specdec_serve_metrics_port", s.metrics_port, "a port other than specdec_serve_port (%s)" % s.port)
        elif s.metrics_port is not None:
            s.ports["exporter"] = s.metrics_port


def _release(plan, triton):
    """(Triton release or None, the TensorRT-LLM release or None) - the release judges the options."""
    top = plan.top
    triton_release = None
    version = top.raw("specdec_serve_trtllm_version")
    field = "specdec_serve_trtllm_version on %s" % plan.where
    if triton:
        # The image is tritonserver:<release>-trtllm-python-py3; its TensorRT-LLM release judges model.yaml.
        triton_release = str(top.raw("specdec_serve_triton_release") or "")
        try:
            shipped = trt.triton_trtllm_version(triton_release)
        except ValueError as exc:
            shipped = None
            if version is None:
                plan.fail("%s on %s" % (exc, plan.where))
        if version is None and shipped:
            version = shipped
            field = "the TensorRT-LLM release of Triton %s (specdec_serve_triton_release on %s)" % (
                triton_release, plan.where)
        elif shipped and str(version) != shipped:
            plan.warnings.append("specdec_serve_trtllm_version on %s: %s, but Triton %s ships TensorRT-LLM %s (right "
                                 "for an image built with another release)" % (plan.where, version, triton_release,
                                                                               shipped))
    if version is None:
        if not triton:
            plan.fail("specdec_serve_trtllm_version on %s: not set (known releases: %s)"
                      % (plan.where, ", ".join(rel.SUPPORTED_VERSIONS)))
        return triton_release, None
    if str(version) not in rel.SUPPORTED_VERSIONS:
        plan.fail(trt.unknown_release_message(version, field))
        return triton_release, None
    version = str(version)
    # A profile names the release its NVIDIA playbook was written for and the ones NVIDIA runs it on since.
    profile = plan.profile
    known = [str(profile.get("trtllm_version"))] + [str(r) for r in profile.get("releases") or ()]
    if profile.get("trtllm_version") and version not in known:
        plan.warnings.append("specdec_serve_trtllm_version on %s: %s; the profile's NVIDIA playbook runs on %s (its "
                             "options are checked for %s all the same)" % (plan.where, version, ", ".join(known),
                                                                           version))
    return triton_release, version


def _draft(top, needs_draft):
    """(draft model, draft directory): a draft given as a path inside the container is used where it is; a
    Hugging Face id is downloaded to the draft directory, under /models."""
    if not needs_draft:
        return None, None
    draft_model = top.get("specdec_serve_draft_model")
    if draft_model and _is_path(draft_model):
        return draft_model, draft_model
    draft_dir = top.get("specdec_serve_draft_dir")
    if draft_dir and not (draft_dir.startswith(MODELS_MOUNT + "/") and len(draft_dir.rstrip("/")) > len(MODELS_MOUNT)):
        top.fail("specdec_serve_draft_dir", draft_dir, "a directory under the %s mount (e.g. /models/NAME/)"
                 % MODELS_MOUNT)
        draft_dir = None
    return draft_model, draft_dir


def _allow_list(plan, bind):
    """Who may reach the endpoint: nobody is filtered unless an allow-list is given."""
    allowed, bad = fw.normalize_clients(plan.top.get("specdec_serve_allowed_clients"))
    for value in bad:
        plan.top.fail("specdec_serve_allowed_clients item", value,
                      "an IPv4 or IPv6 address or network (A.B.C.D, A.B.C.D/N, X:Y::Z or X:Y::/N)")
    if allowed and loopback_only(bind):
        plan.warnings.append("specdec_serve_allowed_clients on %s: the server listens on %s only, so no other client "
                             "can reach it anyway (set specdec_serve_host: 0.0.0.0 to serve the allowed clients)"
                             % (plan.where, bind))
    if allowed and not (plan.facts[plan.head].get("tools") or {}).get("iptables"):
        plan.fail("specdec_serve_allowed_clients on %s: the allow-list is enforced with iptables, which is not "
                  "installed on %s (install the iptables package, or leave the list empty)" % (plan.where, plan.head))
    ipv6 = ":" in (bind or "")
    if allowed and ipv6 and not (plan.facts[plan.head].get("tools") or {}).get("ip6tables"):
        plan.fail("specdec_serve_host on %s: %s listens on IPv6 too, and %s has no ip6tables to hold the allow-list "
                  "there (install ip6tables, or set specdec_serve_host: 0.0.0.0)" % (plan.where, bind, plan.head))
    return allowed


def _encodings(top):
    """gpt-oss tokenizes with openai_harmony, which reads its tiktoken encodings from TIKTOKEN_ENCODINGS_BASE:
    (base URL, checksums) when the profile fetches them, else None."""
    if not top.get("specdec_serve_tiktoken_encodings"):
        return None
    encodings = (top.get("specdec_serve_tiktoken_base_url"),
                 top.get("specdec_serve_tiktoken_sha256", default=dict(pre.TIKTOKEN_SHA256)))
    for field, value, accepted in pre.encodings_errors(*encodings):
        top.fail(field, value, accepted)
    return encodings


def _endpoint_settings(top, s):
    """The ports, Triton's settings and the validation request."""
    s.ports = {"http": s.port}
    s.triton_config = None
    if s.triton:
        s.api = top.get("specdec_serve_validate_api", default="triton", choices=("triton",))
        s.ports.update(grpc=top.get("specdec_serve_triton_grpc_port"),
                       metrics=top.get("specdec_serve_triton_metrics_port"))
        s.triton_config = top.get("specdec_serve_triton_config")
        if None not in s.ports.values() and len(set(s.ports.values())) < 3:
            top.fail("specdec_serve_triton_metrics_port", s.ports["metrics"], "three different ports for HTTP "
                     "(specdec_serve_port), gRPC and metrics (now %(http)s, %(grpc)s, %(metrics)s)" % s.ports)
        if s.bind not in ("0.0.0.0", "::"):
            top.fail("specdec_serve_host", s.bind, "0.0.0.0 with the Triton frontend (launch_triton_server.py has "
                     "no address option: Triton listens on every address)")
        if s.extra_args:
            top.fail("specdec_serve_extra_args", s.extra_args, "none with the Triton frontend (its LLM API arguments "
                     "go in model.yaml: specdec_serve_options)")
    else:
        s.api = top.get("specdec_serve_validate_api", default="completions", choices=("completions", "chat", "both"))
    s.prompt = top.get("specdec_serve_validate_prompt")
    s.max_tokens = top.get("specdec_serve_validate_max_tokens")
    s.requests = top.get("specdec_serve_validate_requests")


# ---------------------------------------------------------------------------
# Steps 3 and 4: the split over the nodes, the options file
# ---------------------------------------------------------------------------

def _check_topology(plan, s):
    """The split over the nodes is one TensorRT-LLM runs: one rank per node, tp x pp = N, tp divides the model's
    heads, pp = 1 with speculative decoding, experts split within tp, and the weights fit in N Sparks."""
    nodes = plan.nodes
    count = len(nodes)
    top = plan.top
    if not s.multinode:
        if s.tp_size is not None and s.tp_size != 1:
            top.fail("specdec_serve_tp_size", s.tp_size, "1 on a single Spark (one GPU); use the two-Spark "
                     "playbook for --tp_size 2")
        if s.pp_size != 1:
            top.fail("specdec_serve_pp_size", s.pp_size, "1 on a single Spark (one GPU)")
        return
    if count < 2:
        plan.fail("cluster %s: a multinode profile needs at least two Sparks, found %s"
                  % (plan.cluster, ", ".join(nodes)))
        return
    if s.tp_size is None:
        return
    tp, pp = s.tp_size, s.pp_size
    where = "cluster %s (%d nodes: %s)" % (plan.cluster, count, ", ".join(nodes))
    heads, kv_heads, source = _model_heads(plan, s)
    weights = _weights_gib(plan)
    fits = _working_sizes(heads, kv_heads, weights) if heads or weights else []
    hint = (" (with this model, tp = the number of nodes works for %s nodes)" % _or(fits)) if fits else ""
    before = len(plan.errors)
    if tp * pp != count:
        top.fail("specdec_serve_tp_size", tp, "tp_size x pp_size (%d x %d) = the number of nodes of %s: mpirun starts "
                 "one rank per node and trtllm-serve's world size is tp x pp%s" % (tp, pp, where, hint))
    if pp > 1 and s.speculative:
        top.fail("specdec_serve_pp_size", pp, "1 with speculative decoding (method %s): TensorRT-LLM's "
                 "feature-combination matrix has no speculative decoding with pipeline parallelism (it stops with "
                 "NotImplementedError at start), so %s splits the model by tensor parallelism only, tp_size %d"
                 % (s.method, where, count))
    if heads and heads % tp:
        if fits and s.speculative:
            works = "with speculative decoding (pp 1) the cluster needs %s nodes" % _or(fits)
        else:
            works = "accepted: a tp_size that divides %d" % heads
        plan.fail("specdec_serve_tp_size on %s: %d does not divide the %d attention heads of %s (%s): TensorRT-LLM "
                  "splits the heads evenly over the tensor-parallel ranks; %s"
                  % (plan.where, tp, heads, s.model, source, works))
    elif kv_heads and kv_heads % tp and tp % kv_heads:
        plan.fail("specdec_serve_tp_size on %s: %d neither divides the %d key-value heads of %s (%s) nor is a multiple "
                  "of them (TensorRT-LLM replicates key-value heads only when there are fewer than ranks)%s"
                  % (plan.where, tp, kv_heads, s.model, source, hint))
    if weights is not None and tp * pp == count and weights / count > SPARK_MEMORY_GIB:
        plan.fail("specdec_serve_weights_gib on %s: the weights of %s (%d GiB) do not fit in the %.0f GiB of "
                  "unified memory of %d Sparks (%.0f GiB each): the cluster needs at least %d Sparks%s"
                  % (plan.where, s.model, round(weights), SPARK_MEMORY_GIB * count, count, SPARK_MEMORY_GIB,
                     math.ceil(weights / SPARK_MEMORY_GIB), (" (%s work with its heads)" % _or(fits)) if fits else ""))
    ep = s.flags.get("ep_size")
    # The experts are judged against a tensor-parallel size that is itself right (one mistake, one message).
    if ep and (ep > tp or tp % ep) and len(plan.errors) == before:
        top.fail("specdec_serve_ep_size", ep, "a divisor of tp_size %d: the experts are split within the "
                 "tensor-parallel ranks (moe_tp x moe_ep = tp), --ep_size adds no ranks" % tp)


def _or(values):
    values = [str(v) for v in values]
    return values[0] if len(values) == 1 else "%s or %s" % (", ".join(values[:-1]), values[-1])


def _model_heads(plan, s):
    """(attention heads, key-value heads, where they come from): the downloaded config.json on the head once it is
    there (spark_facts reads it), else the profile's or the inventory's figures."""
    declared = (plan.top.get("specdec_serve_attention_heads"), plan.top.get("specdec_serve_kv_heads"))
    config = ((plan.facts[plan.head].get("models") or {}).get(s.model or "") or {})
    found = (config.get("num_attention_heads"), config.get("num_key_value_heads"))
    if isinstance(found[0], int) and not isinstance(found[0], bool):
        if declared[0] and declared != found:
            plan.warnings.append("specdec_serve_attention_heads on %s: %s/%s, but the config.json of %s on %s says "
                                 "%s/%s (attention/key-value heads); the config.json wins"
                                 % (plan.where, declared[0], declared[1], s.model, plan.head, found[0], found[1]))
        return found[0], found[1] if isinstance(found[1], int) else None, "its config.json on %s" % plan.head
    return declared[0], declared[1], "specdec_serve_attention_heads, until its config.json is downloaded"


def _weights_gib(plan):
    """The head's weights_gib for the split's rules. Read aside: a bad value is reported once, by the head's memory
    settings (step 5)."""
    value = Reader(plan.head, plan.vars[plan.head], plan.profile, []).get("specdec_serve_weights_gib")
    return float(value) if value else None


def _working_sizes(heads, kv_heads, weights):
    """The node counts (2 to 8, tp = the count) whose split the model's heads and memory allow."""
    out = []
    for count in range(2, 9):
        if heads and heads % count:
            continue
        if kv_heads and kv_heads % count and count % kv_heads:
            continue
        if weights and weights / count > SPARK_MEMORY_GIB:
            continue
        out.append(count)
    return out


def _openmpi(plan, s):
    """The Open MPI major of the image: from the image on the nodes (its environment or label), else the release's."""
    found = {}
    for host in plan.nodes:
        image = (plan.facts[host].get("images") or {}).get(s.image or "") or {}
        major = _image_openmpi(image)
        if major:
            found.setdefault(major, []).append(host)
    if len(found) > 1:
        majors = " and ".join(str(m) for m in sorted(found))
        where = "; ".join("%d on %s" % (m, ", ".join(h)) for m, h in sorted(found.items()))
        plan.fail("trtllm_container_image of %s: %s carries Open MPI %s on the nodes (%s): the nodes hold different "
                  "builds of it; pull it again on each node" % (plan.where, s.image, majors, where))
    if found:
        return sorted(found)[0]
    return rel.openmpi_major(s.version) if s.version else 4


def _image_openmpi(image):
    env = image.get("env") or {}
    label = str((image.get("labels") or {}).get(OPENMPI_LABEL) or "")
    if label[:1].isdigit():
        return int(label.split(".", maxsplit=1)[0])
    if env.get("PRTE_PREFIX"):
        return 5
    if env.get("OMPI_VERSION") or env.get("OPENMPI_VERSION"):
        return int(str(env.get("OMPI_VERSION") or env.get("OPENMPI_VERSION")).split(".", maxsplit=1)[0])
    return None


def _options(plan, s):
    """The options file (or Triton's model.yaml), rendered and validated for the release; None when its inputs
    failed their own checks (one mistake, one message)."""
    if not (s.version and s.method and (s.draft_dir or not s.needs_draft) and (s.max_draft_len or not s.speculative)):
        return None
    draft = s.draft_dir if s.needs_draft else None
    length = s.max_draft_len if s.speculative else None
    try:
        if s.triton:
            llm_args = trt.merge(trt.flags_as_llm_args(s.flags, s.trust_remote_code), s.options)
            content, validated = trt.triton_model_yaml(
                s.version, s.model, method=s.method, draft_model=draft, max_draft_len=length, options=llm_args,
                tensor_parallel_size=s.tp_size or 1, pipeline_parallel_size=1, triton_config=s.triton_config)
        else:
            options = s.options
            if s.revisions["model"] and not _is_path(s.model or ""):
                # trtllm-serve reads the model from the cache at this revision (BaseLlmArgs.revision).
                options = trt.merge({"revision": s.revisions["model"]}, options)
            if s.metrics:
                off = sorted(key for key in trt.METRICS_OPTIONS if (options or {}).get(key) is False)
                if off:
                    plan.errors.extend("specdec_serve_options on %s: %s: false turns off the metrics that "
                                       "specdec_serve_metrics (true) serves; set specdec_serve_metrics: false to serve "
                                       "without them" % (plan.where, key) for key in off)
                    return None
                options = trt.merge(dict(trt.METRICS_OPTIONS), options)
            conflicts = trt.flag_conflicts(s.version, s.flags, options)
            planned = {"tensor_parallel_size": s.tp_size or 1, "pipeline_parallel_size": s.pp_size or 1}
            overrides = trt.planned_overrides(s.extra_args, s.options, planned)
            plan.errors.extend("%s on %s: %s" % (field, plan.where, message) for field, message in overrides)
            if conflicts or overrides:
                plan.errors.extend("specdec_serve_options on %s: %s" % (plan.where, c) for c in conflicts)
                return None
            content, validated = trt.options_file(s.version, s.method, draft, length, options,
                                                  flags=trt.flags_as_llm_args(s.flags))
    except trt.OptionsError as exc:
        what = ("Triton's model.yaml (specdec_serve_model, specdec_serve_options, specdec_serve_triton_config and "
                "the speculative method)" if s.triton else
                "options file (specdec_serve_options, specdec_serve_extra_options and the speculative method)")
        plan.errors.extend("%s for TensorRT-LLM %s: %s" % (what, s.version, e) for e in exc.errors)
        return None
    plan.warnings.extend("%s: %s" % ("model.yaml" if s.triton else "options file", w) for w in validated.warnings)
    return content


# ---------------------------------------------------------------------------
# The plans
# ---------------------------------------------------------------------------

def plan_network(cluster, nodes, node_vars, facts):
    """Only the QSFP link of a cluster (netplan documents and addresses) -> ({host: node plan}, warnings)."""
    plan = _Plan(cluster, nodes, {}, node_vars, facts)
    if len(nodes) == 1:
        # A fleet's one-Spark cluster has no cable: nothing to do there, so a fleet's link run (AWX's workflow) goes on.
        plan.warnings.append("cluster %s: one Spark (%s), no QSFP link to configure" % (cluster, nodes[0]))
        return {nodes[0]: dict(_identity(plan, nodes[0], 0, True), netplan=None, container=None, hostfile=None,
                               serve=None)}, plan.warnings
    if len(nodes) < 2:
        plan.fail("cluster %s: the QSFP link joins two or more Sparks, found none" % cluster)
    topology = plan.top.get("specdec_topology") or "direct"
    links = _plan_links(plan, need_addresses=False, topology=topology) if not plan.errors else {}
    plan.check()
    plans = {}
    for rank, host in enumerate(plan.nodes):
        links[host].pop("node")
        plans[host] = dict(_identity(plan, host, rank, True), netplan=links[host], container=None, hostfile=None,
                           serve=None)
    return plans, plan.warnings


def plan_cluster(cluster, nodes, profile, node_vars, facts):
    """Plan of every node of one cluster -> ({host: node plan}, warnings). Raises PlanError.

    ``nodes``: rank order (see ``cluster_members``); ``node_vars``: {host: variables}; ``facts``:
    {host: the ``spark`` fact of ``spark_facts``}. The Hugging Face token never reaches the plan: the
    containers always name its file (HF_TOKEN_PATH), which holds the token where the node has one.
    """
    plan = _Plan(cluster, nodes, profile, node_vars, facts)
    s = _served(plan)
    _check_topology(plan, s)
    s.openmpi = _openmpi(plan, s) if s.multinode else None
    options = s.options_content = _options(plan, s)
    per = {host: _node_settings(plan, s, host, rank) for rank, host in enumerate(plan.nodes)}
    links = _plan_links(plan, topology=s.topology) if s.multinode and len(plan.nodes) >= 2 else {}
    plan.check()
    for host, link in links.items():
        per[host].update(link.pop("node"))
    for node in per.values():  # what several of a node's parts use, computed once
        node["tiktoken"] = pre.encodings_spec(node["config_dir"], CONFIG_MOUNT, *s.encodings) if s.encodings else None
        node["downloads"], node["waits"] = _downloads(plan, node, s)
    plan.check()  # a draft directory holding another model
    plan.qsfp_addresses = [a for host in plan.nodes for a in per[host]["qsfp_addresses"]]
    plan.per = per
    plan.hostfile = hostfile = _hostfile(plan, per) if s.multinode else None
    # What every node's memory check approves before the server may start (the head waits for it on every node): a
    # new server waits for its check, a restart after a reboot finds it done.
    plan.approval = "memory checked for %s\n" % sha256(json.dumps(
        [s.image, options, hostfile, _server_argv(s)[0] if not s.triton else s.model,
         sorted(d["marker_file"]["content"] for n in per.values() for d in n["downloads"])], sort_keys=True))
    plans = {}
    for rank, host in enumerate(plan.nodes):
        node = per[host]
        node["firewall"] = _firewall(plan, s, node)
        command, entry, env = _command(plan, s, node)
        plans[host] = dict(_identity(plan, host, rank, s.multinode), trtllm_version=s.version,
                           netplan=links.get(host),
                           container=_container_part(plan, s, node, entry, env),
                           hostfile=_hostfile_part(plan, node, hostfile) if s.multinode else None,
                           serve=_serve_part(plan, s, node, command, env),
                           metrics=_metrics_part(plan, s, node))
        plans[host]["serve"]["current"] = plans[host]["container"]["current"]
    _changes(plan, s, plans)
    return plans, plan.warnings


def plan_teardown(cluster, nodes, node_vars, facts):
    """What teardown removes on each node -> ({host: node plan with "teardown"}, warnings).

    ``teardown``: the collection's containers on the node (found by their labels: whatever profile or name started
    them) and the record of what the collection created there (the node's module spark_cleanup removes exactly that;
    the models only when asked).
    """
    plan = _Plan(cluster, nodes, {}, node_vars, facts)
    plans = {}
    for rank, host in enumerate(plan.nodes):
        plans[host] = dict(_identity(plan, host, rank, len(plan.nodes) > 1), netplan=None, container=None,
                           hostfile=None, serve=None,
                           teardown={"containers": sorted((facts[host].get("containers") or {}).keys()),
                                     "record": records.RECORD},
                           changes=[], apply=False)
    plan.check()
    return plans, plan.warnings


def _identity(plan, host, rank, multinode):
    return {"cluster": plan.cluster, "nodes": list(plan.nodes), "head": plan.head, "rank": rank,
            "is_head": rank == 0, "multinode": multinode}


# ---------------------------------------------------------------------------
# Step 5: each node's settings, the QSFP links
# ---------------------------------------------------------------------------

def _node_settings(plan, s, host, rank):
    """One node's container settings, checked, with its facts (home, image, runtimes)."""
    r = plan.node(host)
    spark = plan.facts[host]
    login_user = spark.get("login_user") or ""
    home = spark.get("home") or ""
    default_name = CONTAINER_NAMES["triton" if s.triton_release else "multinode" if s.multinode else "single"]
    name = r.get("trtllm_container_name", default=default_name) or default_name
    image = s.image
    pull = r.get("trtllm_container_pull")
    _check_image(plan, host, image, pull, s.version)
    network_mode = r.get("trtllm_container_network_mode") or "host"
    memlock = r.get("trtllm_container_memlock")
    if memlock == 0:
        r.fail("trtllm_container_memlock", 0, "-1 (unlimited) or a positive number of bytes")
    if not inputs.USER.match(login_user):
        plan.fail("login user on %s: %s is not %s" % (host, _show(login_user), FORMATS["user"][1]))
        home = "/nonexistent"  # its directories are not checked: the one mistake is the user
    settings = {
        "host": host,
        "rank": rank,
        "name": name,
        "image": image,
        "pull": pull,
        "login_user": login_user,
        "gpu": _gpu(r, spark),
        "network_mode": network_mode,
        "own_network": network_mode not in ("host", "none") and not network_mode.startswith("container:"),
        "published_ports": r.get("trtllm_container_published_ports"),
        "ipc_mode": r.get("trtllm_container_ipc_mode") or "host",
        "memlock": memlock if memlock is not None else -1,
        "stack": r.get("trtllm_container_stack") or 67108864,
        "restart_policy": _restart_policy(r) or "unless-stopped",
        "env": s.container["env"],
        "devices": r.get("trtllm_container_devices"),
        "install_sshd": s.container["install_sshd"],
        "mpi_firewall": s.container["mpi_firewall"],
        "ssh_port": s.container["ssh_port"] or 2233,
        "cuda_env": s.container["cuda_env"],
        "slots": r.get("openmpi_hostfile_slots") or 1,
        "qsfp_interfaces": [],
        "qsfp_addresses": [],
        "hostfile_address": None,
        "links": [],
        # `huggingface-cli login` (NVIDIA's older single-Spark guide) keeps the token in the user's HF cache.
        "hf_token_source": r.get("trtllm_container_hf_token_source"),
        "nccl_ib_hca": r.get("trtllm_container_nccl_ib_hca",
                             default=list((spark.get("qsfp") or {}).get("rdma") or [])),
        "memory": _memory_settings(r),
        # The container of that name the node runs already (spark_facts), empty when none.
        "running": (spark.get("containers") or {}).get(name) or {},
    }
    if s.multinode and spark.get("infiniband") and "/dev/infiniband:/dev/infiniband" not in settings["devices"]:
        settings["devices"].append("/dev/infiniband:/dev/infiniband")
    if rank == 0 and settings["own_network"] and s.metrics_source == "exporter" and s.metrics_port:
        # The exporter shares the server's network namespace: its port is published with the server's.
        port = "%d:%d" % (s.metrics_port, s.metrics_port)
        settings["published_ports"] = list(settings["published_ports"] or []) + [port]
    settings.update(_dirs(r, home))
    managed = [("trtllm_container_" + key, settings[key]) for key in ("hf_cache_dir", "models_dir", "config_dir")]
    for variable, value, accepted in paths.problems(managed, home):
        r.fail(variable, value, accepted)
    return settings


def _dirs(r, home):
    return {key: r.get("trtllm_container_" + key, default=default) or default
            for key, default in (("hf_cache_dir", home + "/.cache/huggingface"), ("models_dir", home + "/models"),
                                 ("config_dir", home + "/.dgx-spark"))}


def _gpu(r, spark):
    gpus = r.get("trtllm_container_gpus")
    runtimes = (spark.get("docker") or {}).get("runtimes") or []
    return gpus == "always" or (gpus == "auto" and "nvidia" in runtimes)


def _restart_policy(r):
    # YAML reads a bare `no` as false: both mean Docker would not bring the server back.
    if str(r.vars.get("trtllm_container_restart_policy")) in ("no", "False"):
        r.fail("trtllm_container_restart_policy", "no", "always, unless-stopped or on-failure: Docker supervises the "
               "server, with 'no' it would not come back after a crash or a reboot")
        return None
    return r.get("trtllm_container_restart_policy")


def _check_image(plan, host, image, pull, version):
    spark = plan.facts[host]
    docker = spark.get("docker") or {}
    if not docker.get("ok", False):
        plan.fail("docker on %s: the engine does not answer (%s); install and start Docker first"
                  % (host, docker.get("error") or "unknown error"))
    if not image:
        return
    found = (spark.get("images") or {}).get(image) or {}
    if not found.get("present") and not pull:
        plan.fail("trtllm_container_image on %s: %s is not on the node and trtllm_container_pull is false "
                  "(accepted: an image present on the node, or trtllm_container_pull: true)" % (host, image))
    reported = _image_version(found) if found.get("present") else None
    if reported and version and reported != version:
        plan.fail("trtllm_container_image on %s: %s reports TensorRT-LLM %s but specdec_serve_trtllm_version is %s "
                  "(the options would be checked for the wrong release); make them agree"
                  % (host, image, reported, version))


def _image(plan, s):
    """The image reference: trtllm_container_image, else repository:tag (the tag follows the release).

    With the Triton frontend: trtllm_container_triton_repository:<release>-trtllm-python-py3.
    """
    top = plan.top
    given = top.get("trtllm_container_image", required=False)
    if given:
        return given
    if s.triton_release:
        repository = top.get("trtllm_container_triton_repository")
        default_tag = "%s-trtllm-python-py3" % s.triton_release
    else:
        repository = top.get("trtllm_container_image_repository")
        default_tag = rel.image(s.version, repository)["tag"] if s.version else None
    if not default_tag and not top.raw("trtllm_container_image_tag"):
        return None  # the tag follows the release, whose own check failed
    # A profile may name its guide's own tag (spark-single-gpu-dev); the inventory's wins.
    tag = top.get("trtllm_container_image_tag", default=default_tag)
    if repository and tag:
        image = "%s:%s" % (repository, tag)
        if FORMATS["image"][0](image):
            return image
        top.fail("trtllm_container_image_repository", repository, "a repository that takes a tag")
    return None


def _memory_settings(r):
    """One node's memory pre-flight and load guard settings (UMA: the GPU's memory is the system's)."""
    return {
        "check": r.get("specdec_serve_memory_check") or "fail",
        "headroom_gib": r.get("specdec_serve_memory_headroom_gib"),
        "weights_gib": r.get("specdec_serve_weights_gib"),
        # NVIDIA's guides flush the page cache when UMA memory runs short; owners do it before every launch.
        "drop_caches": r.get("specdec_serve_drop_caches"),
        "guard": r.get("specdec_serve_memory_guard"),
        "guard_below_gib": r.get("specdec_serve_memory_guard_below_gib"),
        "guard_timeout": r.get("specdec_serve_memory_guard_timeout"),
    }


def _plan_links(plan, need_addresses=True, topology="direct"):
    """Netplan documents, QSFP addresses and hostfile addresses of a multi-node cluster.

    ``need_addresses``: the serving plan needs every node's QSFP addresses now (sshd, the hostfile); with the
    link-local or DHCP plan they exist only once the link is applied, so plan the link alone first (qsfp_link.yml).
    """
    top = plan.top
    settings = {key: top.get("netplan_qsfp_" + key) for key in (
        "plan", "preset", "interfaces", "mtu", "source_routing", "routing_table_base", "allow_disruptive", "file",
        "subnets")}
    settings["topology"] = topology
    if settings["file"] and paths.netplan_problem(settings["file"]):
        top.fail("netplan_qsfp_file", settings["file"], paths.netplan_problem(settings["file"]))
        return {}
    if None in (settings["plan"], settings["preset"], settings["routing_table_base"], settings["file"]):
        return {}
    per_node, link_errors = net.plan_links(
        [_link_inputs(plan, host) for host in plan.nodes], plan=settings["plan"], preset=settings["preset"],
        interfaces=tuple(settings["interfaces"]), mtu=settings["mtu"], source_routing=settings["source_routing"],
        table_base=settings["routing_table_base"], allow_disruptive=settings["allow_disruptive"], topology=topology,
        subnets=settings["subnets"], cluster=plan.cluster)
    plan.errors.extend(link_errors)
    if link_errors:
        return {}
    # Both ends of each link (on a switch every other Spark, in a ring the neighbours): the pre-flight stops when
    # their MTUs would differ after this run; spark_link checks them again after netplan (MTU, a ping with
    # don't-fragment at that size, the link speed).
    pairs = pre.pair_links({h: per_node[h]["entries"] for h in plan.nodes})
    before = len(plan.errors)
    out = {}
    for host in plan.nodes:
        part = _node_link(plan, host, per_node[host], settings, need_addresses, pairs.get(host, []))
        if part:
            out[host] = part
    if len(plan.errors) > before:
        return out
    applies = {h: not out[h]["up_to_date"] or bool(out[h]["missing"]) for h in out}
    plan.errors.extend(pre.mtu_errors(pairs, {h: plan.facts[h].get("mtu") or {} for h in out}, settings["mtu"],
                                      applies))
    for host in out:
        out[host]["mtu"] = settings["mtu"]
        out[host]["topology"] = topology
        out[host]["links"] = [{"iface": link["iface"], "address": link["address"], "peer": link["peer"],
                               "peer_address": link["peer_address"], "mtu": settings["mtu"]}
                              for link in pairs.get(host, [])]
    return out


def _sysctl_part(plan, host, ifaces):
    """The ARP settings of a switch node's QSFP netdevs: the file that keeps them across reboots, and whether the
    node has the file and the values already (spark_facts read both)."""
    settings = {"net.ipv4.conf.%s.%s" % (iface, name): value for iface in ifaces for name, value in SWITCH_ARP}
    content = "\n".join(["# Managed by dgx_spark.specdec (netplan_qsfp): each QSFP netdev of this Spark answers and "
                         "announces", "# only its own address (both are on one switch)."]
                        + ["%s=%s" % item for item in sorted(settings.items())]) + "\n"
    have = plan.facts[host].get("sysctl") or {}
    live = have.get("values") or {}
    return {"file": SYSCTL_FILE, "content": content, "settings": settings,
            "up_to_date": have.get("file") == sha256(content) and all(live.get(k) == v for k, v in settings.items())}


def _toward(links, peer):
    """This node's address on its link to ``peer`` (a ring's nodes reach each other on their own cable), or None."""
    for link in links:
        if link["peer"] == peer:
            return link["address"]
    return None


def _link_inputs(plan, host):
    """What net.plan_links needs of one node: its Up ports, addresses and management path."""
    spark = plan.facts[host]
    qsfp = spark.get("qsfp") or {}
    r = plan.node(host)
    addresses = r.get("netplan_qsfp_addresses")
    if not isinstance(addresses, dict):
        plan.fail("netplan_qsfp_addresses on %s: %s is not a mapping of QSFP netdev to A.B.C.D/N"
                  % (host, _show(addresses)))
        addresses = {}
    management = r.get("netplan_qsfp_management_address", required=False) or ""
    if not management:
        candidate = str(plan.vars[host].get("ansible_host") or "")
        management = candidate if inputs.is_ip(candidate) else (spark.get("default_ipv4") or {}).get("address", "")
    return {
        "name": host,
        "up": list(qsfp.get("up") or []),
        "up_source": qsfp.get("source") or "ibdev2netdev",
        "addresses": addresses,
        "current": spark.get("ipv4") or {},
        "management_address": management,
        "default_interface": (spark.get("default_ipv4") or {}).get("interface", ""),
    }


def _node_link(plan, host, planned, settings, need_addresses, links):
    """One node's netplan part, and (under "node") the addresses its container and hostfile use.

    The hostfile names each node by its address on the link to the head, where mpirun runs (on a switch or a pair
    the first QSFP address; in a ring the address on the cable to the head)."""
    r = plan.node(host)
    ifaces = r.get("trtllm_container_qsfp_interfaces", default=planned["up"])
    addresses = r.get("trtllm_container_qsfp_addresses", default=[]) or planned["addresses"]
    if not addresses and need_addresses:
        plan.fail("QSFP addresses of %s: none yet on %s (netplan_qsfp_plan=%s assigns them when the link is "
                  "applied): run playbooks/qsfp_link.yml first, or use the addresses plan"
                  % (host, ", ".join(planned["up"]), settings["plan"]))
        return None
    toward_head = _toward(links, plan.head) if host != plan.head else None
    hostfile_address = r.get("openmpi_hostfile_address", default=toward_head or (addresses[0] if addresses else None),
                             required=need_addresses)
    if hostfile_address and hostfile_address not in addresses:
        r.fail("openmpi_hostfile_address", hostfile_address,
               "one of this node's QSFP addresses (%s): mpirun hangs when the hostfile IPs differ from the interface "
               "IPs" % ", ".join(addresses))
    sysctl = _sysctl_part(plan, host, planned["up"]) if settings.get("topology") == "switch" else None
    installed = (plan.facts[host].get("netplan") or {}).get(settings["file"]) or {}
    up_to_date = (installed.get("sha256") == sha256(planned["content"])
                  and (installed.get("mode"), installed.get("owner"), installed.get("group")) == ("0600", "root", "root"))
    return {
        "file": settings["file"],
        "content": planned["content"],
        # The file on the node is already this one (content, 0600 root:root): nothing to check or write.
        "up_to_date": up_to_date,
        # Ping both ends after netplan applied something, and always when the link is all the run is about
        # (qsfp_link.yml); a serving run whose link stays as it was proves it with the endpoint instead.
        "check_links": not need_addresses or not up_to_date or bool(planned["missing"]),
        "plan": settings["plan"],
        "up": planned["up"],
        "entries": [{"iface": e["iface"], "cidr": e["cidr"]} for e in planned["entries"]],
        "addresses": addresses,
        "missing": planned["missing"],
        "sysctl": sysctl,
        "node": {"qsfp_interfaces": ifaces, "qsfp_addresses": addresses, "hostfile_address": hostfile_address,
                 "links": links},
    }


# ---------------------------------------------------------------------------
# Step 6: each node's part
# ---------------------------------------------------------------------------

def _hostfile(plan, per):
    lines = ["# Managed by dgx_spark.specdec (openmpi_hostfile): one line per Spark of cluster %s, head first."
             % plan.cluster]
    lines += ["%s slots=%d" % (per[host]["hostfile_address"], per[host]["slots"]) for host in plan.nodes]
    return "\n".join(lines) + "\n"


def _hostfile_part(plan, node, hostfile):
    return {"path": node["config_dir"] + "/" + HOSTFILE, "content": hostfile, "container": node["name"],
            "record": records.RECORD,
            "hostnames": [plan.facts[h].get("hostname", h) for h in plan.nodes], "ssh_port": node["ssh_port"]}


def _server_argv(s):
    """(the server's command line, the options file's path in the container)."""
    if s.triton:
        return (trt.triton_launch_argv(TRITON_REPO_MOUNT + "/", s.ports["http"], s.ports["grpc"], s.ports["metrics"]),
                TRITON_REPO_MOUNT + "/" + trt.TRITON_MODEL_YAML)
    path = CONFIG_MOUNT + "/" + OPTIONS_FILE
    return trt.serve_argv(s.model, path, s.tp_size, s.bind, s.port, s.flags, s.trust_remote_code, s.extra_args,
                          pp_size=s.pp_size), path


def _environment(plan, s, node):
    """The container's environment: the user's, the token's file, the encodings, and on a cluster UCX/NCCL/MPI."""
    env = dict(node["env"])
    # huggingface_hub reads the token from this file when it exists (a missing file means no token):
    # ours, or the one `huggingface-cli login` stored in the login user's cache (mounted at HF_MOUNT).
    env["HF_TOKEN_PATH"] = HF_MOUNT + "/token" if node["hf_token_source"] == "login" else CONFIG_MOUNT + "/hf_token"
    if node["tiktoken"]:
        env.update(node["tiktoken"]["env"])
    if not s.multinode:
        if node["mpi_firewall"]:
            env.update(LOCAL_MPI_ENV)
        return env
    env.update(node["cuda_env"])
    ifaces = ",".join(node["qsfp_interfaces"])
    names = MPI_ENV[s.openmpi]
    env.update({
        "UCX_NET_DEVICES": ifaces,
        "NCCL_SOCKET_IFNAME": ifaces,
        "OMPI_MCA_btl_tcp_if_include": ifaces,
        names["oob_if"]: ",".join(_oob_interfaces(plan, s, node)) or ifaces,
        names["hostfile"]: "/etc/openmpi-hostfile",
        names["ssh_args"]: "-F %s/ssh/config" % CONFIG_MOUNT,
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    })
    if names["per_node"]:
        env[names["per_node"]] = "1"
    if s.topology == "ring":
        # Each pair of a ring has its own cable and subnets: NCCL must pick, for each peer, the HCA whose subnet
        # reaches it instead of pairing HCAs by index (a 3-Spark triangle otherwise fails with an ibv_modify_qp
        # timeout; sparkrun#174 and the community's 3-node write-ups).
        env["NCCL_IB_SUBNET_AWARE_ROUTING"] = "1"
    # One QSFP cable is two PCIe x4 halves: NCCL needs both RoCE devices of each Up pair for full bandwidth. Their
    # RoCE v2 GID index is not set here: it differs between nodes and after a reboot, so each rank reads its own
    # node's at start (the entrypoint's --rank).
    if node["nccl_ib_hca"]:
        env["NCCL_IB_HCA"] = ",".join(node["nccl_ib_hca"])
    else:
        plan.warnings.append("NCCL_IB_HCA on %s: not set, ibdev2netdev named no RoCE device of the Up QSFP netdevs "
                             "(%s); NCCL may use one half of the port. Set trtllm_container_nccl_ib_hca"
                             % (node["host"], ", ".join(node["qsfp_interfaces"]) or "none"))
    return env


def _oob_interfaces(plan, s, node):
    """The netdevs of Open MPI 5's runtime (PRRTE) on this node: only those that join it to the head (a worker's
    link to the head, the head's links to the workers, the first netdev of each). PRRTE 3.0 given both netdevs of a
    cable (two subnets on one switch) loses its daemons ("A daemon failed to report back", or mpirun crashes); one
    netdev per peer works (tried with Open MPI 5.0.11 in the lab). Open MPI 4 keeps every QSFP netdev."""
    if s.openmpi < 5:
        return []
    head = plan.head
    peers = plan.nodes[1:] if node["host"] == head else [head]
    out = []
    for peer in peers:
        for link in node["links"]:
            if link["peer"] == peer:
                if link["iface"] not in out:
                    out.append(link["iface"])
                break
    return out


def _command(plan, s, node):
    """(the server's command or None on a worker, the container's entrypoint command, its environment)."""
    per, rank, options, hostfile = plan.per, node["rank"], s.options_content, plan.hostfile
    env = _environment(plan, s, node)
    entry = ["/bin/bash", ENTRYPOINT]
    if (s.multinode or node["firewall"]["active"]) and node["install_sshd"]:
        entry.append("--install-missing")
    if node["firewall"]["active"]:
        # Applied before sshd and the server start, then kept by a watcher (module_utils/_firewall.py).
        entry += ["--firewall", CONFIG_MOUNT + "/" + FIREWALL_SPEC]
    if s.multinode:
        entry += ["--sshd", "%s/ssh/sshd_config" % CONFIG_MOUNT]
    if rank != 0:
        return None, entry, env
    serve, options_path = _server_argv(s)
    expect = [(options_path, sha256(options))]
    command = serve
    if s.multinode:
        expect.append((CONFIG_MOUNT + "/" + HOSTFILE, sha256(hostfile)))
        exports = s.mpi_export + ["HF_TOKEN_PATH"] + sorted(node["tiktoken"]["env"] if node["tiktoken"] else [])
        # The server's launch only, so `mpirun -np 2 hostname` by hand still finds a free port.
        command = trt.mpirun_argv(exports, serve, mca=[
            ("oob_tcp_static_ipv4_ports", MPI_OOB_PORT), ("oob_tcp_static_ipv6_ports", MPI_OOB_PORT),
            ("btl_tcp_port_min_v4", MPI_BTL_PORTS[0]), ("btl_tcp_port_range_v4", MPI_BTL_PORTS[1]),
            ("btl_tcp_disable_family", 6)], ranks=len(plan.nodes), openmpi=s.openmpi,
            # sshd sessions do not inherit the container's environment: each rank takes its own node's.
            wrapper=["/bin/bash", ENTRYPOINT, "--rank", "--"])
        for peer in plan.nodes[1:]:
            entry += ["--peer", per[peer]["hostfile_address"]]
    for path, digest in expect:
        entry += ["--expect", "%s=%s" % (path, digest)]
    entry += ["--approval", "%s/%s=%s" % (CONFIG_MOUNT, APPROVAL, sha256(plan.approval))]
    for path in node["waits"]:
        entry += ["--exists", path]
    if s.triton:
        entry += ["--daemon", "tritonserver"]
    if s.liveness:
        # From the node itself: the allow-list admits lo.
        entry += ["--health", _health_url(s.triton, s.bind, s.port), "--liveness", str(s.liveness)]
    return command, entry + ["--"] + command, env


def _ssh_part(plan, node):
    """On a cluster: where the node's keys are generated and which peers its sshd and ssh client know."""
    ssh_dir = node["config_dir"] + "/ssh"
    host = node["host"]
    per = plan.per
    all_addresses = plan.qsfp_addresses
    ssh = {
        "dir": ssh_dir,
        "port": node["ssh_port"],
        "addresses": all_addresses,
        "nodes": [{"name": h, "addresses": per[h]["qsfp_addresses"]} for h in plan.nodes],
        # Generated on the node, where they stay; only the public halves travel.
        "host_key": ssh_dir + "/ssh_host_ed25519_key",
        "client_key": ssh_dir + "/id_ed25519",
        "key_pairs": [{"path": ssh_dir + "/ssh_host_ed25519_key", "comment": "%s@%s" % (node["name"], host)},
                      {"path": ssh_dir + "/id_ed25519", "comment": "dgx-spark-specdec@%s" % host}],
    }
    files = [{"path": ssh_dir + "/sshd_config", "mode": "0644",
              "content": _sshd_config(node["name"], node["qsfp_addresses"], node["ssh_port"])},
             {"path": ssh_dir + "/config", "mode": "0644", "content": _ssh_config(all_addresses, node["ssh_port"])}]
    return ssh, files


def _firewall(plan, s, node):
    """This node's firewall spec (the entrypoint applies and keeps it), and the rules of ours its namespace holds that
    are no longer planned (spark_facts read them)."""
    # The allow-list guards the node that listens: the head (a worker's rules, if any, are removed).
    clients = list(s.allowed) if node["rank"] == 0 else []
    if clients and s.multinode:
        # The workers wait for the head's readiness over the QSFP link (the memory guard).
        clients += [a + "/32" for a in plan.qsfp_addresses if a + "/32" not in clients]
    mpi = None
    if node["mpi_firewall"]:
        # A cluster's ranks reach each other over the QSFP netdevs; one Spark's only over loopback.
        mpi = {"ports": "%d:%d" % (MPI_OOB_PORT, MPI_BTL_PORTS[0] + MPI_BTL_PORTS[1] - 1),
               "interfaces": list(node["qsfp_interfaces"]) if s.multinode else []}
    spec = fw.plan_spec(sorted(set(s.ports.values())), clients, bridge=node["own_network"], mpi=mpi,
                        require_ipv6=":" in (s.bind or ""))
    facts = plan.facts[node["host"]]
    spec["changes"] = fw.changes("\n".join(facts.get("firewall") or []), spec, "\n".join(facts.get("firewall6") or []))
    spec["file"] = {"path": node["config_dir"] + "/" + FIREWALL_SPEC,
                    "content": json.dumps({k: v for k, v in spec.items() if k != "changes"}, indent=1, sort_keys=True)
                    + "\n", "mode": "0644"}
    spec["active"] = bool(spec["enabled"] or mpi)
    return spec


def _docker(plan, s, node, entry, env):
    """The settings of community.docker.docker_container."""
    repo_dir = node["config_dir"] + "/" + TRITON_REPO_DIR
    volumes = ["%s:%s" % (node["hf_cache_dir"], HF_MOUNT), "%s:%s" % (node["models_dir"], MODELS_MOUNT),
               "%s:%s:ro" % (node["config_dir"], CONFIG_MOUNT)]
    if s.triton:
        volumes.append("%s:%s" % (repo_dir, TRITON_REPO_MOUNT))
    rank = node["rank"]
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
        "device_requests": [{"driver": "nvidia", "count": -1, "capabilities": [["gpu"]]}] if node["gpu"] else [],
        "restart_policy": node["restart_policy"],
        # The entrypoint closes the MPI ports to the management network in the node's network namespace.
        "capabilities": ["NET_ADMIN"] if node["firewall"]["active"] else [],
        "labels": {"dgx-spark.specdec/cluster": plan.cluster, "dgx-spark.specdec/rank": str(rank),
                   # The node's host name: spark_facts finds this node's containers by it (engines may be shared).
                   NODE_LABEL: plan.facts[node["host"]].get("hostname") or node["host"],
                   "dgx-spark.specdec/role": ("head" if rank == 0 else "worker") if s.multinode else "single"},
    }
    # The digest of every setting, in a label of its own: spark_facts reads it back, so the plan knows whether the
    # container already runs exactly this (the same idea as the options file's digest in the command).
    docker["labels"][SPEC_LABEL] = sha256(json.dumps(docker, sort_keys=True))
    return docker


def _container_part(plan, s, node, entry, env):
    host, rank = node["host"], node["rank"]
    login_token = node["hf_token_source"] == "login"
    if login_token and not plan.facts[host].get("hf_login_token"):
        plan.warnings.append("trtllm_container_hf_token_source on %s: login, but %s has no token stored by "
                             "`huggingface-cli login` (~/.cache/huggingface/token); gated models need one, unless "
                             "trtllm_container_hf_token is set (the role then writes that file)"
                             % (host, node["login_user"]))
    ssh, files = _ssh_part(plan, node) if s.multinode else (None, [])
    tiktoken = node["tiktoken"]
    found = (plan.facts[host].get("images") or {}).get(node["image"]) or {}
    running = node["running"]
    drift = pre.image_drift(node["image"], found, running)
    if drift:
        plan.warnings.append("trtllm_container_image on %s: %s" % (host, drift))
    docker = _docker(plan, s, node, entry, env)
    exporter, exporter_absent = _exporter(plan, s, node, docker)
    dirs = [{"path": node["hf_cache_dir"], "owner": node["login_user"], "mode": "0755"},
            {"path": node["models_dir"], "owner": node["login_user"], "mode": "0755"},
            {"path": node["config_dir"], "owner": "root", "mode": "0755"}]
    dirs += [{"path": node["config_dir"] + "/ssh", "owner": "root", "mode": "0700"}] if s.multinode else []
    # Filled by the collection alone (the template's copy, the fetched encodings): the teardown removes them whole.
    dirs += [{"path": node["config_dir"] + "/" + TRITON_REPO_DIR, "owner": "root", "mode": "0755",
              "record": {"kind": "tree"}}] if s.triton else []
    dirs += [{"path": tiktoken["dir"], "owner": "root", "mode": "0755", "record": {"kind": "tree"}}] if tiktoken else []
    firewall = node["firewall"]
    files = files + ([firewall["file"]] if firewall["active"] else [])
    # The collection's own programs the containers run, written from plugins/module_utils (standard library only).
    programs = [{"path": node["config_dir"] + "/" + FIREWALL_PROGRAM, "source": "_firewall.py",
                 "sha256": _written_sha256(_MODULE_UTILS + "/_firewall.py"), "mode": "0644"}] if firewall["active"] else []
    if exporter is not None:
        programs.append(dict(exporter["file"], source="_metrics.py", mode="0644"))
    token_file = _token_file(node)
    return {
        "name": node["name"],
        "image": node["image"],
        "pull": node["pull"],
        # Pulled only when missing, in the background, its `docker pull` output read for the progress lines.
        "pull_needed": bool(node["pull"]) and not found.get("present"),
        "pull_log": PULL_LOG,
        "login_user": node["login_user"],
        "dirs": dirs,
        "config_dir": node["config_dir"],
        "token_file": token_file,
        # The login token belongs to the user (their own hf CLI reads it) and is never removed here.
        "token_owner": node["login_user"] if login_token else "root",
        "token_keep": login_token,
        "fetch": tiktoken["files"] if tiktoken else [],
        "firewall": node["firewall"],
        "image_report": pre.image_report(node["image"], found, _image_version(found) if found else None),
        "files": files,
        "programs": programs,
        "record": records.RECORD,
        # One server per node: the collection's other containers here (another profile or mode) go, so a reboot
        # starts only this one.
        "replaced": _replaced(plan, node),
        # Files a running server does not need restarting for: the token (read at each download), the exporter's
        # program (its own container), the firewall spec (the watcher applies it).
        "no_restart": [token_file] + [p["path"] for p in programs if p["source"] == "_metrics.py"]
        + ([firewall["file"]["path"]] if firewall["active"] else []),
        "ssh": ssh,
        "docker": docker,
        "current": _current(running, found, docker),
        "exporter": exporter,
        "exporter_absent": exporter_absent,
    }


def _token_file(node):
    """The token file on the node: ours, or the one `huggingface-cli login` stored in the login user's cache."""
    if node["hf_token_source"] == "login":
        return HF_MOUNT_HOST_TOKEN.format(node["hf_cache_dir"])
    return node["config_dir"] + "/hf_token"


def _replaced(plan, node):
    """The collection's containers on this node that the plan does not run (found by their labels)."""
    found = plan.facts[node["host"]].get("containers") or {}
    # This node's exporter goes with exporter_absent when it is no longer planned.
    return sorted(name for name in found if name not in (node["name"], node["name"] + EXPORTER_SUFFIX))


EXPORTER_FILE = "metrics_exporter.py"
EXPORTER_SUFFIX = "-metrics"
FETCH_SUFFIX = "-fetch"
# `docker pull`'s output while the image is pulled (tmpfs: gone at the next boot; root only).
PULL_LOG = "/run/dgx-spark-specdec.pull.log"
_MODULE_UTILS = posixpath.dirname(posixpath.abspath(__file__))
_EXPORTER = posixpath.join(_MODULE_UTILS, "_metrics.py")


def exporter_sha256():
    """The digest of the exporter program the trtllm_container role writes (module_utils/_metrics.py), None if unread."""
    return _written_sha256(_EXPORTER)


def _exporter(plan, s, node, docker):
    """The metrics exporter's container on the head (None where trtllm-serve serves the metrics itself), and the
    exporter containers of this node to remove (metrics turned off, or a release that serves them natively)."""
    name = node["name"] + EXPORTER_SUFFIX
    found = (plan.facts[node["host"]].get("containers") or {}).get(name)
    if s.metrics_source != "exporter" or node["rank"] != 0:
        return None, [name] if found else []
    upstream = "http://%s:%d" % (local_address(s.bind), s.port)
    listen = ("[%s]" % s.bind if ":" in s.bind else s.bind) + ":%d" % s.metrics_port
    spec = {
        "name": name,
        "image": node["image"],
        # The release image's Python runs the exporter (standard library only): no image of its own to pull.
        "command": ["python3", CONFIG_MOUNT + "/" + EXPORTER_FILE, "--upstream", upstream, "--listen", listen],
        "volumes": ["%s:%s:ro" % (node["config_dir"], CONFIG_MOUNT)],
        # In the server's network namespace: it reads the server on loopback, as the validation does.
        "network_mode": "container:" + node["name"] if node["own_network"] else node["network_mode"],
        "restart_policy": node["restart_policy"],
        "labels": {"dgx-spark.specdec/cluster": plan.cluster, "dgx-spark.specdec/rank": "0",
                   NODE_LABEL: docker["labels"][NODE_LABEL], "dgx-spark.specdec/role": "metrics"},
    }
    # Recreated when its program changes and, sharing the server's namespace, with the server.
    seed = json.dumps(spec, sort_keys=True) + str(exporter_sha256())
    seed += docker["labels"][SPEC_LABEL] if node["own_network"] else ""
    spec["labels"][SPEC_LABEL] = sha256(seed)
    image = (plan.facts[node["host"]].get("images") or {}).get(node["image"]) or {}
    spec["current"] = _current(found or {}, image, spec)
    spec["file"] = {"path": node["config_dir"] + "/" + EXPORTER_FILE, "sha256": exporter_sha256()}
    return spec, []


def _metrics_part(plan, s, node):
    """Where Prometheus scrapes the cluster (on the head; None elsewhere and without metrics): the port and path on
    the head's address, and the labels every series of the cluster gets (the profile is added with the plan's)."""
    if node["rank"] != 0 or not s.metrics_source:
        return None
    native = s.metrics_source == "native"
    return {"source": s.metrics_source, "port": s.port if native else s.metrics_port,
            # A server that listens on loopback only serves its metrics there too: nothing to scrape from outside.
            "local_only": loopback_only(s.bind),
            "path": "/prometheus/metrics" if native else "/metrics",
            "labels": {"cluster": plan.cluster, "release": s.version,
                       "topology": s.topology if s.multinode else "single"}}


def _current(running, image, docker):
    """The container runs, created from this very image with exactly the planned settings (the digest in its label):
    the server is the planned one, so the container task and the checks that prove a first setup (the memory,
    mpirun hostname) need not run again."""
    return (bool(running.get("running")) and running.get("spec") == docker["labels"][SPEC_LABEL]
            and bool(image.get("id")) and running.get("image_id") == image.get("id"))


def _serve_part(plan, s, node, command, env):
    repo_dir = node["config_dir"] + "/" + TRITON_REPO_DIR
    memory = node["memory"]
    rank = node["rank"]
    per = plan.per
    options = s.options_content
    head = None if rank == 0 else (_toward(per[plan.head]["links"], node["host"]) or per[plan.head]["hostfile_address"])
    ready_url = _health_url(s.triton, s.bind, s.port, head)
    draft = s.draft_model if s.needs_draft else None
    return {
        "container": node["name"],
        "frontend": s.frontend,
        "downloads": node["downloads"],
        # hf download runs in a container of its own, while the current server keeps serving.
        "fetcher": {"name": node["name"] + FETCH_SUFFIX, "image": node["image"], "env": env,
                    "network_mode": "host" if not node["own_network"] else node["network_mode"],
                    "volumes": ["%s:%s" % (node["hf_cache_dir"], HF_MOUNT), "%s:%s" % (node["models_dir"], MODELS_MOUNT),
                                "%s:%s:ro" % (node["config_dir"], CONFIG_MOUNT)],
                    "labels": {"dgx-spark.specdec/cluster": plan.cluster, "dgx-spark.specdec/role": "fetch",
                               NODE_LABEL: plan.facts[node["host"]].get("hostname") or node["host"]}},
        "approval": {"path": node["config_dir"] + "/" + APPROVAL, "content": plan.approval, "mode": "0644"},
        # A server of this node ran when the run began (it keeps serving until its replacement's inputs are there).
        "serving_before": bool(node["running"].get("running")),
        "record": records.RECORD,
        "hub_check": _hub_check(s, node["downloads"]),
        "options_file": {"path": (repo_dir + "/" + trt.TRITON_MODEL_YAML) if s.triton
                         else node["config_dir"] + "/" + OPTIONS_FILE, "content": options},
        # Triton: the model repository is copied from the image's template once (in the container, which
        # waits for model.yaml), and never again: the marker is the template's config.pbtxt.
        "template": None if not s.triton else {
            "marker": repo_dir + "/" + trt.TRITON_TEMPLATE_MARKER,
            "argv": ["cp", "-R", "-n", trt.TRITON_TEMPLATE + "/.", TRITON_REPO_MOUNT + "/"],
        },
        "argv": command,
        "memory": pre.memory_spec(
            check=memory["check"], headroom_gib=memory["headroom_gib"],
            weights=_weights_on_host(node, s.model, draft, s.draft_dir), share=round(1.0 / ((s.tp_size or 1) * s.pp_size), 6),
            estimate_gib=memory["weights_gib"], drop_caches=memory["drop_caches"], guard=memory["guard"],
            guard_below_gib=memory["guard_below_gib"], guard_timeout=memory["guard_timeout"], ready_url=ready_url,
            what=" and its draft ".join([m for m in (s.model, draft) if m])),
        "endpoint": None if rank else _endpoint(s, node["name"]),
    }


# ---------------------------------------------------------------------------
# Step 7: what a run would change (spark_facts read what the containers mount)
# ---------------------------------------------------------------------------

_ENTRYPOINT = posixpath.join(posixpath.dirname(posixpath.abspath(__file__)), "..", "..", "roles", "trtllm_container",
                             "files", "entrypoint.sh")


@functools.lru_cache(maxsize=4)
def _written_sha256(path):
    """The digest of a file of the collection as a role writes it, None if unread."""
    try:
        with open(path, "rb") as handle:
            # The roles write lookup('file') (trailing whitespace stripped) and one newline.
            return hashlib.sha256(handle.read().decode("utf-8").rstrip().encode("utf-8") + b"\n").hexdigest()
    except OSError:
        return None


def entrypoint_sha256():
    """The digest of the entrypoint the trtllm_container role writes (its file in the collection), None if unread."""
    return _written_sha256(_ENTRYPOINT)


def _changes(plan, s, plans):
    """Each node's ``changes``: what the roles would change on it, from what spark_facts read; empty when the run
    changes nothing there. A cluster applies as one (its SSH trust joins the nodes): ``apply`` is true on every node
    of a cluster where anything would change."""
    entrypoint = entrypoint_sha256()
    for host in plan.nodes:
        node, part = plan.per[host], plans[host]
        running = node["running"]
        mounted = running.get("files") if (running.get("mounts") or {}).get(CONFIG_MOUNT) == node["config_dir"] else {}
        have = _Have(mounted or {})
        container = part["container"]
        checks = [
            ("docker group", _docker_group_current(plan, host)),
            ("netplan", part["netplan"] is None or (part["netplan"]["up_to_date"] and not part["netplan"]["missing"]
                                                    and (part["netplan"]["sysctl"] or {"up_to_date": True})["up_to_date"])),
            ("firewall", not container["firewall"]["changes"]["apply"]),
            ("container", container["current"]),
            ("other servers", not container["replaced"]),
            ("metrics exporter", (container["exporter"] is None or container["exporter"]["current"])
             and not container["exporter_absent"]),
            ("directories", all(have.dir(d["path"], d["owner"], d["mode"]) for d in container["dirs"])),
            ("files", have.file(node["config_dir"] + "/entrypoint.sh", entrypoint, "0755")
             and all(have.file(p["path"], p["sha256"], p["mode"]) for p in container["programs"])
             and all(have.content(f["path"], f["content"], f["mode"]) for f in container["files"])),
            ("token", have.token(node["hf_token_source"])),
            ("encodings", all(have.file(f["dest"], f["checksum"].split(":", 1)[-1], "0644")
                              for f in container["fetch"])),
            ("ssh trust", container["ssh"] is None or _trust_current(plan, container["ssh"], have)),
            ("hostfile", part["hostfile"] is None
             or have.content(part["hostfile"]["path"], part["hostfile"]["content"], "0644")),
            ("options file", have.content(part["serve"]["options_file"]["path"],
                                          part["serve"]["options_file"]["content"], "0644")),
            # A download that failed or was interrupted: the run fetches it again (the server waits for it).
            ("downloads", all(d["current"] for d in part["serve"]["downloads"])),
        ]
        part["changes"] = [name for name, current in checks if not current]
    cluster = any(plans[h]["changes"] for h in plan.nodes)
    for host in plan.nodes:
        plans[host]["apply"] = cluster


class _Have:
    """What one node's container mounts hold (spark_facts' ``files`` of the container), for comparisons."""

    def __init__(self, mounted):
        self.dirs = mounted.get("dirs") or {}
        self.files = mounted.get("files") or {}
        self.keys = mounted.get("public_keys") or {}
        self.tokens = mounted.get("token") or {}

    def dir(self, path, owner, mode):
        found = self.dirs.get(path.rstrip("/")) or {}
        return found.get("owner") == owner and found.get("mode") == mode

    def file(self, path, digest, mode, owner="root"):
        found = self.files.get(path) or {}
        return bool(digest) and found.get("sha256") == digest and found.get("mode") == mode \
            and found.get("owner") == owner

    def content(self, path, content, mode):
        return content is not None and self.file(path, sha256(content), mode)

    def token(self, source):
        """The token file holds the token given to spark_facts (or, with none given, the role's file is gone)."""
        if "given" not in self.tokens:
            return False
        if source == "login":  # the user's own file: written when a token is given, never removed
            return not self.tokens["given"] or self.tokens.get("login") == "same"
        return self.tokens.get("file") == ("same" if self.tokens["given"] else "absent")


def _docker_group_current(plan, host):
    r = plan.node(host)
    users, group = r.get("docker_group_users"), r.get("docker_group_name")
    return not users and group in (plan.facts[host].get("login_groups") or [])


def _trust_current(plan, ssh, have):
    """authorized_keys and known_hosts as every node's public keys (read where they were generated) make them."""
    keys = {}
    for peer in ssh["nodes"]:
        host = peer["name"]
        running = plan.per[host]["running"]
        public = (running.get("files") or {}).get("public_keys") or {}
        ssh_dir = plan.per[host]["config_dir"] + "/ssh"
        keys[host] = {"client": public.get(ssh_dir + "/id_ed25519.pub"),
                      "host": public.get(ssh_dir + "/ssh_host_ed25519_key.pub")}
    try:
        files = ssh_trust(ssh, keys)
    except ValueError:  # a key not generated yet
        return False
    return all(have.content(path, content, "0644") for path, content in files.items())


def _image_version(image_facts):
    labels = image_facts.get("labels") or {}
    for key in rel.IMAGE_VERSION_LABELS:
        if labels.get(key):
            return str(labels[key])
    env = image_facts.get("env") or {}
    for key in rel.IMAGE_VERSION_ENV:
        if env.get(key):
            return str(env[key])
    return None


def _hub_dir(repo):
    return "models--" + repo.replace("/", "--")


def _host_port(spec):
    """The host port of a published port spec ([IP:][HOST_PORT:]CONTAINER_PORT[/proto]), None for a range or UDP."""
    text = str(spec)
    if "/" in text and not text.endswith("/tcp"):
        return None
    parts = text.split("/", maxsplit=1)[0].rsplit(":", 2)
    port = parts[-2] if len(parts) >= 2 else parts[-1]
    return int(port) if port.isdigit() else None


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


def loopback_only(bind):
    """A server that listens on ``bind`` answers on its own node only."""
    return bind in ("localhost", "::1") or bind.startswith("127.")


def local_address(bind):
    """The address that reaches a server listening on ``bind`` from its own node."""
    return "127.0.0.1" if bind in ("0.0.0.0", "localhost", "::") else bind


def _health_url(triton, bind, port, host=None):
    """The URL that answers 2xx once the server is ready (from the node itself, or from ``host``)."""
    address = host or local_address(bind)
    address = "[%s]" % address if ":" in address else address
    return "http://%s:%d%s" % (address, port, "/v2/health/ready" if triton else "/health")


def _endpoint(s, container):
    """What specdec_endpoint checks on the head: trtllm-serve's OpenAI API, or Triton's generate API and metrics."""
    host = local_address(s.bind)
    endpoint = {"url": "http://%s:%d" % (host, s.port), "port": s.port, "model": s.model, "api": s.api,
                "prompt": s.prompt,
                "max_tokens": s.max_tokens, "requests": s.requests, "metrics_url": None, "tokenizer": None,
                # The loading, reported until the health endpoint answers (spark_progress).
                "ready": {"label": container, "kind": "load", "container": container,
                          "url": _health_url(s.triton, s.bind, s.port)},
                # The Prometheus text every reader of acceptance reads (the drained /metrics has one reader: the
                # exporter, where there is one).
                "prometheus_url": None if not s.metrics_source else
                "http://%s:%d%s" % ((host, s.port, "/prometheus/metrics") if s.metrics_source == "native"
                                    else (host, s.metrics_port, "/metrics"))}
    if s.triton:
        endpoint.update(model=trt.TRITON_MODEL, metrics_url="http://%s:%d" % (host, s.ports["metrics"]),
                        # Triton's answer has text only: its tokens are counted with the model's tokenizer in the
                        # serving container, as the Triton tutorial's genai-perf --tokenizer does.
                        tokenizer={"container": container, "model": s.model})
    return endpoint


def _downloads(plan, node, s):
    """What ``hf download`` fetches on a node, and the container paths the server waits for."""
    downloads = []
    waits = []
    if _is_path(s.model):
        waits.append(s.model)
    else:
        hub = _hub_dir(s.model)
        downloads.append({"repo": s.model, "local_dir": "", "revision": s.revisions["model"],
                          "field": "specdec_serve_model", "host_dir": node["hf_cache_dir"] + "/hub",
                          "dir": "%s/hub/%s" % (node["hf_cache_dir"], hub),
                          "marker": "%s/hub/%s/%s" % (node["hf_cache_dir"], hub, MARKER)})
        waits.append("%s/hub/%s/%s" % (HF_MOUNT, hub, MARKER))
    if s.needs_draft and s.draft_model and s.draft_dir:
        if _is_path(s.draft_model):
            waits.append(s.draft_model)
        else:
            relative = posixpath.normpath(s.draft_dir)[len(MODELS_MOUNT) + 1:].rstrip("/")
            downloads.append({"repo": s.draft_model, "local_dir": s.draft_dir, "revision": s.revisions["draft"],
                              "field": "specdec_serve_draft_model",
                              "host_dir": "%s/%s" % (node["models_dir"], relative),
                              "dir": "%s/%s" % (node["models_dir"], relative),
                              "marker": "%s/%s/%s" % (node["models_dir"], relative, MARKER)})
            waits.append("%s/%s/%s" % (MODELS_MOUNT, relative, MARKER))
    fetcher_network = "host" if not node["own_network"] else node["network_mode"]
    for index, item in enumerate(downloads):
        revision = item["revision"]
        # Each download in a container of its own, named for the wait that reports its progress.
        item["fetch_container"] = "%s%s-%d" % (node["name"], FETCH_SUFFIX, index)
        item["watch"] = {"label": item["repo"], "kind": "download", "dir": item["dir"],
                         "container": item["fetch_container"],
                         # The expected size, asked once from the release image as the pre-flight's access check asks.
                         "probe": {"image": node["image"], "network_mode": fetcher_network, "repo": item["repo"],
                                   "revision": revision, "token_file": _token_file(node),
                                   "endpoint": node["env"].get("HF_ENDPOINT")}}
        item["argv"] = (["hf", "download", item["repo"]] + (["--revision", revision] if revision else [])
                        + (["--local-dir", item["local_dir"]] if item["local_dir"] else []))
        # Written after a successful download (one spark_files call for all): later runs skip it.
        item["marker_file"] = {"path": item["marker"], "mode": "0644", "kind": "none",
                               "content": item["repo"] + ("\nrevision: %s" % revision if revision else "") + "\n"}
        # Created (and recorded, with what it holds) before the download when missing: the teardown's to remove.
        item["directory"] = {"path": item["dir"], "owner": node["login_user"], "mode": "0755",
                             "record": {"kind": "download", "repo": item["repo"], "revision": revision}}
        found = _marker_found(plan, node, item["marker"])
        held = found.splitlines()[0].strip() if found else None
        if held and held != item["repo"] and item["local_dir"]:
            # Another model's files are there: downloading this one into them would mix the two.
            plan.fail("specdec_serve_draft_dir on %s: %s holds %s (its marker %s), and specdec_serve_draft_model is "
                      "%s: set another specdec_serve_draft_dir, or remove that directory first (the teardown with "
                      "specdec_teardown_remove_models=true removes what the collection downloaded)"
                      % (node["host"], item["local_dir"], held, item["marker"], item["repo"]))
        item["current"] = found == item["marker_file"]["content"]
    return downloads, waits


def _marker_found(plan, node, marker):
    """What a download's marker says on the node (read through the running container's mounts, or where the record
    lists the collection's downloads), None when unknown."""
    markers = ((node["running"].get("files") or {}).get("markers")) or {}
    if isinstance(markers, dict) and marker in markers:
        return markers[marker]
    return ((plan.facts[node["host"]].get("downloads") or {}).get(marker))


def _hub_check(s, downloads):
    """The repositories the pre-flight asks the hub about: the downloads, and a tokenizer the server fetches itself."""
    repos = [{k: d[k] for k in ("repo", "revision", "field", "marker")} for d in downloads]
    tokenizer = (s.options or {}).get("tokenizer")
    if isinstance(tokenizer, str) and tokenizer and not _is_path(tokenizer) and tokenizer != s.model:
        repos.append({"repo": tokenizer, "revision": (s.options or {}).get("tokenizer_revision"),
                      "field": "specdec_serve_options.tokenizer", "marker": None})
    return repos


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
