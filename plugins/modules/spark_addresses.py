#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: spark_addresses
short_description: Wait until the planned QSFP addresses of a DGX Spark are on their netdevs after netplan apply
version_added: 0.7.0
author:
  - DGX Spark speculative-decoding collection maintainers (@dgx-spark)
description:
  - Checks, right after the node's QSFP netplan file was applied, that every planned address of O(entries) is on
    its netdev with its prefix length. C(netplan apply) returns before systemd-networkd has configured every
    address, so the module reads again until all are there.
  - It reads the node's IPv4 addresses with C(ip -j -4 addr show) (JSON, no text is scraped), up to O(retries)
    times, O(delay) seconds apart, and returns as soon as none is missing.
  - An address counts as present only on the planned netdev and with the planned prefix length, the same rule the
    plan (M(dgx_spark.specdec.specdec_plan)) uses to decide that a node needs its file applied again.
  - 'When addresses are still missing after the last read, the module fails with one message that names the node,
    each missing address and its netdev (and where the address is instead, if anywhere), the apply command and how
    often it read, for example "After applying with "netplan apply", spark-a lacks 192.168.200.14/24 on
    enP2p1s0f1np1 (checked 10 times, 2 s apart). The file stays; the next run applies again."'
  - The module only reads; it never changes anything and reports C(changed=false). The command runs without a shell.
extends_documentation_fragment:
  - dgx_spark.specdec.attributes
  - dgx_spark.specdec.attributes.INFO_MODULE
  - dgx_spark.specdec.attributes.ACTIONGROUP_SPECDEC
attributes:
  check_mode:
    support: full
    details:
      - The module only reads, so it reads (and waits) the same in check mode.
  diff_mode:
    support: N/A
  idempotent:
    support: full
options:
  entries:
    description:
      - The planned addresses of this node, one per QSFP netdev, as the plan's C(netplan_qsfp_spec.entries).
      - Each entry has C(iface), the netdev (for example V(enp1s0f1np1)), and C(cidr), the address with its prefix
        length (for example V(192.168.200.12/24)). Other keys of the plan's entries (C(address), C(prefix),
        C(network), C(table)) are ignored.
      - An empty list checks nothing, reads nothing and returns an empty RV(missing).
    type: list
    elements: dict
    required: true
  node:
    description:
      - This node's name in messages. Defaults to the node's host name.
    type: str
  apply_command:
    description:
      - The command that applied the file, only quoted in the failure message.
    type: str
    default: netplan apply
  retries:
    description:
      - How many times the addresses are read at most, at least V(1).
    type: int
    default: 10
  delay:
    description:
      - Seconds between two reads, V(0) or more.
    type: int
    default: 2
notes:
  - Needs C(ip) of iproute2 with JSON output (C(-j)) on the node; reading the addresses needs no privilege.
seealso:
  - module: dgx_spark.specdec.spark_link
  - module: dgx_spark.specdec.spark_facts
"""

EXAMPLES = r"""
---
- name: Wait until every planned QSFP address is on its netdev (after netplan apply)
  dgx_spark.specdec.spark_addresses:
    node: "{{ inventory_hostname }}"
    entries: "{{ netplan_qsfp_spec.entries }}"
    apply_command: netplan apply
    retries: 10

- name: Check two addresses once, without waiting
  dgx_spark.specdec.spark_addresses:
    entries:
      - iface: enp1s0f1np1
        cidr: 192.168.200.12/24
      - iface: enP2p1s0f1np1
        cidr: 192.168.200.14/24
    retries: 1
"""

RETURN = r"""
missing:
  description:
    - The planned entries that were not on their netdev at the last read, in the order of O(entries); empty when
      the module succeeds. Also returned when the module fails.
  returned: always
  type: list
  elements: dict
  contains:
    iface:
      description: The planned netdev.
      returned: always
      type: str
      sample: enP2p1s0f1np1
    cidr:
      description: The planned address with its prefix length.
      returned: always
      type: str
      sample: 192.168.200.14/24
    found:
      description:
        - 'Where the address is instead, as C(<netdev>: <address>/<prefix>): another netdev, or the planned one with
          another prefix length.'
        - Empty when the node does not have the address at all.
      returned: always
      type: list
      elements: str
      sample: ["enp1s0f1np1: 192.168.200.14/24"]
  sample: [{"iface": "enP2p1s0f1np1", "cidr": "192.168.200.14/24", "found": []}]
addresses:
  description:
    - The node's IPv4 addresses per netdev at the last read (C(ip -j -4 addr show)).
    - Empty when nothing was read.
  returned: always
  type: dict
  sample: {"lo": ["127.0.0.1/8"], "enp1s0f1np1": ["192.168.200.12/24"], "enP2p1s0f1np1": ["192.168.200.14/24"]}
reads:
  description: How many times the addresses were read; V(0) when O(entries) is empty.
  returned: always
  type: int
  sample: 2
summary:
  description: One line, the node and the planned addresses and how often they were read.
  returned: always
  type: str
  sample: "spark-a: 192.168.200.12/24 on enp1s0f1np1, 192.168.200.14/24 on enP2p1s0f1np1 (read 2 times)"
"""

import socket
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _addresses as addr

# Module-level so that the unit tests can replace the wait.
_sleep = time.sleep


class _ReadFailed(Exception):
    pass


def main():
    module = AnsibleModule(
        argument_spec=dict(
            entries=dict(type="list", elements="dict", required=True),
            node=dict(type="str"),
            apply_command=dict(type="str", default="netplan apply"),
            retries=dict(type="int", default=10),
            delay=dict(type="int", default=2),
        ),
        supports_check_mode=True,
    )
    p = module.params
    empty = dict(changed=False, missing=[], addresses={}, reads=0)
    errors = addr.validate(p["entries"], p["retries"], p["delay"])
    if errors:
        module.fail_json(msg="; ".join(errors), summary="", **empty)
    node = p["node"] or socket.gethostname()
    entries = [{"iface": e["iface"], "cidr": e["cidr"]} for e in p["entries"]]
    if not entries:
        module.exit_json(summary=addr.summary_line(node, entries, 0), **empty)

    ip = module.get_bin_path("ip", required=True)
    argv = [ip] + list(addr.IP_ADDR_ARGV)
    command = "ip " + " ".join(addr.IP_ADDR_ARGV)

    def read():
        rc, out, err = module.run_command(argv, check_rc=False, environ_update={"LC_ALL": "C"})
        if rc != 0:
            raise _ReadFailed("%s failed on %s (rc=%s): %s" % (command, node, rc, (err or out or "").strip()))
        try:
            return addr.parse_ip_addr(out)
        except addr.IpAddrError as exc:
            raise _ReadFailed("cannot read the output of %s on %s: %s" % (command, node, exc))

    try:
        current, missing, reads = addr.wait(entries, read, p["retries"], p["delay"], _sleep)
    except _ReadFailed as exc:
        module.fail_json(msg=str(exc), summary="", **empty)
    result = dict(changed=False, missing=missing, addresses=current, reads=reads,
                  summary=addr.summary_line(node, entries, reads))
    if missing:
        module.fail_json(msg=addr.failure_message(node, missing, p["apply_command"], reads, p["delay"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
