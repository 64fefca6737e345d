# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run the specdec_plan action plugin's run() with a fake task and the task_vars Ansible passes it."""

from __future__ import annotations

import copy
import json
import os
import sys
from unittest.mock import MagicMock

import pytest

from ansible.errors import AnsibleActionFail

from ansible_collections.dgx_spark.specdec.plugins.action.specdec_plan import ActionModule
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_plan as plan_module

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
from spark_nodes import SEED_ADDRESSES, profile, spark  # noqa: E402  pylint: disable=wrong-import-position

TOKEN = "hf_SeCrEt0123456789abcdefTOKEN"
TWO = profile("two_spark_eagle3")
SINGLE = profile("single_spark_draft_target")
PLAYBOOKS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "playbooks"))


def inventory(hosts, groups, per_host=None, common=None, play_hosts=None, facts=True):
    """(groups, hostvars) as Ansible passes them: every host's variables, with its gathered ``spark`` fact."""
    hostvars = {}
    for host in hosts:
        variables = {"inventory_hostname": host, "ansible_host": host + ".lab",
                     "group_names": sorted(g for g, members in groups.items() if host in members and g != "all")}
        variables.update(copy.deepcopy(common or {}))
        variables.update(copy.deepcopy((per_host or {}).get(host, {})))
        if facts:
            variables["ansible_facts"] = {"spark": spark(host)}
        hostvars[host] = variables
    return dict(groups, all=list(hosts)), hostvars


def task_vars_for(host, groups, hostvars, play_hosts=None):
    play_hosts = list(play_hosts if play_hosts is not None else groups["all"])
    return {
        "inventory_hostname": host,
        "groups": groups,
        "ansible_play_hosts": play_hosts,
        "ansible_play_hosts_all": list(groups["all"]),
        "ansible_play_batch": play_hosts,
        "hostvars": hostvars,
        "group_names": hostvars[host]["group_names"],
    }


def make_action(args, check_mode=False, diff=False):
    task = MagicMock()
    task.args = args
    task.async_val = 0
    task.run_once = False
    task.check_mode = check_mode
    task.diff = diff
    task.action = "dgx_spark.specdec.specdec_plan"
    connection = MagicMock()
    connection._shell.tmpdir = None
    play_context = MagicMock()
    play_context.check_mode = check_mode
    action = ActionModule(task, connection, play_context, loader=MagicMock(), templar=MagicMock(),
                          shared_loader_obj=None)
    action._display = MagicMock()
    return action


def run(host, groups, hostvars, args, play_hosts=None):
    action = make_action(args)
    result = action.run(task_vars=task_vars_for(host, groups, hostvars, play_hosts))
    return result, action


def legacy(per_host=None, common=None, order=("spark-a", "spark-b")):
    """The two-Spark inventory of NVIDIA's playbook: group sparks with spark_head and spark_workers."""
    groups = {"sparks": list(order), "spark_head": ["spark-a"], "spark_workers": ["spark-b"]}
    per = {h: {"netplan_qsfp_addresses": SEED_ADDRESSES[h]} for h in order}
    for host, variables in (per_host or {}).items():
        per[host].update(variables)
    return inventory(list(order), groups, per, common)


def plan_of(result):
    assert not result.get("failed"), result
    assert result["changed"] is False
    return result["ansible_facts"]["specdec_plan"]


