# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The read-only fabric check of DGX Sparks joined by QSFP cables (module ``spark_fabric``, playbook
``playbooks/fabric_check.yml``).

This is a private module_utils file (leading underscore): its API may change without notice. Standard library
only (``ipaddress``, ``os``, ``re``; the netdev and ping rules are ``_spark_link``'s, the ``ibdev2netdev`` reader
``_spark_net``'s), so that it runs on the node inside the module, on the controller, and in unit tests:

* ``validate`` checks the node-side options; ``read_gid_tables`` reads ``/sys/class/infiniband`` (the root is an
  argument, so a test gives it a scratch tree); ``gid_ipv4``, ``roce_v2_ipv4_gids`` and ``pick_gid`` find the
  RoCE v2 GID index whose GID is the IPv4-mapped address of a netdev.
* ``expected_links`` adds to the plan's links the ones the nodes' current addresses imply (a netdev that carries
  an address in a subnet another node of the cluster has an address in), so a port that went Down and fell out
  of the plan is still expected.
* ``interface_report``, ``link_report`` and ``judge_node`` build one node's report and its faults and warnings.
* ``fabric_report`` joins the nodes' reports (the cluster plans, nodes that gave no report, bandwidth across
  both ends of each link); ``bandwidth_pairs``, ``ib_write_bw_argv`` and ``parse_ib_write_bw`` are the optional
  ib_write_bw measurement; ``render_table`` and ``render_summary`` word it for people.
"""

from __future__ import annotations

import ipaddress
import os
import re

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _spark_link as link
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _spark_net as net

# The QSFP (CX-7) link of a DGX Spark: 200 Gb/s per port (ethtool "Speed: 200000Mb/s", NCCL "speed=200000").
SPEED_EXPECTED_MBPS = 200000
ROCE_V2 = "roce v2"
NO_RDMA_SYSFS = "no RDMA devices (sysfs)"
IB_WRITE_BW = "ib_write_bw"
BANDWIDTH_PORT = 18515
BANDWIDTH_SECONDS = 5
BANDWIDTH_TIMEOUT = 60
# Report format: bump when a key changes meaning or goes away (new keys do not bump it).
FORMAT = 1

# ethtool: "\tSpeed: 200000Mb/s" or "\tSpeed: Unknown!".
_ETHTOOL_SPEED = re.compile(r"^\s*Speed:\s*([0-9]+)\s*Mb/s", re.MULTILINE)
# perftest with --report_gbits: " 65536      2756483          0.00               180.62              0.344502"
_BW_HEADER = re.compile(r"#bytes\s+#iterations\s+BW peak\[(?P<unit>[^\]]+)\]\s+BW average\[[^\]]+\]")
_BW_ROW = re.compile(r"^\s*([0-9]+)\s+([0-9]+)\s+([0-9.]+)\s+([0-9.]+)(?:\s+([0-9.]+))?\s*$")


# ---------------------------------------------------------------------------
# Options (node side)
# ---------------------------------------------------------------------------

def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def validate(links, mtu=None, interfaces=net.QSFP_INTERFACES, count=2, timeout=2):
    """The node-side options -> list of errors (empty when all is well): ``spark_link``'s rules for the links (a
    netdev may have several: every other node of a switch, both neighbours of a ring), and the planned MTU, the
    netdevs and each link's own address."""
    errors = link.validate(links, count, timeout)
    if mtu is not None and (not _is_int(mtu) or not link.MTU_MIN <= mtu <= link.MTU_MAX):
        errors.append("mtu: %r is out of range; accepted: %s" % (mtu, link.MTU_ACCEPTED))
    for index, name in enumerate(interfaces or []):
        if not link.is_ifname(name):
            errors.append("interfaces[%d]: %r; accepted: %s" % (index, name, link.IFNAME_ACCEPTED))
    for index, spec in enumerate(links or []):
        address = spec.get("address") if isinstance(spec, dict) else None
        if address and not link.is_ipv4(address):
            errors.append("links[%d].address: %r is not an IPv4 address; accepted: %s"
                          % (index, address, link.IPV4_ACCEPTED))
    return errors


# ---------------------------------------------------------------------------
# sysfs, ibdev2netdev, ethtool
# ---------------------------------------------------------------------------

def _read(path):
    try:
        with open(path, "r", encoding="utf-8") as handle:
            return handle.read().strip()
    except (OSError, ValueError):
        # Unused GID entries answer EINVAL in gid_attrs; a vanished device ENOENT.
        return None


def _listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []


def _numeric(names):
    return sorted((n for n in names if n.isdigit()), key=int)


