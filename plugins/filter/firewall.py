# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The firewall_removal filter: the iptables and ip6tables commands that remove the collection's rules (the teardown)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _firewall


def firewall_removal(lines, lines6=None):
    """``lines``, ``lines6``: the C(firewall) and C(firewall6) facts of M(dgx_spark.specdec.spark_facts) -> argv lists."""
    try:
        return _firewall.removal([str(line) for line in lines or []], [str(line) for line in lines6 or []])
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("firewall_removal: %s" % exc)


class FilterModule:
    def filters(self):
        return {"firewall_removal": firewall_removal}
