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


def inject_credential(credential_type, inputs, env_dir):
    """Render a credential type's injectors as AWX does: files in the private data dir, environment variables.

    Returns (environment for the job, host paths of the files written). Paths inside the EE are under /runner.
    """
    injectors = credential_type.get("injectors") or {}
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


def run_job(inventory_dir, key_file, token, job, extravars=None, image=EE_IMAGE, quiet=True):
    """One job: returns a dict with rc, status, seconds, summary lines, changed per host and the artifact dir."""
    pdd = os.path.join(RUNNER_DIR, job)
    shutil.rmtree(pdd, ignore_errors=True)
    os.makedirs(os.path.join(pdd, "env"), mode=0o700)
    _copy_project(os.path.join(pdd, "project"))
    _copy_inventory(inventory_dir, os.path.join(pdd, "inventory"))
    with open(CREDENTIAL_TYPES, encoding="utf-8") as handle:
        credential_type = yaml.safe_load(handle)["controller_credential_types"][0]
    with open(JOB_TEMPLATES, encoding="utf-8") as handle:
        template = yaml.safe_load(handle)["controller_templates"][0]
    envvars, secret_files = inject_credential(credential_type, {"hf_token": token}, os.path.join(pdd, "env"))
    variables = dict(survey_defaults(template), **(extravars or {}))
    with open(key_file, encoding="utf-8") as handle:
        ssh_key = handle.read()
    start = time.monotonic()
    try:
        result = ansible_runner.run(
            private_data_dir=pdd,
            # The ident names the EE container (ansible_runner_<ident>): unique per job, as AWX's job ids are.
            ident=job,
            playbook=template["playbook"],
            extravars=variables,
            envvars=dict(envvars, ANSIBLE_FORKS=str(template.get("forks", 5)), ANSIBLE_FORCE_COLOR="0"),
            ssh_key=ssh_key,
            process_isolation=True,
            process_isolation_executable="docker",
            container_image=image,
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
    hosts = sorted({h for key in ("ok", "changed", "failures", "dark", "skipped", "rescued") for h in stats.get(key) or {}})
    return {
        "job": job,
        "rc": result.rc,
        "status": result.status,
        "seconds": round(seconds, 1),
        "summary": jmespath.search(Q_SUMMARY, events) or [],
        "changed": {h: (stats.get("changed") or {}).get(h, 0) for h in hosts},
        "failures": {h: n for h, n in (stats.get("failures") or {}).items() if n},
        "artifacts": os.path.join(pdd, "artifacts", job),
        "stdout": os.path.join(pdd, "artifacts", job, "stdout"),
    }


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


if __name__ == "__main__":
    sys.exit(main())
