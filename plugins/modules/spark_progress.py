#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: spark_progress
short_description: Pull an image with a readable log, and report progress of the long waits on a DGX Spark
version_added: 0.12.0
description:
  - The long waits of a run on a DGX Spark are the TensorRT-LLM image pull (about 20 GB), the model downloads (up to
    two hours) and the server's loading (up to 30 minutes). This module and its action plugin say where each stands,
    at most every 30 seconds, in the run's output (also in an AWX job's output).
  - With O(pull), the module pulls the image with C(docker pull), writing its output (one line per layer and state)
    to O(pull.log), so that a wait can read the layers done. Run it with C(async) and C(poll=0), then wait for it with
    O(watch). Nothing is pulled when the image is on the node already.
  - With O(watch), the action plugin polls the node until every watched job finished (O(jobs)) or, for a server
    (O(watch[].kind=load)), until its health endpoint answers 200, or until O(timeout). It prints one line per watch
    every O(every) seconds - layers done of the total; bytes on disk of the expected size with the rate and an
    estimate; the server's state, health answer and last log line - and returns the jobs' results.
  - A download's expected size comes from the hub (C(HfApi.model_info) with C(files_metadata), asked once, in the
    release image on the node with the node's token, as the pre-flight's access check asks). Without it (a mirror
    that does not list sizes, no image yet), the line gives the bytes so far and the rate.
author:
  - DGX Spark speculative-decoding collection maintainers (@dgx-spark)
options:
  pull:
    description: Pull this image (when it is missing), writing C(docker pull)'s output to O(pull.log).
    type: dict
    suboptions:
      image:
        description: The image reference.
        type: str
        required: true
      log:
        description: The file C(docker pull)'s output goes to (root, 0600; replaced at each pull).
        type: path
        required: true
  watch:
    description: What to report on, one entry per wait. Given, the action plugin waits (see the description).
    type: list
    elements: dict
    suboptions:
      label:
        description: What the line names (a repository, an image, a container).
        type: str
        required: true
      kind:
        description: C(pull) reads O(watch[].log); C(download) the bytes under O(watch[].dir) and the fetch
          container's log; C(load) the server container's state, health and log.
        type: str
        required: true
        choices: [pull, download, load]
      log:
        description: C(pull) - the log O(pull.log) names.
        type: path
      dir:
        description: C(download) - the directory the download fills.
        type: path
      container:
        description: C(download) - the container running C(hf download); C(load) - the server's container.
        type: str
      url:
        description: C(load) - the server's health URL, asked from the node (200 ends the wait).
        type: str
      probe:
        description:
          - C(download) - where to ask the hub for the expected size - C(image), C(network_mode), C(token_file),
            C(endpoint), C(repo), C(revision). The token is read from C(token_file) on the node and goes to the
            release image on stdin, never in argv.
        type: dict
  jobs:
    description:
      - The registered results of the C(async) tasks the waits are for, in the order of O(watch) (C(load) entries
        have none). A job's final result is returned in RV(outcomes), with the start result as its C(item).
    type: list
    elements: dict
    default: []
  sizes:
    description: Module side - ask the hub for the expected sizes of the C(download) watches (the action plugin sets
      it on its first poll).
    type: bool
    default: false
  timeout:
    description: Seconds the wait may take in all (the role's timeout for the pull, the downloads or the loading).
    type: int
    default: 1800
  every:
    description: Seconds between progress lines (5 to 30).
    type: int
    default: 15
extends_documentation_fragment:
  - dgx_spark.specdec.attributes
  - dgx_spark.specdec.attributes.ACTIONGROUP_SPECDEC
attributes:
  check_mode:
    support: full
    details:
      - O(pull) reports what it would pull and pulls nothing; a wait reads only.
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - O(pull) pulls nothing when the image is on the node; a wait changes nothing.
notes:
  - The lines are printed by the action plugin on the controller, on standard error like Ansible's warnings, so they
    appear in a terminal and in an AWX job's output while the task runs, and a machine-read standard output (the
    C(json) callback) stays one document.
seealso:
  - name: docker image pull
    description: The command the pull runs; without a terminal it prints one line per layer and state.
    link: https://docs.docker.com/reference/cli/docker/image/pull/
  - name: huggingface_hub HfApi.model_info
    description: With files_metadata, the size of each file of a repository.
    link: https://huggingface.co/docs/huggingface_hub/package_reference/hf_api#huggingface_hub.HfApi.model_info
"""

EXAMPLES = r"""
- name: Pull the image when it is missing (in the background)
  dgx_spark.specdec.spark_progress:
    pull:
      image: nvcr.io/nvidia/tensorrt-llm/release:1.2.0
      log: /run/dgx-spark-specdec/pull.log
  async: 7200
  poll: 0
  register: pull_job

- name: Wait for the pull, saying how many layers are done
  dgx_spark.specdec.spark_progress:
    watch:
      - label: nvcr.io/nvidia/tensorrt-llm/release:1.2.0
        kind: pull
        log: /run/dgx-spark-specdec/pull.log
    jobs: ["{{ pull_job }}"]
    timeout: 7200

- name: Wait until the server answers, saying how its loading goes
  dgx_spark.specdec.spark_progress:
    watch:
      - label: trtllm-specdec
        kind: load
        container: trtllm-specdec
        url: http://127.0.0.1:8355/health
    timeout: 1800
"""

RETURN = r"""
changed:
  description: O(pull) - whether the image was pulled; a wait - whether a watched job changed something.
  returned: always
  type: bool
outcomes:
  description: A wait - each job's final result (C(async_status)'s), with its start result as C(item), in the order of
    O(jobs). Not named C(results), so that a failed job is the caller's to judge (its message is in it).
  returned: when O(jobs) were given
  type: list
  elements: dict
