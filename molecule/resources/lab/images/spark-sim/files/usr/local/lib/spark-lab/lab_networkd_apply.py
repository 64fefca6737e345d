"""Apply netplan's generated systemd-networkd files with `ip`: the lab's `netplan apply`.

A simulated Spark has no systemd, so `netplan apply` cannot hand the files to networkd. This
reads /run/systemd/network/10-netplan-*.network (plus the matching .link files, for MTU) exactly
as `netplan generate` wrote them and applies, per interface named in them:
  - MTU ([Link] MTUBytes= in the .network or the .link file), link up;
  - addresses ([Network] Address=, [Address] Address=), replacing addresses it set earlier;
  - routes ([Route]: Destination, Gateway, Table, Metric, Scope, Type, PreferredSource,
    GatewayOnLink) with `ip route replace`;
  - policy rules ([RoutingPolicyRule]: From, To, Table, Priority, FirewallMark,
    TypeOfService, IncomingInterface, OutgoingInterface).
It touches only interfaces named in those files (and removes what it set before on interfaces
whose file is gone), is idempotent, and prints one summary line; exit 0 unless `ip` fails.

Options: --dry-run (print the ip commands, change nothing), --dir DIR (default
$LAB_NETWORKD_DIR or /run/systemd/network), --state FILE (default /run/lab-networkd-apply.json).
"""

import argparse
import fnmatch
import glob
import json
import os
import subprocess
import sys

PROG = "lab-networkd-apply"


def parse_unit(path):
    """Parse a systemd unit file into a list of (section, {key: [values]}) in file order."""
    sections = []
    current = None
    with open(path, encoding="utf-8") as handle:
        for raw in handle:
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("[") and line.endswith("]"):
                current = {}
                sections.append((line[1:-1], current))
                continue
            if current is None or "=" not in line:
                continue
            key, value = line.split("=", 1)
            current.setdefault(key.strip(), []).append(value.strip())
    return sections


def first(sections, name, key):
    for section, values in sections:
        if section == name and values.get(key):
            return values[key][-1]
    return None


def is_v6(addr):
    return ":" in (addr or "")


class Plan:
    """Desired configuration of one interface."""

    def __init__(self, iface):
        self.iface = iface
        self.mtu = None
        self.addresses = []
        self.routes = []   # list of argument lists for `ip route replace`
        self.rules = []    # list of argument lists for `ip rule add`
        self.notes = []

    def to_state(self):
        return {"addresses": self.addresses, "routes": self.routes, "rules": self.rules}


def _last(values, key):
    """Last value of a key in a parsed section, or None."""
    return (values.get(key) or [None])[-1]


def route_args(values, iface):
    """Arguments after `ip [-6] route replace` for one [Route] section."""
    def get(key):
        return _last(values, key)
    dest = get("Destination")
    gateway = get("Gateway")
    rtype = (get("Type") or "unicast").lower()
    if not dest:
        dest = "::/0" if is_v6(gateway) else "0.0.0.0/0"
    if dest in ("0.0.0.0/0", "::/0"):
        dest = "default"
    args = []
    if rtype != "unicast":
        args.append(rtype)
    args.append(dest)
    if gateway and gateway not in ("_dhcp4", "_ipv6ra"):
        args += ["via", gateway]
    if rtype == "unicast":
        args += ["dev", iface]
    table = get("Table")
    if table:
        args += ["table", table]
    for key, word in (("Metric", "metric"), ("Scope", "scope"), ("PreferredSource", "src")):
        if get(key):
            args += [word, get(key)]
    if (get("GatewayOnLink") or "").lower() in ("yes", "true", "1", "on"):
        args.append("onlink")
    return args


def rule_args(values):
    """Arguments after `ip [-6] rule add` for one [RoutingPolicyRule] section."""
    def get(key):
        return _last(values, key)
    args = []
    for key, word in (("Priority", "priority"), ("From", "from"), ("To", "to"),
                      ("FirewallMark", "fwmark"), ("TypeOfService", "tos"),
                      ("IncomingInterface", "iif"), ("OutgoingInterface", "oif"), ("Table", "table")):
        if get(key):
            args += [word, get(key)]
    return args


