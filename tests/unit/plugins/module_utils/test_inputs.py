"""The input catalogue: its declarations, the scope rule across a cluster, misspellings, aliases and profiles."""

import copy
import os
import subprocess
import sys

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _inputs as inputs
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_plan as p

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
from spark_nodes import PLAYBOOK_ADDRESSES, profile, spark  # noqa: E402  pylint: disable=wrong-import-position

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def two(common=None, per_node=None, prof="two_spark_eagle3"):
    node_vars = {h: dict(netplan_qsfp_addresses=PLAYBOOK_ADDRESSES[h], **(common or {})) for h in ("spark-a", "spark-b")}
    for host, variables in (per_node or {}).items():
        node_vars[host].update(variables)
    return p.plan_cluster("sparks", ["spark-a", "spark-b"], profile(prof), node_vars,
                          {h: spark(h) for h in node_vars})


def errors_of(*args, **kwargs):
    with pytest.raises(p.PlanError) as info:
        two(*args, **kwargs)
    return info.value.errors


# -- the declarations ----------------------------------------------------------------------------------------------

def test_every_input_is_declared_once_with_a_prefix_a_scope_and_a_description():
    names = [i.name for i in inputs.INPUTS]
    assert len(names) == len(set(names))
    for item in inputs.INPUTS:
        assert item.name.startswith(inputs.PREFIXES)
        assert item.scope in (inputs.CLUSTER, inputs.NODE)
        assert item.doc.strip().endswith(".") and len(item.doc) > 10, item.name


def test_defaults_pass_their_own_checks():
    """A default the catalogue declares is a value the plan accepts (no default can fail on its own)."""
    for item in inputs.INPUTS:
        if item.default is None or item.deprecated:
            continue
        errors = []
        inputs.Reader("h", {}, {}, errors).get(item.name)
        assert errors == [], (item.name, errors)


def test_bad_declarations_are_refused():
    with pytest.raises(ValueError, match="not a variable of the collection"):
        inputs.Input("other_port", "int", "A port.")
    with pytest.raises(ValueError, match="unknown fields"):
        inputs.Input("specdec_serve_x", "int", "X.", bounds=(1, 2))
    with pytest.raises(ValueError, match="bad kind"):
        inputs.Input("specdec_serve_x", "number", "X.")
    with pytest.raises(KeyError, match="not in the input catalogue"):
        inputs.lookup("specdec_serve_nothing")


def test_every_variable_the_plan_reads_is_in_the_catalogue_and_only_through_it():
    """The plan module names no inventory variable the catalogue lacks (it reads them through Reader.get/raw)."""
    import re
    with open(p.__file__, encoding="utf-8") as handle:
        source = handle.read()
    read = set(re.findall(r'\.(?:get|raw)\("((?:specdec|trtllm_container|netplan_qsfp|openmpi_hostfile)_\w+)"', source))
    read = {name for name in read if not name.endswith("_")}  # "specdec_serve_" + flag: the flags are declared too
    assert read and read <= set(inputs.CATALOGUE), read - set(inputs.CATALOGUE)
    assert "_Reader(" not in source


def test_each_plan_part_has_exactly_the_keys_its_role_declares():
    plans, dummy = two()
    single, dummy = p.plan_cluster("spark-a", ["spark-a"], profile("single_spark_triton_eagle3"), {"spark-a": {}},
                                   {"spark-a": spark("spark-a")})
    for part, role in (("netplan", "netplan_qsfp"), ("container", "trtllm_container"),
                       ("hostfile", "openmpi_hostfile"), ("serve", "specdec_serve")):
        declared = [key for key, *dummy in inputs.PARTS[role][2]]
        for plan in (plans["spark-a"], plans["spark-b"], single["spark-a"]):
            if plan[part] is not None:
                assert sorted(plan[part]) == sorted(declared), (part, set(plan[part]) ^ set(declared))


# -- scope: a cluster's variables agree on every node ----------------------------------------------------------------

def test_a_cluster_variable_differing_between_nodes_is_named_with_each_host_and_value():
    errors = errors_of(per_node={"spark-a": {"netplan_qsfp_mtu": 9000}, "spark-b": {"netplan_qsfp_mtu": 1500}})
    assert errors == ["netplan_qsfp_mtu of cluster sparks differs between its nodes (9000 on spark-a; 1500 on "
                      "spark-b); it applies to the whole cluster: set it once, on the cluster's group"]