def read_gid_tables(root="/sys/class/infiniband"):
    """The RDMA devices under ``root`` -> None when ``root`` does not exist (no RDMA devices), else
    ``{hca: {"netdevs": [...], "ports": {port: [{index, gid, type, ndev}, ...]}}}``.

    ``netdevs`` lists ``<hca>/device/net``; each port lists the non-zero GIDs of ``ports/<port>/gids/<n>`` with
    ``gid_attrs/types/<n>`` (``RoCE v2``, ``IB/RoCE v1``) and ``gid_attrs/ndevs/<n>`` (the netdev), None when
    those cannot be read."""
    if not os.path.isdir(root):
        return None
    tables = {}
    for hca in sorted(_listdir(root)):
        base = os.path.join(root, hca)
        entry = {"netdevs": sorted(_listdir(os.path.join(base, "device", "net"))), "ports": {}}
        for port in _numeric(_listdir(os.path.join(base, "ports"))):
            port_dir = os.path.join(base, "ports", port)
            gids = []
            for index in _numeric(_listdir(os.path.join(port_dir, "gids"))):
                gid = _read(os.path.join(port_dir, "gids", index))
                if gid is None or _is_zero_gid(gid):
                    continue
                gids.append({"index": int(index), "gid": gid,
                             "type": _read(os.path.join(port_dir, "gid_attrs", "types", index)),
                             "ndev": _read(os.path.join(port_dir, "gid_attrs", "ndevs", index))})
            entry["ports"][port] = gids
        tables[hca] = entry
    return tables


def _is_zero_gid(text):
    return not text.replace(":", "").strip("0")


def gid_ipv4(text):
    """A GID as sysfs writes it (``0000:0000:0000:0000:0000:ffff:c0a8:c80c``) -> its IPv4 address when it is
    IPv4-mapped (``192.168.200.12``), else None."""
    try:
        mapped = ipaddress.IPv6Address((text or "").strip()).ipv4_mapped
    except ValueError:
        return None
    return str(mapped) if mapped is not None else None


def roce_v2_ipv4_gids(table):
    """One HCA's table (of ``read_gid_tables``) -> [{index, port, address, ndev}] of its RoCE v2 GIDs that are
    IPv4-mapped, by port then index."""
    out = []
    for port in _numeric((table or {}).get("ports") or {}):
        for entry in table["ports"][port]:
            address = gid_ipv4(entry.get("gid"))
            if address and (entry.get("type") or "").strip().lower() == ROCE_V2:
                out.append({"index": entry["index"], "port": int(port), "address": address, "ndev": entry.get("ndev")})
    return out


def pick_gid(table, netdev, addresses):
    """The RoCE v2 GID of ``netdev`` whose address is one of ``addresses`` (plain A.B.C.D, in the netdev's order):
    ``{index, port, address}`` of the first address that has one (lowest index), else None. An entry whose
    ``ndevs`` file could not be read is taken by its address alone."""
    gids = roce_v2_ipv4_gids(table)
    for address in addresses:
        for gid in gids:
            if gid["address"] == address and gid["ndev"] in (netdev, None):
                return {"index": gid["index"], "port": gid["port"], "address": address}
    return None


def hca_of(netdev, ibdev2netdev_text, tables):
    """The RDMA device behind ``netdev`` -> (hca, source): from ``ibdev2netdev``, else from sysfs (the HCA whose
    ``device/net`` lists the netdev, or whose GIDs name it); (None, "") when neither knows it."""
    found = net.rdma_devices(ibdev2netdev_text or "", [netdev])
    if found:
        return found[0], "ibdev2netdev"
    for hca, table in sorted((tables or {}).items()):
        if netdev in (table.get("netdevs") or []):
            return hca, "sysfs"
    for hca, table in sorted((tables or {}).items()):
        if any(e.get("ndev") == netdev for entries in (table.get("ports") or {}).values() for e in entries):
            return hca, "sysfs"
    return None, ""


def ibdev2netdev_state(text, netdev):
    """``Up`` or ``Down`` as ``ibdev2netdev`` shows ``netdev``, or None when it does not list it."""
    if netdev not in net.listed_netdevs(text or ""):
        return None
    return "Up" if net.parse_ibdev2netdev(text, [netdev]) else "Down"


def parse_ethtool_speed(text):
    """``ethtool <iface>`` -> the speed in Mb/s, or None (``Speed: Unknown!``, no such line)."""
    match = _ETHTOOL_SPEED.search(text or "")
    return int(match.group(1)) if match else None


# ---------------------------------------------------------------------------
# Which links a node must reach
# ---------------------------------------------------------------------------

