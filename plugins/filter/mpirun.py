# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The mpirun_hostname_check filter: did ``mpirun -np N hostname`` reach every node, and if not, why."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _mpirun


def mpirun_hostname_check(result, hostnames, ssh_port="?", timeout=None, container="?"):
    """``result``: the registered docker_container_exec result; ``hostnames``: every node's, rank order."""
    if not isinstance(result, Mapping):
        raise AnsibleFilterError("mpirun_hostname_check: the input must be a registered result (a dict), not %s"
                                 % type(result).__name__)
    if isinstance(hostnames, (str, bytes)) or not isinstance(hostnames, Sequence):
        raise AnsibleFilterError("mpirun_hostname_check: hostnames must be a list of host names, not %r" % (hostnames,))
    return _mpirun.check(dict(result), list(hostnames), ssh_port=ssh_port, timeout=timeout, container=container)


class FilterModule:
    def filters(self):
        return {"mpirun_hostname_check": mpirun_hostname_check}
