"""Unit tests for the endpoint's allow-list: the rules planned and their comparison with ``iptables -S``."""

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


def spec(allowed=("10.0.0.5", "192.168.1.7/24"), ports=(8000,), published=None):
    clients, bad = fw.normalize_clients(list(allowed))
    assert not bad
    return fw.plan_rules(list(ports), clients, published)


def test_clients_are_normalized_and_bad_ones_named():
    assert fw.normalize_clients(["10.0.0.5", "192.168.1.7/24", "10.0.0.5/32"]) == (["10.0.0.5/32", "192.168.1.0/24"], [])
    assert fw.normalize_clients(["10.0.0.300", "host.example", "::1", "10.0.0.0/33"])[1] == [
        "10.0.0.300", "host.example", "::1", "10.0.0.0/33"]


def test_no_allow_list_plans_no_rule():
    assert fw.plan_rules([8000], []) == {"enabled": False, "chain": "DGX-SPECDEC", "chain_rules": [], "jumps": []}


def test_rules_admit_the_clients_and_the_node_then_reset():
    planned = spec()
    assert [(r.get("source"), r.get("in_interface"), r["jump"]) for r in planned["chain_rules"]] == [
        ("10.0.0.5/32", None, "ACCEPT"), ("192.168.1.0/24", None, "ACCEPT"), (None, "lo", "ACCEPT"),
        (None, None, "REJECT")]
    assert planned["chain_rules"][-1]["reject_with"] == "tcp-reset"
    assert planned["jumps"] == [{"chain": "INPUT", "comment": "dgx-spark.specdec", "protocol": "tcp",
                                 "destination_ports": ["8000"], "jump": "DGX-SPECDEC"}]


def test_published_port_adds_the_docker0_rules_of_the_low_latency_recipe():
    planned = spec(published=[8000])
    assert [(r["chain"], r.get("in_interface"), r.get("destination_port"), r.get("destination_ports"), r["jump"])
            for r in planned["jumps"]] == [
        ("INPUT", "docker0", "8000", None, "ACCEPT"),
        ("DOCKER-USER", "docker0", None, None, "ACCEPT"),
        ("DOCKER-USER", None, None, ["8000"], "DGX-SPECDEC"),
        ("INPUT", None, None, ["8000"], "DGX-SPECDEC")]
    assert {"chain": "DGX-SPECDEC", "comment": "dgx-spark.specdec", "in_interface": "docker0",
            "jump": "ACCEPT"} in planned["chain_rules"]


def test_applied_rules_need_no_change():
    result = fw.changes(APPLIED, spec())
    assert result["apply"] is False
    assert result["add"] == [] and result["remove"] == [] and not result["rebuild"] and not result["create_chain"]


def test_fresh_node_creates_the_chain_and_inserts_the_jump():
    result = fw.changes("-P INPUT ACCEPT\n", spec())
    assert result["create_chain"] and result["rebuild"] and not result["flush"]
    assert [r["jump"] for r in result["chain_rules"]] == ["ACCEPT", "ACCEPT", "ACCEPT", "REJECT"]
    assert all(r["action"] == "append" for r in result["chain_rules"])
    assert result["add"] == [dict(spec()["jumps"][0], action="insert", rule_num="1")]


def test_a_new_client_rewrites_the_chain_in_order():
    result = fw.changes(APPLIED, spec(allowed=("10.0.0.5", "192.168.1.0/24", "10.9.9.9")))
    assert result["flush"] and result["rebuild"] and result["add"] == [] and result["remove"] == []
    assert [r.get("source") for r in result["chain_rules"]][:3] == ["10.0.0.5/32", "192.168.1.0/24", "10.9.9.9/32"]


def test_another_port_replaces_the_old_jump():
    result = fw.changes(APPLIED, spec(ports=(8000, 8001, 8002)))
    assert result["remove"] == [["-D", "INPUT", "-p", "tcp", "-m", "multiport", "--dports", "8000", "-m", "comment",
                                 "--comment", "dgx-spark.specdec", "-j", "DGX-SPECDEC"]]
    assert result["add"][0]["destination_ports"] == ["8000", "8001", "8002"]
    assert not result["rebuild"]


def test_emptied_allow_list_removes_everything_of_ours_only():
    result = fw.changes(APPLIED, fw.plan_rules([8000], []))
    assert result["delete_chain"] and result["flush"] and result["apply"]
    assert result["remove"] == [["-D", "INPUT", "-p", "tcp", "-m", "multiport", "--dports", "8000", "-m", "comment",
                                 "--comment", "dgx-spark.specdec", "-j", "DGX-SPECDEC"]]
    # The other rule of INPUT and the other chain are not ours.
    assert fw.changes("-N OTHER\n-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT\n", fw.plan_rules([8000], []))["apply"] is False


def test_removal_for_the_teardown():
    lines = [line for line in APPLIED.splitlines() if "DGX-SPECDEC" in line or "dgx-spark.specdec" in line]
    assert fw.removal(lines) == [
        ["-D", "INPUT", "-p", "tcp", "-m", "multiport", "--dports", "8000", "-m", "comment", "--comment",
         "dgx-spark.specdec", "-j", "DGX-SPECDEC"],
        ["-F", "DGX-SPECDEC"], ["-X", "DGX-SPECDEC"]]
    assert fw.removal([]) == []


@pytest.mark.parametrize("line, parsed", [
    ('-A INPUT -i docker0 -p tcp -m tcp --dport 8000 -m comment --comment "dgx-spark.specdec" -j ACCEPT',
     {"chain": "INPUT", "in_interface": "docker0", "protocol": "tcp", "destination_port": "8000",
      "comment": "dgx-spark.specdec", "jump": "ACCEPT"}),
    ("-N DGX-SPECDEC", None),
    ('-A X -m comment --comment "unbalanced', None),
])
def test_parse_line(line, parsed):
    assert fw.parse_line(line) == parsed
