#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: spark_lock
short_description: Take or release a node's run lock, so two runs never change one node at once
version_added: 0.11.0
author:
  - DGX Spark speculative-decoding collection maintainers (@dgx-spark)
description:
  - O(state=present) takes the node's run lock, or fails at once, naming the run that holds it (its user, controller,
    playbook, process and start), before the run reads or changes anything. A lock held by this same run is kept.
  - The lock is a file in C(/run/lock), so a reboot ends it. An interrupted run's lock does not block forever - its
    action plugin, on the controller, sees when the holder's C(ansible-playbook) process is gone (same controller)
    and takes the lock over with a warning; a lock older than O(max_age) is taken over too.
  - O(state=absent) removes the lock only when this run holds it.
  - Two runs racing for a free lock cannot both win - it is created with C(O_EXCL).
extends_documentation_fragment:
  - dgx_spark.specdec.attributes
  - dgx_spark.specdec.attributes.ACTIONGROUP_SPECDEC
attributes:
  check_mode:
    support: full
    details:
      - In check mode a held lock fails the same way; nothing is written.
  diff_mode:
    support: none
  idempotent:
    support: full
options:
  state:
    description: Take (V(present)) or release (V(absent)) the lock.
    type: str
    choices: [present, absent]
    default: present
  path:
    description: The lock file.
    type: path
    default: /run/lock/dgx-spark-specdec.lock
  holder:
    description:
      - Who takes it - C(run) (an id unique to the run), C(user), C(controller), C(pid), C(playbook) (the play's
        name). The action plugin fills it in when it is not given.
    type: dict
  max_age:
    description: Seconds after which a lock is taken over although its run may still be going.
    type: int
    default: 21600
  take_over:
    description: A run id the caller found gone; a lock with exactly that run id is taken over.
    type: str
"""

EXAMPLES = r"""
---
- name: One run at a time on this node
  dgx_spark.specdec.spark_lock:

- name: Release it at the end of the run
  dgx_spark.specdec.spark_lock:
    state: absent
"""

RETURN = r"""
holder:
  description: The lock's holder after the call (this run's when taken; the other run's when held), null when free.
  returned: always
  type: dict
  sample: {"run": "ctl:4242:1234567", "user": "nvidia", "controller": "ctl", "pid": 4242, "playbook": "fleet.yml",
           "since": 1795000000.0}
taken_over:
  description: The earlier holder when a stale lock was taken over, else null.
  returned: always
  type: dict
reason:
  description: Why the lock was taken or refused.
  returned: always
  type: str
  sample: free
"""

import os
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _lock


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _create(path, text):
    """Create the lock only if there is none (O_EXCL): False when another run created it first."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    return True


def _replace(path, text):
    fd, tmp = tempfile.mkstemp(prefix=".dgx-spark-specdec.lock.", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def main():
    module = AnsibleModule(
        argument_spec=dict(state=dict(type="str", choices=["present", "absent"], default="present"),
                           path=dict(type="path", default=_lock.LOCK),
                           holder=dict(type="dict"),
                           max_age=dict(type="int", default=21600),
                           take_over=dict(type="str")),
        supports_check_mode=True,
    )
    p = module.params
    path = p["path"]
    me = dict(p["holder"] or {})
    if not me.get("run"):
        module.fail_json(msg="holder.run is required (the action plugin names the run)")
    text = _read(path)
    current = _lock.parse(text) if text is not None else None
    if p["state"] == "absent":
        mine = current is not None and current.get("run") == me["run"]
        if mine and not module.check_mode:
            os.unlink(path)
        module.exit_json(changed=mine, holder=None if mine else current, taken_over=None,
                         reason="released" if mine else "not held by this run")
    now = time.time()
    for dummy in range(3):
        verdict, reason = _lock.decide(current, me, now, p["max_age"], p["take_over"])
        if text is not None and current is None:
            reason = "took over an unreadable lock file"
        if verdict == "held":
            module.fail_json(msg="%s on this node is held by %s; this run stops before changing anything. Wait for "
                                 "that run to end, or, if it is gone, remove %s (a lock older than %d s is taken over)"
                                 % (path, reason, path, p["max_age"]), holder=current, taken_over=None, reason=reason)
        if current is not None and current.get("run") == me["run"]:
            module.exit_json(changed=False, holder=current, taken_over=None, reason=reason)
        mine = dict(me, since=now)
        if module.check_mode:
            module.exit_json(changed=True, holder=mine, taken_over=current, reason=reason)
        directory = os.path.dirname(path)
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        if text is None:
            if _create(path, _lock.render(mine)):
                module.exit_json(changed=True, holder=mine, taken_over=None, reason=reason)
        else:
            _replace(path, _lock.render(mine))
            module.exit_json(changed=True, holder=mine, taken_over=current, reason=reason)
        # Another run created it between the read and the write: decide again against it.
        text = _read(path)
        current = _lock.parse(text) if text is not None else None
    module.fail_json(msg="%s: could not take the lock (it changed hands three times)" % path)


if __name__ == "__main__":
    main()
