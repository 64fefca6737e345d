# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Who may reach the serving endpoint and Open MPI's ports: planned once, kept by the node itself.

Standard library only: the plan imports it, and the trtllm_container role writes this very file next to the
entrypoint, which runs it as a program in the container's network namespace (the node's, with host networking):

    python3 firewall.py apply SPEC            apply SPEC (JSON) atomically; exit 1 when it cannot (fail closed)
    python3 firewall.py watch SPEC [SECONDS]  re-apply whenever the rules differ (a flush, a firewall reload)

So the allow-list is in force before the server listens, after a reboot or a container restart (Docker restarts the
container, whose entrypoint applies it first) and after a flush (the watcher restores it within seconds), with no
Ansible run. A changed SPEC (a new allow-list) is picked up by the watcher: no restart of the server.

Each family (iptables, ip6tables) is written with one ``iptables-restore --noflush`` transaction: declaring a chain
there replaces its rules in the same commit, so the chain is never seen empty or half-written. All rules carry the
comment ``dgx-spark.specdec``:

* chain ``DGX-SPECDEC``: ACCEPT from each allowed client of the family, from ``lo`` (the node itself, the endpoint
  validation) and, on a bridge network, from the container's own subnets (the node through Docker's proxy and the
  containers on docker0, as NVIDIA's low-latency recipe allows), then REJECT with a TCP reset so a refused client
  sees "connection refused" at once; ``INPUT`` sends the serving ports to it;
* chain ``DGX_SPARK_MPI`` (a cluster): Open MPI's pinned ports accept only ``lo`` and the QSFP netdevs.