def test_a_cluster_variable_set_on_one_node_only_is_refused_too():
    (message,) = errors_of(per_node={"spark-b": {"specdec_serve_max_draft_len": 4}})
    assert message.startswith("specdec_serve_max_draft_len of cluster sparks differs between its nodes (not set on "
                              "spark-a; 4 on spark-b)")


@pytest.mark.parametrize("name, a, b", [
    ("trtllm_container_image_tag", "1.2.0rc6", "1.3.0rc12"),
    ("specdec_serve_model", "nvidia/Qwen3-235B-A22B-FP4", "nvidia/Qwen3-30B-A3B-FP4"),
    ("specdec_serve_port", 8355, 8000),
    ("specdec_serve_options", {"enable_autotuner": False}, {"enable_autotuner": True}),
    ("specdec_serve_validate", True, False),
])
def test_every_kind_of_cluster_variable_is_compared(name, a, b):
    (message,) = errors_of(per_node={"spark-a": {name: a}, "spark-b": {name: b}})
    assert message.startswith("%s of cluster sparks differs between its nodes" % name)
    assert "on spark-a" in message and "on spark-b" in message


def test_node_variables_may_differ_and_equal_cluster_values_pass():
    plans, dummy = two(common={"specdec_serve_port": 8355, "netplan_qsfp_mtu": 9000},
                       per_node={"spark-a": {"trtllm_container_name": "head-box", "openmpi_hostfile_slots": 2},
                                 "spark-b": {"trtllm_container_name": "worker-box"}})
    assert plans["spark-a"]["container"]["name"] == "head-box"
    assert plans["spark-b"]["container"]["name"] == "worker-box"
    assert "192.168.200.12 slots=2" in plans["spark-a"]["hostfile"]["content"]


def test_the_token_is_never_compared_or_shown():
    assert inputs.scope_conflicts("c", ["a", "b"], {"a": {"trtllm_container_hf_token": "hf_a"},
                                                    "b": {"trtllm_container_hf_token": "hf_b"}}) == []


def test_one_node_has_no_conflicts():
    assert inputs.scope_conflicts("c", ["a"], {"a": {"netplan_qsfp_mtu": 1}}) == []


# -- misspellings -------------------------------------------------------------------------------------------------

def test_a_misspelt_variable_gets_the_closest_known_name():
    found = inputs.misspelt(["specdec_serve_max_draft_length", "netplan_qsfp_mtus", "specdec_plan",
                             "specdec_serve_port", "ansible_host", "trtllm_container_quux_xyzzy_frob"])
    assert found == [("netplan_qsfp_mtus", "netplan_qsfp_mtu"),
                     ("specdec_serve_max_draft_length", "specdec_serve_max_draft_len"),
                     ("trtllm_container_quux_xyzzy_frob", None)]
    message = inputs.misspelling_message("spark-a", "specdec_serve_max_draft_length", "specdec_serve_max_draft_len")
    assert message == ("specdec_serve_max_draft_length on spark-a is not a variable of dgx_spark.specdec (did you mean "
                       "specdec_serve_max_draft_len?); it is ignored (specdec_strict_inputs: true makes this an error)")


def test_variables_the_collection_sets_itself_are_not_misspellings():
    assert inputs.misspelt(list(inputs.PRODUCED)) == []


# -- aliases --------------------------------------------------------------------------------------------------------

@pytest.fixture
def alias(monkeypatch):
    """A deprecated alias, as a rename would declare it."""
    item = copy.copy(inputs.CATALOGUE["specdec_serve_max_draft_len"])
    item.aliases = {"specdec_serve_draft_len": "1.0.0"}
    monkeypatch.setitem(inputs.CATALOGUE, item.name, item)
    monkeypatch.setitem(inputs.ALIASES, "specdec_serve_draft_len", item.name)
    return item


def test_a_deprecated_alias_is_read_as_its_new_name_with_a_warning(alias):
    variables, warnings, errors = inputs.canonical("spark-a", {"specdec_serve_draft_len": 4})
    assert variables == {"specdec_serve_max_draft_len": 4} and errors == []
    assert warnings == ["specdec_serve_draft_len on spark-a is deprecated and will be removed in 1.0.0: rename it "
                        "specdec_serve_max_draft_len"]
    assert inputs.misspelt(["specdec_serve_draft_len"]) == []
    plans, plan_warnings = two(common={"specdec_serve_draft_len": 4})
    assert "--max_draft_len" not in plans["spark-a"]["serve"]["argv"]  # the options file carries it
    assert "max_draft_len: 4" in plans["spark-a"]["serve"]["options_file"]["content"]
    assert any("specdec_serve_draft_len on spark-a is deprecated" in w for w in plan_warnings)


