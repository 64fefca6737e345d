# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Prometheus' scrape targets for the clusters of an inventory, from their plans (playbooks/monitoring.yml).

Each serving cluster's head has a ``metrics`` part in its plan (where its metrics are served: the collection's
exporter, or trtllm-serve's own ``/prometheus/metrics``). A target is the head's address as Ansible reaches it
(``ansible_host``, else its inventory name) with that port, and the labels ``cluster``, ``profile``, ``release`` and
``topology``; the path travels in ``__metrics_path__``, which Prometheus applies per target
(https://prometheus.io/docs/prometheus/latest/configuration/configuration/#file_sd_config), so one job scrapes every
release. Pure Python: the filter plugin ``dgx_spark.specdec.scrape_targets`` and the unit tests use it.
"""

from __future__ import annotations

JOB = "trtllm"
LABELS = ("cluster", "profile", "release", "topology")


def _get(variables, name):
    try:
        return variables.get(name)
    except Exception:  # Ansible's HostVars may fail to template an unrelated variable
        return None


def _address(host, variables):
    address = str(_get(variables, "ansible_host") or host)
    return "[%s]" % address if ":" in address and not address.startswith("[") else address


def scrape_targets(hosts, hostvars):
    """``(targets, skipped)``: file_sd entries ``{"targets": ["addr:port"], "labels": {...}}`` in inventory order,
    and one line per cluster without a target (no plan, metrics off, or Triton's own metrics port)."""
    targets, skipped, seen = [], [], set()
    for host in hosts:
        variables = hostvars[host]
        plan = _get(variables, "specdec_plan") or {}
        cluster = str(plan.get("cluster") or _get(variables, "specdec_cluster") or host)
        if plan.get("head") not in (None, host):
            continue  # a worker: its head carries the cluster's target
        if cluster in seen:
            continue
        seen.add(cluster)
        metrics = plan.get("metrics")
        if not plan:
            skipped.append("%s: no plan (the node did not answer, or its plan failed)" % cluster)
            continue
        if not metrics:
            skipped.append("%s: no Prometheus metrics (specdec_serve_metrics is false, or Triton's own metrics "
                           "port)" % cluster)
            continue
        if metrics.get("local_only"):
            skipped.append("%s: its server and metrics listen on loopback only (specdec_serve_host); set "
                           "specdec_serve_host to an address the monitoring host reaches" % cluster)
            continue
        labels = dict(metrics["labels"], profile=str(plan.get("profile") or "custom"), __metrics_path__=metrics["path"])
        targets.append({"targets": ["%s:%d" % (_address(host, variables), int(metrics["port"]))], "labels": labels})
    return targets, skipped