``changes`` and ``removal`` are the Ansible side: rules of ours in the node's namespace that are no longer planned
(an allow-list removed, an older release's DOCKER-USER rules) and the teardown.
"""

import ipaddress
import json
import shlex
import subprocess
import sys
import time

CHAIN = "DGX-SPECDEC"
MPI_CHAIN = "DGX_SPARK_MPI"
COMMENT = "dgx-spark.specdec"
TOOLS = {"4": "iptables", "6": "ip6tables"}


def normalize_clients(values):
    """Allow-list entries (IPv4 or IPv6 address or network) -> (["A.B.C.D/N", "X::/N", ...], [bad values])."""
    out = []
    bad = []
    for value in values or []:
        try:
            network = ipaddress.ip_network(str(value).strip(), strict=False)
        except ValueError:
            bad.append(value)
            continue
        if str(network) not in out:
            out.append(str(network))
    return out, bad


def family(network):
    return "6" if ":" in network else "4"


def _rule(chain, **params):
    rule = {"chain": chain, "comment": COMMENT}
    rule.update((k, v) for k, v in params.items() if v not in (None, [], ""))
    return rule


def plan_spec(ports, allowed, bridge=False, mpi=None, require_ipv6=False):
    """What the entrypoint applies (written as JSON next to it).

    ``ports``: the served ports; ``allowed``: normalized networks (empty: no endpoint rules); ``bridge``: the server
    has its own network namespace (a published port); ``mpi``: {"ports": "FIRST:LAST", "interfaces": [...]} on a
    cluster node, else None; ``require_ipv6``: the server listens on IPv6, so ip6tables must be there to filter it.
    """
    return {"chain": CHAIN, "ports": sorted(set(int(p) for p in ports)) if allowed else [],
            "clients": {fam: [n for n in allowed if family(n) == fam] for fam in ("4", "6")},
            "enabled": bool(allowed), "bridge": bool(bridge), "mpi": mpi, "require_ipv6": bool(require_ipv6)}


def rules(spec, fam, local_subnets=()):
    """{"chains": {CHAIN: [rule, ...]}, "jumps": [rule, ...]}: the rules of one family, in order."""
    chains = {}
    jumps = []
    if spec.get("enabled"):
        chain = [_rule(CHAIN, source=n, jump="ACCEPT") for n in spec["clients"].get(fam) or []]
        chain.append(_rule(CHAIN, in_interface="lo", jump="ACCEPT"))
        chain += [_rule(CHAIN, source=n, jump="ACCEPT") for n in local_subnets if family(n) == fam]
        chain.append(_rule(CHAIN, protocol="tcp", jump="REJECT", reject_with="tcp-reset"))
        chains[CHAIN] = chain
        jumps.append(_rule("INPUT", protocol="tcp", destination_ports=[str(p) for p in spec["ports"]], jump=CHAIN))
    mpi = spec.get("mpi")
    if mpi:
        chain = [_rule(MPI_CHAIN, in_interface="lo", jump="RETURN")]
        chain += [_rule(MPI_CHAIN, in_interface=i, jump="RETURN") for i in mpi.get("interfaces") or []]
        chain.append(_rule(MPI_CHAIN, jump="DROP"))
        chains[MPI_CHAIN] = chain
        jumps.append(_rule("INPUT", protocol="tcp", destination_port=mpi["ports"], jump=MPI_CHAIN))
    return {"chains": chains, "jumps": jumps}


def rule_args(rule):
    """The iptables arguments after ``-A CHAIN`` (the order ``iptables -S`` prints them in)."""
    args = []
    if rule.get("source"):
        args += ["-s", rule["source"]]
    if rule.get("in_interface"):
        args += ["-i", rule["in_interface"]]
    if rule.get("protocol"):
        args += ["-p", rule["protocol"]]
    if rule.get("destination_port"):
        args += ["-m", rule["protocol"], "--dport", str(rule["destination_port"])]
    if rule.get("destination_ports"):
        args += ["-m", "multiport", "--dports", ",".join(str(p) for p in rule["destination_ports"])]
    args += ["-m", "comment", "--comment", rule["comment"], "-j", rule["jump"]]
    if rule.get("reject_with"):
        args += ["--reject-with", rule["reject_with"]]
    return args


_KEYS = {"-s": "source", "-i": "in_interface", "-p": "protocol", "--dport": "destination_port",
         "--dports": "destination_ports", "-j": "jump", "--reject-with": "reject_with", "--comment": "comment"}


def signature(rule):
    """What identifies a rule, from planned parameters or from parsed ``iptables -S`` tokens."""
    items = []
    for key in ("chain", "source", "in_interface", "protocol", "destination_port", "destination_ports", "jump",
                "reject_with"):
        value = rule.get(key)
        if value in (None, "", []):
            continue
        if key == "destination_ports":
            value = ",".join(str(v) for v in (value if isinstance(value, list) else str(value).split(",")))
        elif key == "source" and "/" not in str(value):
            value = "%s/%d" % (value, 128 if ":" in str(value) else 32)
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


def _ours(lines):
    """(chains of ours that exist, {chain: [signature, ...]} of our chains, [(line, signature)] of our jumps)."""
    chains = [c for c in (CHAIN, MPI_CHAIN) if ("-N %s" % c) in lines]
    content = {c: [] for c in chains}
    jumps = []
    for line in lines:
        rule = parse_line(line)
        if rule is None:
            continue
        if rule["chain"] in (CHAIN, MPI_CHAIN):
            content.setdefault(rule["chain"], []).append(signature(rule))
        elif rule.get("comment") == COMMENT or rule.get("jump") in (CHAIN, MPI_CHAIN):
            jumps.append((line, signature(rule)))
    return chains, content, jumps


def restore_text(planned, lines):
    """The ``iptables-restore --noflush`` input that makes ``lines`` (``iptables -S``) hold ``planned`` (from
    ``rules``), or "" when they already do. Jumps of ours that are not planned go in the same transaction."""
    lines = [line.strip() for line in lines if line.strip()]
    chains, content, jumps = _ours(lines)
    out = []
    for chain, chain_rules in sorted(planned["chains"].items()):
        if content.get(chain) != [signature(r) for r in chain_rules]:
            # Declared in a --noflush restore, a chain is emptied and refilled in the same commit.
            out.append(":%s - [0:0]" % chain)
            out += [" ".join(shlex.quote(a) for a in ["-A", chain] + rule_args(r)) for r in chain_rules]
    planned_sigs = [signature(r) for r in planned["jumps"]]
    have = [sig for dummy, sig in jumps]
    for line, sig in jumps:
        if sig not in planned_sigs:
            out.append("-D " + line.split(None, 1)[1])
    # Inserted at the top in reverse, so they end up in the planned order above the node's own rules.
    for rule, sig in reversed(list(zip(planned["jumps"], planned_sigs))):
        if sig not in have:
            out.append(" ".join(shlex.quote(a) for a in ["-I", rule["chain"], "1"] + rule_args(rule)))
    # A chain of ours no longer planned (an allow-list emptied): gone in the same commit, after its jumps.
    for chain in chains:
        if chain not in planned["chains"]:
            out += ["-F " + chain, "-X " + chain]
    return "*filter\n%s\nCOMMIT\n" % "\n".join(out) if out else ""


def changes(listing, spec, listing6=None):
    """The Ansible side: what to remove from the node's namespace (``iptables -S`` lines of each family).

    The entrypoint writes the planned rules; a run removes only rules of ours that are no longer planned there (an
    allow-list removed, an older release's DOCKER-USER rules). Returns {"remove": [argv, ...], "apply": bool}.
    """
    remove = []
    # Where the container's watcher keeps the rules (host networking), it also removes what is no longer planned,
    # in one transaction: a run touches only what it does not keep (an older release's DOCKER-USER rules).
    watched = bool(spec and (spec.get("enabled") or spec.get("mpi")) and not spec.get("bridge"))
    for fam, text in (("4", listing), ("6", listing6)):
        lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
        if watched:
            lines = [line for line in lines if not line.startswith(("-N ", "-A INPUT ", "-A %s " % CHAIN,
                                                                    "-A %s " % MPI_CHAIN))]
        planned = rules(spec, fam) if spec and not spec.get("bridge") else {"chains": {}, "jumps": []}
        chains, dummy, jumps = _ours(lines)
        planned_sigs = [signature(r) for r in planned["jumps"]]
        tool = TOOLS[fam]
        remove += [[tool, "-w", "-D"] + shlex.split(line)[1:] for line, sig in jumps if sig not in planned_sigs]
        for chain in chains:
            if chain not in planned["chains"]:
                remove += [[tool, "-w", "-F", chain], [tool, "-w", "-X", chain]]
    return {"remove": remove, "apply": bool(remove)}


def removal(lines, lines6=None):
    """Argument lists (each starting with the tool) that remove every rule and chain of ours: the teardown."""
    return changes("\n".join(lines or []), None, "\n".join(lines6 or []))["remove"]


# ---------------------------------------------------------------------------
# The program the entrypoint runs
# ---------------------------------------------------------------------------

def local_subnets(route_table="/proc/net/route"):
    """The IPv4 subnets directly attached to this namespace's interfaces (not lo), from the kernel's route table."""
    out = []
    try:
        with open(route_table) as handle:
            rows = [line.split() for line in handle.read().splitlines()[1:]]
    except OSError:
        return out
    for row in rows:
        if len(row) < 8 or row[0] == "lo" or int(row[2], 16) != 0 or int(row[1], 16) == 0:
            continue
        # Little-endian hexadecimal, as /proc/net/route prints them.
        dest = ipaddress.IPv4Address(int(row[1], 16).to_bytes(4, "little"))
        mask = ipaddress.IPv4Address(int(row[7], 16).to_bytes(4, "little"))
        network = str(ipaddress.IPv4Network("%s/%s" % (dest, mask), strict=False))
        if network not in out:
            out.append(network)
    return out


def _run(argv, stdin=None):
    try:
        proc = subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, check=False)
    except OSError as exc:
        return 127, "", str(exc)
    return proc.returncode, proc.stdout, proc.stderr


def apply(spec, run=None, subnets=None):
    """Bring each family's rules to ``spec``. Returns (changed families, problems); a problem means not in force."""
    run = run or _run
    changed, problems = [], []
    for fam in ("4", "6"):
        tool = TOOLS[fam]
        needed = fam == "4" or spec.get("require_ipv6") or bool(spec["clients"].get("6"))
        rc, out, err = run([tool, "-w", "-S"])
        if rc != 0:
            if needed and (spec.get("enabled") or spec.get("mpi")):
                problems.append("%s -S failed (%s): %s" % (tool, rc, err.strip() or out.strip()))
            continue
        local = (subnets if subnets is not None else local_subnets()) if spec.get("bridge") else []
        text = restore_text(rules(spec, fam, local), out.splitlines())
        if not text:
            continue
        rc, out, err = run([tool + "-restore", "-w", "--noflush"], stdin=text)
        if rc != 0:
            problems.append("%s-restore failed (%s): %s" % (tool, rc, err.strip() or out.strip()))
        else:
            changed.append(tool)
    return changed, problems


def _load(path):
    with open(path) as handle:
        return json.load(handle)


def _once(path):
    try:
        return apply(_load(path))
    except (OSError, ValueError, KeyError) as exc:
        return [], ["cannot read %s: %s" % (path, exc)]


def main(argv=None, out=sys.stdout):
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2 or argv[0] not in ("apply", "watch"):
        out.write("usage: firewall.py apply|watch SPEC [SECONDS]\n")
        return 2
    path = argv[1]
    watch = argv[0] == "watch"
    interval = float(argv[2]) if watch and len(argv) > 2 else 5.0
    while True:
        changed, problems = _once(path)
        for problem in problems:
            out.write("[dgx-spark firewall] %s%s\n" % ("" if watch else "NOT in force: ", problem))
        if changed:
            what = "restored or updated" if watch else "written"
            out.write("[dgx-spark firewall] rules %s (%s)\n" % (what, ", ".join(changed)))
        out.flush()
        if not watch:
            return 1 if problems else 0
        time.sleep(interval)


if __name__ == "__main__":
    raise SystemExit(main())
