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
  - O(state=present) takes the node's run lock, or fails at once naming the run that holds it (its user, controller,
    playbook, process and start), so a second run stops before it reads or changes anything. A lock held by this same
    run is kept as it is.
  - The lock is a small JSON file, by default in C(/run/lock), so a reboot of the node ends it.
  - An interrupted run's lock does not block forever. The action plugin, on the controller, sees when the holder's
    C(ansible-playbook) process is gone (a run of the same controller) and takes the lock over with a warning
    (O(take_over)); a lock older than O(max_age) is taken over too, with a warning.
  - O(state=absent) removes the lock only when this run holds it; another run's lock is left in place and reported.
  - Two runs racing for a free lock cannot both win - the lock is created exclusively (like C(O_EXCL)), and every
    call of this module on the node reads, decides and writes under a short C(flock) of the lock's directory.
extends_documentation_fragment:
  - dgx_spark.specdec.attributes
  - dgx_spark.specdec.attributes.ACTIONGROUP_SPECDEC
attributes:
  check_mode:
    support: full
    details:
      - In check mode a held lock fails the same way; nothing is written or removed.
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - Taking a lock this run already holds reports no change.
options:
  state:
    description: Take (V(present)) or release (V(absent)) the lock.
    type: str
    choices: [present, absent]
    default: present
  path:
    description:
      - The lock file. Its directory should be cleared by a reboot (C(/run) is), which ends any lock.
    type: path
    default: /run/lock/dgx-spark-specdec.lock
  holder:
    description:
      - The run taking or releasing the lock. The action plugin fills it in when it is not given.
    type: dict
    required: true
    suboptions:
      run:
        description:
          - An id unique to the run, the same for all of its tasks and hosts (the action plugin's is
            C(<controller>:<ansible-playbook pid>:<its start time>)).
        type: str
        required: true
      user:
        description: The user running it on the controller.
        type: str
      controller:
        description: The controller's host name.
        type: str
      pid:
        description: The process ID of its C(ansible-playbook).
        type: int
      playbook:
        description: The play (or playbook) it runs, to name it to a person.
        type: str
  max_age:
    description:
      - Seconds after which another run's lock is taken over although that run may still be going (its controller
        cannot be asked). A lock without a readable start is taken over too.
    type: int
    default: 21600
  take_over:
    description:
      - The run id of a holder the caller found gone; a lock held by exactly that run is taken over. The action
        plugin sets it when the holder's C(ansible-playbook) process on this controller is gone.
    type: str
notes:
  - Runs on the node, with the action plugin of the same name on the controller (it names the run).
seealso:
  - module: dgx_spark.specdec.spark_facts
"""

EXAMPLES = r"""
---
- name: One run at a time on this node (a second run fails here, naming the first)
  dgx_spark.specdec.spark_lock:
    max_age: 21600

- name: Release it at the end of the run
  dgx_spark.specdec.spark_lock:
    state: absent
"""

RETURN = r"""
holder:
  description:
    - The lock's holder after the call - this run's when taken (with C(since), when it took it, in seconds since the
      epoch), the other run's when held by another run, null when there is no lock.
  returned: always
  type: dict
  sample: {"run": "ctl:4242:1234567", "user": "nvidia", "controller": "ctl", "pid": 4242, "playbook": "Converge",
           "since": 1795000000}
taken_over:
  description: The earlier holder when another run's lock was taken over (stale, or its run gone), else null.
  returned: always
  type: dict
  sample: {"run": "ctl:4100:1200000", "user": "nvidia", "controller": "ctl", "pid": 4100, "playbook": "Converge",
           "since": 1794900000}
reason:
  description: Why the lock was taken, kept, refused, released or left.
  returned: always
  type: str
  sample: free
"""

import fcntl
import os
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _lock

HOLDER = ("run", "user", "controller", "pid", "playbook")
# A call holds the guard for a few milliseconds: waiting longer means a stranger holds the directory's flock.
GUARD_WAIT = 10.0


def _read(path):
    """The lock file's text, None when there is none."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _guard(directory):
    """An fd holding an exclusive flock of the lock's directory, None when it cannot be had.

    Every call on the node reads, decides and writes under it, so two runs cannot both replace one stale lock (the
    exclusive create below only settles the race for a free one). Closing the fd, or the process dying, releases it.
    """
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return None
    deadline = time.monotonic() + GUARD_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        except OSError:
            break  # no flock on this filesystem
    os.close(fd)
    return None


