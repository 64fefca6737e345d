"""Unit tests for the firewall the entrypoint keeps: the planned spec, the iptables-restore transaction, the watcher's
program against a double of iptables' state, and the Ansible side (what to remove, the teardown)."""

import io
import json
import shlex

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _firewall as fw

# `iptables -S` of a node where the allow-list [10.0.0.5, 192.168.1.0/24] guards port 8000 (nf_tables backend,
# as printed by iptables 1.8.9: comments always quoted).
APPLIED = """-P INPUT ACCEPT
-P FORWARD ACCEPT
-P OUTPUT ACCEPT
-N DGX-SPECDEC
-N OTHER
-A INPUT -p tcp -m multiport --dports 8000 -m comment --comment "dgx-spark.specdec" -j DGX-SPECDEC
-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT
-A DGX-SPECDEC -s 10.0.0.5/32 -m comment --comment "dgx-spark.specdec" -j ACCEPT
-A DGX-SPECDEC -s 192.168.1.0/24 -m comment --comment "dgx-spark.specdec" -j ACCEPT
-A DGX-SPECDEC -i lo -m comment --comment "dgx-spark.specdec" -j ACCEPT
-A DGX-SPECDEC -p tcp -m comment --comment "dgx-spark.specdec" -j REJECT --reject-with tcp-reset
"""


class Tables:
    """A double of one network namespace's filter table for both families: ``-S`` prints it as iptables 1.8 does,
    ``*-restore --noflush`` applies a transaction all or nothing (a declared chain is emptied, -D of a missing rule
    fails the whole commit)."""

    def __init__(self, v4="", v6=""):
        self.lines = {"4": [line for line in v4.splitlines() if line.startswith(("-N", "-A"))],
                      "6": [line for line in v6.splitlines() if line.startswith(("-N", "-A"))]}
        self.calls = []
        self.missing = set()

    def listing(self, fam):
        return "-P INPUT ACCEPT\n-P FORWARD ACCEPT\n-P OUTPUT ACCEPT\n" + "\n".join(self.lines[fam]) + "\n"

    def __call__(self, argv, stdin=None):
        self.calls.append(argv)
        tool = argv[0]
        fam = "6" if tool.startswith("ip6") else "4"
        if tool.replace("-restore", "") in self.missing:
            return 127, "", "%s: not found" % tool
        if argv[1:] == ["-w", "-S"]:
            return 0, self.listing(fam), ""
        assert argv[1:] == ["-w", "--noflush"], argv
        lines = list(self.lines[fam])
        for line in stdin.splitlines():
            if line in ("*filter", "COMMIT"):
                continue
            tokens = shlex.split(line)
            if line.startswith(":"):
                chain = line[1:].split()[0]
                lines = [x for x in lines if not x.startswith("-A %s " % chain)]
                if "-N " + chain not in lines:
                    lines.insert(0, "-N " + chain)
            elif tokens[0] == "-A":
                lines.append(self._format(tokens))
            elif tokens[0] == "-I":
                text = self._format(["-A", tokens[1]] + tokens[3:])
                first = [i for i, x in enumerate(lines) if x.startswith("-A %s " % tokens[1])]
                lines.insert(first[0] if first else len(lines), text)
            elif tokens[0] == "-F":
                lines = [x for x in lines if not x.startswith("-A %s " % tokens[1])]
            elif tokens[0] == "-X":
                if any(x.endswith("-j " + tokens[1]) for x in lines):
                    return 1, "", "iptables-restore: CHAIN_DEL failed (Device or resource busy): chain " + tokens[1]
                lines.remove("-N " + tokens[1])
            elif tokens[0] == "-D":
                text = self._format(["-A"] + tokens[1:])
                if text not in lines:
                    return 1, "", "iptables-restore: line failed: %s" % line
                lines.remove(text)
        self.lines[fam] = lines
        return 0, "", ""

    @staticmethod
    def _format(tokens):
        return " ".join('"%s"' % t if t == fw.COMMENT else t for t in tokens)


def spec(allowed=("10.0.0.5", "192.168.1.7/24"), ports=(8000,), **kwargs):
    clients, bad = fw.normalize_clients(list(allowed))
    assert not bad
    return fw.plan_spec(list(ports), clients, **kwargs)


def test_clients_of_both_families_are_normalized_and_bad_ones_named():
    assert fw.normalize_clients(["10.0.0.5", "192.168.1.7/24", "10.0.0.5/32", "2001:db8::1", "fd00::/8"]) == (
        ["10.0.0.5/32", "192.168.1.0/24", "2001:db8::1/128", "fd00::/8"], [])
    assert fw.normalize_clients(["10.0.0.300", "host.example", "10.0.0.0/33", "fd00::/129"])[1] == [
        "10.0.0.300", "host.example", "10.0.0.0/33", "fd00::/129"]


