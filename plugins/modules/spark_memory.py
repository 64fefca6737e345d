#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: spark_memory
short_description: Check that a model fits in a DGX Spark's unified memory, drop the page cache, guard a model load
version_added: 0.6.0
author:
  - DGX Spark speculative-decoding collection maintainers (@dgx-spark)
description:
  - A DGX Spark has unified memory (UMA), about 128 GB that the CPU and the GPU share. The weights a server loads, the
    page cache filled while they stream in from disk, other containers and the operating system all take from the
    same pool. When the page cache fills while the weights stream in, the load can fail or the machine can freeze.
  - B(Pre-flight check) (the default). Reads C(/proc/meminfo) and compares C(MemAvailable) with what the server
    needs, the size of the weights on disk (O(weights), times O(weights_share)) plus O(headroom_bytes). With
    O(check=fail) it fails, before anything is started or dropped, when they do not fit; with O(check=warn) it warns
    and goes on; O(check=skip) only reports. Run it before starting a server.
  - When O(ready_url) answers HTTP 2xx within 2 seconds the server is already serving. Its own memory is then not
    available, so the check compares with C(MemTotal) instead, which still catches a model bigger than the machine,
    and the page cache is left alone.
  - B(Drop the page cache) (O(drop_caches=true)). After the check and only when the server is not serving, runs
    C(sync) and writes V(3) to C(/proc/sys/vm/drop_caches), as NVIDIA's DGX Spark guide advises. Run it immediately
    before starting a server.
  - B(Guard a load) (O(guard=true)). Instead of the above, watches the load until O(ready_url) answers 2xx or
    O(guard_timeout) seconds passed. Every O(guard_interval) seconds it reads C(MemAvailable) and drops the page cache
    when it is below O(guard_below_bytes). Start it with C(async) and C(poll) set to V(0) right after starting the
    server, so it watches the load in the background; read its result with M(ansible.builtin.async_status).
extends_documentation_fragment:
  - dgx_spark.specdec.attributes
  - dgx_spark.specdec.attributes.ACTIONGROUP_SPECDEC
attributes:
  check_mode:
    support: full
    details:
      - In check mode the page cache is not dropped; the module reports C(changed=true) when it would drop it
        (the server is not serving and C(/proc/sys/vm/drop_caches) is writable).
      - In check mode the guard does not loop. It returns at once with RV(guard.drops=0) and C(changed=false).
  diff_mode:
    support: N/A
    details:
      - Dropping the page cache has no before and after to show.
  idempotent:
    support: partial
    details:
      - The check only reads and changes nothing.
      - Dropping the page cache is an action, not a state. Each run with O(drop_caches=true) drops it again and
        reports a change, and each guard run that drops reports a change.
