"""extensions/awx/: the AWX configuration as code (infra.aap_configuration's variable layout), checked by the tooling's
own schema and against the repository.

* Loaded as extensions/awx/configure.yml loads it (its vars_files, rendered by ansible-playbook with the site's
  values of site.yml), so what is checked is what AWX receives.
* Each item of each controller_* list is validated with ansible-core's ArgumentSpecValidator against the argument
  spec of the awx.awx module that applies it: the spec the module really builds (its main() is run with the module
  class replaced; awx.awx's DOCUMENTATION adds the auth fragment's controller_host etc. and may differ). The workflow
  nodes, a list of dicts without suboptions in the real spec, are validated against the module's documented
  suboptions.
* Cross-references: every name a template, workflow, schedule, project or inventory source uses exists in the data;
  every playbook and inventory source path exists; every survey variable is one the collection reads (the input
  catalogue, plugins/module_utils/_inputs.py) and the playbook takes, its type, default, bounds and choices fit the
  catalogue's; profile choices are files of playbooks/vars/ the playbook can serve.
The checks return messages; test_broken_data_is_refused breaks a copy of the data and expects them.
"""

import copy
import importlib
import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _inputs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AWX = os.path.join(ROOT, "extensions", "awx")
CONFIGURE = os.path.join(AWX, "configure.yml")
PLAYBOOKS = os.path.join(ROOT, "playbooks")

# The list variable of infra.aap_configuration -> the awx.awx module configure.yml applies its items with.
MODULES = {
    "controller_organizations": "organization",
    "controller_credential_types": "credential_type",
    "controller_credentials": "credential",
    "controller_notifications": "notification_template",
    "controller_execution_environments": "execution_environment",
    "controller_projects": "project",
    "controller_inventories": "inventory",
    "controller_inventory_sources": "inventory_source",
    "controller_templates": "job_template",
    "controller_workflows": "workflow_job_template",
    "controller_schedules": "schedule",
}
# Credential types AWX ships (the data refers to them by name).
BUILTIN_CREDENTIAL_TYPES = {"Machine"}
SURVEY_TYPES = {"text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect"}
# The catalogue's kind -> the survey types that give a value of it (booleans: a "true"/"false" choice).
KIND_SURVEY = {"int": {"integer"}, "float": {"float", "integer"}, "fraction": {"float"},
               "str": {"text", "multiplechoice"}, "bool": {"multiplechoice"}, "list": {"multiselect"}}
PROFILE_PLAYBOOKS = {"playbooks/tune_draft_len.yml", "playbooks/single_spark_draft_target.yml",
                     "playbooks/single_spark_triton_eagle3.yml"}


# ---------------------------------------------------------------------------------------------------------------
# Loading: configure.yml's vars_files, rendered by ansible-playbook with the site's values
# ---------------------------------------------------------------------------------------------------------------

def _configure_play():
    with open(CONFIGURE, encoding="utf-8") as handle:
        return yaml.safe_load(handle)[0]