def _networks(cidrs):
    out = []
    for cidr in cidrs or []:
        try:
            out.append(ipaddress.IPv4Interface(str(cidr).strip()))
        except ValueError:
            continue
    return out


def expected_links(links, own_ipv4, cluster_addresses, interfaces, mtu=None, node=None):
    """The plan's ``links`` (``expected_by: plan``), then the links the current addresses imply
    (``expected_by: addresses``): for each of this node's QSFP netdevs with an IPv4 address, and each other node of
    ``cluster_addresses`` ({node: {netdev: [A.B.C.D/N]}}) with a QSFP address in the same subnet, one link to
    that node (its address on the same netdev when it has one there, else the first in that subnet) that the
    plan does not list already. ``mtu`` is the planned MTU of the implied links."""
    out = []
    seen = set()
    for spec in links or []:
        entry = {"iface": spec["iface"], "address": spec.get("address") or "", "peer": spec["peer"],
                 "peer_address": spec["peer_address"], "mtu": spec.get("mtu", mtu), "expected_by": "plan"}
        out.append(entry)
        seen.add((entry["iface"], entry["peer_address"]))
    for iface in interfaces:
        for own in _networks((own_ipv4 or {}).get(iface)):
            for peer in sorted(cluster_addresses or {}):
                if peer == node:
                    continue
                best = None
                for peer_iface in interfaces:
                    for other in _networks(((cluster_addresses or {}).get(peer) or {}).get(peer_iface)):
                        if other.ip == own.ip or other.ip not in own.network:
                            continue
                        rank = 0 if peer_iface == iface else 1
                        if best is None or rank < best[0]:
                            best = (rank, str(other.ip))
                if best is None or (iface, best[1]) in seen:
                    continue
                seen.add((iface, best[1]))
                out.append({"iface": iface, "address": str(own.ip), "peer": peer, "peer_address": best[1],
                            "mtu": mtu, "expected_by": "addresses"})
    return out


# ---------------------------------------------------------------------------
# One node's report
# ---------------------------------------------------------------------------

def interface_report(iface, netdev, ipv4, ibdev2netdev_text, tables, speed_source="sysfs"):
    """One QSFP netdev: ``netdev`` is {exists, operstate, mtu, speed_mbps} (sysfs), ``ipv4`` its A.B.C.D/N list,
    ``tables`` the result of ``read_gid_tables`` (None: no RDMA devices)."""
    state = ibdev2netdev_state(ibdev2netdev_text, iface)
    hca, hca_source = hca_of(iface, ibdev2netdev_text, tables)
    addresses = [str(i.ip) for i in _networks(ipv4)]
    gid = None
    rdma = ""
    if tables is None:
        rdma = NO_RDMA_SYSFS
    elif hca is None:
        rdma = "no RDMA device for %s (ibdev2netdev, sysfs)" % iface
    elif hca not in tables:
        rdma = "%s is not in sysfs (/sys/class/infiniband)" % hca
    else:
        gid = pick_gid(tables[hca], iface, addresses)
        if gid is None and addresses:
            rdma = "no RoCE v2 GID for %s on %s" % (", ".join(addresses), hca)
    exists = bool(netdev.get("exists"))
    return {
        "iface": iface,
        "exists": exists,
        "operstate": netdev.get("operstate"),
        "ibdev2netdev": state,
        # Up when the kernel says so and ibdev2netdev (when it lists the netdev) agrees.
        "up": exists and netdev.get("operstate") == "up" and state in ("Up", None),
        "speed_mbps": netdev.get("speed_mbps"),
        "speed_source": speed_source if netdev.get("speed_mbps") is not None else "",
        "mtu": netdev.get("mtu"),
        "ipv4": list(ipv4 or []),
        "hca": hca,
        "hca_source": hca_source,
        "hca_in_sysfs": bool(tables) and hca in tables,
        "gid_index": gid["index"] if gid else None,
        "gid_port": gid["port"] if gid else None,
        "gid_address": gid["address"] if gid else None,
        "rdma_note": rdma,
    }