def test_the_spec_splits_the_families_and_is_json():
    planned = spec(("10.0.0.5", "2001:db8::/32"))
    assert planned["clients"] == {"4": ["10.0.0.5/32"], "6": ["2001:db8::/32"]} and planned["enabled"]
    assert json.loads(json.dumps(planned)) == planned
    assert not fw.plan_spec([8000], [])["enabled"]


def test_rules_admit_the_clients_and_the_node_then_reset():
    planned = fw.rules(spec(), "4")
    assert [(r.get("source"), r.get("in_interface"), r["jump"]) for r in planned["chains"][fw.CHAIN]] == [
        ("10.0.0.5/32", None, "ACCEPT"), ("192.168.1.0/24", None, "ACCEPT"), (None, "lo", "ACCEPT"),
        (None, None, "REJECT")]
    assert planned["jumps"] == [{"chain": "INPUT", "comment": "dgx-spark.specdec", "protocol": "tcp",
                                 "destination_ports": ["8000"], "jump": "DGX-SPECDEC"}]
    # IPv6: its own clients (none here), the node, then the reset: nobody else reaches an IPv6 listener.
    six = fw.rules(spec(), "6")["chains"][fw.CHAIN]
    assert [(r.get("source"), r.get("in_interface"), r["jump"]) for r in six] == [
        (None, "lo", "ACCEPT"), (None, None, "REJECT")]


def test_a_bridge_network_admits_its_own_subnets():
    planned = fw.rules(spec(bridge=True), "4", ["172.17.0.0/16"])
    assert (("172.17.0.0/16", "ACCEPT") in [(r.get("source"), r["jump"]) for r in planned["chains"][fw.CHAIN]])


def test_the_mpi_chain_returns_lo_and_the_qsfp_netdevs_and_drops_the_rest():
    planned = fw.rules(fw.plan_spec([8355], [], mpi={"ports": "50100:50132", "interfaces": ["enp1s0f1np1"]}), "4")
    assert list(planned["chains"]) == [fw.MPI_CHAIN]
    assert [(r.get("in_interface"), r["jump"]) for r in planned["chains"][fw.MPI_CHAIN]] == [
        ("lo", "RETURN"), ("enp1s0f1np1", "RETURN"), (None, "DROP")]
    assert planned["jumps"][0]["destination_port"] == "50100:50132"


def test_applied_rules_need_no_transaction():
    assert fw.restore_text(fw.rules(spec(), "4"), APPLIED.splitlines()) == ""


def test_a_new_client_replaces_the_chain_in_one_transaction():
    text = fw.restore_text(fw.rules(spec(("10.0.0.5", "10.0.0.9")), "4"), APPLIED.splitlines())
    lines = text.splitlines()
    assert lines[0] == "*filter" and lines[-1] == "COMMIT"
    # Declared, then filled: never flushed outside the commit.
    assert lines[1] == ":DGX-SPECDEC - [0:0]"
    assert "-A DGX-SPECDEC -s 10.0.0.9/32 -m comment --comment dgx-spark.specdec -j ACCEPT" in lines
    assert not any(line.startswith(("-I", "-D")) for line in lines)


def test_another_port_replaces_the_old_jump_in_the_same_transaction():
    text = fw.restore_text(fw.rules(spec(ports=(8001,)), "4"), APPLIED.splitlines())
    assert "-D INPUT -p tcp -m multiport --dports 8000 -m comment --comment \"dgx-spark.specdec\" -j DGX-SPECDEC" in text
    assert "-I INPUT 1 -p tcp -m multiport --dports 8001 -m comment --comment dgx-spark.specdec -j DGX-SPECDEC" in text


def test_an_emptied_allow_list_goes_in_the_same_transaction_as_its_jump():
    text = fw.restore_text(fw.rules(fw.plan_spec([8000], []), "4"), APPLIED.splitlines())
    lines = text.splitlines()
    jump = [i for i, line in enumerate(lines) if line.startswith("-D INPUT")]
    assert jump and lines[jump[0] + 1:jump[0] + 3] == ["-F DGX-SPECDEC", "-X DGX-SPECDEC"]
    tables = Tables(APPLIED)
    assert fw.apply(fw.plan_spec([8000], []), run=tables) == (["iptables"], [])
    assert not any("DGX-SPECDEC" in line for line in tables.lines["4"])


def test_the_program_applies_keeps_and_restores_after_a_flush():
    tables = Tables()
    planned = spec(("10.0.0.5", "2001:db8::/32"), require_ipv6=True,
                   mpi={"ports": "50100:50132", "interfaces": ["enp1s0f1np1"]})
    assert fw.apply(planned, run=tables) == (["iptables", "ip6tables"], [])
    assert "-A DGX-SPECDEC -s 2001:db8::/32 -m comment --comment \"dgx-spark.specdec\" -j ACCEPT" in tables.lines["6"]
    # Nothing differs: only the two listings.
    tables.calls = []
    assert fw.apply(planned, run=tables) == ([], [])
    assert [c[0] for c in tables.calls] == ["iptables", "ip6tables"]
    # `iptables -F` (and the chains left empty): restored as planned, the node's own rules untouched.
    tables.lines["4"] = [x for x in tables.lines["4"] if x.startswith("-N")] + ["-A INPUT -p tcp --dport 22 -j ACCEPT"]
    assert fw.apply(planned, run=tables) == (["iptables"], [])
    assert fw.restore_text(fw.rules(planned, "4"), tables.listing("4").splitlines()) == ""
    assert "-A INPUT -p tcp --dport 22 -j ACCEPT" in tables.lines["4"]


