# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Filters of a fleet run (playbooks/fleet.yml): when a node stops with its cluster, and the run's summary."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _fleet


def fleet_stop_reason(host, hosts, hostvars, cluster=None):
    """Why ``host`` must stop because another node of its cluster stopped ("" when none did).

    With ``cluster`` (the plan's), ``hosts`` are that cluster's nodes and only theirs are read.
    """
    try:
        return _fleet.stop_reason(str(host), [str(h) for h in hosts], hostvars, str(cluster) if cluster else None)
    except (KeyError, TypeError, AttributeError) as exc:
        raise AnsibleFilterError("fleet_stop_reason: %s" % exc)


def fleet_summary(hosts, hostvars):
    """The run's summary: one line per cluster and ``fleet: <S> clusters serving, <F> failed``."""
    try:
        return _fleet.summary([str(h) for h in hosts], hostvars)
    except (KeyError, TypeError, AttributeError) as exc:
        raise AnsibleFilterError("fleet_summary: %s" % exc)


class FilterModule:
    def filters(self):
        return {"fleet_stop_reason": fleet_stop_reason, "fleet_summary": fleet_summary}
