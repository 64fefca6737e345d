"""Run playbooks/fleet.yml the way AWX runs a job, and read the result from the job's events.

AWX hands a job to ansible-runner: a private data directory with the project, the inventory, the extra
variables (survey answers) and the environment, a machine credential's SSH key, custom credentials injected
as their credential type says, and the playbook run inside the execution environment (EE) image. This script
does the same with ansible-runner's Python API:

* project: the repository's tracked files (AWX syncs the project from git); the collection itself comes from
  the EE image, not from the checkout;
* inventory: the one `lab up` wrote (or any inventory directory), with its pinned host keys;
* SSH key: given as a machine credential is (runner loads it into ssh-agent inside the EE);
* Hugging Face token: injected by extensions/awx/credential_types.yml's injectors, rendered as AWX renders
  them: a file in the private data directory, its path in HF_TOKEN_FILE. The file is removed after the run;
* extra variables: the defaults of the job template's survey (extensions/awx/job_templates.yml).

Artifacts stay under build/runner/<job>/artifacts/<job>/ (stdout, job_events, env.list, command, ...).

    python scripts/fleet_runner.py demo            # lab of 2 pairs + 1 single, fleet.yml twice (make fleet-demo)
    python scripts/fleet_runner.py run INVENTORY_DIR KEY_FILE
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import time

import ansible_runner
import jinja2
import jmespath
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
RUNNER_DIR = os.path.join(REPO, "build", "runner")
LAB = os.path.join(REPO, "molecule", "resources", "lab", "lab")
CREDENTIAL_TYPES = os.path.join(REPO, "extensions", "awx", "credential_types.yml")
JOB_TEMPLATES = os.path.join(REPO, "extensions", "awx", "job_templates.yml")
EE_IMAGE = os.environ.get("SPECDEC_EE_IMAGE", "local/dgx-spark-specdec-ee:latest")
PLAYBOOK = "playbooks/fleet.yml"
SUMMARY_TASK = "One line per cluster"

# The job's outcome, from its events (AWX stores the same events).
Q_SUMMARY = "[?event=='runner_on_ok' && event_data.task=='%s'].event_data.res.msg | [0]" % SUMMARY_TASK
Q_STATS = "[?event=='playbook_on_stats'].event_data | [0]"


def _as_loaded(value):
    """What AWX receives from the loader (configure.yml, infra.aap_configuration): the data file's {% raw %} blocks,
    which keep AWX's own templates from Ansible's templating, opened. Anything else is unchanged."""
    if isinstance(value, str) and "{% raw %}" in value:
        return jinja2.Environment(autoescape=False).from_string(value).render()
    if isinstance(value, dict):
        return {k: _as_loaded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_loaded(v) for v in value]
    return value


def inject_credential(credential_type, inputs, env_dir):
    """Render a credential type's injectors as AWX does: files in the private data dir, environment variables.

    Returns (environment for the job, host paths of the files written). Paths inside the EE are under /runner.
    """
    injectors = _as_loaded(credential_type.get("injectors") or {})
    render = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
    filenames = {}
    written = []
    for key, template in (injectors.get("file") or {}).items():
        name = key.split(".", 1)[1] if key.startswith("template.") else None
        fd_path = os.path.join(env_dir, "credential_%s_%s" % (name or "file", secrets.token_hex(6)))
        with open(os.open(fd_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as handle:
            handle.write(render.from_string(template).render(**inputs))
        written.append(fd_path)
        inside = "/runner/env/" + os.path.basename(fd_path)
        if name:
            filenames[name] = inside
        else:
            filenames = inside
    tower = {"filename": filenames}
    env = {var: render.from_string(template).render(tower=tower, **inputs)
           for var, template in (injectors.get("env") or {}).items()}
    return env, written


def survey_defaults(template):
    return {q["variable"]: q["default"] for q in (template.get("survey_spec") or {}).get("spec", [])
            if "default" in q}


def _copy_project(dest):
    """The repository's tracked (and new, not ignored) files: what AWX's project sync checks out."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = os.path.join(REPO, rel)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
            shutil.copy2(src, os.path.join(dest, rel))


