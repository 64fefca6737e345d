# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The QSFP (ConnectX-7) link between DGX Sparks: discovery, the address plan and its netplan document.

Pure functions, standard library only (``ipaddress``, ``re``): they run on the controller and inside
modules on the nodes.

* ``parse_ibdev2netdev``, ``rdma_devices`` and ``parse_operstate`` read which QSFP netdevs are Up.
* ``plan_links`` checks the cabling against the cluster's topology (``direct``: two Sparks, one cable;
  ``switch``: 2 to 8 Sparks on one L2 segment, each cabled on the same port; ``ring``: three Sparks, each one's
  port 0 to the next one's port 1), chooses each node's addresses (``netplan_qsfp_addresses``, a preset on a
  direct pair, the topology's subnets otherwise), validates them on each node and across the nodes, protects the
  management path and renders ``/etc/netplan/40-cx7.yaml``. It returns ``(per_node, errors)``; each error names
  the field, the host, the bad value and what is accepted.
* ``cidr_errors`` checks one ``A.B.C.D/N`` value; ``render_netplan`` writes the document.
"""

import ipaddress
import re

# The four netdevs of the two QSFP ports of a DGX Spark, in canonical order: port 0 (enp1s0f0np0 and
# its second PCIe function enP2p1s0f0np0), then port 1.
QSFP_INTERFACES = ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")

# One list per node (index = rank, head first). Within a node the first address goes on the first
# Up QSFP netdev (canonical order), the second on the second one.
PRESETS = {
    # NVIDIA's DGX Spark speculative-decoding playbook: one /24 on both netdevs of the cabled port.
    "seed": [["192.168.200.12/24", "192.168.200.14/24"], ["192.168.200.13/24", "192.168.200.15/24"]],
    # NVIDIA's connect-two-sparks playbook: one /24 per netdev.
    "two_subnets": [["192.168.100.10/24", "192.168.101.10/24"], ["192.168.100.11/24", "192.168.101.11/24"]],
}

PLANS = ("addresses", "link_local", "dhcp")

# How the Sparks of a cluster are cabled, and how many each topology joins.
TOPOLOGIES = ("direct", "switch", "ring")
TOPOLOGY_SIZES = {"direct": (2, 2), "switch": (2, 8), "ring": (3, 3)}
# The two ports of a Spark, each a cable of two netdevs (its PCIe halves, "twins"); port 0 is next to the RJ45.
PORTS = {"0": ("enp1s0f0np0", "enP2p1s0f0np0"), "1": ("enp1s0f1np1", "enP2p1s0f1np1")}
# The subnets each topology's static addresses come from (netplan_qsfp_subnets replaces them):
# - switch, NVIDIA's "Connect multiple Sparks through a switch" playbook: node N gets .N in the first subnet on
#   the port's first netdev and .N in the second on its twin (two subnets: one /24 for both twins "causes routing
#   ambiguity and NCCL communication failures");
# - ring, NVIDIA's "Connect three Sparks" playbook: two subnets per cable (one per twin), the cables numbered by
#   node pair (1-2, 1-3, 2-3), the lower node .1 and the higher .2.
DEFAULT_SUBNETS = {
    "switch": ["192.168.100.0/24", "192.168.101.0/24"],
    "ring": ["192.168.%d.0/24" % i for i in range(6)],
}
MTU_MIN = 576
MTU_MAX = 9216
TABLE_MAX = 4294967295
# Kernel routing tables with a fixed meaning: 253 default, 254 main, 255 local.
RESERVED_TABLES = (253, 254, 255)
LINK_LOCAL = ipaddress.IPv4Network("169.254.0.0/16")
OVERRIDE = "(set netplan_qsfp_allow_disruptive: true to override)"

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = re.compile(r"^%s(?:\.%s){3}\Z" % (_OCTET, _OCTET))
_CIDR = re.compile(r"^%s(?:\.%s){3}/(?:[1-9]|[12][0-9]|3[0-2])\Z" % (_OCTET, _OCTET))
# "rocep1s0f1 port 1 ==> enp1s0f1np1 (Up)"
_IBDEV_LINE = re.compile(r"^\s*(?P<ibdev>\S+)\s+port\s+\d+\s+==>\s+(?P<netdev>\S+)\s+\((?P<state>[^)]*)\)")
_PORT = re.compile(r"np([0-9]+)$")
_PLAIN_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_YAML_WORDS = ("y", "n", "yes", "no", "true", "false", "on", "off", "null")

CIDR_ACCEPTED = "A.B.C.D/N: a dotted quad without leading zeros and a prefix length N = 1..32"


# ---------------------------------------------------------------------------
# Discovery
# ---------------------------------------------------------------------------

def _ibdev_lines(text):
    """ibdev2netdev output -> {netdev: (rdma device, is_up)}; a netdev listed twice is Up if any line says so."""
    found = {}
    for line in (text or "").splitlines():
        match = _IBDEV_LINE.match(line)
        if not match:
            continue
        netdev = match.group("netdev")
        is_up = match.group("state").strip().lower() == "up"
        if netdev not in found or (is_up and not found[netdev][1]):
            found[netdev] = (match.group("ibdev"), is_up)
    return found


def listed_netdevs(text):
    """The netdevs ``ibdev2netdev`` output names, Up or not."""
    return set(_ibdev_lines(text))


def parse_ibdev2netdev(text, interfaces=QSFP_INTERFACES):
    """The Up netdevs of ``ibdev2netdev`` output that are in ``interfaces``, in the order of ``interfaces``."""
    found = _ibdev_lines(text)
    return [name for name in interfaces if name in found and found[name][1]]


def rdma_devices(text, netdevs):
    """The RoCE devices (left of "port") of ``netdevs`` in their order; netdevs that are not listed are skipped."""
    found = _ibdev_lines(text)
    return [found[name][0] for name in netdevs if name in found]


def parse_operstate(states, interfaces=QSFP_INTERFACES):
    """{netdev: content of its operstate file, or None} -> the Up ones among ``interfaces``, in their order."""
    states = states or {}
    return [name for name in interfaces
            if isinstance(states.get(name), str) and states[name].strip().lower() == "up"]


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------

def _show(value):
    """A value as it appears in a message: strings quoted, other types named."""
    if isinstance(value, str):
        return "'%s'" % value
    if _is_int(value):
        return str(value)
    return "%r (%s)" % (value, type(value).__name__)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _interface(cidr):
    """A strict ``A.B.C.D/N`` string -> IPv4Interface, else None."""
    if not isinstance(cidr, str) or not _CIDR.match(cidr):
        return None
    return ipaddress.IPv4Interface(cidr)


def _loose_interface(cidr):
    """A CIDR read from the node (``current``) -> IPv4Interface, else None (never raises)."""
    if not isinstance(cidr, str):
        return None
    try:
        return ipaddress.IPv4Interface(cidr.strip())
    except ValueError:
        return None


def _address(value):
    """A strict dotted-quad string -> IPv4Address, else None."""
    if not isinstance(value, str) or not _IPV4.match(value):
        return None
    return ipaddress.IPv4Address(value)


def cidr_errors(field, value):
    """[] when ``value`` is a usable host address ``A.B.C.D/N``, else [one message naming ``field``]."""
    iface = _interface(value)
    if iface is None:
        return ["%s: %s is not an IPv4 address with a prefix length (accepted: %s)"
                % (field, _show(value), CIDR_ACCEPTED)]
    address = iface.ip
    if address.is_loopback or address.is_multicast or address.is_reserved or address.is_unspecified \
            or address in ipaddress.IPv4Network("0.0.0.0/8"):
        return ["%s: %s is not a unicast host address (accepted: %s, not in 0.0.0.0/8, 127.0.0.0/8, "
                "224.0.0.0/4 or 240.0.0.0/4)" % (field, _show(value), CIDR_ACCEPTED)]
    network = iface.network
    if network.prefixlen <= 30:
        if address == network.network_address:
            return ["%s: %s is the network address of %s (accepted: a host address of the subnet, neither "
                    "the network nor the broadcast address)" % (field, _show(value), network)]
        if address == network.broadcast_address:
            return ["%s: %s is the broadcast address of %s (accepted: a host address of the subnet, neither "
                    "the network nor the broadcast address)" % (field, _show(value), network)]
    return []


def _port(netdev):
    match = _PORT.search(netdev)
    return match.group(1) if match else "?"


def _up_summary(node, with_port):
    up = node["up"]
    if with_port:
        ports = []
        for name in up:
            if _port(name) not in ports:
                ports.append(_port(name))
        detail = "port %s, from %s" % ("+".join(ports) or "none", node["up_source"])
    else:
        detail = "from %s" % node["up_source"]
    return "%s: %s (%s)" % (node["name"], ", ".join(up) or "none", detail)


# ---------------------------------------------------------------------------
# The netplan document
# ---------------------------------------------------------------------------

def _key(name):
    if _PLAIN_KEY.match(name) and name.lower() not in _YAML_WORDS:
        return name
    return '"%s"' % name.replace("\\", "\\\\").replace('"', '\\"')


def render_netplan(name, plan, source, entries, up, mtu):
    """The text of /etc/netplan/40-cx7.yaml for one node (only the QSFP netdevs are named)."""
    if plan in ("link_local", "dhcp"):
        title = "plan %s" % plan
    else:
        title = "plan %s (%s)" % (plan, source)
    lines = [
        "# Managed by dgx_spark.specdec (netplan_qsfp): QSFP links of %s, %s." % (name, title),
        "# Only the QSFP netdevs are named here; the management NIC lives in other netplan files.",
        "network:",
        "  version: 2",
    ]
    body = []
    if plan in ("dhcp", "link_local"):
        # Every Up netdev, addressed by the switch's DHCP server (NVIDIA's switch playbook, option 1) or link-local.
        for iface in up:
            body.append("    %s:" % _key(iface))
            body.append("      dhcp4: %s" % ("true" if plan == "dhcp" else "false"))
            if mtu is not None:
                body.append("      mtu: %d" % mtu)
            if plan == "link_local":
                body.append("      link-local: [ipv4]")
    else:
        for entry in entries:
            body.append("    %s:" % _key(entry["iface"]))
            body.append("      dhcp4: false")
            if mtu is not None:
                body.append("      mtu: %d" % mtu)
            body.append("      addresses:")
            body.append("        - %s" % entry["cidr"])
            if entry.get("table") is not None:
                body += [
                    "      # %s is shared with another QSFP netdev of this node: answer from this port." % entry["network"],
                    "      routes:",
                    "        - to: %s" % entry["network"],
                    "          scope: link",
                    "          from: %s" % entry["address"],
                    "          table: %d" % entry["table"],
                    "      routing-policy:",
                    "        - from: %s" % entry["address"],
                    "          table: %d" % entry["table"],
                ]
    if body:
        lines.append("  ethernets:")
        lines += body
    else:
        lines.append("  ethernets: {}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------

def ring_cables(count):
    """The cables of a ring of ``count`` Sparks, one per twin: (node i, its netdev, node j, its netdev), node i's
    port 0 to the next node's port 1 and the last node's port 0 to the first node's port 1 (NVIDIA's "Connect
    three Sparks" playbook)."""
    return [(i, PORTS["0"][twin], (i + 1) % count, PORTS["1"][twin]) for i in range(count) for twin in (0, 1)]


def ring_peer(index, iface, count):
    """(peer index, peer netdev) at the other end of node ``index``'s ``iface`` in a ring, or None."""
    for i, dev_i, j, dev_j in ring_cables(count):
        if (i, dev_i) == (index, iface):
            return j, dev_j
        if (j, dev_j) == (index, iface):
            return i, dev_i
    return None


def _port_of(up):
    """The port whose two netdevs are both Up, '1' first (NVIDIA's switch playbook cables port 1), else None."""
    for port in ("1", "0"):
        if all(name in up for name in PORTS[port]):
            return port
    return None


def _size_errors(topology, cluster, names):
    low, high = TOPOLOGY_SIZES[topology]
    count = len(names)
    if low <= count <= high:
        return []
    found = "cluster %s has %d (%s)" % (cluster, count, ", ".join(names))
    field = "specdec_topology of cluster %s: %s" % (cluster, _show(topology))
    if topology == "direct":
        return ["%s joins two Sparks with one cable, but %s (accepted: switch for 2 to 8 Sparks through a switch, "
                "ring for three Sparks cabled in a ring)" % (field, found)]
    if topology == "switch":
        return ["%s joins 2 to 8 Sparks through a switch, but %s (accepted: a cluster of 2 to 8 Sparks; a single "
                "Spark needs no fabric)" % (field, found)]
    if count == 2:
        return ["%s: a ring of two Sparks is one cable between them, a direct pair (%s; accepted: direct)"
                % (field, found)]
    return ["%s joins three Sparks, each one's port 0 to the next one's port 1, but %s (accepted: three Sparks; in a "
            "ring of four or more, Sparks that are not neighbours have no cable between them: join them through a "
            "switch)" % (field, found)]


def _cabling_errors(topology, nodes):
    """Whether each node's Up QSFP netdevs fit the topology -> (errors, {name: the netdevs the fabric uses})."""
    errors = []
    used = {}
    down = [n for n in nodes if not n["up"]]
    if down:
        errors.append("%s: cable unplugged? Up QSFP ports per node: %s. Nothing was written."
                      % ("; ".join("%s: no QSFP port is Up (from %s)" % (n["name"], n["up_source"]) for n in down),
                         "; ".join(_up_summary(n, False) for n in nodes)))
        return errors, used
    if topology == "direct":
        # One cable joins the same port of both Sparks: both see the same netdevs Up.
        if any(n["up"] != nodes[0]["up"] for n in nodes):
            errors.append("The nodes do not see the same QSFP ports Up, so the cable does not join the same port on "
                          "both Sparks (or one end is down): %s. Re-seat the cable in the same port on both nodes; "
                          "nothing was written." % "; ".join(_up_summary(n, True) for n in nodes))
        return errors, {n["name"]: list(n["up"]) for n in nodes}
    if topology == "switch":
        ports = [_port_of(n["up"]) for n in nodes]
        counted = sorted(("1", "0"), key=lambda p: -ports.count(p))
        port = counted[0] if ports.count(counted[0]) else "1"
        others = [n["name"] for n, p in zip(nodes, ports) if p == port]
        for node, own in zip(nodes, ports):
            if own == port:
                used[node["name"]] = list(PORTS[port])
                continue
            missing = [name for name in PORTS[port] if name not in node["up"]]
            if own is not None or not any(name in node["up"] for name in PORTS[port]):
                errors.append("%s: its cable to the switch is in port %s (%s Up), but %s use port %s (%s): every "
                              "Spark is cabled on the same port in NVIDIA's switch playbook; move the cable to port "
                              "%s (from %s)" % (node["name"], own or _port(node["up"][0]), ", ".join(node["up"]),
                                                ", ".join(others) or "the other Sparks", port,
                                                ", ".join(PORTS[port]), port, node["up_source"]))
            else:
                errors.append("%s: %s is Down while %s is Up (from %s): they are the two halves of the one cable to "
                              "the switch, expected Up on port %s like on %s; re-seat the cable or check the switch "
                              "port" % (node["name"], ", ".join(missing),
                                        ", ".join(n for n in PORTS[port] if n in node["up"]), node["up_source"], port,
                                        ", ".join(others) or "the other Sparks"))
        return errors, used
    # ring: every netdev is Up, each on its cable to a neighbour.
    count = len(nodes)
    for index, node in enumerate(nodes):
        missing = [name for name in QSFP_INTERFACES if name not in node["up"]]
        for name in missing:
            peer, peer_iface = ring_peer(index, name, count)
            errors.append("%s: %s is Down (from %s), expected a cable from port %s to %s's port %s (%s): in a ring "
                          "each Spark's port 0 goes to the next one's port 1" % (
                              node["name"], name, node["up_source"], _port(name), nodes[peer]["name"],
                              _port(peer_iface), peer_iface))
        used[node["name"]] = list(QSFP_INTERFACES)  # both ports, canonical order
    return errors, used


def subnets_errors(topology, subnets, count):
    """[] when ``subnets`` can address ``count`` Sparks in ``topology``, else [messages naming netplan_qsfp_subnets]."""
    need = 2 if topology == "switch" else 2 * count
    field = "netplan_qsfp_subnets"
    if not isinstance(subnets, (list, tuple)) or len(subnets) != need:
        return ["%s: %s is not %d subnets (accepted: a list of %d IPv4 networks A.B.C.0/N for a %s of %d Sparks: "
                "%s)" % (field, _show(subnets if not isinstance(subnets, tuple) else list(subnets)), need, need,
                         topology, count, "one per netdev of the cabled port" if topology == "switch"
                         else "one per twin of each cable, cables numbered by node pair")]
    errors = []
    parsed = []
    for value in subnets:
        try:
            network = ipaddress.IPv4Network(value) if isinstance(value, str) and "/" in value else None
        except ValueError:
            network = None
        hosts = count + 1 if topology == "switch" else 3
        if network is None or network.prefixlen > 30 or network.num_addresses - 2 < hosts:
            errors.append("%s item: %s is not a subnet for %s (accepted: a network address A.B.C.D/N, N <= 30, "
                          "with room for %d hosts)" % (field, _show(value), topology, hosts))
            continue
        clash = [str(p) for p in parsed if p.overlaps(network)]
        if clash:
            errors.append("%s item: %s overlaps %s (accepted: distinct subnets: two netdevs in one subnet cause "
                          "routing ambiguity and NCCL failures)" % (field, value, ", ".join(clash)))
        parsed.append(network)
    return errors


def scheme_addresses(topology, index, count, subnets, up):
    """Node ``index``'s {netdev: A.B.C.D/N} from the topology's subnets (see DEFAULT_SUBNETS)."""
    nets = [ipaddress.IPv4Network(n) for n in subnets]
    if topology == "switch":
        return {iface: "%s/%d" % (nets[twin].network_address + index + 1, nets[twin].prefixlen)
                for twin, iface in enumerate(up[:2])}
    pairs = sorted({tuple(sorted((i, j))) for i, dummy, j, dummy2 in ring_cables(count)})
    out = {}
    for i, dev_i, j, dev_j in ring_cables(count):
        pair = tuple(sorted((i, j)))
        twin = 0 if dev_i in (PORTS["0"][0], PORTS["1"][0]) else 1
        network = nets[2 * pairs.index(pair) + twin]
        for node, dev in ((i, dev_i), (j, dev_j)):
            if node == index:
                out[dev] = "%s/%d" % (network.network_address + (1 if node == pair[0] else 2), network.prefixlen)
    return out


def _settings_errors(names, plan, preset, preset_used, interfaces, mtu, table_base):
    """Rule 1: the settings shared by all nodes. Returns (errors, fatal)."""
    where = " on %s" % ", ".join(names) if names else ""
    errors = []
    fatal = False
    if not isinstance(plan, str) or plan not in PLANS:
        errors.append("netplan_qsfp_plan%s: %s is not a plan (accepted: %s)" % (where, _show(plan), ", ".join(PLANS)))
        fatal = True
    elif plan == "addresses" and preset_used and (not isinstance(preset, str) or preset not in PRESETS):
        errors.append("netplan_qsfp_preset%s: %s is not a preset (accepted: %s)"
                      % (where, _show(preset), ", ".join(sorted(PRESETS))))
    if not interfaces or not all(isinstance(i, str) and i for i in interfaces) \
            or len(set(interfaces)) != len(interfaces):
        errors.append("netplan_qsfp_interfaces%s: %s is not a list of netdev names (accepted: a non-empty list of "
                      "distinct names, default %s)" % (where, _show(list(interfaces)), ", ".join(QSFP_INTERFACES)))
        fatal = True
    if mtu is not None and not (_is_int(mtu) and MTU_MIN <= mtu <= MTU_MAX):
        errors.append("netplan_qsfp_mtu%s: %s is not an MTU (accepted: null to leave the MTU alone, or an integer "
                      "%d..%d; 9000 for NCCL over RoCE)" % (where, _show(mtu), MTU_MIN, MTU_MAX))
    count = len(interfaces) if interfaces else 1
    top = TABLE_MAX - count
    if not _is_int(table_base) or not 1 <= table_base <= top:
        errors.append("netplan_qsfp_routing_table_base%s: %s is not a routing table number (accepted: an integer "
                      "1..%d, whose %d tables avoid %s)" % (where, _show(table_base), top, count,
                                                            ", ".join(str(t) for t in RESERVED_TABLES)))
    else:
        hit = [t for t in RESERVED_TABLES if table_base <= t < table_base + count]
        if hit:
            errors.append("netplan_qsfp_routing_table_base%s: %s uses tables %d..%d, which include the reserved "
                          "table(s) %s (accepted: an integer 1..%d whose %d tables avoid 253 default, 254 main and "
                          "255 local, e.g. 101)" % (where, _show(table_base), table_base, table_base + count - 1,
                                                    ", ".join(str(t) for t in hit), top, count))
    return errors, fatal


def _normalize(node, interfaces):
    up = node.get("up") or []
    addresses = node.get("addresses")
    return {
        "name": node.get("name"),
        "up": [name for name in interfaces if name in up],
        "up_source": node.get("up_source") or "ibdev2netdev",
        "addresses": addresses if addresses else {},
        "current": node.get("current") or {},
        "management_address": node.get("management_address") or "",
        "default_interface": node.get("default_interface") or "",
    }


def _node_entries(node, index, plan, preset, interfaces, errors, fabric=("direct", None, 2)):
    """Rule 4 for one node: (source, entries without tables). ``fabric``: (topology, subnets, node count)."""
    name = node["name"]
    topology, subnets, count = fabric
    if plan in ("link_local", "dhcp"):
        return "netplan_qsfp_plan=%s" % plan, []
    wanted = node["addresses"]
    if not isinstance(wanted, dict):
        errors.append("netplan_qsfp_addresses on %s: %s is not a mapping (accepted: a mapping of QSFP netdev to %s)"
                      % (name, _show(wanted), CIDR_ACCEPTED))
        return "netplan_qsfp_addresses", []
    if wanted:
        source = "netplan_qsfp_addresses"
    elif topology != "direct":
        source = "netplan_qsfp_subnets (%s)" % topology
        if subnets is None:
            return source, None  # reported once by plan_links
        wanted = scheme_addresses(topology, index, count, subnets, node["up"])
    else:
        source = "netplan_qsfp_preset=%s" % preset
        if not isinstance(preset, str) or preset not in PRESETS:
            return source, None  # reported once by rule 1
        plans = PRESETS[preset]
        if index >= len(plans):
            errors.append("netplan_qsfp_preset on %s: %s covers %d nodes and %s is node %d of the link (head first) "
                          "(accepted: a preset that covers every node, or netplan_qsfp_addresses set for %s)"
                          % (name, _show(preset), len(plans), name, index + 1, name))
            return source, []
        wanted = dict(zip(node["up"], plans[index]))
    field = "%s on %s" % (source, name)
    for key in wanted:
        if not isinstance(key, str) or key not in interfaces:
            errors.append("%s: %s is not a QSFP netdev (accepted: %s); no other interface is ever configured"
                          % (field, _show(key), ", ".join(interfaces)))
        elif key not in node["up"]:
            errors.append("%s: %s is not Up (Up: %s, from %s)"
                          % (field, _show(key), ", ".join(node["up"]) or "none", node["up_source"]))
    entries = []
    for iface in interfaces:
        if iface not in wanted:
            continue
        value = wanted[iface]
        problems = cidr_errors("%s (%s)" % (field, iface), value)
        if problems:
            errors.extend(problems)
            continue
        parsed = ipaddress.IPv4Interface(value)
        entries.append({"iface": iface, "cidr": value, "address": str(parsed.ip), "prefix": parsed.network.prefixlen,
                        "network": str(parsed.network), "table": None})
    seen = []
    for entry in entries:
        if entry["address"] in seen:
            continue
        seen.append(entry["address"])
        users = [e["iface"] for e in entries if e["address"] == entry["address"]]
        if len(users) > 1:
            errors.append("%s: %s is planned on more than one netdev (%s) (accepted: each address once)"
                          % (field, entry["address"], ", ".join(users)))
    return source, entries


def _duplicate_errors(nodes, sources, entries_of):
    """Rule 5: every QSFP address once in the cluster."""
    errors = []
    all_entries = []
    for node in nodes:
        for entry in entries_of[node["name"]]:
            all_entries.append((node["name"], entry))
    done = []
    for host, entry in all_entries:
        address = entry["address"]
        if address in done:
            continue
        done.append(address)
        users = [(h, e) for h, e in all_entries if e["address"] == address]
        if len(users) > 1:
            fields = []
            for h, _e in users:
                label = "%s on %s" % (sources[h], h)
                if label not in fields:
                    fields.append(label)
            errors.append("%s: %s is planned more than once (%s) (accepted: every QSFP address once in the cluster)"
                          % (", ".join(fields), address, ", ".join("%s %s" % (h, e["iface"]) for h, e in users)))
    return errors


def _cross_errors(nodes, sources, entries_of, interfaces):
    """Rule 5 on a pair or a switch: unique addresses, an address on every node's end of each netdev's link, one
    subnet per netdev."""
    errors = _duplicate_errors(nodes, sources, entries_of)
    all_entries = [(node["name"], entry) for node in nodes for entry in entries_of[node["name"]]]
    for iface in interfaces:
        ends = [(h, e) for h, e in all_entries if e["iface"] == iface]
        if not ends:
            continue
        hosts = [h for h, _e in ends]
        for node in nodes:
            if node["name"] not in hosts:
                errors.append("%s on %s: no address for %s, but %s has %s on its end of that link (accepted: "
                              "an address in %s on every node)"
                              % (sources[node["name"]], node["name"], iface, ends[0][0], ends[0][1]["cidr"],
                                 ends[0][1]["network"]))
        networks = []
        for _h, e in ends:
            if e["network"] not in networks:
                networks.append(e["network"])
        if len(networks) > 1:
            fields = []
            for h in hosts:
                label = "%s on %s" % (sources[h], h)
                if label not in fields:
                    fields.append(label)
            errors.append("%s: the ends of link %s are in different subnets (%s) (accepted: both ends in one subnet)"
                          % (", ".join(fields), iface, ", ".join("%s %s" % (h, e["cidr"]) for h, e in ends)))
    return errors


def _twin_errors(nodes, sources, entries_of):
    """Off a direct pair, each netdev of a node is in a subnet of its own (NVIDIA's switch playbook: two interfaces in
    one subnet cause routing ambiguity and NCCL communication failures)."""
    errors = []
    for node in nodes:
        entries = entries_of[node["name"]]
        for position, entry in enumerate(entries):
            same = [e["iface"] for e in entries[position + 1:] if e["network"] == entry["network"]]
            if same:
                errors.append("%s on %s: %s and %s are both in %s (accepted: a subnet of its own for each netdev on a "
                              "switch or a ring: two interfaces in one subnet cause routing ambiguity and NCCL "
                              "failures)" % (sources[node["name"]], node["name"], entry["iface"], ", ".join(same),
                                             entry["network"]))
    return errors


def _ring_errors(nodes, sources, entries_of):
    """Rule 5 on a ring: both ends of each cable in one subnet, and no subnet on two cables."""
    errors = []
    count = len(nodes)
    end = {}
    for node in nodes:
        for entry in entries_of[node["name"]]:
            end[(node["name"], entry["iface"])] = entry
    cable_of = {}
    for i, dev_i, j, dev_j in ring_cables(count):
        a, b = nodes[i]["name"], nodes[j]["name"]
        ends = [end.get((a, dev_i)), end.get((b, dev_j))]
        label = "%s %s - %s %s" % (a, dev_i, b, dev_j)
        if None in ends:
            missing = [("%s %s" % (h, d)) for (h, d), e in zip(((a, dev_i), (b, dev_j)), ends) if e is None]
            errors.append("%s: no address for %s, on the cable %s (accepted: an address in one subnet on both "
                          "ends of each cable)" % (", ".join(sorted({sources[a], sources[b]})), " and ".join(missing),
                                                   label))
            continue
        if ends[0]["network"] != ends[1]["network"]:
            errors.append("%s on %s and %s: the ends of the cable %s are in different subnets (%s, %s) (accepted: "
                          "both ends in one subnet)" % (sources[a], a, b, label, ends[0]["cidr"], ends[1]["cidr"]))
            continue
        other = cable_of.get(ends[0]["network"])
        if other:
            errors.append("%s on %s and %s: %s is the subnet of two cables (%s and %s) (accepted: a subnet of its "
                          "own for each cable of the ring)" % (sources[a], a, b, ends[0]["network"], other, label))
        cable_of[ends[0]["network"]] = label
    return errors


def _management_errors(node, plan, source, entries):
    """Rule 6 for one node: what the plan could do to the path from the controller."""
    name = node["name"]
    field = "%s on %s" % (source, name)
    current = node["current"] if isinstance(node["current"], dict) else {}
    default = node["default_interface"]
    management = _address(node["management_address"]) if isinstance(node["management_address"], str) else None
    planned = list(node["up"]) if plan in ("link_local", "dhcp") else [e["iface"] for e in entries]
    errors = []

    holders = []
    for iface in sorted(current, key=str) if management is not None else []:
        for cidr in _cidrs(current, iface):
            parsed = _loose_interface(cidr)
            if parsed is not None and parsed.ip == management and iface not in holders:
                holders.append(iface)
    sensitive = []
    if default:
        sensitive.append(default)
    for iface in holders:
        if iface not in sensitive:
            sensitive.append(iface)

    for iface in planned:
        what = []
        if iface in holders:
            what.append("the management address %s" % management)
        if iface == default:
            what.append("the default IPv4 route")
        if what:
            errors.append("%s: %s carries %s; configuring it could cut the node off from the controller %s"
                          % (field, iface, " and ".join(what), OVERRIDE))

    if plan == "dhcp":
        return errors
    if plan == "link_local":
        if management is not None and management in LINK_LOCAL:
            errors.append("%s: the management address %s is link-local, like the planned QSFP addresses %s"
                          % (field, management, OVERRIDE))
        return errors

    if management is not None:
        reported = []
        for entry in entries:
            network = ipaddress.IPv4Network(entry["network"])
            if management in network and entry["network"] not in reported:
                reported.append(entry["network"])
                errors.append("%s: the management address %s lies in the planned subnet %s (%s on %s) %s"
                              % (field, management, network, entry["cidr"], entry["iface"], OVERRIDE))
    for entry in entries:
        planned_net = ipaddress.IPv4Network(entry["network"])
        for iface in sensitive:
            if iface in planned:
                continue  # already refused above
            for cidr in _cidrs(current, iface):
                parsed = _loose_interface(cidr)
                if parsed is None or not planned_net.overlaps(parsed.network):
                    continue
                roles = []
                if iface in holders:
                    roles.append("the management address %s" % management)
                if iface == default:
                    roles.append("the default IPv4 route")
                role = "the interface of %s" % " and ".join(roles)
                errors.append("%s: planned %s on %s overlaps %s (%s) on %s, %s %s"
                              % (field, entry["cidr"], entry["iface"], cidr, parsed.network, iface, role, OVERRIDE))
    return errors


def _assign_tables(entries, source_routing, table_base):
    """Rule 7: a table per entry whose subnet is shared with another entry of the node."""
    for position, entry in enumerate(entries):
        shared = sum(1 for e in entries if e["network"] == entry["network"]) > 1
        entry["table"] = table_base + position if (source_routing and shared and _is_int(table_base)) else None


def _cidrs(current, iface):
    """The CIDR strings ``current`` lists for ``iface`` (nothing when the value is not a list)."""
    value = current.get(iface) if isinstance(current, dict) else None
    return list(value) if isinstance(value, (list, tuple)) else []


def _missing(entries, current):
    current = current if isinstance(current, dict) else {}
    out = []
    for entry in entries:
        want = ipaddress.IPv4Interface(entry["cidr"])
        have = [_loose_interface(c) for c in _cidrs(current, entry["iface"])]
        if want not in have:
            out.append("%s on %s" % (entry["cidr"], entry["iface"]))
    return out


def _current_addresses(node, link_local):
    """The addresses the node's Up netdevs have now: its link-local ones, or (DHCP) the others."""
    current = node["current"] if isinstance(node["current"], dict) else {}
    out = []
    for iface in node["up"]:
        for cidr in _cidrs(current, iface):
            parsed = _loose_interface(cidr)
            if parsed is not None and (parsed.ip in LINK_LOCAL) == link_local:
                out.append(str(parsed.ip))
    return out


def plan_links(nodes, plan="addresses", preset="seed", interfaces=QSFP_INTERFACES, mtu=None,
               source_routing=True, table_base=101, allow_disruptive=False, topology="direct", subnets=None,
               cluster="sparks"):
    """Plan the QSFP links of ``nodes`` (rank order, head first). Returns ``(per_node, errors)``.

    Each node is ``{"name", "up", "up_source", "addresses", "current", "management_address",
    "default_interface"}``. ``topology``: direct, switch or ring (TOPOLOGIES); ``subnets``: the switch's or the
    ring's subnets (None: DEFAULT_SUBNETS). ``per_node[name]`` has ``up``, ``source``, ``entries``, ``addresses``,
    ``content`` and ``missing``; it may be partial (or empty) when ``errors`` is not empty.
    """
    interfaces = tuple(interfaces or ())
    raw = list(nodes or [])
    errors = []

    # Rule 1: the nodes and the settings shared by all of them.
    names = [n.get("name") if isinstance(n, dict) else n for n in raw]
    valid_names = all(isinstance(n, str) and n for n in names)
    duplicates = sorted(set(n for n in names if isinstance(n, str) and names.count(n) > 1))
    nodes_ok = len(raw) >= 2 and valid_names and not duplicates and all(isinstance(n, dict) for n in raw)
    if not nodes_ok:
        shown = "[%s]" % ", ".join(names) if valid_names else _show(names)
        errors.append("nodes of the QSFP link: %s%s (accepted: netplan pairing needs the two (or more) nodes joined "
                      "by the cable, each once)"
                      % (shown, "; listed more than once: %s" % ", ".join(duplicates) if duplicates else ""))
    if topology not in TOPOLOGIES:
        errors.append("specdec_topology of cluster %s: %s is not a topology (accepted: %s)"
                      % (cluster, _show(topology), ", ".join(TOPOLOGIES)))
        return {}, errors
    blocking = _size_errors(topology, cluster, names) if nodes_ok else []
    if plan == "dhcp" and topology != "switch":
        blocking.append("netplan_qsfp_plan of cluster %s: 'dhcp' needs a DHCP server on the fabric, which only a "
                        "switch has (specdec_topology is %s; accepted: addresses or link_local)" % (cluster, topology))
    preset_used = topology == "direct" and any(isinstance(n, dict) and not n.get("addresses") for n in raw)
    settings, fatal = _settings_errors([n for n in names if isinstance(n, str)], plan, preset, preset_used,
                                       interfaces, mtu, table_base)
    errors.extend(settings)
    if topology != "direct" and plan == "addresses" and nodes_ok and not blocking:
        subnets = DEFAULT_SUBNETS[topology] if subnets is None else subnets
        subnet_errors = subnets_errors(topology, subnets, len(raw))
        blocking.extend(subnet_errors)
        subnets = None if subnet_errors else list(subnets)
    errors.extend(blocking)
    if fatal or not nodes_ok or blocking:
        return {}, errors
    mtu_ok = mtu if (mtu is None or (_is_int(mtu) and MTU_MIN <= mtu <= MTU_MAX)) else None

    nodes = [_normalize(n, interfaces) for n in raw]

    # Rules 2 and 3: the cabling fits the topology (every node cabled, on the right ports).
    cabling, used = _cabling_errors(topology, nodes)
    if cabling:
        errors.extend(cabling)
        return {}, errors
    for node in nodes:
        node["up"] = used[node["name"]]

    # Rule 4 (per node), rule 6 (management path).
    sources = {}
    entries_of = {}
    node_errors = []
    blocked = False
    for index, node in enumerate(nodes):
        source, entries = _node_entries(node, index, plan, preset, interfaces, node_errors,
                                        (topology, subnets, len(nodes)))
        if entries is None:
            blocked = True
            entries = []
        sources[node["name"]] = source
        entries_of[node["name"]] = entries
    errors.extend(node_errors)
    if not allow_disruptive:
        for node in nodes:
            errors.extend(_management_errors(node, plan, sources[node["name"]], entries_of[node["name"]]))

    # Rule 5 (across nodes), only when every node's own plan is valid.
    if plan == "addresses" and not node_errors and not blocked:
        if topology == "ring":
            errors.extend(_duplicate_errors(nodes, sources, entries_of))
            errors.extend(_ring_errors(nodes, sources, entries_of))
        else:
            errors.extend(_cross_errors(nodes, sources, entries_of, interfaces))
        if topology != "direct":
            errors.extend(_twin_errors(nodes, sources, entries_of))

    per_node = {}
    for node in nodes:
        name = node["name"]
        entries = entries_of[name]
        _assign_tables(entries, source_routing, table_base)
        if plan in ("link_local", "dhcp"):
            addresses = _current_addresses(node, plan == "link_local")
        else:
            addresses = [e["address"] for e in entries]
        per_node[name] = {
            "up": list(node["up"]),
            "source": sources[name],
            "entries": entries,
            "addresses": addresses,
            "content": render_netplan(name, plan, sources[name], entries, node["up"], mtu_ok),
            "missing": _missing(entries, node["current"]),
        }
    return per_node, errors
