# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The firewall_changes filter: what to add and remove so the node's iptables rules are the planned ones."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _firewall


def firewall_changes(listing, spec):
    """``listing``: ``iptables -S`` of the filter table; ``spec``: the plan's C(container.firewall)."""
    try:
        return _firewall.changes(str(listing or ""), dict(spec or {}))
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("firewall_changes: %s" % exc)


class FilterModule:
    def filters(self):
        return {"firewall_changes": firewall_changes}
