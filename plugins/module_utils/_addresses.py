# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Whether the planned QSFP addresses are on their netdevs after netplan apply (module ``spark_addresses``).

This is a private module_utils file (leading underscore): its API may change without notice. Pure
functions, standard library only (``ipaddress``, ``json``; the netdev-name rule is ``_spark_link``'s), so that
they can be unit-tested without Ansible:

* ``validate`` checks the module's options; each error names the field, the value and what is accepted.
* ``parse_ip_addr`` reads ``ip -j -4 addr show`` into ``{netdev: ["A.B.C.D/N", ...]}``.
* ``absent`` compares the planned entries with that; ``describe`` words one absent address.
* ``wait`` reads until every planned address is there or the reads are used up, with an injected reader
  and sleep; ``failure_message`` and ``summary_line`` word the outcome.
"""

from __future__ import annotations

import ipaddress
import json

from ansible_collections.dgx_spark.specdec.plugins.module_utils._spark_link import IFNAME_ACCEPTED, is_ifname

# JSON, IPv4 only: the same read as iproute2's `ip -4 addr show`, without scraping its text.
IP_ADDR_ARGV = ("-j", "-4", "addr", "show")

CIDR_ACCEPTED = "an IPv4 address with prefix length A.B.C.D/N, such as 192.168.200.12/24"


class IpAddrError(ValueError):
    """The output of ``ip -j -4 addr show`` cannot be read."""


# ---------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------

def _interface(cidr):
    """``A.B.C.D/N`` -> IPv4Interface, else None (never raises)."""
    if not isinstance(cidr, str) or "/" not in cidr:
        return None
    try:
        return ipaddress.IPv4Interface(cidr.strip())
    except ValueError:
        return None


def _is_count(value, minimum):
    return not isinstance(value, bool) and isinstance(value, int) and value >= minimum


def validate(entries, retries=10, delay=2):
    """The module's options -> list of errors (empty when all is well); ``entries`` may be empty."""
    errors = []
    if not _is_count(retries, 1):
        errors.append("retries: %r; accepted: a whole number of reads of the addresses, 1 or more" % (retries,))
    if not _is_count(delay, 0):
        errors.append("delay: %r; accepted: a whole number of seconds between two reads, 0 or more" % (delay,))
    seen = {}
    for index, entry in enumerate(entries or []):
        field = "entries[%d]" % index
        if not isinstance(entry, dict):
            errors.append("%s: %r; accepted: a dict with iface and cidr (the plan's netplan_qsfp entries)"
                          % (field, entry))
            continue
        iface = entry.get("iface")
        if not is_ifname(iface):
            errors.append("%s.iface: %r; accepted: %s" % (field, iface, IFNAME_ACCEPTED))
        parsed = _interface(entry.get("cidr"))
        if parsed is None:
            errors.append("%s.cidr: %r; accepted: %s" % (field, entry.get("cidr"), CIDR_ACCEPTED))
        elif parsed.ip in seen:
            errors.append("%s.cidr: %s is already planned by entries[%d]; accepted: each address once"
                          % (field, parsed.ip, seen[parsed.ip]))
        else:
            seen[parsed.ip] = index
    return errors


# ---------------------------------------------------------------------------
# ip -j -4 addr show
# ---------------------------------------------------------------------------

def parse_links(text):
    """``ip -j addr show`` (with or without ``-4``) -> its list of links. Raises IpAddrError when the text is not
    the JSON list ip writes (an empty output is no link at all)."""
    try:
        links = json.loads(text) if (text or "").strip() else []
    except ValueError as exc:
        raise IpAddrError("not JSON (%s)" % exc)
    if not isinstance(links, list):
        raise IpAddrError("not a JSON list but %s" % type(links).__name__)
    return links


def ipv4_of(links):
    """The links of ``parse_links`` -> {netdev: ["A.B.C.D/N", ...]} in the order ip lists them.

    Only IPv4 (``family: inet``) entries with a ``local`` address count. iproute2 prints ``{}`` for a link
    without an IPv4 address when ``-4`` is given; it is skipped."""
    current = {}
    for link in links:
        if not isinstance(link, dict) or not isinstance(link.get("ifname"), str):
            continue
        cidrs = current.setdefault(link["ifname"], [])
        for info in link.get("addr_info") or []:
            if not isinstance(info, dict) or info.get("family", "inet") != "inet" or not info.get("local"):
                continue
            cidr = "%s/%s" % (info["local"], info.get("prefixlen", 32))
            if cidr not in cidrs:
                cidrs.append(cidr)
    return current


def parse_ip_addr(text):
    """``ip -j -4 addr show`` -> {netdev: ["A.B.C.D/N", ...]}. Raises IpAddrError (see ``parse_links``)."""
    return ipv4_of(parse_links(text))


# ---------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------

def absent(entries, current):
    """The planned entries whose address is not on their netdev with its prefix length, in plan order.

    Each item is {iface, cidr, found}: ``found`` lists where the address is instead, as ``netdev: A.B.C.D/N``
    (another netdev, or the planned one with another prefix length), so a message can tell a wrong place from
    nothing at all. The same address and prefix on the planned netdev is what the plan (``missing``) counts
    as present too, so what fails here is applied again by the next run."""
    current = current if isinstance(current, dict) else {}
    out = []
    for entry in entries:
        want = _interface(entry["cidr"])
        have = [_interface(c) for c in current.get(entry["iface"], [])]
        if want in have:
            continue
        found = []
        for netdev, cidrs in current.items():
            for cidr in cidrs:
                parsed = _interface(cidr)
                if parsed is not None and parsed.ip == want.ip:
                    found.append("%s: %s" % (netdev, cidr))
        out.append({"iface": entry["iface"], "cidr": entry["cidr"], "found": found})
    return out


def describe(item):
    """``192.168.200.12/24 on enp1s0f1np1`` and, when the address is elsewhere, ``(found on enp1s0f0np0:
    192.168.200.12/24)``."""
    text = "%s on %s" % (item["cidr"], item["iface"])
    if item["found"]:
        text += " (found on %s)" % ", ".join(item["found"])
    return text


def _times(reads):
    return "once" if reads == 1 else "%d times" % reads


def failure_message(node, missing, apply_command, reads, delay):
    """What the task says when addresses are still missing after the last read."""
    apart = ", %d s apart" % delay if reads > 1 and delay else ""
    return ('After applying with "%s", %s lacks %s (checked %s%s). The file stays; the next run applies again.'
            % (apply_command, node, ", ".join(describe(item) for item in missing), _times(reads), apart))


def summary_line(node, entries, reads):
    """``spark-a: 192.168.200.12/24 on enp1s0f1np1, 192.168.200.14/24 on enP2p1s0f1np1 (read 2 times)``."""
    planned = ", ".join("%s on %s" % (e["cidr"], e["iface"]) for e in entries) or "no address planned"
    return "%s: %s (read %s)" % (node, planned, _times(reads))


# ---------------------------------------------------------------------------
# The wait
# ---------------------------------------------------------------------------

def wait(entries, read, retries=10, delay=2, sleep=None):
    """Read the addresses up to ``retries`` times, ``delay`` seconds apart, until none of ``entries`` is absent.

    ``read() -> {netdev: [cidr, ...]}`` reads the node (it may raise; the caller reports that);
    ``sleep(seconds)`` waits. Returns (current, missing, reads): the last read, what is absent from it (see
    ``absent``) and how many reads were made. No read at all is needed when nothing is planned."""
    if not entries:
        return {}, [], 0
    reads = 0
    while True:
        current = read()
        reads += 1
        missing = absent(entries, current)
        if not missing or reads >= retries:
            return current, missing, reads
        if sleep is not None and delay:
            sleep(delay)
