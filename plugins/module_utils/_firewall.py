# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Who may reach the serving endpoint: the node's iptables rules, planned and compared with what is there.

Pure functions, standard library only. ``plan_rules`` turns the allow-list into rules for
``ansible.builtin.iptables``; ``changes`` compares them with ``iptables -S`` (read by ``spark_facts``) and says
what to add and remove, so a run that changes nothing touches nothing.

The rules, all marked with the comment ``dgx-spark.specdec``:

* chain ``DGX-SPECDEC``: ACCEPT from each allowed client, from ``lo`` (the node itself, the endpoint
  validation), from ``docker0`` when the port is published, then REJECT with a TCP reset, so a refused
  client sees "connection refused" at once instead of a timeout;
* ``INPUT``: the serving ports jump to it (host networking, or the namespace the container joins);
* ``DOCKER-USER``, when the port is published from a bridge network: the same jump for forwarded
  traffic, and the ``docker0`` rules of NVIDIA's low-latency gpt-oss recipe.
"""

import ipaddress
import shlex

CHAIN = "DGX-SPECDEC"
COMMENT = "dgx-spark.specdec"


def normalize_clients(values):
    """Allow-list entries (an IPv4 address or network) -> (["A.B.C.D/N", ...], [bad values])."""
    out = []
    bad = []
    for value in values or []:
        try:
            network = ipaddress.IPv4Network(str(value).strip(), strict=False)
        except (ipaddress.AddressValueError, ipaddress.NetmaskValueError, ValueError):
            bad.append(value)
            continue
        text = str(network) if "/" in str(network) else "%s/32" % network
        if text not in out:
            out.append(text)
    return out, bad


def _rule(chain, **params):
    rule = {"chain": chain, "comment": COMMENT}
    rule.update((k, v) for k, v in params.items() if v not in (None, [], ""))
    return rule


def plan_rules(ports, allowed, published_ports=None):
    """The rules for ``ports`` (served ports), ``allowed`` (normalized CIDRs; empty: no rules at all).

    ``published_ports``: the host ports Docker publishes (bridge network), else None.
    Returns {"enabled", "chain", "chain_rules": [...], "jumps": [...]} of ``ansible.builtin.iptables``
    parameters (``chain`` included), in the order they must have.
    """
    if not allowed:
        return {"enabled": False, "chain": CHAIN, "chain_rules": [], "jumps": []}
    ports = [str(p) for p in sorted(set(int(p) for p in ports))]
    chain_rules = [_rule(CHAIN, source=cidr, jump="ACCEPT") for cidr in allowed]
    chain_rules.append(_rule(CHAIN, in_interface="lo", jump="ACCEPT"))
    jumps = []
    if published_ports:
        host_ports = [str(p) for p in sorted(set(int(p) for p in published_ports) | set(int(p) for p in ports))]
        chain_rules.append(_rule(CHAIN, in_interface="docker0", jump="ACCEPT"))
        # NVIDIA's low-latency recipe: containers on docker0 reach the published server.
        jumps += [_rule("INPUT", in_interface="docker0", protocol="tcp", destination_port=p, jump="ACCEPT")
                  for p in host_ports]
        jumps.append(_rule("DOCKER-USER", in_interface="docker0", jump="ACCEPT"))
        # Forwarded to the container: the destination port is the container's (after Docker's DNAT).
        jumps.append(_rule("DOCKER-USER", protocol="tcp", destination_ports=ports, jump=CHAIN))
        ports = host_ports
    jumps.append(_rule("INPUT", protocol="tcp", destination_ports=ports, jump=CHAIN))
    chain_rules.append(_rule(CHAIN, protocol="tcp", jump="REJECT", reject_with="tcp-reset"))
    return {"enabled": True, "chain": CHAIN, "chain_rules": chain_rules, "jumps": jumps}


_KEYS = {"-s": "source", "-i": "in_interface", "-p": "protocol", "--dport": "destination_port",
         "--dports": "destination_ports", "-j": "jump", "--reject-with": "reject_with", "--comment": "comment"}


def _signature(rule):
    """What identifies a rule, from planned parameters or from parsed ``iptables -S`` tokens."""
    items = []
    for key in ("chain", "source", "in_interface", "protocol", "destination_port", "destination_ports", "jump",
                "reject_with"):
        value = rule.get(key)
        if value in (None, "", []):
            continue
        if key == "destination_ports":
            value = ",".join(str(v) for v in (value if isinstance(value, list) else str(value).split(",")))
        items.append((key, str(value)))
    return tuple(items)


def parse_line(line):
    """One ``iptables -S`` rule line (``-A CHAIN ...``) -> parameters, or None for another kind of line."""
    try:
        tokens = shlex.split(line)
    except ValueError:
        return None
    if len(tokens) < 2 or tokens[0] != "-A":
        return None
    rule = {"chain": tokens[1]}
    i = 2
    while i < len(tokens):
        key = _KEYS.get(tokens[i])
        if key and i + 1 < len(tokens):
            rule[key] = tokens[i + 1]
            i += 2
        else:
            i += 1
    return rule


def changes(listing, spec):
    """Compare ``iptables -S`` (filter table) with the planned rules.

    Returns {"create_chain", "rebuild", "chain_rules", "add", "remove", "delete_chain", "apply"}:
    ``rebuild`` flushes the chain and appends ``chain_rules`` in order; ``add`` are jump rules to insert
    at the top; ``remove`` are ``iptables -D`` argument lists for rules of ours that are no longer planned.
    """
    lines = [line.strip() for line in (listing or "").splitlines() if line.strip()]
    chain_exists = ("-N %s" % CHAIN) in lines
    current_chain = []
    ours_elsewhere = []
    for line in lines:
        rule = parse_line(line)
        if rule is None:
            continue
        if rule["chain"] == CHAIN:
            current_chain.append(_signature(rule))
        elif rule.get("comment") == COMMENT:
            ours_elsewhere.append((line, _signature(rule)))
    enabled = bool(spec.get("enabled"))
    planned_chain = [_signature(r) for r in spec.get("chain_rules") or []]
    planned_jumps = spec.get("jumps") or []
    planned_sigs = [_signature(r) for r in planned_jumps]
    current_sigs = [sig for dummy, sig in ours_elsewhere]
    rebuild = enabled and current_chain != planned_chain
    # Inserted at the top in reverse, so they end up in the planned order above everything else.
    add = [dict(r, action="insert", rule_num="1") for r, sig in reversed(list(zip(planned_jumps, planned_sigs)))
           if sig not in current_sigs]
    remove = [["-D"] + shlex.split(line)[1:] for line, sig in ours_elsewhere if sig not in planned_sigs]
    delete_chain = not enabled and chain_exists
    result = {
        "create_chain": enabled and not chain_exists,
        "rebuild": rebuild,
        "chain_rules": [dict(r, action="append") for r in spec.get("chain_rules") or []] if rebuild else [],
        "add": add,
        "remove": remove,
        "flush": (rebuild and chain_exists and bool(current_chain)) or (delete_chain and bool(current_chain)),
        "delete_chain": delete_chain,
    }
    result["apply"] = bool(result["create_chain"] or rebuild or add or remove or delete_chain)
    return result


def removal(lines):
    """``iptables`` argument lists that remove every rule of ours and the chain (the teardown), in order."""
    result = changes("\n".join(lines or []), plan_rules([], []))
    argv = list(result["remove"])
    if result["flush"]:
        argv.append(["-F", CHAIN])
    if result["delete_chain"]:
        argv.append(["-X", CHAIN])
    return argv
