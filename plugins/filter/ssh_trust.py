# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The ssh_trust filter: authorized_keys and known_hosts of a cluster node from public keys only."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_plan as plan


def ssh_trust(ssh, keys):
    """``ssh``: the node plan's C(container.ssh); ``keys``: {host: {client, host}} public keys -> [{path, content, mode}]."""
    try:
        files = plan.ssh_trust(ssh, keys)
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("ssh_trust: %s" % exc)
    return [{"path": path, "content": content, "mode": "0644"} for path, content in sorted(files.items())]


class FilterModule:
    def filters(self):
        return {"ssh_trust": ssh_trust}
