# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin of dgx_spark.specdec.spark_lock: names the run on the controller, runs the module on the node,
and takes over a lock whose run is gone.

The run is the ``ansible-playbook`` process. Ansible forks one worker process per task and host from it (the
``fork`` start method) and this plugin runs in that worker, so ``os.getppid()`` is the ansible-playbook process:
the same for every task and host of one run, while the worker's own pid changes with every task. That pid with its
start time (so a reused pid is another run) and the controller's host name is the run id.

A lock held by a run of this same controller whose ansible-playbook process is gone (an interrupted run) is taken
over, with a warning. Another controller's processes cannot be seen from here: its lock waits for ``max_age``.
"""

from __future__ import annotations

import getpass
import os
import socket
import subprocess

from ansible.plugins.action import ActionBase

MODULE = "dgx_spark.specdec.spark_lock"


def _start_time(pid):
    """The process's start time as a string that is the same for every reading, None when it is not running.

    /proc/PID/stat field 22 (clock ticks after boot) on Linux; ``ps -o lstart=`` elsewhere (macOS).
    """
    try:
        with open("/proc/%d/stat" % pid, encoding="ascii", errors="replace") as handle:
            stat = handle.read()
        # Field 2, the command name, may hold spaces and parentheses: count from after its last ")".
        return stat.rsplit(")", 1)[1].split()[19]
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return None  # /proc is there and the process is not
    except (OSError, IndexError):
        return None
    try:
        out = subprocess.run(["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True, timeout=10,
                             check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    # "Mon Nov 27 01:02:03 2026": letters and digits only, so the run id has no spaces or further colons.
    return "".join(ch for ch in out if ch.isalnum()) or None


def run_id(pid, controller):
    """``<controller>:<pid>:<start>`` - "0" for a start that cannot be read (then only the pid tells the run)."""
    return "%s:%d:%s" % (controller, pid, _start_time(pid) or "0")


def _process_alive(pid, start):
    """Whether process ``pid``, started at ``start`` (as run_id writes it), still runs on this controller.

    True when it cannot tell (no start to compare, or the pid is not a process id): a run is taken over only when it
    is known to be gone.
    """
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return True  # os.kill(0 or -N) would signal process groups
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it runs, as another user
    if not start or start == "0":
        return True
    # Another start: the pid was reused by a later process (None: it ended just now).
    return _start_time(pid) == start


def holder_gone(holder, controller):
    """Whether the lock's ``holder`` was a run of this controller whose ansible-playbook process is gone."""
    if not isinstance(holder, dict) or holder.get("controller") != controller:
        return False
    parts = str(holder.get("run") or "").split(":", 2)  # a host name has no ":"; the start has none either
    if len(parts) != 3 or parts[0] != controller or parts[1] != str(holder.get("pid")):
        return False  # not a run id of this plugin: nothing to check it against
    return not _process_alive(holder.get("pid"), parts[2])


def _user():
    try:
        return getpass.getuser()
    except (KeyError, OSError, ImportError):
        return str(os.getuid())  # a container's uid without a passwd entry


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("state", "path", "holder", "max_age", "take_over"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        args = dict(self._task.args)  # ActionBase.run already refused arguments outside _VALID_ARGS
        controller = socket.gethostname()
        if not args.get("holder"):
            main = os.getppid()  # the ansible-playbook process (see this file's docstring)
            args["holder"] = {"run": run_id(main, controller), "user": _user(), "controller": controller, "pid": main,
                              "playbook": str(task_vars.get("ansible_play_name") or "?")}
        first = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
        holder = first.get("holder")
        # Held (the module returns its holder with the failure) by a run of this controller that is gone.
        if first.get("failed") and args.get("state", "present") == "present" and holder_gone(holder, controller):
            second = self._execute_module(module_name=MODULE, module_args=dict(args, take_over=holder["run"]),
                                          task_vars=task_vars)
            if not second.get("failed") and second.get("taken_over"):
                second.setdefault("warnings", []).append(second.get("reason"))
            result.update(second)
            return result
        result.update(first)
        return result