options:
  weights:
    description:
      - Directories (or files) on the node holding the weights the server loads, for example the Hugging Face hub
        cache directory C(models--org--name) of the model and the directory of its draft model.
      - Their size is the sum of the sizes of the regular files below them. Symbolic links are not followed, so the
        C(snapshots/) links of a hub cache to its C(blobs/) count once.
      - When a path does not exist (the weights are not downloaded yet), O(estimate_bytes) is used instead, else
        the size is unknown and only the headroom is checked. The same holds for an empty list.
    type: list
    elements: path
    default: []
  weights_share:
    description:
      - The share of the weights this node holds in memory, more than V(0) and at most V(1).
      - For example V(0.5) with tensor parallelism over two nodes.
    type: float
    default: 1.0
  estimate_bytes:
    description:
      - The size of the weights in bytes (all of them; O(weights_share) applies), used when a path of O(weights) is
        missing.
      - When omitted, only the headroom is checked then.
    type: int
  headroom_bytes:
    description:
      - What the server needs beyond the weights, in bytes (CUDA context, activations, KV cache the server reserves
        up front, the operating system). The default is 8 GiB.
    type: int
    default: 8589934592
  check:
    description:
      - What to do when the weights and the headroom do not fit.
      - V(fail) fails the task (before the page cache is dropped), V(warn) warns and goes on, V(skip) does not
        compare (the memory and the weights are still reported).
      - Ignored with O(guard=true).
    type: str
    choices: [fail, warn, skip]
    default: fail
  ready_url:
    description:
      - The server's readiness URL, for example V(http://127.0.0.1:8000/health). Must start with V(http://) or
        V(https://).
      - When it answers HTTP 2xx within 2 seconds the server is serving. The check then uses C(MemTotal) and
        O(drop_caches) does nothing. Any other answer or error means not serving. No proxy is used.
      - Required with O(guard=true).
    type: str
  drop_caches:
    description:
      - When the server is not serving, C(sync) and write V(3) to C(/proc/sys/vm/drop_caches) after the check.
      - When that file cannot be written (inside a container C(/proc/sys) is read-only; without root it is denied)
        nothing is dropped, the module warns naming the reason and reports C(changed=false).
      - Ignored with O(guard=true), which drops by its own rule.
    type: bool
    default: false
  guard:
    description:
      - Watch a model load instead of checking, see the description. Needs O(ready_url).
      - Returns RV(guard). Run it with C(async) and C(poll) set to V(0).
    type: bool
    default: false
  guard_below_bytes:
    description:
      - The guard drops the page cache when C(MemAvailable) is below this many bytes. The default is 8 GiB.
    type: int
    default: 8589934592
  guard_interval:
    description:
      - Seconds between two looks of the guard, at least V(1).
    type: int
    default: 5
  guard_timeout:
    description:
      - Seconds after which the guard stops when the server is still not ready, at least V(1).
      - The guard does not fail then; RV(guard.ready) is V(false).
      - Give C(async) a value larger than this.
    type: int
    default: 3600
  node:
    description:
      - The node's name in messages. Defaults to the node's host name.
    type: str
  names:
    description:
      - Names to quote in the failure message instead of the module's option names, so that the message names the
        caller's variables.
      - Keys V(weights) (what the weights are, for example V(openai/gpt-oss-120b and its draft)), V(headroom),
        V(check) and V(estimate) (the variables that set O(headroom_bytes), O(check) and O(estimate_bytes)).
    type: dict
    default: {}
notes:
  - Dropping the page cache needs root, so run the module with C(become=true).
  - Inside a container C(/proc/sys) is read-only, so the drop is reported as not done (with a warning) rather than
    failing.
  - C(MemAvailable) already counts the page cache the kernel can reclaim, so dropping the cache does not make a model
    fit that the check rejects; it keeps the cache from crowding the load.
seealso:
  - module: dgx_spark.specdec.spark_facts
"""

EXAMPLES = r"""
---
- name: Pre-flight - the model and its draft must fit next to what already runs
  dgx_spark.specdec.spark_memory:
    weights:
      - /home/nvidia/.cache/huggingface/hub/models--openai--gpt-oss-120b
      - /home/nvidia/models/gpt-oss-120b-Eagle3
    weights_share: 1.0
    estimate_bytes: "{{ (65 * 1024 ** 3) | int }}"
    headroom_bytes: "{{ (specdec_serve_memory_headroom_gib * 1024 ** 3) | int }}"
    check: "{{ specdec_serve_memory_check }}"
    ready_url: http://127.0.0.1:8000/health
    names:
      weights: openai/gpt-oss-120b and its draft
      headroom: specdec_serve_memory_headroom_gib
      check: specdec_serve_memory_check
  become: true

- name: Drop the page cache immediately before starting the server
  dgx_spark.specdec.spark_memory:
    check: skip
    drop_caches: true
    ready_url: http://127.0.0.1:8000/health
  become: true

- name: Start the server
  ansible.builtin.command: docker start trtllm-serve
  become: true
  changed_when: true

- name: Guard the load - drop the page cache whenever less than 8 GiB is available, until the server is ready
  dgx_spark.specdec.spark_memory:
    guard: true
    ready_url: http://127.0.0.1:8000/health
    guard_below_bytes: 8589934592
    guard_interval: 5
    guard_timeout: 3600
  become: true
  async: 3700
  poll: 0
  register: memory_guard

- name: Wait for the guard (it ends when the server is ready)
  ansible.builtin.async_status:
    jid: "{{ memory_guard.ansible_job_id }}"
  become: true
  register: memory_guard_result
  until: memory_guard_result.finished
  retries: 740
  delay: 5
"""

RETURN = r"""
memory:
  description: The node's memory from C(/proc/meminfo), read before anything was dropped.
  returned: always
  type: dict
  contains:
    total_bytes:
      description: C(MemTotal) in bytes.
      returned: always
      type: int
      sample: 128526278656
    available_bytes:
      description: C(MemAvailable) in bytes.
      returned: always
      type: int
      sample: 118111600640
    free_bytes:
      description: C(MemFree) in bytes.
      returned: always
      type: int
      sample: 60129542144
  sample: {"total_bytes": 128526278656, "available_bytes": 118111600640, "free_bytes": 60129542144}
weights_bytes:
  description:
    - This node's share of the weights in bytes, their size (see RV(weights_source)) times O(weights_share).
    - V(null) when unknown, and with O(guard=true).
  returned: always
  type: int
  sample: 65712160768
weights_source:
  description:
    - Where RV(weights_bytes) comes from. V(measured) (every path of O(weights) exists and was measured),
      V(estimate) (O(estimate_bytes)) or V(unknown).
  returned: always
  type: str
  sample: measured
weights_missing:
  description: The paths of O(weights) that do not exist (or could not be measured).
  returned: always
  type: list
  elements: str
  sample: [/home/nvidia/models/gpt-oss-120b-Eagle3]
needed_bytes:
  description: RV(weights_bytes) plus O(headroom_bytes); V(null) with O(guard=true).
  returned: always
  type: int
  sample: 74302095360
fits:
  description:
    - Whether RV(needed_bytes) fits in C(MemAvailable), or in C(MemTotal) when the server is serving.
    - V(null) with O(check=skip) and with O(guard=true).
  returned: always
  type: bool
  sample: true
serving:
  description: Whether O(ready_url) answered HTTP 2xx when the module started.
  returned: always
  type: bool
  sample: false
dropped:
  description: Whether the page cache was dropped (with O(guard=true), whether the guard dropped it at least once).
  returned: always
  type: bool
  sample: true
drop_error:
  description: Why the page cache could not be dropped; empty otherwise.
  returned: always
  type: str
  sample: "/proc/sys/vm/drop_caches is not writable here (Read-only file system): the page cache was not dropped"
guard:
  description: What the guard did; V(null) without O(guard=true).
  returned: always
  type: dict
  contains:
    drops:
      description: How many times the guard dropped the page cache.
      returned: when O(guard=true)
      type: int
      sample: 3
    seconds:
      description: How long the guard watched, in seconds.
      returned: when O(guard=true)
      type: int
      sample: 412
    ready:
      description: Whether O(ready_url) answered HTTP 2xx before O(guard_timeout).
      returned: when O(guard=true)
      type: bool
      sample: true
    min_available_bytes:
      description: The lowest C(MemAvailable) the guard saw, in bytes.
      returned: when O(guard=true)
      type: int
      sample: 6442450944
    error:
      description: Why the guard stopped early (the page cache could not be dropped); empty otherwise.
      returned: when O(guard=true)
      type: str
      sample: ""
  sample: {"drops": 3, "seconds": 412, "ready": true, "min_available_bytes": 6442450944, "error": ""}
msg:
  description: One line summing up what was found and done.
  returned: always
  type: str
  sample: "MemAvailable 110.0 GiB, weights 61.2 GiB (measured), headroom 8.0 GiB: fits; page cache dropped"
"""

import os
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native
from ansible.module_utils.urls import open_url

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _memory as mem

# Module-level so that the unit tests can point them at scratch files and make the guard instant.
PROC_MEMINFO = "/proc/meminfo"
DROP_CACHES = "/proc/sys/vm/drop_caches"
READY_TIMEOUT = 2
_sleep = time.sleep
_clock = time.monotonic


def _read_memory():
    """-> {total_bytes, available_bytes, free_bytes}; raises OSError or mem.MeminfoError."""
    with open(PROC_MEMINFO, "r", encoding="utf-8") as handle:
        text = handle.read()
    return mem.memory_of(mem.parse_meminfo(text), PROC_MEMINFO)


def _is_ready(url):
    """Whether ``url`` answers HTTP 2xx within READY_TIMEOUT seconds; any error means not ready."""
    if not url:
        return False
    try:
        resp = open_url(url, method="GET", timeout=READY_TIMEOUT, use_proxy=False, follow_redirects="safe")
        try:
            status = resp.getcode()
        finally:
            resp.close()
    except Exception:  # pylint: disable=broad-except
        return False
    return status is not None and 200 <= int(status) < 300


def _drop():
    return mem.drop_caches(DROP_CACHES)


def _validate(module):
    p = module.params

    def fail(msg):
        module.fail_json(msg=msg, changed=False)

    if not 0 < p["weights_share"] <= 1:
        fail("weights_share: %s is out of range; accepted: a number more than 0 and at most 1 "
             "(0.5 with tensor parallelism over 2 nodes)" % p["weights_share"])
    for name in ("estimate_bytes", "headroom_bytes", "guard_below_bytes"):
        if p[name] is not None and p[name] < 0:
            fail("%s: %s is negative; accepted: a number of bytes, 0 or more" % (name, p[name]))
    for name in ("guard_interval", "guard_timeout"):
        if p[name] < 1:
            fail("%s: %s; accepted: a whole number of seconds, 1 or more" % (name, p[name]))
    if p["ready_url"] is not None and not p["ready_url"].startswith(("http://", "https://")):
        fail("ready_url: %r; accepted: an http:// or https:// URL such as http://127.0.0.1:8000/health" % p["ready_url"])
    unknown = sorted(set(p["names"]) - set(mem.NAME_KEYS))
    if unknown:
        fail("names: unknown key%s %s; accepted: %s"
             % ("s" if len(unknown) > 1 else "", ", ".join(unknown), ", ".join(mem.NAME_KEYS)))
    bad = sorted(key for key, value in p["names"].items() if value is not None and not isinstance(value, str))
    if bad:
        fail("names: the value of %s is not a string; accepted: the name to quote, as a string" % ", ".join(bad))


def _weights(module):
    """-> (weights_bytes or None, source, missing paths)."""
    p = module.params
    total = 0
    missing = []
    for path in p["weights"]:
        try:
            size = mem.tree_size(path)
        except OSError as exc:
            module.warn("cannot measure the weights at %s (%s); they count as missing"
                        % (path, exc.strerror or to_native(exc)))
            size = None
        if size is None:
            missing.append(path)
        else:
            total += size
    if p["weights"] and not missing:
        return int(round(total * p["weights_share"])), mem.SOURCE_MEASURED, missing
    if p["estimate_bytes"] is not None:
        return int(round(p["estimate_bytes"] * p["weights_share"])), mem.SOURCE_ESTIMATE, missing
    return None, mem.SOURCE_UNKNOWN, missing


def _run_guard(module, memory, result):
    p = module.params
    below = p["guard_below_bytes"]
    if module.check_mode:
        guard = {"drops": 0, "seconds": 0, "ready": _is_ready(p["ready_url"]),
                 "min_available_bytes": memory["available_bytes"], "error": ""}
        result.update(serving=guard["ready"], guard=guard,
                      msg="check mode: the guard did not watch the load (it would drop the page cache whenever "
                          "MemAvailable is below %s until %s answers)" % (mem.gib(below), p["ready_url"]))
        module.exit_json(**result)

    def read_available():
        return _read_memory()["available_bytes"]

    guard = mem.guard_loop(read_available, _drop, lambda: _is_ready(p["ready_url"]), _sleep, _clock, below,
                           p["guard_interval"], p["guard_timeout"], log=module.log)
    if guard["min_available_bytes"] is None:
        guard["min_available_bytes"] = memory["available_bytes"]
    if guard["error"]:
        module.warn(guard["error"])
    if guard["ready"]:
        state = "server ready after %d s" % guard["seconds"] if guard["seconds"] or guard["drops"] else \
            "server already ready"
    elif guard["error"]:
        state = "stopped after %d s" % guard["seconds"]
    else:
        state = "server not ready after %d s (guard_timeout)" % guard["seconds"]
    result.update(changed=guard["drops"] > 0, dropped=guard["drops"] > 0, drop_error=guard["error"], guard=guard,
                  msg="guard: %s, %d page cache drop%s, lowest MemAvailable %s"
                      % (state, guard["drops"], "" if guard["drops"] == 1 else "s", mem.gib(guard["min_available_bytes"])))
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            weights=dict(type="list", elements="path", default=[]),
            weights_share=dict(type="float", default=1.0),
            estimate_bytes=dict(type="int"),
            headroom_bytes=dict(type="int", default=mem.DEFAULT_HEADROOM_BYTES),
            check=dict(type="str", choices=["fail", "warn", "skip"], default="fail"),
            ready_url=dict(type="str"),
            drop_caches=dict(type="bool", default=False),
            guard=dict(type="bool", default=False),
            guard_below_bytes=dict(type="int", default=mem.DEFAULT_HEADROOM_BYTES),
            guard_interval=dict(type="int", default=5),
            guard_timeout=dict(type="int", default=3600),
            node=dict(type="str"),
            names=dict(type="dict", default={}),
        ),
        required_if=[("guard", True, ("ready_url",))],
        supports_check_mode=True,
    )
    _validate(module)
    p = module.params
    node = p["node"] or socket.gethostname()
    try:
        memory = _read_memory()
    except mem.MeminfoError as exc:
        module.fail_json(msg="memory on %s: %s" % (node, to_native(exc)), changed=False)
    except OSError as exc:
        module.fail_json(msg="memory on %s: cannot read %s: %s" % (node, PROC_MEMINFO, to_native(exc)), changed=False)

    result = dict(changed=False, memory=memory, weights_bytes=None, weights_source=mem.SOURCE_UNKNOWN,
                  weights_missing=[], needed_bytes=None, fits=None, serving=False, dropped=False, drop_error="",
                  guard=None)
    if p["guard"]:
        try:
            _run_guard(module, memory, result)
        except (OSError, mem.MeminfoError) as exc:
            module.fail_json(msg="memory on %s: the guard cannot read %s: %s" % (node, PROC_MEMINFO, to_native(exc)),
                             **result)

    serving = _is_ready(p["ready_url"])
    against = "MemTotal" if serving else "MemAvailable"
    against_bytes = memory["total_bytes"] if serving else memory["available_bytes"]
    weights_bytes, source, missing = _weights(module)
    fits, needed, message = mem.fit(against_bytes, weights_bytes, p["headroom_bytes"], against=against, node=node,
                                    source=source, share=p["weights_share"], names=p["names"])
    if p["check"] == "skip":
        fits = None
    result.update(serving=serving, weights_bytes=weights_bytes, weights_source=source, weights_missing=missing,
                  needed_bytes=needed, fits=fits)
    line = mem.summary(against, against_bytes, weights_bytes, source, p["headroom_bytes"], fits)
    if source == mem.SOURCE_UNKNOWN:
        line += " (weights size unknown: only the headroom was checked)" if fits is not None else ""
    if fits is False:
        if p["check"] == "fail":
            result["msg"] = message
            module.fail_json(**result)
        module.warn(message)

    if p["drop_caches"]:
        if serving:
            line += "; the server is serving, the page cache was left alone"
        elif module.check_mode:
            if os.access(DROP_CACHES, os.W_OK):
                result["changed"] = True
                line += "; the page cache would be dropped (check mode)"
            else:
                line += "; %s is not writable here: the page cache would not be dropped" % DROP_CACHES
        else:
            done, error = _drop()
            result.update(changed=done, dropped=done, drop_error=error)
            if done:
                line += "; page cache dropped"
            else:
                module.warn(error)
                line += "; page cache not dropped"
    result["msg"] = line
    module.exit_json(**result)


if __name__ == "__main__":
    main()
