#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: spark_link
short_description: Check the QSFP links of a DGX Spark - netdev, MTU, speed and a don't-fragment ping to the peer
version_added: 0.6.0
author:
  - DGX Spark speculative-decoding collection maintainers (@dgx-spark)
description:
  - Checks, after the node's QSFP netplan file was applied, each QSFP link of O(links) from this node's end. Two DGX
    Sparks are joined by a QSFP cable; each end has a netdev (for example C(enp1s0f1np1)) with an address, and NCCL
    needs the planned MTU (V(9000)) on both ends.
  - For each link, in this order, the module reads whether the netdev exists (C(/sys/class/net/<iface>)), its
    operstate, MTU and speed (C(/sys/class/net/<iface>/operstate), C(mtu) and C(speed), in Mb/s).
  - When O(links[].mtu) is set and the current MTU differs, the link fails.
  - It then pings O(links[].peer_address) through the netdev with don't-fragment at the size that fills the MTU
    (C(ping -n -M do -s <mtu-28> -c <count> -W <timeout> -I <iface> <peer_address>)), with the planned MTU, else the
    current one. The link passes when at least one reply comes back.
  - When that ping gets no reply, one small normal ping (C(ping -n -c 1 -W <timeout> -I <iface> <peer_address>)) tells
    a lower MTU at the other end (small packets cross) from a link or peer address that is down (nothing crosses).
    When ping cannot send the packet at all (C(message too long)), the MTU of this end's route is too low.
  - An operstate other than V(up) is returned and named in the failure when the ping fails.
  - 'Every failed link gives one message that names the netdev, this node and its address, the peer and its address,
    and the cause, for example "QSFP link enp1s0f1np1 of spark-a (192.168.200.12) to spark-b (192.168.200.13): MTU is
    1500 on spark-a, planned 9000". The module fails once, after all links were checked, with all messages, and
    still returns RV(links) and RV(summary).'
  - The module only reads and pings; it never changes anything and reports C(changed=false). Commands run without
    a shell.
extends_documentation_fragment:
  - dgx_spark.specdec.attributes
  - dgx_spark.specdec.attributes.INFO_MODULE
  - dgx_spark.specdec.attributes.ACTIONGROUP_SPECDEC
attributes:
  check_mode:
    support: full
    details:
      - The module only reads and pings, so it reads and pings the same in check mode.
  diff_mode:
    support: N/A
  idempotent:
    support: full
options:
  links:
    description:
      - One entry per QSFP netdev of this node that has a peer at the other end of the cable.
      - An empty list checks nothing and returns an empty RV(links).
    type: list
    elements: dict
    required: true
    suboptions:
      iface:
        description:
          - This end's netdev, for example V(enp1s0f1np1).
          - 1 to 15 letters, digits and V(_), V(.), V(:), V(-), not V(.) or V(..). Each netdev may be listed once.
        type: str
        required: true
      address:
        description:
          - This end's address on the link, without prefix length, for example V(192.168.200.12).
          - Only quoted in messages.
        type: str
      peer:
        description:
          - The inventory name of the node at the other end of the link, for example V(spark-b). Quoted in messages.
        type: str
        required: true
      peer_address:
        description:
          - The IPv4 address of the other end on this link, for example V(192.168.200.13), without prefix length or
            leading zeros. It is pinged.
        type: str
        required: true
      mtu:
        description:
          - The planned MTU of the link, from V(576) to V(9216); V(9000) for NCCL.
          - When set, a current MTU that differs fails the link, and the don't-fragment ping fills this MTU.
          - When omitted (V(null)), the current MTU sets the ping size and is not judged.
        type: int
  node:
    description:
      - This node's name in messages. Defaults to the node's host name.
    type: str
  count:
    description:
      - Don't-fragment pings sent per link (C(ping -c)), at least V(1). One reply is enough.
    type: int
    default: 2
  timeout:
    description:
      - Seconds ping waits for each reply (C(ping -W)), at least V(1).
    type: int
    default: 2
notes:
  - Needs the C(ping) command of iputils on the node (package C(iputils-ping)); binding to a netdev (C(-I)) may need
    root or C(cap_net_raw), so run the module with C(become=true) when ping is not installed with that capability.
  - The other end's MTU can only be seen from this end as "large packets do not cross". Run the module on both nodes
    to check both directions.
  - A don't-fragment ping of V(9000) bytes checks the IP MTU; the switchless QSFP cable has no other hop.
seealso:
  - module: dgx_spark.specdec.spark_facts
"""

EXAMPLES = r"""
---
- name: Check the QSFP link of spark-a to spark-b after netplan apply
  dgx_spark.specdec.spark_link:
    node: spark-a
    links:
      - iface: enp1s0f1np1
        address: 192.168.200.12
        peer: spark-b
        peer_address: 192.168.200.13
        mtu: 9000
      - iface: enP2p1s0f1np1
        address: 192.168.200.14
        peer: spark-b
        peer_address: 192.168.200.15
        mtu: 9000
  become: true
  register: qsfp_link

- name: Show what was found
  ansible.builtin.debug:
    msg: "{{ qsfp_link.summary }}"

- name: Only ping at the current MTU, 5 pings of at most 1 second each
  dgx_spark.specdec.spark_link:
    links:
      - iface: enp1s0f0np0
        peer: spark-b
        peer_address: 192.168.100.11
    count: 5
    timeout: 1
  become: true
