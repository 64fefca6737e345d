"""Lab node scripts on the host (no docker): ibdev2netdev, lab-networkd-apply, the lab CLI."""

import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from lab_helpers import LAB_SCRIPT, SIM_FILES

IBDEV = os.path.join(SIM_FILES, "usr", "local", "bin", "ibdev2netdev")
APPLY = os.path.join(SIM_FILES, "usr", "local", "lib", "spark-lab", "lab_networkd_apply.py")
APPLY_CMD = os.path.join(SIM_FILES, "usr", "local", "sbin", "lab-networkd-apply")
INIT = os.path.join(SIM_FILES, "usr", "local", "sbin", "lab-init")

# What `netplan generate` (netplan.io 0.106, Debian 12) writes for the two-port /24 plan of spark-a.
NETWORK_F1 = """[Match]
Name=enp1s0f1np1

[Link]
MTUBytes=9000

[Network]
LinkLocalAddressing=ipv6
Address=192.168.200.12/24

[Route]
Destination=192.168.200.0/24
Scope=link
Table=101

[RoutingPolicyRule]
From=192.168.200.12
Table=101
"""
LINK_F1 = """[Match]
OriginalName=enp1s0f1np1

[Link]
WakeOnLan=off
MTUBytes=9000
"""
NETWORK_P2 = """[Match]
Name=enP2p1s0f1np1

[Network]
LinkLocalAddressing=ipv6
Address=192.168.200.14/24

[Route]
Destination=192.168.200.0/24
Scope=link
Table=102

[RoutingPolicyRule]
From=192.168.200.14
Table=102
"""