def _temp(path, text):
    """A temporary file with ``text`` next to ``path`` (same filesystem, so it can be renamed or linked there)."""
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=os.path.dirname(path))
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes it 0600: anyone on the node may read who holds the lock
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def _create(path, text):
    """Create the lock only where there is none: False when another run's lock got there first.

    link(2) fails like open(O_EXCL) when the path exists, and the lock appears whole - a reader never sees it
    empty, which it would take for an unreadable (stale) lock. O_EXCL itself where hard links are not supported.
    """
    tmp = _temp(path, text)
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    except OSError:
        pass
    finally:
        os.unlink(tmp)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    os.fchmod(fd, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return True


def _replace(path, text):
    """Replace another run's lock in one step (rename): a reader sees the old lock or the new, never half of one."""
    tmp = _temp(path, text)
    try:
        os.rename(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _take(module, path, me):
    p = module.params
    now = int(time.time())
    text = _read(path)
    for dummy in range(3):
        current = _lock.parse(text) if text is not None else None
        # The caller's word that this holder is gone (the action plugin checked its process); None: nobody knows.
        alive = False if p["take_over"] and current is not None and current["run"] == p["take_over"] else None
        verdict, reason = _lock.decide(current, me, now, p["max_age"], alive)
        if text is not None and current is None:
            reason = "took over an unreadable lock file (%r, not a lock of this collection)" % text[:60]
        if verdict == "held":
            module.fail_json(msg="%s on this node is held by %s; this run stops before changing anything. Wait for "
                                 "that run to end, or, if it is gone, remove %s (a lock older than %d s is taken over)"
                                 % (path, reason, path, p["max_age"]), holder=current, taken_over=None, reason=reason)
        if current is not None and current["run"] == me["run"]:
            module.exit_json(changed=False, holder=current, taken_over=None, reason=reason)
        mine = dict(me, since=now)
        if text is not None and alive is None:
            # Stale or unreadable: say so. A gone holder's take-over is reported by the action plugin.
            module.warn(reason)
        if module.check_mode:
            module.exit_json(changed=True, holder=mine, taken_over=current, reason=reason)
        if text is None:
            if _create(path, _lock.render(mine)):
                module.exit_json(changed=True, holder=mine, taken_over=None, reason=reason)
            # Another run created it between our read and our create: decide again against that run.
            text = _read(path)
            continue
        _replace(path, _lock.render(mine))
        module.exit_json(changed=True, holder=mine, taken_over=current, reason=reason)
    module.fail_json(msg="%s: could not take the lock, it changed hands three times while this run tried" % path,
                     holder=None, taken_over=None, reason="contended")


def _release(module, path, me):
    text = _read(path)
    current = _lock.parse(text) if text is not None else None
    if current is not None and current["run"] == me["run"]:
        if not module.check_mode:
            os.unlink(path)
        module.exit_json(changed=True, holder=None, taken_over=None, reason="released")
    if text is None:
        module.exit_json(changed=False, holder=None, taken_over=None, reason="no lock")
    if current is None:
        reason = "left an unreadable lock file in place (not this run's)"
    else:
        # This run's lock was taken over (stale, or its process seen gone): the new holder's is never removed.
        reason = "not released: %s holds it, not this run" % _lock.describe(current, time.time())
    module.warn("%s: %s" % (path, reason))
    module.exit_json(changed=False, holder=current, taken_over=None, reason=reason)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["present", "absent"], default="present"),
            path=dict(type="path", default=_lock.LOCK),
            holder=dict(type="dict", required=True, options=dict(
                run=dict(type="str", required=True),
                user=dict(type="str"),
                controller=dict(type="str"),
                pid=dict(type="int"),
                playbook=dict(type="str"),
            )),
            max_age=dict(type="int", default=_lock.MAX_AGE),
            take_over=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    path = p["path"]
    me = {key: p["holder"].get(key) for key in HOLDER}
    if not me["run"]:
        module.fail_json(msg="holder.run: empty; it names the run (the action plugin fills it in)")
    if p["max_age"] < 0:
        module.fail_json(msg="max_age: %d is negative" % p["max_age"])
    directory = os.path.dirname(path) or "."
    guard = None
    try:
        if not module.check_mode:
            if p["state"] == "present" and not os.path.isdir(directory):
                os.makedirs(directory, 0o755)
            guard = _guard(directory)
            # No directory (absent): no lock to release, nothing to guard.
            if guard is None and os.path.isdir(directory):
                module.warn("%s: no flock of the directory; two runs replacing one stale lock at the same instant "
                            "could both take it" % directory)
        if p["state"] == "present":
            _take(module, path, me)
        else:
            _release(module, path, me)
    except OSError as exc:
        module.fail_json(msg="%s: %s" % (path, exc), holder=None, taken_over=None, reason="error")
    finally:
        if guard is not None:
            os.close(guard)


if __name__ == "__main__":
    main()
