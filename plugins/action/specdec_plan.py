# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin of dgx_spark.specdec.specdec_plan: runs on the controller, reads the inventory and the
``spark`` facts of the cluster's nodes, and sets this host's part of the cluster's plan as a fact."""

from __future__ import annotations

from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.action import ActionBase

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_plan as plan

# The variables the plan reads (the public variables of the collection's roles).
PREFIXES = ("specdec_serve_", "specdec_cluster", "trtllm_container_", "netplan_qsfp_", "openmpi_hostfile_")
SECRETS = ("trtllm_container_hf_token",)


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
    _VALID_ARGS = frozenset(("profile", "group", "scope"))
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        args = self._task.args  # ActionBase.run already refused arguments outside _VALID_ARGS
        scope = args.get("scope") or "serve"
        if scope not in ("serve", "network"):
            return dict(result, failed=True, msg="scope: %s is not serve or network" % scope)
        profile = _plain(args.get("profile")) if scope == "serve" else {"container_mode": "multinode"}
        if not isinstance(profile, dict):
            return dict(result, failed=True, msg="profile: %s is not a mapping (the playbook's specdec_profile)"
                        % type(profile).__name__)
        group = args.get("group") or "sparks"
        host = task_vars["inventory_hostname"]
        hostvars = task_vars["hostvars"]
        groups = task_vars.get("groups", {})
        candidates = list(groups.get(group) or task_vars.get("ansible_play_hosts_all") or [host])

        def read(name):
            vars_ = hostvars[name]
            out = {}
            for key in vars_:
                if key.startswith(PREFIXES) and key not in SECRETS:
                    out[key] = _plain(vars_[key])
            out["ansible_host"] = _plain(vars_.get("ansible_host"))
            return out

        mode = "multinode" if scope == "network" else (
            _plain(hostvars[host].get("trtllm_container_mode")) or profile.get("container_mode") or "single")
        try:
            # Membership needs three variables of every Spark; the full read is for the cluster's own nodes only.
            membership = {h: {k: _plain(hostvars[h].get(k)) for k in ("specdec_cluster", "specdec_cluster_head", "specdec_profile_name")}
                          for h in set(candidates) | {host}}
            cluster, nodes = plan.cluster_members(host, candidates, membership, groups, single=mode != "multinode")
            active = set(task_vars.get("ansible_play_hosts") or [])
            absent = [n for n in nodes if n not in active]
            if absent:
                raise plan.PlanError(cluster, [
                    "%s of cluster %s %s not in this run (left out by --limit, unreachable, or failed earlier); a "
                    "cluster is configured with all its nodes or not at all (nodes: %s)"
                    % (", ".join(absent), cluster, "is" if len(absent) == 1 else "are", ", ".join(nodes))])
            # ansible_facts.spark from spark_facts (also when facts are not injected as variables, as under AWX).
            facts = {n: (hostvars[n].get("ansible_facts") or {}).get("spark") or hostvars[n].get("spark") for n in nodes}
            node_vars = {n: read(n) for n in nodes}
            if scope == "network":
                plans, warnings = plan.plan_network(cluster, nodes, node_vars, facts)
            else:
                plans, warnings = plan.plan_cluster(cluster, nodes, profile, node_vars, facts)
        except plan.PlanError as exc:
            return dict(result, failed=True, changed=False, msg=to_native(exc), cluster=exc.cluster,
                        errors=exc.errors)
        # Every node of the cluster computes the same plan; only the head reports its warnings.
        if host == nodes[0]:
            for warning in warnings:
                self._display.warning(warning)
        result.update(changed=False, cluster=cluster, nodes=nodes,
                      ansible_facts={"specdec_plan": plans[host]})
        return result
