#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: spark_fabric
short_description: Read-only check of the QSFP fabric of DGX Sparks - state, speed, MTU, addresses, HCA, RoCE v2 GID, ping
version_added: 0.8.0
author:
  - DGX Spark speculative-decoding collection maintainers (@dgx-spark)
description:
  - Checks the QSFP (ConnectX-7) links of DGX Sparks and reports them for people and scripts. Run it before filing a
    bug about multi-node serving; C(playbooks/fabric_check.yml) runs it on every node and then once on the controller.
  - B(On a node) (without O(reports)), for each QSFP netdev of O(interfaces) it reads the operstate, MTU and speed
    (C(/sys/class/net/<iface>/operstate), C(mtu), C(speed); C(ethtool <iface>) when sysfs does not show the speed),
    the IPv4 addresses (C(ip -j -4 addr show)), the state C(ibdev2netdev) shows (V(Up) or V(Down)) and the RDMA
    device (HCA) behind the netdev (C(ibdev2netdev), else C(/sys/class/infiniband/<hca>/device/net)).
  - It then finds the RoCE v2 GID index of that HCA whose GID is the IPv4-mapped address of the netdev
    (C(/sys/class/infiniband/<hca>/ports/<port>/gids/<n>) V(::ffff:A.B.C.D), C(gid_attrs/types/<n>) V(RoCE v2),
    C(gid_attrs/ndevs/<n>) the netdev). Without C(/sys/class/infiniband) the node reports "no RDMA devices (sysfs)"
    and the GID index is V(null); that is not a fault.
  - For each link of O(links), and each link the current addresses imply (O(cluster_addresses)), it pings the peer
    address through the netdev with don't-fragment at the planned MTU, as M(dgx_spark.specdec.spark_link) does
    (C(ping -n -M do -s <mtu-28> -c <count> -i 0.2 -W <timeout> -I <iface> <peer_address>)).
  - 'Faults of a node: an expected link whose netdev is missing or Down (operstate not V(up), or C(ibdev2netdev) says
    V(Down)); its planned address not on it; an MTU below the planned one; no reply to the don''t-fragment ping; an Up
    QSFP netdev with an IPv4 address whose HCA has no RoCE v2 GID for it. Warnings: a known speed below 200000 Mb/s,
    an MTU above the planned one, an HCA C(ibdev2netdev) names that sysfs does not show. Different GID indexes on the
    HCAs of one node are normal and only noted.'
  - A node never fails for a fault; it returns them in RV(faults) and RV(fabric). Only wrong options fail it.
  - B(On the controller) (with O(reports)), it joins the nodes' reports into one document (RV(fabric)) - the
    clusters and their plans, every node and link, the faults of all nodes (a cluster whose plan failed, a node
    that gave no report), a timestamp - and renders the table (RV(table)) and the summary (RV(summary)).
  - 'Bandwidth: perftest''s C(ib_write_bw) can be measured only when it is installed on both ends of a link and both
    have the HCA and a RoCE v2 GID. Otherwise each link reports C(bandwidth: null) and the reason (for example
    "ib_write_bw not installed on spark-b" or "no RDMA device (sysfs) on spark-a, spark-b"). With
    O(bandwidth=true) RV(bandwidth_pairs) lists the measurements to run (the argv of both ends, each under
    C(timeout)); the playbook runs them and gives their results back in O(measurements).'
  - The module changes nothing (C(changed=false)); commands run without a shell.
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
      - Node mode. The other ends this node must reach, from the network plan (M(dgx_spark.specdec.specdec_plan) with
        C(scope=network), C(specdec_plans[host].netplan.links)) - on a direct cable one peer per netdev, on a switch
        every other node on that netdev, on a ring both neighbours.
      - Each (O(links[].iface), O(links[].peer_address)) pair may be listed once; a netdev may have several peers.
      - Omitted or empty, only the links the current addresses imply (O(cluster_addresses)) are pinged, and every
        netdev of O(interfaces) is still reported.
    type: list
    elements: dict
    suboptions:
      iface:
        description: This end's netdev, for example V(enp1s0f1np1).
        type: str
        required: true
      address:
        description: This end's planned address on the link, without prefix length. A fault when it is not on the netdev.
        type: str
      peer:
        description: The inventory name of the node at the other end, for example V(spark-b).
        type: str
        required: true
      peer_address:
        description: The IPv4 address of the other end on this link, without prefix length. It is pinged.
        type: str
        required: true
      mtu:
        description:
          - The planned MTU of the link (V(576) to V(9216)); the don't-fragment ping fills it and a lower current MTU is a
            fault. V(null) uses O(mtu).
        type: int
  mtu:
    description:
      - Node mode. The planned MTU (C(netplan_qsfp_mtu), V(9000) for NCCL) for links without their own
        O(links[].mtu) and for the links the addresses imply.
      - V(null) pings at the current MTU and does not judge it.
    type: int
  interfaces:
    description:
      - Node mode. The QSFP netdevs to report, in this order (C(netplan_qsfp_interfaces)).
    type: list
    elements: str
    default: [enp1s0f0np0, enP2p1s0f0np0, enp1s0f1np1, enP2p1s0f1np1]
  cluster_addresses:
    description:
      - Node mode. The IPv4 addresses of the nodes of this node's cluster, a mapping of node name to a mapping of netdev to its V(A.B.C.D/N) list, as
        M(dgx_spark.specdec.spark_facts) read them (C(ansible_facts.spark.ipv4)); this node's own entry (O(node)) is
        ignored, and so are netdevs outside O(interfaces).
      - A QSFP netdev of this node that has an address in a subnet where another node has one is a link too (the same
        netdev of the other node first), even when the plan does not list it - a port that went Down falls out of the
        plan (it plans the Up ports), but its address still says which peer it should reach.
    type: dict
    default: {}
  node:
    description:
      - Node mode. This node's inventory name, used in messages and to skip its own O(cluster_addresses). Defaults
        to the host name.
    type: str
  count:
    description: Node mode. Don't-fragment pings per link (C(ping -c)), at least V(1). One reply is enough.
    type: int
    default: 2
  timeout:
    description: Node mode. Seconds ping waits for each reply (C(ping -W)), at least V(1).
    type: int
    default: 2
  reports:
    description:
      - Controller mode. Every node's RV(fabric) from node mode, a mapping of inventory name to that report. Giving it selects the
        controller mode; it cannot be combined with O(links).
      - A node without a report (V(null)) is a fault, with its cause from O(failures).
    type: dict
  hosts:
    description: Controller mode. The nodes of the run in order (the table's order). Defaults to the keys of O(reports).
    type: list
    elements: str
  plans:
    description:
      - Controller mode. Each node's part of the network plan (C(specdec_plans[host])) - at least C(cluster) and
        C(nodes), and C(error)/C(errors) when its cluster's plan failed. A failed plan of a cluster of two or more
        nodes is a fault; a single Spark is only noted.
    type: dict
    default: {}
  failures:
    description: Controller mode. Why a node gave no report, a mapping of inventory name to the cause.
    type: dict
    default: {}
  bandwidth:
    description:
      - Controller mode. Whether the playbook measures the bandwidth with C(ib_write_bw) (C(fabric_check_bandwidth)).
      - With V(false) a link whose two ends could run it reports "not measured (fabric_check_bandwidth is false)".
      - With V(true) RV(bandwidth_pairs) lists the measurements to run, and a link that could be measured but has no
        result in O(measurements) is a fault.
      - Ignored on a node (a measurement needs both ends; a node reports whether it has C(ib_write_bw) and the HCA).
    type: bool
    default: false
  measurements:
    description:
      - Controller mode. The results of the client ends of RV(bandwidth_pairs) - each with C(id) (or C(item.id), as a
        registered loop gives it), C(rc), C(stdout) and C(stderr).
    type: list
    elements: dict
    default: []
  bandwidth_port:
    description: Controller mode. The first TCP port of the measurements; each pair of RV(bandwidth_pairs) uses the next one.
    type: int
    default: 18515
  bandwidth_seconds:
    description: Controller mode. Seconds each C(ib_write_bw) measures (C(-D)).
    type: int
    default: 5
  bandwidth_timeout:
    description:
      - Controller mode. Seconds after which each C(ib_write_bw) end is stopped (C(timeout --kill-after=5)) - a server
        whose client never came does not stay.
    type: int
    default: 60
notes:
  - Needs C(ip) (iproute2) and C(ping) (iputils) on the node; C(ibdev2netdev), C(ethtool) and C(ib_write_bw) (perftest)
    are used when installed. Run it with C(become=true) when ping needs C(cap_net_raw) to bind to a netdev.
  - Every node checks its own links, so each link is pinged in both directions when the module runs on all nodes.
  - The controller mode runs no command; run it on the controller (C(connection=local)).
seealso:
  - module: dgx_spark.specdec.spark_link
  - module: dgx_spark.specdec.spark_facts
  - module: dgx_spark.specdec.specdec_plan
"""

EXAMPLES = r"""
---
- name: Check this Spark's QSFP links (node mode)
  dgx_spark.specdec.spark_fabric:
    node: "{{ inventory_hostname }}"
    mtu: 9000
    links:
      - iface: enp1s0f1np1
        address: 192.168.200.12
        peer: spark-b
        peer_address: 192.168.200.13
        mtu: 9000
  become: true
  register: fabric_node

- name: Join every node's report and print the table (controller mode)
  dgx_spark.specdec.spark_fabric:
    hosts: "{{ ansible_play_hosts_all }}"
    reports: "{{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars, ['fabric_node', 'fabric']))) }}"
  delegate_to: localhost
  run_once: true
  register: fabric

- name: Show it
  ansible.builtin.debug:
    msg: "{{ fabric.table + fabric.summary }}"
  run_once: true
"""

RETURN = r"""
fabric:
  description:
    - Node mode - this node's report; controller mode - the fabric document (what C(playbooks/fabric_check.yml) writes
      as JSON). Its keys are stable; C(format) changes when one changes meaning.
  returned: success
  type: dict
  contains:
    node:
      description: Node mode. The node's inventory name (O(node)).
      returned: node mode
      type: str
      sample: spark-a
    interfaces:
      description:
        - Node mode (and per node in controller mode). One entry per QSFP netdev of O(interfaces) - C(iface),
          C(exists), C(operstate), C(ibdev2netdev) (V(Up), V(Down) or V(null) when not listed), C(up), C(speed_mbps),
          C(speed_source) (V(sysfs) or V(ethtool)), C(mtu), C(ipv4) (V(A.B.C.D/N) list), C(hca), C(hca_source),
          C(hca_in_sysfs), C(gid_index), C(gid_port), C(gid_address) and C(rdma_note) (why there is no GID index).
      returned: node mode
      type: list
      elements: dict
      sample: [{"iface": "enp1s0f1np1", "exists": true, "operstate": "up", "ibdev2netdev": "Up", "up": true,
                "speed_mbps": 200000, "speed_source": "sysfs", "mtu": 9000, "ipv4": ["192.168.200.12/24"],
                "hca": "rocep1s0f1", "hca_source": "ibdev2netdev", "hca_in_sysfs": true, "gid_index": 3, "gid_port": 1,
                "gid_address": "192.168.200.12", "rdma_note": ""}]
    links:
      description:
        - Node mode (and per node in controller mode). One entry per expected link - C(iface), C(address), C(peer),
          C(peer_address), C(planned_mtu), C(expected_by) (V(plan) or V(addresses)), C(up), C(mtu), C(speed_mbps),
          C(hca), C(gid_index), C(ping) (C(size), C(df), C(transmitted), C(received), C(rtt_avg_ms), C(ok)),
          C(ping_cause), C(bandwidth) (Gb/s or V(null)), C(bandwidth_reason) and C(ok).
      returned: node mode
      type: list
      elements: dict
      sample: [{"iface": "enp1s0f1np1", "address": "192.168.200.12", "peer": "spark-b", "peer_address": "192.168.200.13",
                "planned_mtu": 9000, "expected_by": "plan", "up": true, "mtu": 9000, "speed_mbps": 200000,
                "hca": "rocep1s0f1", "gid_index": 3,
                "ping": {"size": 8972, "df": true, "transmitted": 2, "received": 2, "rtt_avg_ms": 0.05, "ok": true},
                "ping_cause": "", "bandwidth": null, "bandwidth_reason": "ib_write_bw not installed on spark-b", "ok": true}]
    rdma:
      description:
        - Node mode. C(sysfs) (whether C(/sys/class/infiniband) exists), C(note), C(hcas) (per HCA its C(netdevs) and
          C(roce_v2_ipv4_gids)) and C(gid_indexes) (HCA to the GID index found).
      returned: node mode
      type: dict
      sample: {"sysfs": false, "note": "no RDMA devices (sysfs)", "hcas": {}, "gid_indexes": {}}
    tools:
      description: Node mode. The path of C(ib_write_bw), C(ibdev2netdev) and C(ethtool), V(null) when not installed.
      returned: node mode
      type: dict
      sample: {"ib_write_bw": null, "ibdev2netdev": "/usr/sbin/ibdev2netdev", "ethtool": "/usr/sbin/ethtool"}
    format:
      description: Controller mode. The version of the document's layout, V(1).
      returned: controller mode
      type: int
      sample: 1
    generated:
      description: Controller mode. When the document was made (UTC, ISO 8601).
      returned: controller mode
      type: str
      sample: "2026-03-01T12:00:00+00:00"
    clusters:
      description:
        - Controller mode. Per cluster C(nodes), C(plan) (V(ok), V(failed), V(single) or V(unknown)) and the plan's
          C(errors).
      returned: controller mode
      type: dict
      sample: {"pair1": {"nodes": ["spark-a", "spark-b"], "plan": "ok", "errors": []}}
    nodes:
      description:
        - Controller mode. Per node its report (as in node mode) with C(cluster) and C(error) (why it gave no report,
          else empty), and the bandwidth of each link filled in.
      returned: controller mode
      type: dict
    faults:
      description:
        - The faults, each C(node), C(iface), C(peer), C(peer_address) (the expected peer), C(check) (V(state), V(address),
          V(mtu), V(ping), V(gid), V(plan), V(node), V(bandwidth)) and C(message); in controller mode also C(cluster).
      returned: success
      type: list
      elements: dict
    warnings:
      description: As RV(fabric.faults), for what is worth a look but not a fault (C(check) V(speed), V(mtu), V(hca)).
      returned: success
      type: list
      elements: dict
    notes:
      description: Information, for example that the GID index differs between the HCAs of a node (normal).
      returned: success
      type: list
      elements: str
    ok:
      description: Whether there is no fault.
      returned: success
      type: bool
      sample: true