# -- clusters ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", [("spark-a", "spark-b"), ("spark-b", "spark-a")])
def test_two_node_legacy_inventory_head_is_rank_0_on_both(order):
    groups, hostvars = legacy(order=order)
    head, dummy = run("spark-a", groups, hostvars, {"profile": TWO})
    worker, dummy = run("spark-b", groups, hostvars, {"profile": TWO})
    for result in (head, worker):
        assert result["cluster"] == "sparks"
        assert result["nodes"] == ["spark-a", "spark-b"]
    a, b = plan_of(head), plan_of(worker)
    assert (a["rank"], a["is_head"], a["head"]) == (0, True, "spark-a")
    assert (b["rank"], b["is_head"], b["head"]) == (1, False, "spark-a")
    assert a["nodes"] == b["nodes"] == ["spark-a", "spark-b"]
    assert a["multinode"] is True and a["trtllm_version"] == "1.2.0rc6"
    assert a["netplan"]["addresses"] == ["192.168.200.12", "192.168.200.14"]
    assert b["netplan"]["addresses"] == ["192.168.200.13", "192.168.200.15"]
    assert a["hostfile"]["content"] == b["hostfile"]["content"]
    assert a["hostfile"]["content"].splitlines()[1:] == ["192.168.200.12 slots=1", "192.168.200.13 slots=1"]
    assert a["serve"]["argv"][0] == "mpirun" and b["serve"]["argv"] is None
    assert a["container"]["docker"]["labels"]["dgx-spark.specdec/role"] == "head"
    assert b["container"]["docker"]["labels"]["dgx-spark.specdec/role"] == "worker"
    command = a["container"]["docker"]["command"]
    assert command[command.index("--peer") + 1] == "192.168.200.13"


def test_result_is_the_plan_only_and_changes_nothing():
    groups, hostvars = legacy()
    result, action = run("spark-a", groups, hostvars, {"profile": TWO})
    assert set(result) == {"changed", "cluster", "nodes", "ansible_facts"}
    assert set(result["ansible_facts"]) == {"specdec_plan"}
    action._connection.exec_command.assert_not_called()
    action._display.warning.assert_not_called()


def test_plan_without_inventory_addresses_uses_the_seed_preset():
    groups, hostvars = legacy()
    for variables in hostvars.values():
        del variables["netplan_qsfp_addresses"]
    plan = plan_of(run("spark-b", groups, hostvars, {"profile": TWO})[0])
    assert plan["netplan"]["addresses"] == ["192.168.200.13", "192.168.200.15"]


def test_node_left_out_by_limit_fails_naming_it_and_the_cluster():
    groups, hostvars = legacy()
    result, dummy = run("spark-a", groups, hostvars, {"profile": TWO}, play_hosts=["spark-a"])
    assert result["failed"] is True and result["changed"] is False
    assert result["cluster"] == "sparks"
    assert len(result["errors"]) == 1
    assert result["errors"][0].startswith("spark-b of cluster sparks is not in this run (left out by --limit")
    assert "(nodes: spark-a, spark-b)" in result["errors"][0]
    assert "cluster sparks" in result["msg"] and "spark-b" in result["msg"]
    assert "ansible_facts" not in result


def test_both_nodes_left_out_are_named():
    groups, hostvars = legacy()
    result, dummy = run("spark-a", groups, hostvars, {"profile": TWO}, play_hosts=["other"])
    assert result["failed"] is True
    assert result["errors"][0].startswith("spark-a, spark-b of cluster sparks are not in this run")


def test_two_clusters_in_one_inventory_each_get_their_nodes():
    hosts = ["a1", "a2", "b1", "b2"]
    groups = {"sparks": hosts, "pair1": ["a1", "a2"], "pair2": ["b1", "b2"]}
    per = {"a1": {"specdec_cluster": "pair1", "specdec_cluster_head": "a2"},
           "a2": {"specdec_cluster": "pair1", "specdec_cluster_head": "a2"},
           "b1": {"specdec_cluster": "pair2", "specdec_cluster_head": "b1"},
           "b2": {"specdec_cluster": "pair2", "specdec_cluster_head": "b1"}}
    groups, hostvars = inventory(hosts, groups, per)
    results = {h: run(h, groups, hostvars, {"profile": TWO})[0] for h in hosts}
    for host in ("a1", "a2"):
        assert results[host]["cluster"] == "pair1" and results[host]["nodes"] == ["a2", "a1"]
    for host in ("b1", "b2"):
        assert results[host]["cluster"] == "pair2" and results[host]["nodes"] == ["b1", "b2"]
    plans = {h: plan_of(r) for h, r in results.items()}
    assert [plans[h]["rank"] for h in hosts] == [1, 0, 0, 1]
    assert plans["a1"]["hostfile"]["content"] == plans["a2"]["hostfile"]["content"]
    assert plans["a2"]["container"]["docker"]["labels"]["dgx-spark.specdec/cluster"] == "pair1"
    assert plans["b1"]["container"]["docker"]["labels"]["dgx-spark.specdec/cluster"] == "pair2"
    # The head of each pair gets the playbook's rank-0 addresses.
    assert plans["a2"]["netplan"]["addresses"] == plans["b1"]["netplan"]["addresses"] == ["192.168.200.12",
                                                                                          "192.168.200.14"]