"""

RETURN = r"""
links:
  description:
    - One entry per entry of O(links), in the same order. Also returned when the module fails for a link.
  returned: always
  type: list
  elements: dict
  contains:
    iface:
      description: The netdev, O(links[].iface).
      returned: always
      type: str
      sample: enp1s0f1np1
    peer:
      description: The other end's inventory name, O(links[].peer).
      returned: always
      type: str
      sample: spark-b
    peer_address:
      description: The other end's address, O(links[].peer_address).
      returned: always
      type: str
      sample: 192.168.200.13
    address:
      description: This end's address, O(links[].address); empty when not given.
      returned: always
      type: str
      sample: 192.168.200.12
    operstate:
      description:
        - The netdev's operstate from C(/sys/class/net/<iface>/operstate), for example V(up), V(down) or
          V(lowerlayerdown).
        - V(null) when the netdev does not exist or the file cannot be read.
      returned: always
      type: str
      sample: up
    mtu:
      description: The netdev's current MTU; V(null) when the netdev does not exist or the MTU cannot be read.
      returned: always
      type: int
      sample: 9000
    planned_mtu:
      description: The planned MTU, O(links[].mtu); V(null) when not planned.
      returned: always
      type: int
      sample: 9000
    speed_mbps:
      description:
        - The link speed in Mb/s from C(/sys/class/net/<iface>/speed).
        - V(null) when the system does not show it (no carrier, a driver that does not report it, a missing netdev).
      returned: always
      type: int
      sample: 200000
    ping:
      description: The don't-fragment ping.
      returned: always
      type: dict
      contains:
        size:
          description:
            - The ICMP payload in bytes (C(ping -s)), the MTU minus 28.
            - V(null) when the link was not pinged (the netdev does not exist, or its MTU is unknown and none is planned).
          returned: always
          type: int
          sample: 8972
        df:
          description: Always V(true), the ping is sent with don't-fragment (C(ping -M do)).
          returned: always
          type: bool
          sample: true
        transmitted:
          description: Packets ping sent; V(0) when not pinged or when ping could not send.
          returned: always
          type: int
          sample: 2
        received:
          description: Replies received.
          returned: always
          type: int
          sample: 2
        rtt_avg_ms:
          description: The average round-trip time in milliseconds; V(null) without replies.
          returned: always
          type: float
          sample: 0.05
        ok:
          description: Whether at least one reply came back.
          returned: always
          type: bool
          sample: true
      sample: {"size": 8972, "df": true, "transmitted": 2, "received": 2, "rtt_avg_ms": 0.05, "ok": true}
    ok:
      description: Whether the link passed every check.
      returned: always
      type: bool
      sample: true
    cause:
      description: Why the link failed, several causes joined by semicolons; empty when RV(links[].ok) is V(true).
      returned: always
      type: str
      sample: "no reply to a 9000-byte ping with don't-fragment (ping -M do -s 8972): the MTU of spark-b's end is
        probably lower than 9000, or the link is down (a normal ping: small packets cross, so the other end's MTU is
        lower than 9000) [ping: 2 packets transmitted, 0 received, 100% packet loss, time 1001ms]"
  sample: [{"iface": "enp1s0f1np1", "peer": "spark-b", "peer_address": "192.168.200.13", "address": "192.168.200.12",
            "operstate": "up", "mtu": 9000, "planned_mtu": 9000, "speed_mbps": 200000,
            "ping": {"size": 8972, "df": true, "transmitted": 2, "received": 2, "rtt_avg_ms": 0.05, "ok": true},
            "ok": true, "cause": ""}]
summary:
  description: One line per link, in the order of RV(links).
  returned: always
  type: list
  elements: str
  sample:
    - "enp1s0f1np1 -> spark-b 192.168.200.13: MTU 9000, 200000 Mb/s, DF ping 8972 bytes 2/2 (0.05 ms)"
    - "enP2p1s0f1np1 -> spark-b 192.168.200.15: MTU 9000, speed not shown, DF ping 8972 bytes 0/2"
"""

import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _spark_link as link

# Module-level so that the unit tests can point it at a scratch directory.
SYS_CLASS_NET = "/sys/class/net"


def _netdev(iface):
    """-> {exists, operstate, mtu, speed_mbps} of one netdev, from /sys/class/net."""
    return link.read_netdev(iface, SYS_CLASS_NET)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            links=dict(type="list", elements="dict", required=True, options=dict(
                iface=dict(type="str", required=True),
                address=dict(type="str"),
                peer=dict(type="str", required=True),
                peer_address=dict(type="str", required=True),
                mtu=dict(type="int"),
            )),
            node=dict(type="str"),
            count=dict(type="int", default=2),
            timeout=dict(type="int", default=2),
        ),
        supports_check_mode=True,
    )
    p = module.params
    errors = link.validate(p["links"], p["count"], p["timeout"])
    if errors:
        module.fail_json(msg="; ".join(errors), changed=False, links=[], summary=[])
    node = p["node"] or socket.gethostname()
    if not p["links"]:
        module.exit_json(changed=False, links=[], summary=[])

    ping = module.get_bin_path("ping", required=True)

    def run(argv):
        return module.run_command(argv, check_rc=False, environ_update={"LC_ALL": "C"})

    results = []
    summary = []
    messages = []
    for spec in p["links"]:
        netdev = _netdev(spec["iface"])
        result = link.check_link(spec, netdev, node, ping, run, p["count"], p["timeout"], SYS_CLASS_NET)
        results.append(result)
        summary.append(link.summary_line(result, netdev["exists"]))
        if not result["ok"]:
            messages.append(link.link_message(spec, node, result["cause"]))
    if messages:
        module.fail_json(msg=link.failure_message(node, messages), changed=False, links=results, summary=summary)
    module.exit_json(changed=False, links=results, summary=summary)


if __name__ == "__main__":
    main()
