# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The check of the QSFP links of a DGX Spark once its netplan file is applied (module ``spark_link``).

This is a private module_utils file (leading underscore): its API may change without notice. Pure
functions, standard library only (``re``), so that they can be unit-tested without Ansible:

* ``validate`` checks the module's options; each error names the field, the value and what is accepted.
* ``parse_speed``, ``parse_mtu`` and ``parse_operstate`` read the ``/sys/class/net/<iface>/*`` files.
* ``ping_argv`` builds the ``ping`` command (don't-fragment at a given payload size, or a small one);
  ``parse_ping`` reads its output and ``quote_ping`` picks the lines worth quoting.
* ``check_link`` runs the checks of one link with an injected command runner and returns its result;
  the cause texts (``cause_*``), ``link_message``, ``failure_message`` and ``summary_line`` word them.
"""

from __future__ import annotations

import os
import re

# The planned MTU must lie within these bounds (the same as the netplan_qsfp plan, _spark_net).
MTU_MIN = 576
MTU_MAX = 9216
# IPv4 header (20) and ICMP header (8): a ping payload of MTU - 28 bytes fills a packet of MTU bytes.
PING_OVERHEAD = 28

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = re.compile(r"^%s(?:\.%s){3}\Z" % (_OCTET, _OCTET))
# A Linux netdev name: 1..15 characters, not "." or "..", no "/" or blank.
_IFNAME = re.compile(r"^(?!\.{1,2}\Z)[A-Za-z0-9_.:-]{1,15}\Z")

# iputils: "2 packets transmitted, 2 received, 0% packet loss, time 1001ms";
# busybox: "2 packets transmitted, 2 packets received, 0% packet loss".
_STATS = re.compile(r"(\d+)\s+packets\s+transmitted,\s*(\d+)\s+(?:packets\s+)?received")
# iputils: "rtt min/avg/max/mdev = 0.049/0.050/0.051/0.001 ms"; busybox: "round-trip min/avg/max = ...".
_RTT = re.compile(r"(?:rtt|round-trip)\s+min/avg/max(?:/[a-z]+)?\s*=\s*[0-9.]+/([0-9.]+)/")
# "ping: local error: message too long, mtu=1500" (iputils) or "ping: sendmsg: Message too long".
_TOO_LONG = re.compile(r"message too long(?:,\s*mtu\s*=\s*(\d+))?", re.IGNORECASE)
# "From 10.0.0.1 icmp_seq=1 Frag needed and DF set (mtu = 1500)": a hop on the way needs fragmenting.
_FRAG_NEEDED = re.compile(r"frag(?:mentation)?\s+needed[^(\n]*\(mtu\s*=\s*(\d+)\)", re.IGNORECASE)
_QUOTE_HINTS = ("ping:", "from ", "error", "unreachable", "frag", "too long", "unknown host", "not permitted")
QUOTE_MAX = 240

IFNAME_ACCEPTED = "a netdev name of 1 to 15 letters, digits and _ . : - (not . or ..), such as enp1s0f1np1"
IPV4_ACCEPTED = "an IPv4 address A.B.C.D without prefix length or leading zeros, such as 192.168.200.13"
MTU_ACCEPTED = "a whole number from %d to %d (9000 for NCCL over the QSFP link), or null to use the current MTU" % (
    MTU_MIN, MTU_MAX)


# ---------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------

def is_ipv4(value):
    return isinstance(value, str) and bool(_IPV4.match(value))


def is_ifname(value):
    return isinstance(value, str) and bool(_IFNAME.match(value))


def validate(links, count=2, timeout=2):
    """The module's options -> list of errors (empty when all is well); ``links`` may be empty."""
    errors = []
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        errors.append("count: %r; accepted: a whole number of pings per link, 1 or more" % (count,))
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1:
        errors.append("timeout: %r; accepted: a whole number of seconds ping waits for each reply, 1 or more"
                      % (timeout,))
    seen = {}
    for index, spec in enumerate(links or []):
        field = "links[%d]" % index
        if not isinstance(spec, dict):
            errors.append("%s: %r; accepted: a dict with iface, peer, peer_address and optionally address and mtu"
                          % (field, spec))
            continue
        iface = spec.get("iface")
        # A netdev has one link on a pair or a ring, and one to each other Spark on a switch.
        key = (iface, spec.get("peer_address"))
        if not is_ifname(iface):
            errors.append("%s.iface: %r is not a netdev name; accepted: %s" % (field, iface, IFNAME_ACCEPTED))
        elif key in seen:
            errors.append("%s: %s to %s is already checked by links[%d]; accepted: one entry per QSFP netdev and peer"
                          % (field, iface, key[1], seen[key]))
        else:
            seen[key] = index
        peer = spec.get("peer")
        if not isinstance(peer, str) or not peer.strip():
            errors.append("%s.peer: %r; accepted: the inventory name of the node at the other end of the link"
                          % (field, peer))
        peer_address = spec.get("peer_address")
        if not is_ipv4(peer_address):
            errors.append("%s.peer_address: %r is not an IPv4 address; accepted: %s" % (field, peer_address,
                                                                                        IPV4_ACCEPTED))
        elif spec.get("address") and spec.get("address") == peer_address:
            errors.append("%s.peer_address: %s is this end's own address (%s.address); accepted: the address of the "
                          "other end on this link" % (field, peer_address, field))
        mtu = spec.get("mtu")
        if mtu is not None and (isinstance(mtu, bool) or not isinstance(mtu, int) or not MTU_MIN <= mtu <= MTU_MAX):
            errors.append("%s.mtu: %r is out of range; accepted: %s" % (field, mtu, MTU_ACCEPTED))
    return errors


# ---------------------------------------------------------------------------
# /sys/class/net/<iface>/*
# ---------------------------------------------------------------------------

def parse_speed(text):
    """The text of ``/sys/class/net/<iface>/speed`` (Mb/s) -> int, or None when empty, garbage or negative
    (-1 without carrier or when the driver does not report it)."""
    try:
        speed = int((text or "").strip())
    except ValueError:
        return None
    return speed if speed >= 0 else None


def parse_mtu(text):
    """The text of ``/sys/class/net/<iface>/mtu`` -> int, or None when empty or garbage."""
    try:
        mtu = int((text or "").strip())
    except ValueError:
        return None
    return mtu if mtu > 0 else None


def parse_operstate(text):
    """The text of ``/sys/class/net/<iface>/operstate`` -> the state as the kernel writes it, or None."""
    state = (text or "").strip()
    return state or None


# ---------------------------------------------------------------------------
# ping
# ---------------------------------------------------------------------------

def ping_size(mtu):
    """The ICMP payload that fills a packet of ``mtu`` bytes."""
    return mtu - PING_OVERHEAD


def ping_argv(ping, iface, peer_address, count, timeout, size=None):
    """``ping`` argv: with ``size``, don't-fragment (``-M do``) at that payload size; without, a normal ping."""
    argv = [ping, "-n"]
    if size is not None:
        argv += ["-M", "do", "-s", str(size)]
    # 0.2 s apart (the shortest interval ping allows every user), not 1 s: a run checks each link.
    argv += ["-c", str(count), "-i", "0.2", "-W", str(timeout), "-I", iface, peer_address]
    return argv


def parse_ping(out, err=""):
    """ping's standard output and error -> {transmitted, received, rtt_avg_ms, too_long, local_mtu, frag_mtu}.

    ``too_long`` is true when ping could not send because the packet is larger than the route's MTU
    (``local_mtu``, None when ping did not name it); ``frag_mtu`` is the MTU a hop on the way named in a
    "Frag needed and DF set" answer, else None."""
    text = "%s\n%s" % (out or "", err or "")
    parsed = {"transmitted": 0, "received": 0, "rtt_avg_ms": None, "too_long": False, "local_mtu": None,
              "frag_mtu": None}
    stats = _STATS.findall(text)
    if stats:
        parsed["transmitted"], parsed["received"] = int(stats[-1][0]), int(stats[-1][1])
    rtt = _RTT.search(text)
    if rtt:
        try:
            parsed["rtt_avg_ms"] = float(rtt.group(1))
        except ValueError:
            pass
    too_long = _TOO_LONG.search(text)
    if too_long:
        parsed["too_long"] = True
        parsed["local_mtu"] = int(too_long.group(1)) if too_long.group(1) else None
    frag = _FRAG_NEEDED.search(text)
    if frag:
        parsed["frag_mtu"] = int(frag.group(1))
    return parsed


def quote_ping(out, err="", limit=QUOTE_MAX):
    """A brief quote of ping's output: its first error line (if any) and its statistics line."""
    lines = [" ".join(line.split()) for line in ("%s\n%s" % (err or "", out or "")).splitlines()]
    lines = [line for line in lines if line]
    picked = []
    for line in lines:
        if line.startswith("PING ") or " bytes from " in line or _STATS.search(line):
            continue
        if any(hint in line.lower() for hint in _QUOTE_HINTS):
            picked.append(line)
            break
    picked += [line for line in lines if _STATS.search(line)][:1]
    if not picked and lines:
        picked = [lines[0]]
    quote = " / ".join(picked)
    return quote if len(quote) <= limit else quote[:limit - 3] + "..."


# ---------------------------------------------------------------------------
# Cause texts
# ---------------------------------------------------------------------------

def read_netdev(iface, sys_class_net="/sys/class/net"):
    """-> {exists, operstate, mtu, speed_mbps} of one netdev, from /sys/class/net (speed without carrier: None)."""
    def read(name):
        try:
            with open(os.path.join(sys_class_net, iface, name), "r", encoding="utf-8") as handle:
                return handle.read()
        except (OSError, ValueError):
            return None

    if not os.path.exists(os.path.join(sys_class_net, iface)):
        return {"exists": False, "operstate": None, "mtu": None, "speed_mbps": None}
    return {"exists": True, "operstate": parse_operstate(read("operstate")), "mtu": parse_mtu(read("mtu")),
            "speed_mbps": parse_speed(read("speed"))}


def cause_missing(iface, node, sys_class_net="/sys/class/net"):
    return "%s does not exist on %s (no %s/%s): is the netplan file applied and the netdev named right?" % (
        iface, node, sys_class_net, iface)


def cause_mtu(current, planned, node):
    return "MTU is %s on %s, planned %d" % ("unknown" if current is None else current, node, planned)


def cause_no_mtu(iface, node):
    return "the MTU of %s on %s cannot be read and none is planned (mtu), so it was not pinged" % (iface, node)


def cause_operstate(iface, operstate):
    if operstate is None:
        return "the operstate of %s cannot be read" % iface
    return "%s is %s (operstate), not up" % (iface, operstate)


def _with_quote(text, quote):
    return "%s [ping: %s]" % (text, quote) if quote else text


def cause_too_long(mtu, size, local_mtu, quote=""):
    route = "the route's MTU is %d" % local_mtu if local_mtu else "the route's MTU is lower"
    return _with_quote("this end cannot send %d-byte packets unfragmented (ping -M do -s %d: %s)" % (mtu, size, route),
                       quote)


def cause_frag_needed(mtu, size, frag_mtu, quote=""):
    return _with_quote("a hop on the way cannot pass %d-byte packets unfragmented (ping -M do -s %d: it needs "
                       "fragmenting, its MTU is %d)" % (mtu, size, frag_mtu), quote)


def cause_no_reply(mtu, size, peer, small_crossed, quote=""):
    if small_crossed:
        normal = "small packets cross, so the other end's MTU is lower than %d" % mtu
    else:
        normal = "no packet crosses: the link or the peer's address is down"
    return _with_quote("no reply to a %d-byte ping with don't-fragment (ping -M do -s %d): the MTU of %s's end is "
                       "probably lower than %d, or the link is down (a normal ping: %s)" % (mtu, size, peer, mtu, normal),
                       quote)


def cause_not_sent(mtu, size, rc, quote=""):
    return _with_quote("the %d-byte ping with don't-fragment (ping -M do -s %d) sent nothing (rc=%s)" % (mtu, size, rc),
                       quote)


def link_message(spec, node, cause):
    """``QSFP link <iface> of <node> (<address>) to <peer> (<peer_address>): <cause>``."""
    address = " (%s)" % spec["address"] if spec.get("address") else ""
    return "QSFP link %s of %s%s to %s (%s): %s" % (spec["iface"], node, address, spec["peer"], spec["peer_address"],
                                                    cause)


def failure_message(node, messages):
    return "QSFP link check failed on %s: %s" % (node, "; ".join(messages))


def _ms(value):
    return ("%.3f" % value).rstrip("0").rstrip(".")


def summary_line(result, exists=True):
    """One line for a link result, e.g.
    ``enp1s0f1np1 -> spark-b 192.168.200.13: MTU 9000, 200000 Mb/s, DF ping 8972 bytes 2/2 (0.05 ms)``."""
    head = "%s -> %s %s: " % (result["iface"], result["peer"], result["peer_address"])
    if not exists:
        return head + "no such netdev"
    parts = []
    mtu, planned = result["mtu"], result["planned_mtu"]
    mtu_text = "MTU %s" % ("unknown" if mtu is None else mtu)
    if planned is not None and mtu != planned:
        mtu_text += " (planned %d)" % planned
    parts.append(mtu_text)
    parts.append("speed not shown" if result["speed_mbps"] is None else "%d Mb/s" % result["speed_mbps"])
    if result["operstate"] != "up":
        parts.append("operstate %s" % (result["operstate"] or "unknown"))
    ping = result["ping"]
    if ping["size"] is None:
        parts.append("not pinged")
    else:
        text = "DF ping %d bytes %d/%d" % (ping["size"], ping["received"], ping["transmitted"])
        if ping["rtt_avg_ms"] is not None:
            text += " (%s ms)" % _ms(ping["rtt_avg_ms"])
        parts.append(text)
    return head + ", ".join(parts)


# ---------------------------------------------------------------------------
# One link
# ---------------------------------------------------------------------------

def new_result(spec, netdev):
    """The result of a link before pinging; ``netdev`` is {exists, operstate, mtu, speed_mbps}."""
    return {
        "iface": spec["iface"],
        "peer": spec["peer"],
        "peer_address": spec["peer_address"],
        "address": spec.get("address") or "",
        "operstate": netdev.get("operstate"),
        "mtu": netdev.get("mtu"),
        "planned_mtu": spec.get("mtu"),
        "speed_mbps": netdev.get("speed_mbps"),
        "ping": {"size": None, "df": True, "transmitted": 0, "received": 0, "rtt_avg_ms": None, "ok": False},
        "ok": False,
        "cause": "",
    }


def check_link(spec, netdev, node, ping, run, count=2, timeout=2, sys_class_net="/sys/class/net"):
    """Check one link; ``run(argv) -> (rc, stdout, stderr)`` runs a command (it only runs ``ping``).

    Returns the link's result (see ``new_result``) with ``ok`` and ``cause`` set; the causes of one link are
    joined with "; " in the order MTU, ping, operstate."""
    result = new_result(spec, netdev)
    iface, peer_address, planned = spec["iface"], spec["peer_address"], spec.get("mtu")
    causes = []
    if not netdev.get("exists"):
        causes.append(cause_missing(iface, node, sys_class_net))
    else:
        current = netdev.get("mtu")
        if planned is not None and current != planned:
            causes.append(cause_mtu(current, planned, node))
        mtu = planned if planned is not None else current
        if mtu is None:
            causes.append(cause_no_mtu(iface, node))
        else:
            size = ping_size(mtu)
            rc, out, err = run(ping_argv(ping, iface, peer_address, count, timeout, size))
            parsed = parse_ping(out, err)
            ok = parsed["received"] > 0
            result["ping"].update(size=size, transmitted=parsed["transmitted"], received=parsed["received"],
                                  rtt_avg_ms=parsed["rtt_avg_ms"], ok=ok)
            if not ok:
                quote = quote_ping(out, err)
                if parsed["too_long"]:
                    causes.append(cause_too_long(mtu, size, parsed["local_mtu"], quote))
                elif parsed["frag_mtu"]:
                    causes.append(cause_frag_needed(mtu, size, parsed["frag_mtu"], quote))
                elif parsed["transmitted"] > 0:
                    dummy, small_out, small_err = run(ping_argv(ping, iface, peer_address, 1, timeout))
                    crossed = parse_ping(small_out, small_err)["received"] > 0
                    causes.append(cause_no_reply(mtu, size, spec["peer"], crossed, quote))
                else:
                    causes.append(cause_not_sent(mtu, size, rc, quote))
                if result["operstate"] != "up":
                    causes.append(cause_operstate(iface, result["operstate"]))
    result["cause"] = "; ".join(causes)
    result["ok"] = not causes
    return result