def family(args):
    for i, word in enumerate(args):
        if word in ("from", "to", "via") and i + 1 < len(args) and is_v6(args[i + 1]):
            return ["-6"]
        if i == 0 and is_v6(word):
            return ["-6"]
    return []


def build_plans(directory):
    plans = {}
    for path in sorted(glob.glob(os.path.join(directory, "10-netplan-*.network"))):
        sections = parse_unit(path)
        names = (first(sections, "Match", "Name") or "").split()
        if len(names) != 1 or any(ch in names[0] for ch in "*?["):
            print("%s: skipping %s: needs exactly one literal [Match] Name=" % (PROG, path), file=sys.stderr)
            continue
        iface = names[0]
        plan = plans.setdefault(iface, Plan(iface))
        mtu = first(sections, "Link", "MTUBytes")
        if mtu:
            plan.mtu = int(mtu)
        for section, values in sections:
            if section == "Network":
                plan.addresses += values.get("Address", [])
                for gateway in values.get("Gateway", []):
                    plan.routes.append(route_args({"Gateway": [gateway]}, iface))
                if values.get("DHCP", ["no"])[-1] not in ("no", "false"):
                    plan.notes.append("DHCP not emulated")
            elif section == "Address":
                plan.addresses += values.get("Address", [])
            elif section == "Route":
                plan.routes.append(route_args(values, iface))
            elif section == "RoutingPolicyRule":
                plan.rules.append(rule_args(values))
    # netplan writes MTU for matched/renamed devices into a .link file.
    for path in sorted(glob.glob(os.path.join(directory, "10-netplan-*.link"))):
        sections = parse_unit(path)
        mtu = first(sections, "Link", "MTUBytes")
        original = (first(sections, "Match", "OriginalName") or "").split()
        if not mtu:
            continue
        for iface, plan in plans.items():
            if plan.mtu is None and any(fnmatch.fnmatchcase(iface, pat) for pat in original):
                plan.mtu = int(mtu)
    return plans