def test_limit_to_one_cluster_leaves_the_other_alone():
    hosts = ["a1", "a2", "b1", "b2"]
    per = {h: {"specdec_cluster": "pair%s" % ("1" if h[0] == "a" else "2"),
               "specdec_cluster_head": "a1" if h[0] == "a" else "b1"} for h in hosts}
    groups, hostvars = inventory(hosts, {"sparks": hosts}, per)
    result, dummy = run("a2", groups, hostvars, {"profile": TWO}, play_hosts=["a1", "a2"])
    assert result["nodes"] == ["a1", "a2"] and plan_of(result)["rank"] == 1
    result, dummy = run("b1", groups, hostvars, {"profile": TWO}, play_hosts=["a1", "a2", "b1"])
    assert result["failed"] is True and result["cluster"] == "pair2"
    assert result["errors"][0].startswith("b2 of cluster pair2 is not in this run")


def test_single_profile_makes_each_host_its_own_cluster():
    groups, hostvars = legacy()
    for host in ("spark-a", "spark-b"):
        result, dummy = run(host, groups, hostvars, {"profile": SINGLE})
        assert result["cluster"] == host and result["nodes"] == [host]
        plan = plan_of(result)
        assert plan["rank"] == 0 and plan["is_head"] is True and plan["multinode"] is False
        assert plan["netplan"] is None and plan["hostfile"] is None
        assert plan["container"]["name"] == "trtllm-specdec"
        assert plan["serve"]["argv"][:2] == ["trtllm-serve", "nvidia/Llama-3.3-70B-Instruct-FP4"]
        assert plan["serve"]["endpoint"]["url"] == "http://127.0.0.1:8000"


def test_single_profile_does_not_need_the_other_hosts_in_the_play():
    groups, hostvars = legacy()
    result, dummy = run("spark-b", groups, hostvars, {"profile": SINGLE}, play_hosts=["spark-b"])
    assert result["nodes"] == ["spark-b"] and plan_of(result)["container"]["docker"]["labels"][
        "dgx-spark.specdec/role"] == "single"


def test_warnings_are_shown_once_by_the_head():
    groups, hostvars = legacy(common={"openmpi_hostfile_hosts": ["spark-a", "spark-b"]})
    head, head_action = run("spark-a", groups, hostvars, {"profile": TWO})
    worker, worker_action = run("spark-b", groups, hostvars, {"profile": TWO})
    plan_of(head), plan_of(worker)
    warnings = [c.args[0] for c in head_action._display.warning.call_args_list]
    assert any("openmpi_hostfile_hosts is deprecated" in w for w in warnings), warnings
    worker_action._display.warning.assert_not_called()


# -- scope: network ---------------------------------------------------------------------------------------------


def test_scope_network_returns_only_the_netplan_parts():
    groups, hostvars = legacy()
    result, dummy = run("spark-b", groups, hostvars, {"scope": "network"})
    plan = plan_of(result)
    assert result["nodes"] == ["spark-a", "spark-b"]
    assert plan["container"] is None and plan["hostfile"] is None and plan["serve"] is None
    assert plan["rank"] == 1 and plan["multinode"] is True
    assert plan["netplan"]["addresses"] == ["192.168.200.13", "192.168.200.15"]
    assert plan["netplan"]["file"] == "/etc/netplan/40-cx7.yaml"
    assert "192.168.200.13/24" in plan["netplan"]["content"]
    assert "node" not in plan["netplan"]


def test_scope_network_ignores_serving_values():
    # A bad model does not matter when only the link is planned.
    groups, hostvars = legacy(common={"specdec_serve_model": "a//b"})
    plan = plan_of(run("spark-a", groups, hostvars, {"scope": "network", "profile": "ignored"})[0])
    assert plan["netplan"]["addresses"] == ["192.168.200.12", "192.168.200.14"]