def load_apply():
    loader = importlib.machinery.SourceFileLoader("lab_networkd_apply", APPLY)
    spec = importlib.util.spec_from_loader("lab_networkd_apply", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture
def netdir(tmp_path):
    d = tmp_path / "network"
    d.mkdir()
    (d / "10-netplan-enp1s0f1np1.network").write_text(NETWORK_F1)
    (d / "10-netplan-enp1s0f1np1.link").write_text(LINK_F1)
    (d / "10-netplan-enP2p1s0f1np1.network").write_text(NETWORK_P2)
    return d


def make_sysfs(tmp_path, states):
    root = tmp_path / "sys"
    for dev, state in states.items():
        (root / dev).mkdir(parents=True)
        (root / dev / "operstate").write_text(state + "\n")
    return str(root)


def test_ibdev2netdev_format_and_state(tmp_path):
    sysfs = make_sysfs(tmp_path, {"enp1s0f0np0": "down", "enp1s0f1np1": "up", "enP2p1s0f0np0": "lowerlayerdown",
                                  "enP2p1s0f1np1": "up", "eth0": "up"})
    out = subprocess.run([IBDEV], env=dict(os.environ, IBDEV2NETDEV_SYSFS=sysfs), capture_output=True,
                         text=True, check=True).stdout
    assert out.splitlines() == [
        "rocep1s0f0 port 1 ==> enp1s0f0np0 (Down)",
        "rocep1s0f1 port 1 ==> enp1s0f1np1 (Up)",
        "roceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Down)",
        "roceP2p1s0f1 port 1 ==> enP2p1s0f1np1 (Up)",
    ]
    verbose = subprocess.run([IBDEV, "-v"], env=dict(os.environ, IBDEV2NETDEV_SYSFS=sysfs), capture_output=True,
                             text=True, check=True).stdout.splitlines()
    assert verbose[1].startswith("0000:01:00.1 rocep1s0f1 ") and verbose[1].endswith("==> enp1s0f1np1 (Up)")
    assert subprocess.run([IBDEV, "--bogus"], capture_output=True, check=False).returncode == 1


def test_ibdev2netdev_skips_absent_ports(tmp_path):
    sysfs = make_sysfs(tmp_path, {"enp1s0f1np1": "up"})
    out = subprocess.run([IBDEV], env=dict(os.environ, IBDEV2NETDEV_SYSFS=sysfs), capture_output=True,
                         text=True, check=True).stdout
    assert out == "rocep1s0f1 port 1 ==> enp1s0f1np1 (Up)\n"


def test_networkd_plans_from_netplan_output(netdir):
    mod = load_apply()
    plans = mod.build_plans(str(netdir))
    assert sorted(plans) == ["enP2p1s0f1np1", "enp1s0f1np1"]
    f1 = plans["enp1s0f1np1"]
    assert f1.mtu == 9000 and f1.addresses == ["192.168.200.12/24"]
    assert f1.routes == [["192.168.200.0/24", "dev", "enp1s0f1np1", "table", "101", "scope", "link"]]
    assert f1.rules == [["from", "192.168.200.12", "table", "101"]]
    assert plans["enP2p1s0f1np1"].mtu is None


def test_networkd_route_and_rule_variants():
    mod = load_apply()
    assert mod.route_args({"Gateway": ["10.0.0.1"]}, "e0") == ["default", "via", "10.0.0.1", "dev", "e0"]
    assert mod.route_args({"Destination": ["10.1.0.0/16"], "Type": ["blackhole"]}, "e0") == ["blackhole", "10.1.0.0/16"]
    assert mod.route_args({"Destination": ["10.2.0.0/16"], "Gateway": ["10.0.0.1"], "Metric": ["50"],
                           "GatewayOnLink": ["true"], "PreferredSource": ["10.0.0.5"]}, "e0") == \
        ["10.2.0.0/16", "via", "10.0.0.1", "dev", "e0", "metric", "50", "src", "10.0.0.5", "onlink"]
    assert mod.rule_args({"From": ["10.0.0.5"], "To": ["10.9.0.0/16"], "Table": ["7"], "Priority": ["100"],
                          "FirewallMark": ["3"]}) == \
        ["priority", "100", "from", "10.0.0.5", "to", "10.9.0.0/16", "fwmark", "3", "table", "7"]
    assert mod.family(["from", "fd00::1", "table", "5"]) == ["-6"]


class FakeRunner:
    """Stands in for `ip`: an in-memory interface model, recording changes."""

    def __init__(self, mod, addrs=None, up=False):
        self.mod = mod
        self.dry_run = False
        self.changes = 0
        self.commands = []
        self.addrs = addrs or {}
        self.up = up

    def query(self, args):
        return None

    def json(self, args):
        if args[:2] == ["addr", "show"]:
            iface = args[-1]
            return [{"addr_info": [{"local": a.split("/")[0], "prefixlen": int(a.split("/")[1]), "scope": "global",
                                    "family": "inet"} for a in self.addrs.get(iface, [])]}]
        if args[:2] == ["link", "show"]:
            return [{"mtu": 1500, "flags": ["UP"] if self.up else []}]
        return []

    def change(self, args, ignore_errors=False):
        self.changes += 1
        self.commands.append(" ".join(args))
        return True


def test_networkd_apply_replaces_only_its_own_addresses(netdir):
    mod = load_apply()
    plans = mod.build_plans(str(netdir))
    previous = {"enp1s0f1np1": {"addresses": ["192.168.200.22/24"], "routes": [], "rules": []}}
    runner = FakeRunner(mod, addrs={"enp1s0f1np1": ["192.168.200.22/24", "10.9.9.9/8"]}, up=True)
    mod.apply(plans, previous, runner)
    assert "addr del 192.168.200.22/24 dev enp1s0f1np1" in runner.commands
    assert "addr add 192.168.200.12/24 dev enp1s0f1np1" in runner.commands
    assert not any("10.9.9.9" in c for c in runner.commands)          # not ours: left alone
    assert "link set dev enp1s0f1np1 mtu 9000" in runner.commands
    assert "rule add from 192.168.200.14 table 102" in runner.commands
    assert "route replace 192.168.200.0/24 dev enp1s0f1np1 table 101 scope link" in runner.commands
    assert not any(c.endswith(" up") for c in runner.commands)        # already up


def test_networkd_apply_dry_run_cli(netdir, tmp_path):
    state = tmp_path / "state.json"
    proc = subprocess.run([sys.executable, APPLY, "--dry-run", "--dir", str(netdir), "--state", str(state)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "ip addr add 192.168.200.14/24 dev enP2p1s0f1np1" in lines
    assert lines[-1].startswith("lab-networkd-apply: changed: 2 interface(s)")
    assert not state.exists()


def test_networkd_apply_with_no_files_is_a_clean_no_op(tmp_path):
    state = tmp_path / "state.json"
    proc = subprocess.run([sys.executable, APPLY, "--dir", str(tmp_path), "--state", str(state)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0
    assert proc.stdout.strip() == ("lab-networkd-apply: unchanged: 0 interface(s), 0 address(es), 0 route(s), "
                                   "0 rule(s), 0 ip change(s)")
    assert json.loads(state.read_text()) == {}


def test_scripts_parse_and_lab_usage():
    for script in (LAB_SCRIPT, INIT, IBDEV, APPLY_CMD):
        subprocess.run(["bash", "-n", script], check=True)
        assert os.access(script, os.X_OK), script
    with open(APPLY_CMD, encoding="utf-8") as handle:
        assert "/usr/local/lib/spark-lab/lab_networkd_apply.py" in handle.read()
    proc = subprocess.run([LAB_SCRIPT, "--help"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0
    for word in ("build", "up", "down", "status", "--keep-data", "SPARK_LAB_ROOT"):
        assert word in proc.stdout
    assert subprocess.run([LAB_SCRIPT, "frobnicate"], capture_output=True, check=False).returncode == 2