def link_report(spec, interface, ping_result):
    """One expected link: ``spec`` from ``expected_links``, ``interface`` its netdev's ``interface_report``,
    ``ping_result`` what ``_spark_link.check_link`` returned (ping and cause) or None when not pinged."""
    not_pinged = {"size": None, "df": True, "transmitted": 0, "received": 0, "rtt_avg_ms": None, "ok": False}
    ping = dict((ping_result or {}).get("ping") or not_pinged)
    cause = (ping_result or {}).get("cause") or ""
    return {
        "iface": spec["iface"],
        "address": spec.get("address") or "",
        "peer": spec["peer"],
        "peer_address": spec["peer_address"],
        "planned_mtu": spec.get("mtu"),
        "expected_by": spec.get("expected_by") or "plan",
        "up": interface["up"],
        "mtu": interface["mtu"],
        "speed_mbps": interface["speed_mbps"],
        "hca": interface["hca"],
        "gid_index": interface["gid_index"],
        "ping": ping,
        "ping_cause": "" if ping.get("ok") else cause,
        # Filled on the controller, which knows both ends (fabric_report).
        "bandwidth": None,
        "bandwidth_reason": "judged with both ends (fabric_report)",
        "ok": True,
    }


def _issue(node, iface, peer, peer_address, check, message):
    return {"node": node, "iface": iface, "peer": peer, "peer_address": peer_address, "check": check,
            "message": message}


def _to(entry):
    return " -> %s (%s)" % (entry["peer"], entry["peer_address"])


def _state_text(interface):
    if not interface["exists"]:
        return "missing"
    parts = ["operstate %s" % (interface["operstate"] or "unknown")]
    if interface["ibdev2netdev"]:
        parts.append("ibdev2netdev %s" % interface["ibdev2netdev"])
    return ", ".join(parts)


def _why_expected(entry, node):
    if entry["expected_by"] == "plan":
        return "the plan expects it Up"
    return ("expected Up: %s has %s on it and %s has %s in that subnet"
            % (node, entry["address"] or "an address", entry["peer"], entry["peer_address"]))


def judge_node(node, interfaces, links):
    """Faults and warnings of one node -> (faults, warnings, notes); each fault and warning is
    {node, iface, peer, peer_address, check, message}; ``links`` get ``ok`` set.

    Faults: an expected link whose netdev is missing or Down, its planned address not on it, an MTU below the
    planned one, a don't-fragment ping without reply, an Up QSFP netdev with an IPv4 address whose HCA has no
    RoCE v2 GID for it. Warnings: a known speed below 200000 Mb/s, an MTU above the planned one, an HCA that
    ibdev2netdev names but sysfs does not show. Notes: different GID indexes on the HCAs (normal)."""
    faults, warnings, notes = [], [], []
    by_name = {i["iface"]: i for i in interfaces}
    for entry in links:
        interface = by_name[entry["iface"]]
        where = "%s %s%s" % (node, entry["iface"], _to(entry))
        own = []
        if not interface["exists"]:
            own.append(_issue(node, entry["iface"], entry["peer"], entry["peer_address"], "state",
                              "%s: the netdev does not exist; %s" % (where, _why_expected(entry, node))))
        elif not interface["up"]:
            own.append(_issue(node, entry["iface"], entry["peer"], entry["peer_address"], "state",
                              "%s: Down (%s); %s" % (where, _state_text(interface), _why_expected(entry, node))))
        else:
            planned_address = entry["address"]
            have = [str(i.ip) for i in _networks(interface["ipv4"])]
            if planned_address and planned_address not in have:
                own.append(_issue(node, entry["iface"], entry["peer"], entry["peer_address"], "address",
                                  "%s: the planned address %s is not on %s (it has %s); run playbooks/qsfp_link.yml"
                                  % (where, planned_address, entry["iface"], ", ".join(interface["ipv4"]) or "none")))
            planned, current = entry["planned_mtu"], interface["mtu"]
            if planned is not None and (current is None or current < planned):
                shown = "unknown" if current is None else current
                own.append(_issue(node, entry["iface"], entry["peer"], entry["peer_address"], "mtu",
                                  "%s: MTU %s is below the planned %d" % (where, shown, planned)))
            elif planned is not None and current > planned:
                warnings.append(_issue(node, entry["iface"], entry["peer"], entry["peer_address"], "mtu",
                                       "%s: MTU %d is above the planned %d" % (where, current, planned)))
            if not entry["ping"].get("ok"):
                own.append(_issue(node, entry["iface"], entry["peer"], entry["peer_address"], "ping",
                                  "%s: %s" % (where, entry["ping_cause"] or "no reply to the don't-fragment ping")))
            speed = interface["speed_mbps"]
            if speed is not None and speed < SPEED_EXPECTED_MBPS:
                warnings.append(_issue(node, entry["iface"], entry["peer"], entry["peer_address"], "speed",
                                       "%s: speed %d Mb/s is below %d Mb/s" % (where, speed, SPEED_EXPECTED_MBPS)))
        entry["ok"] = not own
        faults.extend(own)
    for interface in interfaces:
        peers = [e for e in links if e["iface"] == interface["iface"]]
        peer = ", ".join(e["peer"] for e in peers) or None
        peer_address = ", ".join(e["peer_address"] for e in peers) or None
        if (interface["up"] and interface["hca_in_sysfs"] and interface["ipv4"] and interface["gid_index"] is None):
            faults.append(_issue(node, interface["iface"], peer, peer_address, "gid",
                                 "%s %s%s: %s has no RoCE v2 GID for %s (NCCL over RoCE needs one)"
                                 % (node, interface["iface"], " -> %s (%s)" % (peer, peer_address) if peers else "",
                                    interface["hca"], ", ".join(a.split("/")[0] for a in interface["ipv4"]))))
            for entry in peers:
                entry["ok"] = False
        if interface["hca"] and interface["rdma_note"].endswith("is not in sysfs (/sys/class/infiniband)"):
            warnings.append(_issue(node, interface["iface"], peer, peer_address, "hca",
                                   "%s %s: ibdev2netdev names %s, but %s" % (node, interface["iface"], interface["hca"],
                                                                             interface["rdma_note"])))
    indexes = {i["hca"]: i["gid_index"] for i in interfaces if i["hca"] and i["gid_index"] is not None}
    if len(set(indexes.values())) > 1:
        notes.append("%s: the RoCE v2 GID index differs between HCAs (%s); this is normal, each HCA has its own table"
                     % (node, ", ".join("%s %d" % (h, indexes[h]) for h in sorted(indexes))))
    return faults, warnings, notes


