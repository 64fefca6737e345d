# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The firewall_removal filter: the iptables commands that remove the endpoint's allow-list (the teardown)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _firewall


def firewall_removal(lines):
    """``lines``: the C(firewall) fact of M(dgx_spark.specdec.spark_facts) -> iptables argument lists."""
    try:
        return _firewall.removal([str(line) for line in lines or []])
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("firewall_removal: %s" % exc)


class FilterModule:
    def filters(self):
        return {"firewall_removal": firewall_removal}