@pytest.fixture(scope="module")
def raw():
    """The data as written (not rendered): each vars file of configure.yml."""
    data = {}
    for name in _configure_play()["vars_files"]:
        with open(os.path.join(AWX, name), encoding="utf-8") as handle:
            data.update(yaml.safe_load(handle))
    return data


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """What the loader hands to AWX: configure.yml's vars_files rendered by ansible-playbook (lookups included),
    with the secrets from the environment and a key file, as an administrator runs it."""
    tmp = tmp_path_factory.mktemp("awx")
    key = tmp / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----\n")
    out = tmp / "rendered.json"
    play = [{
        "name": "Render the AWX data as configure.yml loads it",
        "hosts": "localhost", "connection": "local", "gather_facts": False,
        "vars_files": [os.path.join(AWX, name) for name in _configure_play()["vars_files"]],
        "vars": {"ansible_python_interpreter": sys.executable},
        "tasks": [{"name": "Write the rendered lists", "ansible.builtin.copy": {
            "dest": str(out), "mode": "0600",
            "content": "{{ {%s} | to_json }}" % ", ".join("'%s': %s" % (v, v) for v in MODULES)}}],
    }]
    playbook = tmp / "render.yml"
    playbook.write_text(yaml.safe_dump(play))
    env = dict(os.environ, HF_TOKEN="hf_UnitTest1234", AWX_NOTIFICATION_WEBHOOK_TOKEN="webhook-secret",
               AWX_NOTIFICATION_EMAIL_PASSWORD="mail-secret", ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", str(playbook), "-e", "awx_ssh_key_file=%s" % key],
                          capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(out, encoding="utf-8") as handle:
        return json.load(handle)


# ---------------------------------------------------------------------------------------------------------------
# The awx.awx modules' argument specs
# ---------------------------------------------------------------------------------------------------------------

class _Captured(Exception):
    def __init__(self, kwargs):
        super().__init__("argument spec captured")
        self.kwargs = kwargs


def module_spec(name):
    """The keyword arguments (argument_spec, mutually_exclusive, required_if...) the awx.awx module builds."""
    module = importlib.import_module("ansible_collections.awx.awx.plugins.modules." + name)

    class Capture:  # pylint: disable=too-few-public-methods
        def __init__(self, **kwargs):
            raise _Captured(kwargs)

    original = module.ControllerAPIModule
    module.ControllerAPIModule = Capture
    try:
        module.main()
    except _Captured as captured:
        return captured.kwargs, yaml.safe_load(module.DOCUMENTATION)
    finally:
        module.ControllerAPIModule = original
    raise AssertionError("awx.awx.%s built no module" % name)


def _doc_to_spec(options):
    """Documented options (DOCUMENTATION) as an argument spec."""
    spec = {}
    for name, doc in options.items():
        entry = {k: doc[k] for k in ("type", "elements", "choices", "required", "aliases") if k in doc}
        if "suboptions" in doc:
            entry["options"] = _doc_to_spec(doc["suboptions"])
        spec[name] = entry
    return spec


def validator(name):
    kwargs, _doc = module_spec(name)
    constraints = {k: kwargs[k] for k in ("mutually_exclusive", "required_together", "required_one_of",
                                          "required_if", "required_by") if kwargs.get(k)}
    return ArgumentSpecValidator(kwargs["argument_spec"], **constraints)


def schema_errors(data):
    """Every item of every controller_* list against its module's argument spec."""
    errors = []
    for var, name in MODULES.items():
        check = validator(name)
        for item in data.get(var) or []:
            result = check.validate(copy.deepcopy(item))
            errors += ["%s %r (awx.awx.%s): %s" % (var, item.get("name"), name, e) for e in result.error_messages]
    # The workflow nodes: documented suboptions (the module's spec takes any dict).
    _kwargs, doc = module_spec("workflow_job_template")
    node_check = ArgumentSpecValidator(_doc_to_spec(doc["options"]["workflow_nodes"]["suboptions"]))
    for workflow in data.get("controller_workflows") or []:
        for node in workflow.get("workflow_nodes") or []:
            result = node_check.validate(copy.deepcopy(node))
            errors += ["workflow %r node %r: %s" % (workflow["name"], node.get("identifier"), e)
                       for e in result.error_messages]
    return errors


# ---------------------------------------------------------------------------------------------------------------
# Cross-references
# ---------------------------------------------------------------------------------------------------------------

def _names(data, var):
    return {item["name"] for item in data.get(var) or []}


def reference_errors(data):
    errors = []
    orgs = _names(data, "controller_organizations")
    projects, inventories = _names(data, "controller_projects"), _names(data, "controller_inventories")
    ees, credentials = _names(data, "controller_execution_environments"), _names(data, "controller_credentials")
    notifications, templates = _names(data, "controller_notifications"), _names(data, "controller_templates")
    workflows = _names(data, "controller_workflows")
    credential_types = _names(data, "controller_credential_types") | BUILTIN_CREDENTIAL_TYPES

    def need(kind, value, known, where):
        if value not in known:
            errors.append("%s: %s %r is not in the data (known: %s)" % (where, kind, value, ", ".join(sorted(known))))

    for var in MODULES:
        names = [item.get("name") for item in data.get(var) or []]
        if len(names) != len(set(names)):
            errors.append("%s: duplicate names %s" % (var, sorted({n for n in names if names.count(n) > 1})))
        for item in data.get(var) or []:
            if var != "controller_organizations" and "organization" in item:
                need("organization", item["organization"], orgs, "%s %r" % (var, item["name"]))
    for item in data.get("controller_credentials") or []:
        need("credential type", item["credential_type"], credential_types, "credential %r" % item["name"])
    for item in data.get("controller_projects") or []:
        if "default_environment" in item:
            need("execution environment", item["default_environment"], ees, "project %r" % item["name"])
    for item in data.get("controller_inventory_sources") or []:
        where = "inventory source %r" % item["name"]
        need("inventory", item["inventory"], inventories, where)
        need("project", item.get("source_project"), projects, where)
        if not os.path.isfile(os.path.join(ROOT, item.get("source_path", ""))):
            errors.append("%s: source_path %s is not a file of the project" % (where, item.get("source_path")))
    for item in data.get("controller_templates") or []:
        where = "template %r" % item["name"]
        need("project", item.get("project"), projects, where)
        need("inventory", item.get("inventory"), inventories, where)
        need("execution environment", item.get("execution_environment"), ees, where)
        for name in item.get("credentials") or []:
            need("credential", name, credentials, where)
        for key in ("notification_templates_error", "notification_templates_started", "notification_templates_success"):
            for name in item.get(key) or []:
                need("notification template", name, notifications, where)
        if not os.path.isfile(os.path.join(ROOT, item.get("playbook", ""))):
            errors.append("%s: playbook %s is not in playbooks/" % (where, item.get("playbook")))
        if item.get("job_type", "run") == "check" and not item.get("playbook", "").startswith("playbooks/"):
            errors.append("%s: a check template needs a playbook" % where)
        errors += survey_errors(item)
    for item in data.get("controller_workflows") or []:
        where = "workflow %r" % item["name"]
        if "inventory" in item:
            need("inventory", item["inventory"], inventories, where)
        for name in item.get("notification_templates_error") or []:
            need("notification template", name, notifications, where)
        errors += workflow_errors(item, templates, where)
    for item in data.get("controller_schedules") or []:
        need("job template or workflow", item.get("unified_job_template"), templates | workflows,
             "schedule %r" % item["name"])
    return errors


def workflow_errors(workflow, templates, where):
    errors = []
    nodes = workflow.get("workflow_nodes") or []
    identifiers = [node["identifier"] for node in nodes]
    if len(identifiers) != len(set(identifiers)):
        errors.append("%s: duplicate node identifiers" % where)
    edges = {}
    for node in nodes:
        ujt = node.get("unified_job_template") or {}
        name = ujt.get("name") if isinstance(ujt, dict) else ujt
        if name not in templates:
            errors.append("%s: node %s runs %r, not a job template of the data" % (where, node["identifier"], name))
        edges[node["identifier"]] = []
        for key in ("success_nodes", "failure_nodes", "always_nodes"):
            for link in (node.get("related") or {}).get(key) or []:
                if link.get("identifier") not in identifiers:
                    errors.append("%s: node %s %s names %r, no node of the workflow" % (
                        where, node["identifier"], key, link.get("identifier")))
                edges[node["identifier"]].append(link.get("identifier"))
    # No cycle (AWX refuses one): a depth-first walk from every node.
    state = {}

    def visit(ident):
        if state.get(ident) == 1:
            errors.append("%s: a cycle through node %s" % (where, ident))
            return
        if state.get(ident) == 2 or ident not in edges:
            return
        state[ident] = 1
        for nxt in edges[ident]:
            visit(nxt)
        state[ident] = 2

    for ident in edges:
        visit(ident)
    return errors


def _playbook_text(playbook):
    """The playbook and what it imports (converge.yml, tasks/)."""
    texts = []
    for path in [os.path.join(ROOT, playbook), os.path.join(PLAYBOOKS, "converge.yml")] + [
            os.path.join(PLAYBOOKS, "tasks", n) for n in sorted(os.listdir(os.path.join(PLAYBOOKS, "tasks")))]:
        with open(path, encoding="utf-8") as handle:
            texts.append(handle.read())
    return "\n".join(texts)


def _profile(name):
    with open(os.path.join(PLAYBOOKS, "vars", name + ".yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle).get("specdec_profile") or {}


def survey_errors(template):
    """The survey's questions against the input catalogue and the playbook."""
    where = "template %r" % template["name"]
    survey = template.get("survey_spec") or {}
    if not template.get("survey_enabled"):
        return ["%s: a survey but survey_enabled is not true" % where] if survey.get("spec") else []
    errors = []
    if not survey.get("spec"):
        return ["%s: survey_enabled without questions" % where]
    variables = [q.get("variable") for q in survey["spec"]]
    if len(variables) != len(set(variables)):
        errors.append("%s: a survey variable is asked twice" % where)
    playbook = template.get("playbook", "")
    text = _playbook_text(playbook) if os.path.isfile(os.path.join(ROOT, playbook)) else ""
    for question in survey["spec"]:
        var = question.get("variable")
        at = "%s, survey variable %s" % (where, var)
        for key in ("question_name", "variable", "type", "required"):
            if key not in question:
                errors.append("%s: no %s" % (at, key))
        kind = question.get("type")
        if kind not in SURVEY_TYPES:
            errors.append("%s: type %r is not a survey type" % (at, kind))
            continue
        if var not in _inputs.CATALOGUE:
            errors.append("%s: not a variable of the collection (plugins/module_utils/_inputs.py)" % at)
            continue
        item = _inputs.CATALOGUE[var]
        if item.deprecated:
            errors.append("%s: deprecated (%s)" % (at, item.deprecated))
        # Read by the playbook itself (its vars, tasks), else by the plan or a role through converge.yml.
        if item.applied == "playbook" and var not in text:
            errors.append("%s: %s does not read it" % (at, playbook))
        if item.applied != "playbook" and "converge.yml" not in text:
            errors.append("%s: %s does not run the converge path that reads it" % (at, playbook))
        if kind not in KIND_SURVEY.get(item.kind, set()):
            errors.append("%s: a %s question for a %s variable" % (at, kind, item.kind))
        default = question.get("default")
        choices = question.get("choices")
        if isinstance(choices, str):
            choices = choices.split("\n")
        if kind in ("integer", "float"):
            low, high = question.get("min"), question.get("max")
            if default is None or low is None or high is None or not low <= default <= high:
                errors.append("%s: default %r not within min %r and max %r" % (at, default, low, high))
            if item.minimum is not None and (low is None or low < item.minimum):
                errors.append("%s: min %r below the catalogue's minimum %r" % (at, low, item.minimum))
            if item.maximum is not None and (high is None or high > item.maximum):
                errors.append("%s: max %r above the catalogue's maximum %r" % (at, high, item.maximum))
        elif kind in ("multiplechoice", "multiselect"):
            if not choices:
                errors.append("%s: no choices" % at)
                continue
            picked = default.split("\n") if kind == "multiselect" and isinstance(default, str) else [default]
            if any(p not in choices for p in picked):
                errors.append("%s: default %r not among the choices %s" % (at, default, choices))
            if item.kind == "bool" and not set(choices) <= {"true", "false"}:
                errors.append("%s: a boolean's choices are true and false" % at)
            if item.choices and not set(choices) <= {str(c) for c in item.choices}:
                errors.append("%s: choices %s outside the catalogue's %s" % (at, choices, list(item.choices)))
            if var == "specdec_tune_candidates" and not all(c.isdigit() and int(c) >= 1 for c in choices):
                errors.append("%s: draft lengths are integers >= 1" % at)
            if var == "specdec_profile_name":
                errors += _profile_choice_errors(at, playbook, choices)
    return errors


def _profile_choice_errors(at, playbook, choices):
    errors = []
    if playbook not in PROFILE_PLAYBOOKS:
        errors.append("%s: %s serves its own profile" % (at, playbook))
    for choice in choices:
        if not os.path.isfile(os.path.join(PLAYBOOKS, "vars", choice + ".yml")):
            errors.append("%s: %s is not a profile (playbooks/vars/)" % (at, choice))
            continue
        profile = _profile(choice)
        single = profile.get("container_mode", "single") == "single"
        if not single:
            errors.append("%s: %s is not a one-Spark profile (%s plays on spark_head)" % (at, choice, playbook))
        if playbook == "playbooks/tune_draft_len.yml" and profile.get("method", "none") == "none":
            errors.append("%s: %s has no speculative method to tune" % (at, choice))
    return errors


# ---------------------------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------------------------

def test_configure_loads_every_file_of_the_data(raw):
    files = sorted(n for n in os.listdir(AWX) if n.endswith(".yml") and n != "configure.yml")
    assert sorted(_configure_play()["vars_files"]) == files
    for var in MODULES:
        assert raw.get(var), "%s is empty or missing" % var


def test_every_list_is_applied_by_configure_with_its_module():
    tasks = _configure_play()["tasks"]
    applied = {}
    for task in tasks:
        module = next(k for k in task if k.startswith("awx.awx."))
        applied[task["loop"].strip("{} ")] = module.split(".")[-1]
        if module in ("awx.awx.credential", "awx.awx.notification_template"):
            assert task.get("no_log") is True, task["name"]
    assert applied == MODULES


def test_every_item_fits_its_modules_argument_spec(data):
    assert schema_errors(data) == []


def test_every_reference_resolves_and_every_survey_fits(data):
    assert reference_errors(data) == []


def test_the_site_values_are_in_one_place(raw):
    """Per-site values are variables of site.yml: no other file sets one, and every variable used is defined."""
    with open(os.path.join(AWX, "site.yml"), encoding="utf-8") as handle:
        site = yaml.safe_load(handle)
    for name in _configure_play()["vars_files"]:
        if name == "site.yml":
            continue
        with open(os.path.join(AWX, name), encoding="utf-8") as handle:
            text = handle.read()
            loaded = yaml.safe_load(text)
        assert not set(loaded) & set(site), name
        for used in set(re.findall(r"\{\{\s*(awx_[a-z0-9_]+)", text)):
            assert used in site, "%s uses %s, which site.yml does not define" % (name, used)


def test_no_secret_is_literal(data, raw):
    credentials = {c["name"]: c for c in raw["controller_credentials"]}
    assert credentials["Hugging Face token"]["inputs"]["hf_token"] == "{{ awx_hf_token }}"
    assert credentials["DGX Spark login"]["inputs"]["ssh_key_data"] == "{{ awx_ssh_key_data }}"
    # Rendered from the environment and the key file, as configure.yml does.
    rendered = {c["name"]: c for c in data["controller_credentials"]}
    assert rendered["Hugging Face token"]["inputs"]["hf_token"] == "hf_UnitTest1234"
    assert "not a key" in rendered["DGX Spark login"]["inputs"]["ssh_key_data"]
    email = next(n for n in raw["controller_notifications"] if n["notification_type"] == "email")
    assert email["notification_configuration"]["password"].startswith("{{")
    webhook = next(n for n in data["controller_notifications"] if n["notification_type"] == "webhook")
    assert webhook["notification_configuration"]["headers"]["Authorization"] == "Bearer webhook-secret"
    # AWX's own message template survives the loader's templating.
    rendered_email = next(n for n in data["controller_notifications"] if n["notification_type"] == "email")
    assert "{{ job.name }}" in rendered_email["messages"]["error"]["message"]


def test_what_the_issue_asks_for_is_there(data):
    templates = {t["playbook"]: t for t in data["controller_templates"] if t.get("job_type", "run") == "run"}
    for playbook in ("fleet", "two_spark_eagle3", "single_spark_eagle3", "single_spark_draft_target",
                     "single_spark_low_latency", "single_spark_triton_eagle3", "four_spark_mtp", "qsfp_link",
                     "teardown", "tune_draft_len", "fabric_check", "monitoring"):
        template = templates["playbooks/%s.yml" % playbook]
        assert template["ask_limit_on_launch"] is True, playbook
        assert template["notification_templates_error"], playbook
    # scripts/fleet_runner.py runs the first template: the fleet's.
    assert data["controller_templates"][0]["playbook"] == "playbooks/fleet.yml"
    asked = {t["playbook"]: {q["variable"] for q in (t.get("survey_spec") or {}).get("spec", [])}
             for t in data["controller_templates"] if t.get("job_type", "run") == "run"}
    tuner = asked["playbooks/tune_draft_len.yml"]
    assert {"specdec_tune_candidates", "specdec_tune_mode", "specdec_profile_name"} <= tuner
    assert "specdec_teardown_remove_models" in asked["playbooks/teardown.yml"]
    assert "specdec_serve_ready_timeout" in asked["playbooks/fleet.yml"]
    drift = [t for t in data["controller_templates"] if t.get("job_type") == "check"]
    assert [t["playbook"] for t in drift] == ["playbooks/fleet.yml"]
    schedule = data["controller_schedules"][0]
    assert schedule["unified_job_template"] == drift[0]["name"] and "FREQ=DAILY" in schedule["rrule"]
    workflow = data["controller_workflows"][0]
    nodes = {n["identifier"]: n for n in workflow["workflow_nodes"]}
    order = [nodes[i]["unified_job_template"]["name"] for i in ("link", "serve", "tune")]
    playbook_of = {t["name"]: t["playbook"] for t in data["controller_templates"]}
    assert [playbook_of[n] for n in order] == ["playbooks/qsfp_link.yml", "playbooks/fleet.yml",
                                               "playbooks/tune_draft_len.yml"]
    assert nodes["link"]["related"]["failure_nodes"] and nodes["serve"]["related"]["failure_nodes"]


def _break(data, how):
    broken = copy.deepcopy(data)
    templates = {t["name"]: t for t in broken["controller_templates"]}
    tune = templates["DGX Spark - tune max_draft_len"]
    questions = {q["variable"]: q for q in tune["survey_spec"]["spec"]}
    if how == "unknown module option":
        broken["controller_templates"][0]["ask_cluster_on_launch"] = True
    elif how == "wrong option type":
        broken["controller_templates"][0]["forks"] = "many"
    elif how == "job type":
        broken["controller_templates"][1]["job_type"] = "dry-run"
    elif how == "workflow node option":
        broken["controller_workflows"][0]["workflow_nodes"][0]["on_success"] = ["serve"]
    elif how == "missing playbook":
        broken["controller_templates"][0]["playbook"] = "playbooks/fleet_v2.yml"
    elif how == "unknown project":
        tune["project"] = "specdec"
    elif how == "unknown notification":
        tune["notification_templates_error"] = ["Pager"]
    elif how == "dangling node":
        broken["controller_workflows"][0]["workflow_nodes"][0]["related"]["success_nodes"] = [{"identifier": "serv"}]
    elif how == "default above max":
        questions["specdec_serve_ready_timeout"]["default"] = 9000
    elif how == "bad choice default":
        questions["specdec_tune_mode"]["default"] = "exhaustive"
    elif how == "unknown variable":
        questions["specdec_tune_mode"]["variable"] = "specdec_tuner_mode"
    elif how == "profile the tuner cannot tune":
        questions["specdec_profile_name"]["choices"].append("two_spark_eagle3")
    elif how == "catalogue minimum":
        questions["specdec_tune_confirm"]["min"] = -1
    elif how == "unknown schedule target":
        broken["controller_schedules"][0]["unified_job_template"] = "Drift"
    return broken


@pytest.mark.parametrize("how", [
    "unknown module option", "wrong option type", "job type", "workflow node option", "missing playbook",
    "unknown project", "unknown notification", "dangling node", "default above max", "bad choice default",
    "unknown variable", "profile the tuner cannot tune", "catalogue minimum", "unknown schedule target"])
def test_broken_data_is_refused(data, how):
    broken = _break(data, how)
    assert schema_errors(broken) + reference_errors(broken), how


def _fleet_runner():
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        return importlib.import_module("fleet_runner")
    finally:
        sys.path.pop(0)


@pytest.mark.parametrize("outcomes, order", [
    ({}, ["link", "serve", "tune"]),
    ({"link": "failed"}, ["link", "diagnose"]),
    ({"serve": "failed"}, ["link", "serve", "diagnose"]),
])
def test_the_workflow_walk_follows_the_jobs_status(raw, outcomes, order):
    """scripts/fleet_runner.py walks the workflow as AWX does (tests/fleet/test_awx_workflow.py runs it on the lab)."""
    runner = _fleet_runner()
    workflow = raw["controller_workflows"][0]
    ran = runner.run_workflow(workflow, lambda node: {"status": outcomes.get(node["identifier"], "successful")})
    assert [ident for ident, _job in ran] == order


def test_the_runner_passes_survey_answers_as_awx_does(raw):
    runner = _fleet_runner()
    tune = next(t for t in raw["controller_templates"] if t["playbook"] == "playbooks/tune_draft_len.yml")
    answers = runner.survey_answers(tune, {"specdec_tune_mode": "sweep"})
    assert answers["specdec_tune_candidates"] == ["1", "2", "3", "4", "8"]
    assert answers["specdec_tune_mode"] == "sweep" and answers["specdec_serve_ready_timeout"] == 1800
    rendered = runner.render_awx_data(raw, {"awx_workflow_link_limit": "pair1"})
    assert rendered["controller_workflows"][0]["workflow_nodes"][0]["limit"] == "pair1"
    assert rendered["controller_templates"][0]["notification_templates_error"] == raw["awx_notifications_on_error"]