def node_report(node, interfaces, links, tools, tables, hostname=""):
    """One node's report: ``interfaces`` of ``interface_report``, ``links`` of ``link_report`` (judged here),
    ``tools`` {name: path or None}, ``tables`` the GID tables (None: no RDMA devices)."""
    faults, warnings, notes = judge_node(node, interfaces, links)
    if tables is None:
        notes.insert(0, "%s: %s - no RDMA device, GID index or bandwidth to report" % (node, NO_RDMA_SYSFS))
    hcas = {}
    for hca in sorted(tables or {}):
        hcas[hca] = {"netdevs": list(tables[hca].get("netdevs") or []),
                     "roce_v2_ipv4_gids": roce_v2_ipv4_gids(tables[hca])}
    return {
        "node": node,
        "hostname": hostname or node,
        "interfaces": interfaces,
        "links": links,
        "rdma": {"sysfs": tables is not None, "note": NO_RDMA_SYSFS if tables is None else "", "hcas": hcas,
                 "gid_indexes": {i["hca"]: i["gid_index"] for i in interfaces if i["hca"] and i["gid_index"] is not None}},
        "tools": dict(tools or {}),
        "faults": faults,
        "warnings": warnings,
        "notes": notes,
        "ok": not faults,
    }


# ---------------------------------------------------------------------------
# Bandwidth (ib_write_bw, optional)
# ---------------------------------------------------------------------------

def ib_write_bw_argv(path, hca, gid_index, port, seconds=BANDWIDTH_SECONDS, timeout=BANDWIDTH_TIMEOUT, server=None):
    """perftest's ``ib_write_bw`` under ``timeout`` (it never outlives ``timeout`` seconds, killed 5 s later if it
    ignores SIGTERM): the server end without ``server``, the client end connecting to ``server``."""
    argv = ["timeout", "--kill-after=5", str(timeout), path, "-d", hca, "-i", "1", "-x", str(gid_index),
            "-p", str(port), "-D", str(seconds), "-F", "--report_gbits"]
    if server:
        argv.append(server)
    return argv


def parse_ib_write_bw(text):
    """ib_write_bw's output -> the average bandwidth in Gb/s (MB/sec converted), or None when no result row."""
    lines = (text or "").splitlines()
    for number, line in enumerate(lines):
        header = _BW_HEADER.search(line)
        if not header:
            continue
        for row in lines[number + 1:]:
            match = _BW_ROW.match(row)
            if match:
                average = float(match.group(4))
                unit = header.group("unit").strip().lower()
                if unit.startswith("mb"):
                    average = average * 8 / 1000.0
                return round(average, 2)
    return None


def validate_bandwidth(port=BANDWIDTH_PORT, seconds=BANDWIDTH_SECONDS, timeout=BANDWIDTH_TIMEOUT):
    """The controller-side measurement options -> list of errors."""
    errors = []
    if not _is_int(port) or not 1024 <= port <= 65000:
        errors.append("bandwidth_port: %r; accepted: a TCP port from 1024 to 65000 (each measurement uses the next one)"
                      % (port,))
    if not _is_int(seconds) or seconds < 1:
        errors.append("bandwidth_seconds: %r; accepted: a whole number of seconds, 1 or more" % (seconds,))
    elif not _is_int(timeout) or timeout <= seconds:
        errors.append("bandwidth_timeout: %r; accepted: a whole number of seconds above bandwidth_seconds (%s)"
                      % (timeout, seconds))
    return errors


