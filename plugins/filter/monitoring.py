# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Prometheus scrape targets of an inventory's clusters (playbooks/monitoring.yml), and the check of a role's own inputs."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _inputs
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _monitoring


def scrape_targets(hosts, hostvars):
    """``{"targets": [file_sd entries], "skipped": [one line per cluster without a target]}``."""
    try:
        targets, skipped = _monitoring.scrape_targets([str(h) for h in hosts], hostvars)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise AnsibleFilterError("scrape_targets: %s" % exc)
    return {"targets": targets, "skipped": skipped}


def role_input_errors(variables, role, host):
    """One message per input of ``role`` (read by the role itself) that ``variables`` set wrong."""
    try:
        return _inputs.role_errors(str(role), str(host), dict(variables))
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("role_input_errors: %s" % exc)


class FilterModule:
    def filters(self):
        return {"scrape_targets": scrape_targets, "role_input_errors": role_input_errors}
