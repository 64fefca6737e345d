# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A fleet run, cluster by cluster: when a node must stop because its cluster failed, and the summary.

playbooks/fleet.yml records on each Spark, as facts it sets (they need no connection):

* ``specdec_fleet_started``: the run reached the host (absent: left out by ``--limit``);
* ``specdec_fleet_failure``: ``{"cause": ...}`` when the host stopped (its own error, or its cluster's);
* ``specdec_fleet_serving``: ``{"profile": ..., "head": ..., "port": ...}`` on the head once its endpoint passed;
* ``specdec_plan``: the plan, once computed (cluster and nodes, head first).

Pure Python: the filter plugin ``dgx_spark.specdec.fleet`` and the unit tests use it.
"""

from __future__ import annotations

FAILURE = "specdec_fleet_failure"
SERVING = "specdec_fleet_serving"
STARTED = "specdec_fleet_started"
DONE = "specdec_fleet_done"


def _get(variables, name, default=None):
    try:
        value = variables.get(name, default)
    except Exception:  # Ansible's HostVars may fail to template an unrelated variable
        return default
    return default if value is None else value


def cluster_of(host, variables):
    """The host's cluster: from its plan when it has one, else its inventory (``specdec_cluster``), else itself."""
    plan = _get(variables, "specdec_plan") or {}
    return str(plan.get("cluster") or _get(variables, "specdec_cluster") or host)


def _nodes(host, hosts, hostvars):
    """The cluster's nodes, head first when the plan is known, else in inventory order."""
    plan = _get(hostvars[host], "specdec_plan") or {}
    if plan.get("nodes"):
        return [str(n) for n in plan["nodes"]]
    mine = _get(hostvars[host], "specdec_cluster")
    if not mine:
        return [host]
    return [h for h in hosts if str(_get(hostvars[h], "specdec_cluster") or "") == str(mine)] or [host]


def stop_reason(host, hosts, hostvars, cluster=None):
    """Why ``host`` must stop because another node of its cluster stopped; "" when none did.

    With ``cluster`` (its name, from the plan), ``hosts`` are the cluster's nodes: only theirs are read.
    """
    nodes = hosts if cluster else _nodes(host, hosts, hostvars)
    cluster = cluster or cluster_of(host, hostvars[host])
    failed = []
    for node in nodes:
        if node == host or node not in hostvars:
            continue
        failure = _get(hostvars[node], FAILURE)
        if failure and not failure.get("stopped_by_cluster"):
            failed.append("%s failed: %s" % (node, cause(failure.get("cause"))))
    if not failed:
        return ""
    return "cluster %s stops: %s" % (cluster, "; ".join(failed))


def cause(text):
    """A failure message on one line: the plan's header line dropped, its bullets joined with "; "."""
    lines = []
    for line in str(text or "unknown cause").splitlines():
        line = line.strip()
        if not line or line.endswith("found before anything changed:"):
            continue
        lines.append(line[2:] if line.startswith("- ") else line)
    return "; ".join(lines) or "unknown cause"


def summary(hosts, hostvars):
    """One line per cluster and the total line, with counts. ``hosts`` in inventory order."""
    # Each host's record is read once (HostVars templates on every read).
    records = {}
    clusters = {}
    for host in hosts:
        variables = hostvars[host]
        records[host] = {key: _get(variables, key) for key in (STARTED, FAILURE, SERVING, DONE)}
        clusters.setdefault(cluster_of(host, variables), []).append(host)
    serving = failed = 0
    lines = []
    result = {}
    for name, members in clusters.items():
        # A node that failed before its plan (unreachable) was reached by the run all the same.
        started = [h for h in members if records[h][STARTED] or records[h][FAILURE]]
        failures = [(h, records[h][FAILURE]) for h in members if records[h][FAILURE]]
        serving_heads = [(h, records[h][SERVING]) for h in members if records[h][SERVING]]
        if not started:
            state, detail = "not run", "not in this run (--limit)"
        elif failures:
            state = "failed"
            own = [(h, f) for h, f in failures if not f.get("stopped_by_cluster")] or failures
            # Every node of a cluster computes the same plan: a shared cause is told once.
            causes = {}
            for node, failure in own:
                causes.setdefault(cause(failure.get("cause")), []).append(node)
            # A message that already starts with its one node's name is not prefixed twice.
            detail = "; ".join(text if len(nodes) == 1 and text.startswith(nodes[0] + ":")
                               else "%s: %s" % (", ".join(nodes), text) for text, nodes in causes.items())
            failed += 1
        elif serving_heads and len(started) == len(members):
            state = "serving"
            head, info = serving_heads[0]
            detail = "%s on %s port %s" % (info.get("profile") or "its profile", head, info.get("port"))
            serving += 1
        elif not serving_heads and all(records[h][DONE] for h in members):  # the QSFP link, teardown
            state, detail = "done", "every node done"
        else:
            state = "failed"
            missing = [h for h in members if h not in started]
            detail = ("%s not in this run" % ", ".join(missing)) if missing else "the endpoint was not validated"
            failed += 1
        result[name] = {"state": state, "nodes": members, "detail": detail}
        if state == "serving":
            # What a job's artifacts give per cluster (set_stats): where it serves and the validation's figures.
            figures = ("profile", "head", "port", "url", "tokens_per_s", "acceptance_rate")
            result[name].update({key: info.get(key) for key in figures})
        lines.append("%s (%s): %s - %s" % (name, ", ".join(members), state.upper() if state == "failed" else state,
                                           detail))
    done = sum(1 for item in result.values() if item["state"] == "done")
    lines.append("fleet: %d clusters serving, %s%d failed" % (serving, "%d done, " % done if done else "", failed))
    return {"lines": lines, "serving": serving, "failed": failed, "clusters": result,
            "failed_clusters": [name for name, item in result.items() if item["state"] == "failed"]}
