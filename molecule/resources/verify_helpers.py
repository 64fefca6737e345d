"""Shared helpers of the molecule verify tests: run things in a lab node and its serving container."""

import glob
import json
import os
import re
import subprocess
import time

PREFIX = os.environ.get("SPARK_LAB_PREFIX", "")
# The Spark's own sshd on the management network (Ansible and AWX log in through it). The serving
# containers share the node's network namespace, so their listeners are listed with it.
MANAGEMENT_SSH_PORT = 22
TOKEN = os.environ.get("HF_TOKEN", "")


def node_name(node):
    return PREFIX + node


def serving_container(node):
    # inventories/lab: trtllm_container_name is "trtllm-<node container>"
    return "trtllm-" + node_name(node)


def home(node):
    return "/var/lib/spark-lab/%s/home/spark" % node_name(node)


def inspect(host, node):
    """docker inspect of the node's serving container, read from inside the node (its docker CLI)."""
    out = host.check_output("docker inspect %s", serving_container(node))
    return json.loads(out)[0]


def in_container(host, node, command):
    return host.run("docker exec %s sh -c %s" % (serving_container(node), _quote(command)))


def http_get(host, url):
    """GET from inside the node (where the server's loopback is), returning (status, body)."""
    script = ("import sys, urllib.request, urllib.error\n"
              "try:\n"
              "    r = urllib.request.urlopen(sys.argv[1], timeout=10); print(r.status); print(r.read().decode())\n"
              "except urllib.error.HTTPError as e:\n"
              "    print(e.code); print(e.read().decode())\n")
    out = host.check_output("python3 -c %s %s", script, url)
    status, _newline, body = out.partition("\n")
    return int(status), body


def _quote(text):
    return "'" + text.replace("'", "'\"'\"'") + "'"


def testinfra_hosts(*nodes):
    # testinfra does not template the lab inventory's ansible_host, so address the node containers directly.
    return ["docker://" + node_name(n) for n in nodes]


def node_of(host):
    return host.backend.get_hostname()[len(PREFIX):]


def docker(*args, check=True):
    """Run the docker CLI on the host (the lab's engine), as a person at the Spark would."""
    return subprocess.run(["docker"] + list(args), capture_output=True, text=True, timeout=120, check=check)


def logs(node):
    out = docker("logs", serving_container(node), check=False)
    return out.stdout + out.stderr


def wait_for_endpoint(host, url, timeout=180):
    """Poll url from inside the node until it answers 200; return the seconds it took."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            if http_get(host, url)[0] == 200:
                return time.monotonic() - start
        except Exception:  # pylint: disable=broad-except  # not up yet: the container is restarting
            pass
        time.sleep(2)
    raise AssertionError("%s did not answer within %d s" % (url, timeout))


def run_playbook(playbook, *extra, inventory="lab"):
    """Run a playbook of the project against a lab inventory (inventories/INVENTORY), as a user would; return
    (rc, output)."""
    project = os.environ["MOLECULE_PROJECT_DIRECTORY"]
    run = subprocess.run(
        ["ansible-playbook", "-i", os.path.join(project, "inventories", inventory),
         os.path.join(project, "playbooks", playbook)] + list(extra),
        cwd=project, capture_output=True, text=True, timeout=900, check=False)
    return run.returncode, run.stdout + run.stderr


# The first steps of playbooks/tasks/converge_steps.yml that change a node: a failure before them changed nothing.
APPLY_STEPS = ("TASK [Let the login user use Docker]", "TASK [Address the QSFP ports]",
               "TASK [Run the TensorRT-LLM container]")


def failed_in_preflight(output):
    """The run failed in the pre-flight: nothing reported a change and no apply step had started before the first
    failure (the converge path is one play; its pre-flight is the steps before the roles)."""
    before = output.split("fatal:")[0]
    return "fatal:" in output and "changed: [" not in before and not any(step in before for step in APPLY_STEPS)


def changed_total(output):
    return sum(int(n) for n in re.findall(r"changed=(\d+)", output.split("PLAY RECAP")[-1]))


def controller_files_containing(needles):
    """Files on the controller (the project, Ansible's and molecule's directories, /tmp) holding any needle."""
    project = os.environ["MOLECULE_PROJECT_DIRECTORY"]
    roots = [project, os.path.expanduser("~/.ansible"), os.path.expanduser("~/.cache/molecule"), "/tmp"]
    found = []
    for root in roots:
        for path in glob.glob(os.path.join(root, "**"), recursive=True):
            if "/.venv/" in path or "/.git/" in path or not os.path.isfile(path) or os.path.islink(path):
                continue
            try:
                if os.path.getsize(path) > 5_000_000:
                    continue
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            if any(n.encode() in data for n in needles):
                found.append(path)
    return found