def _copy_inventory(src, dest):
    """hosts.yml and the pinned host keys; not group_vars/all.yml (the lab key: the machine credential instead)."""
    os.makedirs(dest)
    for name in ("hosts.yml", ".known_hosts"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copy2(os.path.join(src, name), os.path.join(dest, name))


def _hf_credential_type():
    with open(CREDENTIAL_TYPES, encoding="utf-8") as handle:
        return yaml.safe_load(handle)["controller_credential_types"][0]


def _execute(job, inventory_dir, key_file, playbook, extravars, credentials, forks=None, limit=None, options=(),
             inventory_files=None, volumes=None, image=EE_IMAGE, quiet=True):
    """One job in the EE, as AWX runs it: the project's files, the inventory (plus inventory_files, name: content),
    the SSH key as a machine credential, each (credential type, inputs) of credentials injected as AWX injects it,
    the extra variables, forks, limit and ansible-playbook options; volumes: {host directory: path in the EE}.

    Returns rc, status, seconds, the summary lines, changed and failures per host, the recap (stats), the job's
    artifacts (its set_stats data, per_host false: what AWX shows as the job's artifacts and hands to the next
    workflow node as extra variables), the events and the artifact dir.
    """
    pdd = os.path.join(RUNNER_DIR, job)
    shutil.rmtree(pdd, ignore_errors=True)
    os.makedirs(os.path.join(pdd, "env"), mode=0o700)
    _copy_project(os.path.join(pdd, "project"))
    _copy_inventory(inventory_dir, os.path.join(pdd, "inventory"))
    for name, content in (inventory_files or {}).items():
        with open(os.path.join(pdd, "inventory", name), "w", encoding="utf-8") as handle:
            handle.write(content if isinstance(content, str) else yaml.safe_dump(content))
    envvars, secret_files = {"ANSIBLE_FORCE_COLOR": "0"}, []
    if forks:
        envvars["ANSIBLE_FORKS"] = str(forks)
    for credential_type, inputs in credentials:
        env, written = inject_credential(credential_type, inputs, os.path.join(pdd, "env"))
        envvars.update(env)
        secret_files += written
    with open(key_file, encoding="utf-8") as handle:
        ssh_key = handle.read()
    mounts = ["%s:%s:Z" % (os.path.abspath(host), inside) for host, inside in (volumes or {}).items()]
    start = time.monotonic()
    try:
        result = ansible_runner.run(
            private_data_dir=pdd,
            # The ident names the EE container (ansible_runner_<ident>): unique per job, as AWX's job ids are.
            ident=job,
            playbook=playbook,
            extravars=extravars or {},
            envvars=envvars,
            ssh_key=ssh_key,
            limit=limit or None,
            cmdline=" ".join(options) or None,
            process_isolation=True,
            process_isolation_executable="docker",
            container_image=image,
            container_volume_mounts=mounts or None,
            # The lab's management network is a bridge on this host: the EE shares the host's network.
            container_options=["--network=host"],
            quiet=quiet,
        )
    finally:
        # AWX removes the private data dir's credential files after the job; the artifacts stay.
        for path in secret_files:
            os.remove(path)
    seconds = time.monotonic() - start
    events = list(result.events)
    stats = jmespath.search(Q_STATS, events) or {}
    # The recap lists a host under a count only when it is not zero.
    hosts = sorted({h for key in ("ok", "changed", "failures", "dark", "skipped", "rescued")
                    for h in stats.get(key) or {}})
    return {
        "job": job,
        "rc": result.rc,
        "status": result.status,
        "seconds": round(seconds, 1),
        "summary": jmespath.search(Q_SUMMARY, events) or [],
        "changed": {h: (stats.get("changed") or {}).get(h, 0) for h in hosts},
        "failures": {h: n for h, n in (stats.get("failures") or {}).items() if n},
        "stats": stats,
        "artifact_data": stats.get("artifact_data") or {},
        "events": events,
        "artifacts": os.path.join(pdd, "artifacts", job),
        "stdout": os.path.join(pdd, "artifacts", job, "stdout"),
    }


def run_job(inventory_dir, key_file, token, job, extravars=None, image=EE_IMAGE, quiet=True):
    """One job of the fleet's job template (the first of extensions/awx/job_templates.yml) with its survey's
    defaults: _execute's dict."""
    with open(JOB_TEMPLATES, encoding="utf-8") as handle:
        template = yaml.safe_load(handle)["controller_templates"][0]
    variables = dict(survey_defaults(template), **(extravars or {}))
    return _execute(job, inventory_dir, key_file, template["playbook"], variables,
                    [(_hf_credential_type(), {"hf_token": token})], forks=template.get("forks", 5), image=image,
                    quiet=quiet)


# ---------------------------------------------------------------------------------------------------------------
# Any job template and the workflows of extensions/awx/ (infra.aap_configuration's layout), run as AWX runs them
# ---------------------------------------------------------------------------------------------------------------

AWX_DIR = os.path.join(REPO, "extensions", "awx")


def load_awx_data(directory=AWX_DIR):
    """Every variable of extensions/awx/*.yml (controller_* lists, site defaults), as loaded, not rendered."""
    data = {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".yml"):
            continue
        with open(os.path.join(directory, name), encoding="utf-8") as handle:
            loaded = yaml.safe_load(handle)
        # A playbook (configure.yml) is a list; data files are mappings.
        if isinstance(loaded, dict):
            data.update(loaded)
    return data


def render_awx_data(data, overrides=None, keys=None):
    """The controller_* lists (or those named by keys) with the site's values (extensions/awx/site.yml, then
    overrides) filled in, as the loader (configure.yml, infra.aap_configuration) renders them; native types
    ("{{ a_list }}" stays a list)."""
    from jinja2.nativetypes import NativeEnvironment  # pylint: disable=import-outside-toplevel

    env = NativeEnvironment(undefined=jinja2.StrictUndefined)
    context = dict(data, **(overrides or {}))

    def render(value):
        if isinstance(value, str) and "{{" in value:
            return env.from_string(value).render(**context)
        if isinstance(value, dict):
            return {k: render(v) for k, v in value.items()}
        if isinstance(value, list):
            return [render(v) for v in value]
        return value

    keys = keys or [key for key in data if key.startswith("controller_")]
    return dict(data, **{key: render(data[key]) for key in keys if key in data})


def survey_answers(template, answers=None):
    """The survey's defaults typed as AWX passes them (integer, float; multiselect a list), then the answers."""
    variables = {}
    for question in (template.get("survey_spec") or {}).get("spec", []):
        if "default" not in question:
            continue
        value = question["default"]
        kind = question.get("type")
        if kind == "integer" and value not in ("", None):
            value = int(value)
        elif kind == "float" and value not in ("", None):
            value = float(value)
        elif kind == "multiselect":
            value = [v for v in (value.split("\n") if isinstance(value, str) else value) if v != ""]
        variables[question["variable"]] = value
    variables.update(answers or {})
    return variables


def _custom_credential_types(template, data):
    """The custom credential types (controller_credential_types) of the template's credentials."""
    types = {t["name"]: t for t in data.get("controller_credential_types", [])}
    by_name = {c["name"]: c for c in data.get("controller_credentials", [])}
    names = [c if isinstance(c, str) else c.get("name") for c in template.get("credentials") or []]
    return [types[by_name[n]["credential_type"]] for n in names
            if n in by_name and by_name[n].get("credential_type") in types]


def run_template(inventory_dir, key_file, token, job, template, data, extravars=None, limit=None,
                 job_type=None, inventory_files=None, image=EE_IMAGE, quiet=True):
    """One job of any job template: its playbook, survey defaults (then extravars), job_type (check: --check),
    diff_mode, limit, forks and credentials; inventory_files adds files (name: content) to the inventory.

    Returns run_job's dict plus the template's name, the ansible-playbook options and the job's artifacts
    (set_stats).
    """
    credentials = [(credential_type, {f["id"]: token for f in credential_type["inputs"]["fields"]})
                   for credential_type in _custom_credential_types(template, data)]
    options = []
    if (job_type or template.get("job_type", "run")) == "check":
        options.append("--check")
    if template.get("diff_mode"):
        options.append("--diff")
    limit = limit if limit is not None else template.get("limit")
    result = _execute(job, inventory_dir, key_file, template["playbook"], survey_answers(template, extravars),
                      credentials, forks=template.get("forks", 5), limit=limit, options=options,
                      inventory_files=inventory_files, image=image, quiet=quiet)
    return dict(result, template=template["name"], options=options + (["--limit", limit] if limit else []))


def _node_template_name(node):
    ujt = node["unified_job_template"]
    return ujt if isinstance(ujt, str) else ujt["name"]


def workflow_roots(workflow):
    """The nodes no other node leads to, in the data's order: AWX starts a workflow with them."""
    nodes = workflow["workflow_nodes"]
    children = {link["identifier"] for node in nodes for key in ("success_nodes", "failure_nodes", "always_nodes")
                for link in (node.get("related") or {}).get(key) or []}
    return [node["identifier"] for node in nodes if node["identifier"] not in children]


def run_workflow(workflow, launch):
    """Walk a workflow as AWX does: the roots, then each node's success_nodes when its job was successful, else its
    failure_nodes, and its always_nodes in any case (each node once). launch(node) runs the node's job and returns
    a dict with at least "status"; returns the list of (identifier, job) in the order they ran.
    """
    nodes = {node["identifier"]: node for node in workflow["workflow_nodes"]}
    queue, ran, seen = workflow_roots(workflow), [], set()
    while queue:
        identifier = queue.pop(0)
        if identifier in seen:
            continue
        seen.add(identifier)
        node = nodes[identifier]
        job = launch(node)
        ran.append((identifier, job))
        related = node.get("related") or {}
        edge = "success_nodes" if job["status"] == "successful" else "failure_nodes"
        for key in (edge, "always_nodes"):
            queue += [link["identifier"] for link in related.get(key) or []]
    return ran


def run_workflow_jobs(workflow, data, inventory_dir, key_file, token, prefix, inventory_files=None, quiet=True):
    """Run a workflow of the data (controller_workflows item): every node's job template through run_template,
    with the node's prompts (limit, job_type, extra_data) over the template's own, as AWX launches a node.
    """
    templates = {t["name"]: t for t in data["controller_templates"]}

    def launch(node):
        template = templates[_node_template_name(node)]
        return run_template(inventory_dir, key_file, token, "%s%s" % (prefix, node["identifier"]), template, data,
                            extravars=node.get("extra_data"), limit=node.get("limit"), job_type=node.get("job_type"),
                            inventory_files=inventory_files, quiet=quiet)

    return run_workflow(workflow, launch)


def lab(*args, prefix):
    env = dict(os.environ, SPARK_LAB_PREFIX=prefix)
    return subprocess.run([LAB, *args], env=env, check=True, capture_output=True, text=True).stdout.strip()


def lab_paths(prefix):
    inventory = lab("inventory", prefix=prefix)
    return inventory, os.path.join(os.path.dirname(inventory), "ssh", "id_ed25519")


def print_job(number, job):
    print("run %d: %s, rc=%s, %.1f s (artifacts: %s)"
          % (number, job["status"], job["rc"], job["seconds"], os.path.relpath(job["artifacts"], REPO)))
    for line in job["summary"]:
        print("  " + line)


def demo(pairs, singles, prefix, runs):
    token = os.environ.get("HF_TOKEN", "")
    if not token:
        print("fleet-demo: HF_TOKEN is not set; the runs go without a token (the lab's hub accepts that)",
              file=sys.stderr)
    print("fleet-demo: lab up --pairs %d --singles %d (instance %s)" % (pairs, singles, prefix), flush=True)
    lab("up", "--pairs", str(pairs), "--singles", str(singles), prefix=prefix)
    inventory, key = lab_paths(prefix)
    jobs = []
    for number in range(1, runs + 1):
        job = run_job(inventory, key, token, "fleet-demo-%d" % number)
        print_job(number, job)
        jobs.append(job)
    if len(jobs) > 1:
        print("second run: changed=%d" % sum(jobs[1]["changed"].values()))
    return 0 if all(j["rc"] == 0 for j in jobs) and sum(jobs[-1]["changed"].values()) == 0 else 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="lab of pairs and singles, then fleet.yml through the EE, twice")
    p_demo.add_argument("--pairs", type=int, default=2)
    p_demo.add_argument("--singles", type=int, default=1)
    p_demo.add_argument("--prefix", default="fleet-")
    p_demo.add_argument("--runs", type=int, default=2)
    p_run = sub.add_parser("run", help="one job against an inventory directory")
    p_run.add_argument("inventory")
    p_run.add_argument("key")
    p_run.add_argument("--job", default="fleet")
    p_run.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(args.pairs, args.singles, args.prefix, args.runs)
    job = run_job(args.inventory, args.key, os.environ.get("HF_TOKEN", ""), args.job)
    if args.json:
        print(json.dumps(job, indent=2))
    else:
        print_job(1, job)
    return 0 if job["rc"] == 0 else 1


# ---------------------------------------------------------------------------------------------------------------
# Any playbook of the project as an AWX job in the EE, with host directories mounted into the EE (the tuner's
# results: playbooks/tune_draft_len.yml with specdec_tune_results_dir on a mounted, persistent path)
# ---------------------------------------------------------------------------------------------------------------

def run_playbook_job(inventory_dir, key_file, token, job, playbook, extravars=None, inventory_files=None, volumes=None,
                     image=EE_IMAGE, quiet=True):
    """One job of `playbook` (relative to the project) in the EE, as run_job runs fleet.yml: the project's files,
    the inventory (plus inventory_files, name: content), the SSH key as a machine credential, the Hugging Face token
    injected as the credential type says. volumes: {host directory: path in the EE}, mounted read-write.

    Returns rc, status, seconds, the recap (playbook_on_stats event_data), the job's artifacts (set_stats data,
    per_host false), the events and the artifact dir.
    """
    return _execute(job, inventory_dir, key_file, playbook, extravars, [(_hf_credential_type(), {"hf_token": token})],
                    inventory_files=inventory_files, volumes=volumes, image=image, quiet=quiet)


if __name__ == "__main__":
    sys.exit(main())