def test_an_alias_and_its_new_name_set_to_different_values_is_refused(alias):
    dummy, dummy, errors = inputs.canonical("spark-b", {"specdec_serve_draft_len": 4,
                                                        "specdec_serve_max_draft_len": 3})
    assert errors == ["specdec_serve_max_draft_len on spark-b: both it and its deprecated alias specdec_serve_draft_len "
                      "are set, to 3 and 4; remove specdec_serve_draft_len"]


# -- profiles -------------------------------------------------------------------------------------------------------

def test_every_profile_names_only_known_keys():
    for name in os.listdir(os.path.join(ROOT, "playbooks", "vars")):
        assert inputs.profile_errors(profile(name[:-4])) == [], name


def test_a_misspelt_profile_key_stops_the_plan():
    prof = dict(profile("two_spark_eagle3"), max_draft_length=4)
    with pytest.raises(p.PlanError) as info:
        p.plan_cluster("sparks", ["spark-a", "spark-b"], prof,
                       {h: {"netplan_qsfp_addresses": PLAYBOOK_ADDRESSES[h]} for h in ("spark-a", "spark-b")},
                       {h: spark(h) for h in ("spark-a", "spark-b")})
    assert info.value.errors[0].startswith("specdec_profile: max_draft_length is not a profile key (known: ")


# -- generated documentation -------------------------------------------------------------------------------------

def test_generated_documentation_is_current():
    """`make docs` writes argument specs, defaults, README tables and the plan module's list from the catalogue."""
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_docs.py"), "--check"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


# -- what a run would change (the plan's `changes`, from what spark_facts read) -----------------------------------

def test_a_missing_download_is_a_change_so_a_rerun_fetches_it():
    """After a failed or interrupted download the containers are current, but the server waits for the marker."""
    facts = {h: spark(h) for h in ("spark-a", "spark-b")}
    applied = _applied(_replan(facts), facts)
    for node in applied.values():
        for container in node["containers"].values():
            container["files"]["markers"] = dict(list(container["files"]["markers"].items())[:1])
    again = _replan(applied)
    assert again["spark-a"]["changes"] == ["downloads"] and again["spark-a"]["apply"] is True


def _applied(plans, facts, token="given"):
    """The spark facts of nodes where the roles applied ``plans`` as planned (what spark_facts then reads)."""
    out = {}
    for host, plan in plans.items():
        container = plan["container"]
        files = {"dirs": {d["path"]: {"mode": d["mode"], "owner": d["owner"], "group": d["owner"]}
                          for d in container["dirs"]},
                 "files": {}, "public_keys": {}, "token": {"given": token == "given", "file": "same"
                                                           if token == "given" else "absent", "login": "absent"},
                 "markers": {d["marker"]: d["marker_file"]["content"] for d in plan["serve"]["downloads"]}}

        def put(path, content, mode, owner="root"):
            files["files"][path] = {"sha256": p.sha256(content) if content is not None else None, "mode": mode,
                                    "owner": owner, "group": owner}

        with open(p._ENTRYPOINT, encoding="utf-8") as handle:
            put(container["config_dir"] + "/entrypoint.sh", handle.read().rstrip() + "\n", "0755")
        for item in container["files"]:
            put(item["path"], item["content"], item["mode"])
        if plan["hostfile"]:
            put(plan["hostfile"]["path"], plan["hostfile"]["content"], "0644")
        put(plan["serve"]["options_file"]["path"], plan["serve"]["options_file"]["content"], "0644")
        if container["ssh"]:
            ssh_dir = container["ssh"]["dir"]
            files["public_keys"] = {ssh_dir + "/id_ed25519.pub": "ssh-ed25519 CLIENT%s" % host,
                                    ssh_dir + "/ssh_host_ed25519_key.pub": "ssh-ed25519 HOST%s" % host}
        docker = container["docker"]
        node = dict(facts[host], login_groups=["spark", "docker"])
        node["images"] = {docker["image"]: {"present": True, "id": "sha256:img"}}
        node["containers"] = {docker["name"]: {"image_ref": docker["image"], "image_id": "sha256:img",
                                               "running": True, "spec": docker["labels"][p.SPEC_LABEL],
                                               "mounts": {p.CONFIG_MOUNT: container["config_dir"]}, "files": files}}
        for program in container["programs"]:
            with open(os.path.join(p._MODULE_UTILS, program["source"]), encoding="utf-8") as handle:
                put(program["path"], handle.read().rstrip() + "\n", program["mode"])
        exporter = container["exporter"]
        if exporter:
            node["containers"][exporter["name"]] = {"image_ref": exporter["image"], "image_id": "sha256:img",
                                                    "running": True, "spec": exporter["labels"][p.SPEC_LABEL],
                                                    "mounts": {p.CONFIG_MOUNT: container["config_dir"]}, "files": files}
        node["netplan"] = {plan["netplan"]["file"]: {"sha256": p.sha256(plan["netplan"]["content"]), "mode": "0600",
                                                     "owner": "root", "group": "root"}} if plan["netplan"] else {}
        node["ipv4"] = {"eth0": ["172.18.0.2/16"]}
        if plan["netplan"]:
            for entry in plan["netplan"]["entries"]:
                node["ipv4"].setdefault(entry["iface"], []).append(entry["cidr"])
        out[host] = node
    # authorized_keys and known_hosts from every node's public keys, as the role wrote them
    for host, plan in plans.items():
        ssh = plan["container"]["ssh"]
        if ssh:
            keys = {h: {"client": "ssh-ed25519 CLIENT%s" % h, "host": "ssh-ed25519 HOST%s" % h} for h in plans}
            for path, content in p.ssh_trust(ssh, keys).items():
                out[host]["containers"][plan["container"]["name"]]["files"]["files"][path] = {
                    "sha256": p.sha256(content), "mode": "0644", "owner": "root", "group": "root"}
    return out