def _end(reports, host, address):
    """(report, interface) of the node ``host`` whose QSFP netdev carries ``address``, else (report, None)."""
    report = reports.get(host)
    for interface in (report or {}).get("interfaces") or []:
        if address in [str(i.ip) for i in _networks(interface.get("ipv4"))]:
            return report, interface
    return report, None


def _readiness(host, address, iface_entry, report):
    """Why this end (``host``, the netdev carrying ``address``) cannot run ib_write_bw -> (what, detail), or None.
    ``what`` is shared by both ends when both lack the same thing (see ``_reasons``)."""
    if report is None:
        return "no report", host
    if not (report.get("tools") or {}).get(IB_WRITE_BW):
        return "%s not installed" % IB_WRITE_BW, host
    if iface_entry is None:
        return "no QSFP netdev with the link's address", "%s %s" % (host, address)
    if not (report.get("rdma") or {}).get("sysfs"):
        return "no RDMA device (sysfs)", host
    if not iface_entry.get("hca_in_sysfs"):
        return "no RDMA device", "%s %s" % (host, iface_entry["iface"])
    if iface_entry.get("gid_index") is None:
        return "no RoCE v2 GID", "%s %s" % (host, iface_entry["hca"])
    return None


def _reasons(found):
    """[(what, detail), ...] -> "what on detail, detail; other on detail"."""
    grouped = {}
    for what, detail in found:
        grouped.setdefault(what, []).append(detail)
    return "; ".join("%s on %s" % (what, ", ".join(details)) for what, details in grouped.items())


def _pair_key(host, address, peer, peer_address):
    return tuple(sorted([(host, address), (peer, peer_address)]))


def bandwidth_pairs(hosts, reports, port=BANDWIDTH_PORT, seconds=BANDWIDTH_SECONDS, timeout=BANDWIDTH_TIMEOUT):
    """(pairs, reasons): one measurement per link whose ends are both ready, and why each other link is not.

    Each pair is {id, client, client_iface, server, server_iface, server_address, server_argv, client_argv}; the
    client is the end that sorts first (host, address), the server the other; every pair has its own TCP port.
    ``reasons`` maps "host iface peer_address" to the reason a link cannot be measured."""
    pairs, reasons, done = [], {}, {}
    for host in hosts:
        report = reports.get(host)
        for entry in (report or {}).get("links") or []:
            key = "%s %s %s" % (host, entry["iface"], entry["peer_address"])
            pair = _pair_key(host, entry.get("address") or "", entry["peer"], entry["peer_address"])
            if pair in done:
                if done[pair] is not None:
                    reasons[key] = done[pair]
                continue
            own = {i["iface"]: i for i in report.get("interfaces") or []}.get(entry["iface"])
            peer_report, peer_iface = _end(reports, entry["peer"], entry["peer_address"])
            why = [w for w in (_readiness(host, entry.get("address") or "", own, report),
                               _readiness(entry["peer"], entry["peer_address"], peer_iface, peer_report)) if w]
            down = [h for h, i in ((host, own), (entry["peer"], peer_iface)) if i is not None and not i.get("up")]
            why[:0] = [("the link is Down", h) for h in down]
            if why:
                done[pair] = reasons[key] = _reasons(why)
                continue
            ends = {host: (report, own, entry.get("address")), entry["peer"]: (peer_report, peer_iface,
                                                                               entry["peer_address"])}
            (client, client_address), (server, server_address) = pair
            client_report, client_iface, dummy = ends[client]
            server_report, server_iface, dummy = ends[server]
            number = len(pairs)
            pairs.append({
                "id": number,
                "client": client, "client_iface": client_iface["iface"], "client_address": client_address,
                "server": server, "server_iface": server_iface["iface"], "server_address": server_address,
                "server_argv": ib_write_bw_argv(server_report["tools"][IB_WRITE_BW], server_iface["hca"],
                                                server_iface["gid_index"], port + number, seconds, timeout),
                "client_argv": ib_write_bw_argv(client_report["tools"][IB_WRITE_BW], client_iface["hca"],
                                                client_iface["gid_index"], port + number, seconds, timeout,
                                                server=server_address),
            })
            done[pair] = None
    return pairs, reasons