class Runner:
    def __init__(self, dry_run):
        self.dry_run = dry_run
        self.changes = 0

    def query(self, args):
        try:
            out = subprocess.run(["ip"] + args, check=True, capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return None
        return out

    def json(self, args):
        out = self.query(["-j"] + args)
        try:
            return json.loads(out) if out and out.strip() else []
        except ValueError:
            return []

    def change(self, args, ignore_errors=False):
        self.changes += 1
        if self.dry_run:
            print("ip " + " ".join(args))
            return True
        proc = subprocess.run(["ip"] + args, capture_output=True, text=True, check=False)
        if proc.returncode != 0 and not ignore_errors:
            raise RuntimeError("ip %s: %s" % (" ".join(args), proc.stderr.strip()))
        return proc.returncode == 0


def current_addresses(runner, iface):
    out = []
    for link in runner.json(["addr", "show", "dev", iface]):
        for info in link.get("addr_info", []):
            if info.get("scope") == "link" and info.get("family") == "inet6":
                continue
            out.append("%s/%s" % (info["local"], info["prefixlen"]))
    return out


def norm_addr(addr):
    return addr if "/" in addr else addr + ("/128" if is_v6(addr) else "/32")


def route_present(runner, args):
    """True if `ip route show` finds a route matching every selector of args."""
    words = list(args)
    table = "main"
    if "table" in words:
        i = words.index("table")
        table = words[i + 1]
        del words[i:i + 2]
    rtype = None
    if words and words[0] in ("blackhole", "unreachable", "prohibit", "throw", "local"):
        rtype = words.pop(0)
    dest = words.pop(0)
    show = family(args) + ["route", "show", "table", table]
    if rtype:
        show += ["type", rtype]
    show += (["exact", dest] if dest != "default" else ["default"])
    out = runner.query(show)
    if not out:
        return False
    pairs = [(words[i], words[i + 1]) for i in range(0, len(words) - 1, 2) if words[i] != "onlink"]
    for line in out.splitlines():
        tokens = line.split()
        if all(any(tokens[j] == k and j + 1 < len(tokens) and tokens[j + 1] == v
                   for j in range(len(tokens))) for k, v in pairs):
            return True
    return False


def rule_present(runner, args):
    want = dict(zip(args[0::2], args[1::2]))
    for rule in runner.json(family(args) + ["rule", "show"]):
        have = {
            "priority": str(rule.get("priority")),
            "from": rule.get("src") if rule.get("src") not in (None, "all") else None,
            "to": rule.get("dst") if rule.get("dst") not in (None, "all") else None,
            "table": str(rule.get("table")),
            "fwmark": rule.get("fwmark"),
            "tos": rule.get("tos"),
            "iif": rule.get("iif"),
            "oif": rule.get("oif"),
        }
        for key in ("from", "to"):
            length = rule.get("srclen" if key == "from" else "dstlen")
            if have[key] and length is not None and length not in (32, 128):
                have[key] = "%s/%s" % (have[key], length)
        ok = True
        for key, value in want.items():
            if key in ("from", "to"):
                value = value if "/" not in value or not value.endswith(("/32", "/128")) else value.rsplit("/", 1)[0]
            if have.get(key) != value:
                ok = False
                break
        if ok and all(have[k] is None for k in ("from", "to", "fwmark", "iif", "oif") if k not in want):
            return True
    return False


def apply(plans, previous, runner):
    # Remove what we set before and no longer want (also on interfaces whose file disappeared).
    for iface, old in previous.items():
        plan = plans.get(iface)
        want_rules = plan.rules if plan else []
        want_routes = plan.routes if plan else []
        want_addrs = {norm_addr(a) for a in plan.addresses} if plan else set()
        for args in old.get("rules", []):
            if args not in want_rules and rule_present(runner, args):
                runner.change(family(args) + ["rule", "del"] + args, ignore_errors=True)
        for args in old.get("routes", []):
            if args not in want_routes and route_present(runner, args):
                runner.change(family(args) + ["route", "del"] + args, ignore_errors=True)
        have = {norm_addr(a) for a in current_addresses(runner, iface)}
        for addr in old.get("addresses", []):
            if norm_addr(addr) not in want_addrs and norm_addr(addr) in have:
                runner.change(["addr", "del", addr, "dev", iface], ignore_errors=True)

    for iface, plan in plans.items():
        links = runner.json(["link", "show", "dev", iface])
        if not links and not runner.dry_run:
            raise RuntimeError("interface %s (named in the netplan output) does not exist" % iface)
        link = links[0] if links else {}
        if plan.mtu and link.get("mtu") != plan.mtu:
            runner.change(["link", "set", "dev", iface, "mtu", str(plan.mtu)])
        if "UP" not in link.get("flags", []):
            runner.change(["link", "set", "dev", iface, "up"])
        have = {norm_addr(a) for a in current_addresses(runner, iface)}
        for addr in plan.addresses:
            if norm_addr(addr) not in have:
                runner.change(["addr", "add", addr, "dev", iface])
        for args in plan.routes:
            if not route_present(runner, args):
                runner.change(family(args) + ["route", "replace"] + args)
        for args in plan.rules:
            if not rule_present(runner, args):
                runner.change(family(args) + ["rule", "add"] + args)


def main(argv=None):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--dir", default=os.environ.get("LAB_NETWORKD_DIR", "/run/systemd/network"))
    parser.add_argument("--state", default=os.environ.get("LAB_NETWORKD_STATE", "/run/lab-networkd-apply.json"))
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)

    plans = build_plans(args.dir)
    try:
        with open(args.state, encoding="utf-8") as handle:
            previous = json.load(handle)
    except (OSError, ValueError):
        previous = {}
    runner = Runner(args.dry_run)
    try:
        apply(plans, previous, runner)
    except RuntimeError as exc:
        print("%s: error: %s" % (PROG, exc), file=sys.stderr)
        return 1
    if not args.dry_run:
        tmp = args.state + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump({iface: plan.to_state() for iface, plan in plans.items()}, handle, indent=1)
        os.replace(tmp, args.state)
    notes = sorted({n for p in plans.values() for n in p.notes})
    print("%s: %s: %d interface(s)%s, %d address(es), %d route(s), %d rule(s), %d ip change(s)%s" % (
        PROG, "changed" if runner.changes else "unchanged", len(plans),
        (" (" + ", ".join(sorted(plans)) + ")") if plans else "",
        sum(len(p.addresses) for p in plans.values()), sum(len(p.routes) for p in plans.values()),
        sum(len(p.rules) for p in plans.values()), runner.changes,
        ("; " + "; ".join(notes)) if notes else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