def test_bad_scope_fails():
    groups, hostvars = legacy()
    result, dummy = run("spark-a", groups, hostvars, {"scope": "everything", "profile": TWO})
    assert result["failed"] is True and result["msg"] == "scope: everything is not one of serve, network, teardown"


# -- what fails, named ------------------------------------------------------------------------------------------


def test_bad_value_fails_with_errors_naming_the_field():
    groups, hostvars = legacy(common={"specdec_serve_model": "a//b"})
    result, dummy = run("spark-b", groups, hostvars, {"profile": TWO})
    assert result["failed"] is True and result["changed"] is False
    assert result["cluster"] == "sparks"
    assert len(result["errors"]) == 1, result["errors"]
    assert result["errors"][0].startswith('specdec_serve_model on spark-a (cluster sparks): "a//b" is not a Hugging '
                                          'Face model id')
    assert result["msg"].startswith("cluster sparks: 1 problem(s) found before anything changed:")
    assert "specdec_serve_model" in result["msg"]
    assert "ansible_facts" not in result


def test_profile_that_is_not_a_mapping_fails():
    groups, hostvars = legacy()
    result, dummy = run("spark-a", groups, hostvars, {"profile": "two_spark_eagle3"})
    assert result["failed"] is True
    assert result["msg"] == "profile: str is not a mapping (the playbook's specdec_profile)"
    result, dummy = run("spark-a", groups, hostvars, {})
    assert result["failed"] is True and "specdec_profile_name: not set" in result["msg"]


def test_node_without_facts_fails_naming_it():
    groups, hostvars = legacy()
    del hostvars["spark-b"]["ansible_facts"]
    result, dummy = run("spark-a", groups, hostvars, {"profile": TWO})
    assert result["failed"] is True
    assert result["errors"] == ["spark-b: no node facts (run dgx_spark.specdec.spark_facts on every node of the "
                                "cluster first; is the node in the play?)"]


def test_facts_set_as_a_plain_variable_are_read_too():
    groups, hostvars = legacy()
    for variables in hostvars.values():
        variables["spark"] = variables.pop("ansible_facts")["spark"]
    assert plan_of(run("spark-b", groups, hostvars, {"profile": TWO})[0])["rank"] == 1


def test_unsupported_argument_fails():
    groups, hostvars = legacy()
    action = make_action({"profile": TWO, "hosts": ["spark-a"]})
    # ActionBase.run rejects it first, naming the option and the action.
    with pytest.raises(AnsibleActionFail, match=r"Invalid options for dgx_spark\.specdec\.specdec_plan: hosts"):
        action.run(task_vars=task_vars_for("spark-a", groups, hostvars))


def _with_another_host_in_the_play(group):
    """The two Sparks in ``group`` and a third host (not a Spark, no cluster variables) in the same play."""
    groups, hostvars = legacy()
    groups[group] = groups.pop("sparks")
    groups["monitoring"] = ["mon-1"]
    groups["all"] = ["spark-a", "spark-b", "mon-1"]
    hostvars["mon-1"] = {"inventory_hostname": "mon-1", "ansible_host": "mon-1.lab", "group_names": ["monitoring"],
                         "ansible_facts": {"spark": spark("mon-1")}}
    return groups, hostvars


@pytest.mark.parametrize("group, args", [("sparks", {}), ("gpu_nodes", {"group": "gpu_nodes"})])
def test_the_sparks_group_not_the_play_decides_the_members(group, args):
    groups, hostvars = _with_another_host_in_the_play(group)
    result, dummy = run("spark-b", groups, hostvars, dict(args, profile=TWO))
    assert result["nodes"] == ["spark-a", "spark-b"] and plan_of(result)["rank"] == 1


def test_without_the_group_the_play_hosts_are_the_members():
    groups, hostvars = _with_another_host_in_the_play("elsewhere")
    result, dummy = run("spark-b", groups, hostvars, {"profile": TWO})
    assert result["failed"] is True and result["cluster"] == "sparks"
    assert any("specdec_serve_tp_size" in e and "(3 nodes: spark-a, spark-b, mon-1)" in e for e in result["errors"]), result