def _quote(text, limit=200):
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def _measured(pair, result):
    """(Gb/s or None, reason) of one pair's client result {rc, stdout, stderr} (None: not run)."""
    if result is None:
        return None, "not measured: no result from %s" % pair["client"]
    if result.get("skipped"):
        return None, "not measured: skipped on %s" % pair["client"]
    gbps = parse_ib_write_bw(result.get("stdout"))
    if result.get("rc") == 0 and gbps is not None:
        return gbps, ""
    said = result.get("stderr") or result.get("stdout") or result.get("msg")
    return None, "ib_write_bw failed (rc=%s): %s" % (result.get("rc"), _quote(said))


# ---------------------------------------------------------------------------
# The whole fabric (controller)
# ---------------------------------------------------------------------------

def _cluster_of(host, plans):
    part = (plans or {}).get(host) or {}
    return str(part.get("cluster") or host), list(part.get("nodes") or [host])


def fabric_report(hosts, reports, plans, failures=None, bandwidth=False, measurements=None, generated="",
                  port=BANDWIDTH_PORT, seconds=BANDWIDTH_SECONDS, timeout=BANDWIDTH_TIMEOUT):
    """Every node's report joined -> the fabric document (what the JSON report holds).

    ``hosts``: the run's nodes in order; ``reports``: {host: node_report}; ``plans``: {host: its part of the
    network plan, at least cluster and nodes, with error and errors when the cluster's plan failed};
    ``failures``: {host: why it gave no report}; ``bandwidth``: whether ib_write_bw was to run;
    ``measurements``: {pair id: client result {rc, stdout, stderr}} of ``bandwidth_pairs``'s pairs."""
    reports = {h: r for h, r in (reports or {}).items() if r}
    failures = failures or {}
    clusters = {}
    for host in hosts:
        name, nodes = _cluster_of(host, plans)
        if name in clusters:
            continue
        part = (plans or {}).get(host) or {}
        errors = list(part.get("errors") or ([part["error"]] if part.get("error") else []))
        if not part:
            state = "unknown"
        elif len(nodes) < 2:
            state = "single"
        else:
            state = "failed" if errors else "ok"
        clusters[name] = {"nodes": nodes, "plan": state, "errors": errors}
    faults, warnings, notes = [], [], []
    for name, cluster in clusters.items():
        if cluster["plan"] == "failed":
            for error in cluster["errors"]:
                faults.append(dict(_issue(", ".join(cluster["nodes"]), None, None, None, "plan",
                                          "cluster %s (%s): the plan of its QSFP links failed: %s"
                                          % (name, ", ".join(cluster["nodes"]), error)), cluster=name))
        elif cluster["plan"] == "single":
            notes.append("cluster %s: a single Spark (%s), no QSFP link to a peer is planned"
                         % (name, ", ".join(cluster["nodes"])))
    pairs, reasons = bandwidth_pairs(hosts, reports, port, seconds, timeout)
    measured = {}
    for pair in pairs:
        key = _pair_key(pair["client"], pair["client_address"], pair["server"], pair["server_address"])
        if bandwidth:
            result = (measurements or {}).get(pair["id"], (measurements or {}).get(str(pair["id"])))
            measured[key] = _measured(pair, result) + (pair["client"],)
        else:
            measured[key] = (None, "not measured (fabric_check_bandwidth is false)", pair["client"])
    nodes = {}
    for host in hosts:
        cluster, dummy = _cluster_of(host, plans)
        report = reports.get(host)
        if report is None:
            cause = failures.get(host) or "no report"
            nodes[host] = {"node": host, "cluster": cluster, "error": cause, "interfaces": [], "links": [],
                           "faults": [], "warnings": [], "notes": [], "ok": False}
            faults.append(dict(_issue(host, None, None, None, "node", "%s: not checked: %s" % (host, cause)),
                               cluster=cluster))
            continue
        node = dict(report, cluster=cluster, error="")
        node["links"] = [dict(e) for e in report.get("links") or []]
        for entry in node["links"]:
            key = "%s %s %s" % (host, entry["iface"], entry["peer_address"])
            pair = _pair_key(host, entry.get("address") or "", entry["peer"], entry["peer_address"])
            if pair in measured:
                entry["bandwidth"], entry["bandwidth_reason"], client = measured[pair]
                # One fault per measurement: on the client's end, which ran it.
                if bandwidth and entry["bandwidth"] is None and host == client:
                    faults.append(dict(_issue(host, entry["iface"], entry["peer"], entry["peer_address"], "bandwidth",
                                              "%s %s%s: %s" % (host, entry["iface"], _to(entry),
                                                               entry["bandwidth_reason"])), cluster=cluster))
            else:
                entry["bandwidth"], entry["bandwidth_reason"] = None, reasons.get(key, "not measured")
        nodes[host] = node
        faults.extend(dict(f, cluster=cluster) for f in report.get("faults") or [])
        warnings.extend(dict(w, cluster=cluster) for w in report.get("warnings") or [])
        notes.extend(report.get("notes") or [])
    return {
        "format": FORMAT,
        "generated": generated,
        "ok": not faults,
        "clusters": clusters,
        "nodes": nodes,
        "faults": faults,
        "warnings": warnings,
        "notes": notes,
        "bandwidth": {"requested": bool(bandwidth), "tool": IB_WRITE_BW, "pairs": len(pairs)},
    }