def _replan(facts):
    node_vars = {h: dict(netplan_qsfp_addresses=PLAYBOOK_ADDRESSES[h]) for h in ("spark-a", "spark-b")}
    return p.plan_cluster("sparks", ["spark-a", "spark-b"], profile("two_spark_eagle3"), node_vars, facts)[0]


def test_a_first_run_changes_everything_and_an_applied_plan_nothing():
    facts = {h: spark(h) for h in ("spark-a", "spark-b")}
    first = _replan(facts)
    assert first["spark-a"]["apply"] is True
    assert {"container", "files", "directories", "options file", "hostfile", "ssh trust", "token"} <= set(
        first["spark-a"]["changes"])
    applied = _applied(first, facts)
    again = _replan(applied)
    assert again["spark-a"]["changes"] == again["spark-b"]["changes"] == []
    assert again["spark-a"]["apply"] is again["spark-b"]["apply"] is False


@pytest.mark.parametrize("drift, change", [
    (lambda f, c: c["files"]["files"].pop(next(k for k in c["files"]["files"] if k.endswith("openmpi-hostfile"))),
     "hostfile"),
    (lambda f, c: c["files"]["files"][next(k for k in c["files"]["files"] if k.endswith("entrypoint.sh"))]
     .update(mode="0600"), "files"),
    (lambda f, c: c["files"]["token"].update(file="differs"), "token"),
    (lambda f, c: c.update(running=False), "container"),
    (lambda f, c: c.update(spec="another"), "container"),
    (lambda f, c: c["files"]["dirs"].pop(next(iter(c["files"]["dirs"]))), "directories"),
    (lambda f, c: f.update(login_groups=["spark"]), "docker group"),
    (lambda f, c: f.update(netplan={}), "netplan"),
    (lambda f, c: c["files"]["public_keys"].clear(), "ssh trust"),
    (lambda f, c: c.update(mounts={}), "options file"),
])
def test_each_drift_on_one_node_is_named_and_the_whole_cluster_applies(drift, change):
    facts = {h: spark(h) for h in ("spark-a", "spark-b")}
    applied = _applied(_replan(facts), facts)
    node = applied["spark-b"]
    drift(node, next(iter(node["containers"].values())))
    plans = _replan(applied)
    assert change in plans["spark-b"]["changes"], plans["spark-b"]["changes"]
    assert plans["spark-a"]["changes"] == [] or change == "ssh trust"  # spark-a's trust names spark-b's keys
    assert plans["spark-a"]["apply"] is plans["spark-b"]["apply"] is True


def test_the_token_file_must_go_when_no_token_is_given():
    facts = {h: spark(h) for h in ("spark-a", "spark-b")}
    applied = _applied(_replan(facts), facts, token="none")
    assert _replan(applied)["spark-a"]["changes"] == []
    for node in applied.values():
        next(iter(node["containers"].values()))["files"]["token"]["file"] = "differs"  # a token file left behind
    assert _replan(applied)["spark-a"]["changes"] == ["token"]