# -- the Hugging Face token -------------------------------------------------------------------------------------


def test_token_never_reaches_the_result_but_its_path_does():
    groups, hostvars = legacy(common={"trtllm_container_hf_token": TOKEN})
    for host in ("spark-a", "spark-b"):
        result, action = run(host, groups, hostvars, {"profile": TWO})
        plan = plan_of(result)
        assert TOKEN not in json.dumps(result)
        assert "trtllm_container_hf_token" not in json.dumps(result)
        for call in action._display.method_calls:
            assert TOKEN not in repr(call)
        env = plan["container"]["docker"]["env"]
        assert env["HF_TOKEN_PATH"] == "/etc/dgx-spark/hf_token"
        assert "HF_TOKEN" not in env
        assert plan["container"]["token_file"] == "/home/spark/.dgx-spark/hf_token"
    argv = plan_of(run("spark-a", groups, hostvars, {"profile": TWO})[0])["serve"]["argv"]
    assert argv[argv.index("HF_TOKEN_PATH") - 1] == "-x"


def test_token_is_not_passed_to_the_plan(monkeypatch):
    from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_plan as plan
    seen = []
    for name in ("cluster_members", "plan_cluster", "plan_network"):
        real = getattr(plan, name)

        def spy(*args, _real=real, **kwargs):
            seen.append(repr((args, kwargs)))
            return _real(*args, **kwargs)
        monkeypatch.setattr(plan, name, spy)
    groups, hostvars = legacy(common={"trtllm_container_hf_token": TOKEN})
    plan_of(run("spark-a", groups, hostvars, {"profile": TWO})[0])
    plan_of(run("spark-b", groups, hostvars, {"scope": "network"})[0])
    assert len(seen) == 4
    assert not any(TOKEN in call or "trtllm_container_hf_token" in call for call in seen)


def test_token_in_a_failed_result_neither():
    groups, hostvars = legacy(common={"trtllm_container_hf_token": TOKEN, "specdec_serve_model": "a//b"})
    result, dummy = run("spark-a", groups, hostvars, {"profile": TWO})
    assert result["failed"] is True
    assert TOKEN not in json.dumps(result)


def test_the_token_does_not_change_the_plan():
    # Only the file's path reaches the plan; the file holds the token where the node has one.
    with_token = legacy(per_host={"spark-b": {"trtllm_container_hf_token": TOKEN}})
    without = legacy()
    for host in ("spark-a", "spark-b"):
        planned = run(host, *with_token, args={"profile": TWO})[0]
        assert planned == run(host, *without, args={"profile": TWO})[0]
        assert plan_of(planned)["container"]["docker"]["env"]["HF_TOKEN_PATH"] == "/etc/dgx-spark/hf_token"


# -- run_once: every cluster planned once, one cluster's mistake stops only that cluster ---------------------------

def run_once(groups, hostvars, args, play_hosts=None, first=None):
    action = make_action(args)
    action._task.run_once = True
    host = first or (play_hosts or groups["all"])[0]
    return action.run(task_vars=task_vars_for(host, groups, hostvars, play_hosts)), action


def test_run_once_plans_every_cluster_and_fails_nothing():
    hosts = ["a1", "a2", "b1", "b2", "s1"]
    per = {"a1": {"specdec_cluster": "pair1", "specdec_cluster_head": "a1"},
           "a2": {"specdec_cluster": "pair1", "specdec_cluster_head": "a1"},
           "b1": {"specdec_cluster": "pair2", "specdec_cluster_head": "b1", "specdec_serve_port": 8355},
           "b2": {"specdec_cluster": "pair2", "specdec_cluster_head": "b1", "specdec_serve_port": 9000},
           "s1": {"specdec_cluster": "solo"}}
    groups, hostvars = inventory(hosts, {"sparks": hosts}, per)
    result, action = run_once(groups, hostvars, {"profile": TWO})
    assert not result.get("failed"), result
    plans = result["ansible_facts"]["specdec_plans"]
    assert sorted(plans) == hosts
    assert plans["a1"]["rank"] == 0 and plans["a2"]["rank"] == 1 and "error" not in plans["a1"]
    # pair2's port differs between its nodes: both its nodes carry the error, named with each host and value.
    for host in ("b1", "b2"):
        assert plans[host]["cluster"] == "pair2" and plans[host]["errors"] == [
            "specdec_serve_port of cluster pair2 differs between its nodes (8355 on b1; 9000 on b2); it applies to "
            "the whole cluster: set it once, on the cluster's group"]
    assert result["clusters"]["pair1"] == {"nodes": ["a1", "a2"], "errors": []}
    assert result["clusters"]["pair2"]["errors"] and "error" in plans["s1"]  # a one-node cluster of a pair profile
    action._connection.exec_command.assert_not_called()