# ---------------------------------------------------------------------------
# For people
# ---------------------------------------------------------------------------

COLUMNS = ("NODE", "NETDEV", "HCA", "STATE", "SPEED", "MTU", "IPV4", "GID", "PEER", "PING", "BANDWIDTH")


def _cell_state(interface):
    if not interface.get("exists"):
        return "missing"
    text = interface.get("operstate") or "?"
    if interface.get("ibdev2netdev"):
        text += "/" + interface["ibdev2netdev"]
    return text


def _cell_mtu(interface, entry):
    mtu = interface.get("mtu")
    text = "?" if mtu is None else str(mtu)
    planned = (entry or {}).get("planned_mtu")
    if planned is not None and mtu != planned:
        text += " (plan %d)" % planned
    return text


def _cell_gid(interface, node):
    if interface.get("gid_index") is not None:
        return str(interface["gid_index"])
    if not (node.get("rdma") or {}).get("sysfs"):
        return "-"
    return "none" if interface.get("hca_in_sysfs") and interface.get("ipv4") else "-"


def _cell_ping(entry):
    ping = entry.get("ping") or {}
    if ping.get("size") is None:
        return "not run"
    text = "%s %d/%d %dB" % ("ok" if ping.get("ok") else "FAIL", ping.get("received") or 0,
                             ping.get("transmitted") or 0, ping["size"] + link.PING_OVERHEAD)
    if ping.get("rtt_avg_ms") is not None:
        text += " %sms" % ("%.3f" % ping["rtt_avg_ms"]).rstrip("0").rstrip(".")
    return text


def _cell_bandwidth(entry):
    if entry.get("bandwidth") is not None:
        return "%.1f Gb/s" % entry["bandwidth"]
    reason = entry.get("bandwidth_reason") or ""
    return "- (%s)" % reason if reason else "-"


def table_rows(doc):
    """The fabric document -> rows (tuples of COLUMNS): one per link, and one per QSFP netdev without a link."""
    rows = []
    for host, node in (doc.get("nodes") or {}).items():
        if node.get("error"):
            rows.append((host, "-", "-", "not checked", "-", "-", "-", "-", "-", "-", "-"))
            continue
        for interface in node.get("interfaces") or []:
            entries = [e for e in node.get("links") or [] if e["iface"] == interface["iface"]] or [None]
            for entry in entries:
                speed = interface.get("speed_mbps")
                rows.append((
                    host, interface["iface"], interface.get("hca") or "-", _cell_state(interface),
                    "?" if speed is None else str(speed), _cell_mtu(interface, entry),
                    ",".join(interface.get("ipv4") or []) or "-", _cell_gid(interface, node),
                    "%s %s" % (entry["peer"], entry["peer_address"]) if entry else "-",
                    _cell_ping(entry) if entry else "-", _cell_bandwidth(entry) if entry else "-"))
    return rows


def render_table(doc):
    """The readable table of the whole fabric, as a list of lines (columns padded to the widest cell)."""
    rows = [COLUMNS] + table_rows(doc)
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]


def render_summary(doc):
    """The fabric summary: a count line, then one line per fault (node, netdev and expected peer), warning and
    note."""
    links = sum(len(n.get("links") or []) for n in (doc.get("nodes") or {}).values())
    faults, warnings = doc.get("faults") or [], doc.get("warnings") or []
    lines = ["fabric %s: %d node(s) in %d cluster(s), %d link(s) checked, %d fault(s), %d warning(s)"
             % ("OK" if doc.get("ok") else "FAULTY", len(doc.get("nodes") or {}), len(doc.get("clusters") or {}),
                links, len(faults), len(warnings))]
    lines += ["FAULT %s" % f["message"] for f in faults]
    lines += ["warning %s" % w["message"] for w in warnings]
    lines += ["note %s" % n for n in doc.get("notes") or []]
    return lines