faults:
  description: The message of each fault, naming the node, the netdev and the expected peer.
  returned: success
  type: list
  elements: str
  sample: ["spark-b enP2p1s0f1np1 -> spark-a (192.168.200.14): Down (operstate down, ibdev2netdev Down); expected Up:
            spark-b has 192.168.200.15 on it and spark-a has 192.168.200.14 in that subnet"]
table:
  description: Controller mode. The readable table - a header and one line per link and per QSFP netdev without a link.
  returned: controller mode
  type: list
  elements: str
  sample:
    - "NODE     NETDEV         HCA           STATE      SPEED   MTU   IPV4               GID  PEER                    PING ..."
    - "spark-a  enp1s0f1np1    rocep1s0f1    up/Up      200000  9000  192.168.200.12/24  3    spark-b 192.168.200.13  ok ..."
summary:
  description: Controller mode. A count line, then one line per fault, warning and note.
  returned: controller mode
  type: list
  elements: str
  sample: ["fabric OK: 2 node(s) in 1 cluster(s), 4 link(s) checked, 0 fault(s), 0 warning(s)"]
bandwidth_pairs:
  description:
    - Controller mode with O(bandwidth=true). The C(ib_write_bw) measurements to run - C(id), C(server), C(server_iface),
      C(server_address), C(server_argv) (start it first, in the background), C(client), C(client_iface),
      C(client_address), C(client_argv). Empty otherwise.
  returned: controller mode
  type: list
  elements: dict
"""

import datetime
import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _addresses as addresses
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _fabric as fabric
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _spark_link as link
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _spark_net as net

# Module-level so that the unit tests can point them at scratch directories; not options.
SYS_CLASS_NET = "/sys/class/net"
SYS_CLASS_INFINIBAND = "/sys/class/infiniband"
SBIN = ["/usr/sbin", "/sbin"]


def _netdev(iface):
    """-> {exists, operstate, mtu, speed_mbps} of one netdev, from /sys/class/net."""
    return link.read_netdev(iface, SYS_CLASS_NET)


class NodeCheck:
    def __init__(self, module):
        self.module = module
        self.params = module.params

    def run(self, argv):
        return self.module.run_command(argv, check_rc=False, environ_update={"LC_ALL": "C"})

    def ipv4(self):
        ip = self.module.get_bin_path("ip", required=True, opt_dirs=SBIN)
        rc, out, err = self.run([ip] + list(addresses.IP_ADDR_ARGV))
        if rc != 0:
            said = " ".join((err or out or "").split())[:300]
            self.module.fail_json(msg="ip %s failed (rc=%s): %s" % (" ".join(addresses.IP_ADDR_ARGV), rc, said),
                                  changed=False)
        try:
            return addresses.parse_ip_addr(out)
        except addresses.IpAddrError as exc:
            self.module.fail_json(msg="cannot read the output of ip %s: %s" % (" ".join(addresses.IP_ADDR_ARGV), exc),
                                  changed=False)
        return {}

    def ibdev2netdev(self, path):
        if not path:
            return ""
        rc, out, dummy = self.run([path])
        return out if rc == 0 else ""

    def interface(self, iface, ipv4, ibdev_text, tables, ethtool):
        netdev = _netdev(iface)
        source = "sysfs"
        if netdev["exists"] and netdev["speed_mbps"] is None and ethtool:
            rc, out, dummy = self.run([ethtool, iface])
            speed = fabric.parse_ethtool_speed(out) if rc == 0 else None
            if speed is not None:
                netdev["speed_mbps"], source = speed, "ethtool"
        return netdev, fabric.interface_report(iface, netdev, ipv4.get(iface) or [], ibdev_text, tables, source)

    def check(self):
        p = self.params
        interfaces_wanted = list(p["interfaces"])
        errors = fabric.validate(p["links"] or [], p["mtu"], interfaces_wanted, p["count"], p["timeout"])
        if errors:
            self.module.fail_json(msg="; ".join(errors), changed=False)
        node = p["node"] or socket.gethostname()
        ipv4 = self.ipv4()
        ibdev = self.module.get_bin_path("ibdev2netdev", opt_dirs=SBIN)
        ibdev_text = self.ibdev2netdev(ibdev)
        ethtool = self.module.get_bin_path("ethtool", opt_dirs=SBIN)
        tables = fabric.read_gid_tables(SYS_CLASS_INFINIBAND)
        specs = fabric.expected_links(p["links"] or [], ipv4, p["cluster_addresses"] or {}, interfaces_wanted, p["mtu"],
                                      node)
        # A planned netdev outside ``interfaces`` is reported too.
        names = interfaces_wanted + [s["iface"] for s in specs if s["iface"] not in interfaces_wanted]
        netdevs, interfaces = {}, []
        for iface in dict.fromkeys(names):
            netdevs[iface], report = self.interface(iface, ipv4, ibdev_text, tables, ethtool)
            interfaces.append(report)
        by_name = {i["iface"]: i for i in interfaces}
        ping = self.module.get_bin_path("ping", required=True, opt_dirs=SBIN) if specs else None
        links = []
        for spec in specs:
            netdev, planned = netdevs[spec["iface"]], spec["mtu"]
            # The MTU is judged by fabric.judge_node (only below the plan is a fault), so spark_link's check
            # only pings: it sees the planned MTU as the current one, and pings at it.
            ping_view = dict(netdev, mtu=planned if planned is not None else netdev["mtu"])
            result = link.check_link(dict(spec, mtu=planned), ping_view, node, ping, self.run, p["count"], p["timeout"],
                                     SYS_CLASS_NET)
            links.append(fabric.link_report(spec, by_name[spec["iface"]], result))
        tools = {fabric.IB_WRITE_BW: self.module.get_bin_path(fabric.IB_WRITE_BW, opt_dirs=SBIN),
                 "ibdev2netdev": ibdev, "ethtool": ethtool}
        report = fabric.node_report(node, interfaces, links, tools, tables, socket.gethostname())
        return report


def _measurements(items):
    """Registered loop results (or plain dicts) -> {pair id: result}."""
    out = {}
    for item in items or []:
        if not isinstance(item, dict):
            continue
        pair_id = item.get("id", (item.get("item") or {}).get("id") if isinstance(item.get("item"), dict) else None)
        if pair_id is not None:
            out[int(pair_id)] = item
    return out


def controller(module):
    p = module.params
    errors = fabric.validate_bandwidth(p["bandwidth_port"], p["bandwidth_seconds"], p["bandwidth_timeout"])
    if errors:
        module.fail_json(msg="; ".join(errors), changed=False)
    reports = p["reports"] or {}
    hosts = list(p["hosts"] or reports)
    generated = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()
    doc = fabric.fabric_report(hosts, reports, p["plans"] or {}, p["failures"] or {}, p["bandwidth"],
                               _measurements(p["measurements"]), generated, p["bandwidth_port"],
                               p["bandwidth_seconds"], p["bandwidth_timeout"])
    pairs = []
    if p["bandwidth"]:
        pairs = fabric.bandwidth_pairs(hosts, {h: r for h, r in reports.items() if r}, p["bandwidth_port"],
                                       p["bandwidth_seconds"], p["bandwidth_timeout"])[0]
    module.exit_json(changed=False, fabric=doc, faults=[f["message"] for f in doc["faults"]], table=fabric.render_table(doc),
                     summary=fabric.render_summary(doc), bandwidth_pairs=pairs)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            links=dict(type="list", elements="dict", options=dict(
                iface=dict(type="str", required=True),
                address=dict(type="str"),
                peer=dict(type="str", required=True),
                peer_address=dict(type="str", required=True),
                mtu=dict(type="int"),
            )),
            mtu=dict(type="int"),
            interfaces=dict(type="list", elements="str", default=list(net.QSFP_INTERFACES)),
            cluster_addresses=dict(type="dict", default={}),
            node=dict(type="str"),
            count=dict(type="int", default=2),
            timeout=dict(type="int", default=2),
            reports=dict(type="dict"),
            hosts=dict(type="list", elements="str"),
            plans=dict(type="dict", default={}),
            failures=dict(type="dict", default={}),
            bandwidth=dict(type="bool", default=False),
            measurements=dict(type="list", elements="dict", default=[]),
            bandwidth_port=dict(type="int", default=fabric.BANDWIDTH_PORT),
            bandwidth_seconds=dict(type="int", default=fabric.BANDWIDTH_SECONDS),
            bandwidth_timeout=dict(type="int", default=fabric.BANDWIDTH_TIMEOUT),
        ),
        mutually_exclusive=[("links", "reports")],
        supports_check_mode=True,
    )
    if module.params["reports"] is not None:
        controller(module)
        return
    report = NodeCheck(module).check()
    module.exit_json(changed=False, fabric=report, faults=[f["message"] for f in report["faults"]])


if __name__ == "__main__":
    main()