def test_run_once_computes_each_cluster_once(monkeypatch):
    calls = []
    real = plan_module.plan_cluster

    def counting(cluster, *args):
        calls.append(cluster)
        return real(cluster, *args)

    monkeypatch.setattr(plan_module, "plan_cluster", counting)
    hosts = ["a1", "a2", "b1", "b2"]
    per = {h: {"specdec_cluster": "pair" + h[0], "specdec_cluster_head": h[0] + "1"} for h in hosts}
    groups, hostvars = inventory(hosts, {"sparks": hosts}, per)
    result, dummy = run_once(groups, hostvars, {"profile": TWO})
    assert not result.get("failed") and sorted(calls) == ["paira", "pairb"]


def test_a_profile_is_read_by_name_from_the_profiles_directory():
    groups, hostvars = legacy()
    result, action = run_once(groups, hostvars, {"profile_name": "two_spark_eagle3"})
    action._loader.load_from_file.side_effect = None
    # The loader is a mock here: give it the file's content, as Ansible's DataLoader would.
    action._loader.load_from_file.return_value = {"specdec_profile": TWO}
    result = action.run(task_vars=dict(task_vars_for("spark-a", groups, hostvars), playbook_dir=PLAYBOOKS))
    plans = result["ansible_facts"]["specdec_plans"]
    assert plans["spark-a"]["profile"] == "two_spark_eagle3" and "error" not in plans["spark-a"]
    result = action.run(task_vars=dict(task_vars_for("spark-a", groups, hostvars), playbook_dir="/nonexistent"))
    (error,) = result["ansible_facts"]["specdec_plans"]["spark-a"]["errors"]
    assert error.startswith("specdec_profile_name: two_spark_eagle3 is not a profile of /nonexistent/vars")


def test_a_misspelt_variable_is_warned_once_and_refused_when_strict():
    groups, hostvars = legacy(common={"specdec_serve_max_draft_length": 3})
    result, action = run_once(groups, hostvars, {"profile": TWO})
    assert not result.get("failed") and "error" not in result["ansible_facts"]["specdec_plans"]["spark-a"]
    warnings = [c.args[0] for c in action._display.warning.call_args_list]
    assert warnings == ["specdec_serve_max_draft_length on spark-a, spark-b is not a variable of dgx_spark.specdec "
                        "(did you mean specdec_serve_max_draft_len?); it is ignored (specdec_strict_inputs: true "
                        "makes this an error)"]
    groups, hostvars = legacy(common={"specdec_serve_max_draft_length": 3, "specdec_strict_inputs": True})
    result, action = run_once(groups, hostvars, {"profile": TWO})
    errors = result["ansible_facts"]["specdec_plans"]["spark-b"]["errors"]
    assert errors == ["specdec_serve_max_draft_length on spark-a, spark-b is not a variable of dgx_spark.specdec "
                      "(did you mean specdec_serve_max_draft_len?) (specdec_strict_inputs is true)"]


def test_strict_misspellings_come_with_the_plans_own_errors():
    groups, hostvars = legacy(common={"specdec_serve_portt": 1, "specdec_strict_inputs": "true",
                                      "specdec_serve_port": 70000})
    result, dummy = run_once(groups, hostvars, {"profile": TWO})
    errors = result["ansible_facts"]["specdec_plans"]["spark-a"]["errors"]
    assert errors[0].startswith("specdec_serve_portt on spark-a, spark-b is not a variable")
    assert any(e.startswith("specdec_serve_port on spark-a (cluster sparks): 70000 is not") for e in errors[1:])