snapshot:
  description: What the last poll read, one entry per watch (C(label), C(kind) and what it read).
  returned: when O(watch) was given
  type: list
  elements: dict
  sample: [{"label": "Qwen/Qwen3-8B", "kind": "download", "bytes": 3435973837, "size": 16384000000,
            "files": [3, 12]}]
lines:
  description: The progress lines the wait printed last.
  returned: when O(watch) was given
  type: list
  elements: str
waited_s:
  description: Seconds the wait took.
  returned: when O(watch) was given
  type: float
ready:
  description: C(load) - whether the health endpoint answered 200 before O(timeout).
  returned: when a C(load) watch was given
  type: bool
"""

import json
import os
import subprocess

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _hf_access as hfa
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _progress as progress

LOG_LINES = "40"


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _logs(module, docker, container):
    if not docker or not container:
        return ""
    rc, out, err = module.run_command([docker, "logs", "--tail", LOG_LINES, container], check_rc=False)
    return (out or "") + (err or "") if rc == 0 else ""


def _state(module, docker, container):
    if not docker or not container:
        return {"exists": False}
    rc, out, dummy = module.run_command(
        [docker, "inspect", "--format", "{{json .State}} {{.RestartCount}}", container], check_rc=False)
    if rc != 0:
        return {"exists": False}
    try:
        state, restarts = out.strip().rsplit(" ", 1)
        state = json.loads(state)
        return {"exists": True, "running": bool(state.get("Running")), "status": state.get("Status"),
                "started_at": state.get("StartedAt"), "restarts": int(restarts)}
    except (ValueError, AttributeError):
        return {"exists": True}


def _health(url):
    try:
        return open_url(url, method="GET", timeout=5, validate_certs=False, use_proxy=False).getcode()
    except Exception as exc:  # pylint: disable=broad-except
        code = getattr(exc, "code", None)
        return code if isinstance(code, int) else "no answer"


def _expected(module, docker, probe):
    """The repository's size the hub lists, asked from the release image like the pre-flight's access check."""
    if not probe or not probe.get("repo"):
        return None
    token = (_read(probe["token_file"]).strip() if probe.get("token_file") else "") or None
    request = {"token": token, "endpoint": probe.get("endpoint"), "sizes": True, "timeout": 20,
               "repos": [{"repo": probe["repo"], "revision": probe.get("revision")}]}
    # No answer (no image yet, no hub): the line gives the bytes so far and the rate.
    answer, dummy = hfa.probe_in_image(module.run_command, docker, probe.get("image"), probe.get("network_mode"),
                                       request)
    return ((answer or {}).get("repos") or [{}])[0].get("size")


def _pull(module, docker, spec):
    image, log = spec["image"], spec["log"]
    rc, dummy, dummy = module.run_command([docker, "image", "inspect", "--format", "{{.Id}}", image], check_rc=False)
    if rc == 0:
        module.exit_json(changed=False, msg="%s is on the node" % image)
    if module.check_mode:
        module.exit_json(changed=True, msg="would pull %s" % image)
    os.makedirs(os.path.dirname(log) or "/", mode=0o755, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        code = subprocess.call([docker, "pull", image], stdout=handle, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL)
    text = _read(log)
    if code != 0:
        tail = " | ".join(text.strip().splitlines()[-3:]) or "no output"
        module.fail_json(msg="docker pull %s failed (exit %d): %s" % (image, code, tail), changed=False)
    module.exit_json(changed=True, msg="pulled %s" % image, progress=progress.pull_progress(text))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            pull=dict(type="dict", options=dict(image=dict(type="str", required=True),
                                                log=dict(type="path", required=True))),
            watch=dict(type="list", elements="dict", options=dict(
                label=dict(type="str", required=True),
                kind=dict(type="str", required=True, choices=["pull", "download", "load"]),
                log=dict(type="path"),
                dir=dict(type="path"),
                container=dict(type="str"),
                url=dict(type="str"),
                probe=dict(type="dict"),
            )),
            jobs=dict(type="list", elements="dict", default=[]),
            sizes=dict(type="bool", default=False),
            timeout=dict(type="int", default=1800),
            every=dict(type="int", default=15),
        ),
        mutually_exclusive=[("pull", "watch")],
        required_one_of=[("pull", "watch")],
        supports_check_mode=True,
    )
    docker = module.get_bin_path("docker")
    if module.params["pull"]:
        if not docker:
            module.fail_json(msg="docker is not installed on this node (install and start Docker first)")
        _pull(module, docker, module.params["pull"])
    snapshot = []
    for watch in module.params["watch"]:
        entry = {"label": watch["label"], "kind": watch["kind"]}
        if watch["kind"] == "pull":
            entry.update(progress.pull_progress(_read(watch["log"]) if watch.get("log") else ""))
        elif watch["kind"] == "download":
            # Counted from the download's start (its container's): an earlier revision's files are not this one's.
            since = progress.docker_time(_state(module, docker, watch.get("container")).get("started_at"))
            entry["bytes"] = progress.dir_bytes(watch["dir"], since=since) if watch.get("dir") else 0
            entry["files"] = progress.files_progress(_logs(module, docker, watch.get("container")))
            if module.params["sizes"]:
                entry["size"] = _expected(module, docker, watch.get("probe"))
        else:
            entry.update(_state(module, docker, watch.get("container")))
            entry["health"] = _health(watch["url"]) if watch.get("url") else None
            entry["last"] = progress.meaningful_line(_logs(module, docker, watch.get("container")))
        snapshot.append(entry)
    module.exit_json(changed=False, snapshot=snapshot)


if __name__ == "__main__":
    main()
