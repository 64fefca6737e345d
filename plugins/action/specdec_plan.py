# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin of dgx_spark.specdec.specdec_plan: runs on the controller, reads the inventory and the
``spark`` facts of the run's nodes, and plans every cluster of the run once.

With ``run_once: true`` (the collection's playbooks) it returns every node's part as the fact ``specdec_plans``
(``{host: plan}``; a node of a cluster with a mistake gets ``{"cluster", "nodes", "error", "errors"}``) and fails
nothing, so one cluster's mistake stops only that cluster. Without it, each host sets its own part as
``specdec_plan`` and fails when its cluster has a mistake.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.action import ActionBase

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _inputs as inputs
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_plan as plan
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _trtllm_options as trt

# Never read: the token stays out of the plan (the trtllm_container role reads it on its node).
SECRETS = tuple(i.name for i in inputs.INPUTS if i.secret)
SCOPES = ("serve", "network", "teardown")


def _plain(value):
    """Plain Python values for the plan (Ansible templates to its own subclasses of str, dict and list)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    for kind in (int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("profile", "profile_name", "profiles_dir", "overrides", "group", "scope"))
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        args = self._task.args  # ActionBase.run already refused arguments outside _VALID_ARGS
        scope = args.get("scope") or "serve"
        if scope not in SCOPES:
            return dict(result, failed=True, msg="scope: %s is not one of %s" % (scope, ", ".join(SCOPES)))
        self._vars = task_vars
        self._hostvars = task_vars["hostvars"]
        self._profiles = {}
        once = bool(self._task.run_once)
        try:
            run = self._plan_run(args, scope, None if once else task_vars["inventory_hostname"])
        except (AnsibleError, ValueError) as exc:
            return dict(result, failed=True, msg=to_native(exc))
        if once:
            result.update(changed=False, clusters=run["clusters"], ansible_facts={"specdec_plans": run["plans"]})
            return result
        # One host's part, the way a user's own playbook may call it (every host plans every cluster then).
        mine = run["plans"][task_vars["inventory_hostname"]]
        if "error" in mine:
            return dict(result, failed=True, changed=False, msg=mine["error"], cluster=mine["cluster"],
                        errors=mine["errors"])
        return dict(result, changed=False, cluster=mine["cluster"], nodes=mine["nodes"],
                    ansible_facts={"specdec_plan": mine})

    # -- reading the inventory ---------------------------------------------------------------------------------

    def _read(self, host):
        """A node's variables with the collection's prefixes (the token left out), and ansible_host."""
        hostvars = self._hostvars[host]
        out = {key: _plain(hostvars[key]) for key in hostvars
               if key.startswith(inputs.PREFIXES) and key not in SECRETS and key not in inputs.PRODUCED}
        out["ansible_host"] = _plain(hostvars.get("ansible_host"))
        return out

    def _profile(self, args, name):
        """The profile to plan with: the task's own, else the named file of the profiles directory."""
        if args.get("profile") is not None:
            profile = _plain(args["profile"])
        else:
            if not name:
                raise ValueError("specdec_profile_name: not set; a fleet's cluster names its profile on its group "
                                 "(a file of playbooks/vars/)")
            if name not in self._profiles:
                self._profiles[name] = self._load_profile(args, name)
            profile = dict(self._profiles[name])
        if not isinstance(profile, dict):
            raise ValueError("profile: %s is not a mapping (the playbook's specdec_profile)" % type(profile).__name__)
        # The tuner's setting over the profile (its options merged into the profile's, not replacing them).
        return trt.merge(profile, _plain(args.get("overrides") or {}))

    def _load_profile(self, args, name):
        directory = args.get("profiles_dir") or os.path.join(self._vars.get("playbook_dir") or ".", "vars")
        known = sorted(f[:-4] for f in os.listdir(directory) if f.endswith(".yml")) if os.path.isdir(directory) else []
        if name not in known:
            raise ValueError("specdec_profile_name: %s is not a profile of %s (%s)" % (name, directory, ", ".join(known)))
        data = self._loader.load_from_file(os.path.join(directory, name + ".yml")) or {}
        return _plain(data.get("specdec_profile") or {})

    # -- planning ------------------------------------------------------------------------------------------------

    def _plan_run(self, args, scope, only=None):
        """Plan every cluster with a node in this run (``only``: the cluster of that host alone)."""
        groups = self._vars.get("groups", {})
        group = args.get("group") or "sparks"
        run_hosts = list(self._vars.get("ansible_play_hosts_all") or [self._vars["inventory_hostname"]])
        active = set(self._vars.get("ansible_play_hosts") or run_hosts)
        candidates = list(groups.get(group) or run_hosts)
        fixed = args.get("profile") is not None or args.get("profile_name")
        membership = {h: {k: _plain(self._hostvars[h].get(k))
                          for k in ("specdec_cluster", "specdec_cluster_head", "specdec_profile_name")}
                      for h in set(candidates) | set(run_hosts)}
        if fixed:  # the playbook serves its own profile: the inventory's profile names do not split clusters
            for values in membership.values():
                values["specdec_profile_name"] = None
        self._run = {"args": args, "scope": scope, "candidates": candidates, "membership": membership,
                     "active": active, "only": only}
        plans = {}
        clusters = {}
        for host in [only] if only else run_hosts:
            if host in plans:
                continue
            name, nodes, part = self._plan_cluster(host)
            clusters[name] = {"nodes": nodes, "errors": part.get("errors", [])}
            for node in nodes:
                if node in run_hosts or node == only:
                    plans[node] = dict(part["plans"][node], profile=part.get("profile")) if "plans" in part else part
        return {"plans": plans, "clusters": clusters}

    def _plan_cluster(self, host):
        """(cluster, nodes, {"plans": {...}} or the cluster's error part) for the cluster of ``host``."""
        run = self._run
        args, scope, membership, only = run["args"], run["scope"], run["membership"], run["only"]
        groups = self._vars.get("groups", {})
        nodes = [host]
        cluster = str(membership[host].get("specdec_cluster") or host)
        profile_name = args.get("profile_name") or membership[host].get("specdec_profile_name") \
            or _plain(self._hostvars[host].get("specdec_profile_name"))
        try:
            profile = {"container_mode": "multinode"} if scope != "serve" else self._profile(args, profile_name)
            mode = _plain(self._hostvars[host].get("trtllm_container_mode")) or profile.get("container_mode")
            single = scope == "serve" and (mode or "single") != "multinode"
            if scope == "teardown":
                single = not membership[host].get("specdec_cluster")
            cluster, nodes = plan.cluster_members(host, run["candidates"], membership, groups, single=single)
            absent = [n for n in nodes if n not in run["active"]]
            if absent:
                raise plan.PlanError(cluster, [
                    "%s of cluster %s %s not in this run (left out by --limit, unreachable, or failed earlier); a "
                    "cluster is configured with all its nodes or not at all (nodes: %s)"
                    % (", ".join(absent), cluster, "is" if len(absent) == 1 else "are", ", ".join(nodes))])
            node_vars = {n: self._read(n) for n in nodes}
            strict = self._misspellings(cluster, nodes, node_vars, only)
            # ansible_facts.spark from spark_facts (also when facts are not injected as variables, as under AWX).
            facts = {n: (self._hostvars[n].get("ansible_facts") or {}).get("spark") or self._hostvars[n].get("spark")
                     for n in nodes}
            try:
                if scope == "network":
                    plans, warnings = plan.plan_network(cluster, nodes, node_vars, facts)
                elif scope == "teardown":
                    plans, warnings = plan.plan_teardown(cluster, nodes, node_vars, facts)
                else:
                    plans, warnings = plan.plan_cluster(cluster, nodes, profile, node_vars, facts)
            except plan.PlanError as exc:
                raise plan.PlanError(cluster, strict + exc.errors)
            if strict:
                raise plan.PlanError(cluster, strict)
        except plan.PlanError as exc:
            cluster = exc.cluster or cluster
            return cluster, nodes, {"cluster": cluster, "nodes": nodes, "error": to_native(exc), "errors": exc.errors}
        except ValueError as exc:
            return cluster, nodes, {"cluster": cluster, "nodes": nodes, "error": to_native(exc),
                                    "errors": [to_native(exc)]}
        # Every node of a cluster computes the same plan when each plans its own: only the head reports.
        if only in (None, nodes[0]):
            for warning in warnings:
                self._display.warning(warning)
        return cluster, nodes, {"plans": plans, "profile": profile_name if scope == "serve" else None}

    def _misspellings(self, cluster, nodes, node_vars, only=None):
        """Warn about a prefixed variable the catalogue does not know; the errors when specdec_strict_inputs."""
        strict = inputs.Reader(cluster, node_vars[nodes[0]], {}, []).get("specdec_strict_inputs")
        found = {}
        for host in nodes:
            for name, suggestion in inputs.misspelt(node_vars[host]):
                found.setdefault((name, suggestion), []).append(host)
        messages = [inputs.misspelling_message(", ".join(hosts), name, suggestion, strict)
                    for (name, suggestion), hosts in sorted(found.items())]
        if strict:
            return messages
        if only in (None, nodes[0]):
            for message in messages:
                self._display.warning(message)
        return []