def test_the_program_fails_closed_without_iptables_and_with_an_ipv6_listener_without_ip6tables():
    tables = Tables()
    tables.missing = {"iptables"}
    assert fw.apply(spec(), run=tables)[1]
    tables = Tables()
    tables.missing = {"ip6tables"}
    assert fw.apply(spec(require_ipv6=True), run=tables)[1]
    # An IPv4 listener does not need ip6tables.
    tables = Tables()
    tables.missing = {"ip6tables"}
    assert fw.apply(spec(), run=tables) == (["iptables"], [])


def test_the_program_main_reports_and_exits_non_zero_when_not_in_force(tmp_path, monkeypatch):
    path = tmp_path / "firewall.json"
    out = io.StringIO()
    assert fw.main(["apply", str(path)], out=out) == 1
    assert "NOT in force" in out.getvalue() and "cannot read" in out.getvalue()
    path.write_text(json.dumps(spec()))
    tables = Tables()
    monkeypatch.setattr(fw, "_run", tables)
    out = io.StringIO()
    assert fw.main(["apply", str(path)], out=out) == 0 and "rules written (iptables, ip6tables)" in out.getvalue()
    assert fw.main(["bogus", str(path)], out=io.StringIO()) == 2


def test_local_subnets_from_the_route_table(tmp_path):
    table = tmp_path / "route"
    table.write_text("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
                     "eth0\t00000000\t010011AC\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
                     "eth0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
                     "lo\t0000007F\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0\n")
    assert fw.local_subnets(str(table)) == ["172.17.0.0/16"]
    assert fw.local_subnets(str(tmp_path / "none")) == []


def test_the_ansible_side_removes_only_what_is_no_longer_planned():
    # Planned as applied: nothing to remove (the entrypoint keeps the rest).
    assert fw.changes(APPLIED, spec()) == {"remove": [], "apply": False}
    # A watcher keeps this namespace (Open MPI's ports): it removes a dropped list itself.
    mpi = {"ports": "50100:50132", "interfaces": []}
    assert fw.changes(APPLIED, fw.plan_spec([8000], [], mpi=mpi)) == {"remove": [], "apply": False}
    # The allow-list dropped: the jump, then the chain; the node's own rules and chain OTHER stay.
    removed = fw.changes(APPLIED, fw.plan_spec([8000], []))["remove"]
    assert removed == [
        ["iptables", "-w", "-D", "INPUT", "-p", "tcp", "-m", "multiport", "--dports", "8000", "-m", "comment",
         "--comment", "dgx-spark.specdec", "-j", "DGX-SPECDEC"],
        ["iptables", "-w", "-F", "DGX-SPECDEC"], ["iptables", "-w", "-X", "DGX-SPECDEC"]]
    # An older release's DOCKER-USER rules go; on a bridge network the host's namespace keeps none of ours.
    old = APPLIED + '-A DOCKER-USER -i docker0 -m comment --comment "dgx-spark.specdec" -j ACCEPT\n'
    removed = fw.changes(old, spec(bridge=True))["remove"]
    assert ["iptables", "-w", "-D", "DOCKER-USER", "-i", "docker0", "-m", "comment", "--comment", "dgx-spark.specdec",
            "-j", "ACCEPT"] in removed
    assert removed[-1] == ["iptables", "-w", "-X", "DGX-SPECDEC"]


def test_removal_for_the_teardown_covers_both_families_and_the_mpi_chain():
    six = "-N DGX-SPECDEC\n-A DGX-SPECDEC -i lo -j ACCEPT\n"
    mpi = "-N DGX_SPARK_MPI\n-A INPUT -p tcp -m tcp --dport 50100:50132 -j DGX_SPARK_MPI\n"
    argv = fw.removal((APPLIED + mpi).splitlines(), six.splitlines())
    assert ["iptables", "-w", "-X", "DGX_SPARK_MPI"] in argv and ["ip6tables", "-w", "-X", "DGX-SPECDEC"] in argv
    assert argv.index(["iptables", "-w", "-D", "INPUT", "-p", "tcp", "-m", "tcp", "--dport", "50100:50132", "-j",
                       "DGX_SPARK_MPI"]) < argv.index(["iptables", "-w", "-F", "DGX_SPARK_MPI"])
    assert fw.removal([], []) == []


@pytest.mark.parametrize("line", ["-P INPUT ACCEPT", "garbage 'unclosed", ""])
def test_other_lines_are_not_rules(line):
    assert fw.parse_line(line) is None
