# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin of dgx_spark.specdec.spark_lock: names the run on the controller, runs the module on the node,
and takes over a lock whose run is gone.

The run is the ``ansible-playbook`` process: the worker running this plugin is its child (Ansible forks a worker
per task and host), so its parent's process ID and start time name the run - the same for every task and host of
one run, never the same for two runs. A lock held by a run of this same controller whose process is gone (an
interrupted run) is taken over, with a warning.
"""

from __future__ import annotations

import getpass
import os
import socket

from ansible.plugins.action import ActionBase


def _start_time(pid):
    """A process's start time (clock ticks after boot, /proc/PID/stat field 22), None where unreadable."""
    try:
        with open("/proc/%d/stat" % int(pid)) as handle:
            # The command name (field 2) may hold spaces: count from after its closing parenthesis.
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError, ValueError):
        return None


def run_id(pid, controller=None):
    return "%s:%d:%s" % (controller or socket.gethostname(), int(pid), _start_time(pid) or "0")


def process_gone(holder, controller=None):
    """The holder's ansible-playbook was on this controller and is no longer running (or is another process now)."""
    if (holder or {}).get("controller") != (controller or socket.gethostname()):
        return False
    try:
        pid = int(holder.get("pid"))
    except (TypeError, ValueError):
        return False
    return run_id(pid, holder.get("controller")) != holder.get("run")


class ActionModule(ActionBase):

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        if not args.get("holder"):
            main = os.getppid()
            playbook = str((task_vars or {}).get("ansible_play_name") or "?")
            args["holder"] = {"run": run_id(main), "user": getpass.getuser(), "controller": socket.gethostname(),
                              "pid": main, "playbook": playbook}
        result.update(self._execute_module(module_name="dgx_spark.specdec.spark_lock", module_args=args,
                                           task_vars=task_vars))
        holder = result.get("holder")
        if result.get("failed") and isinstance(holder, dict) and args.get("state", "present") == "present" \
                and process_gone(holder):
            result = super().run(None, task_vars)
            result.update(self._execute_module(module_name="dgx_spark.specdec.spark_lock",
                                               module_args=dict(args, take_over=holder.get("run")),
                                               task_vars=task_vars))
        if result.get("taken_over") and not result.get("failed"):
            result.setdefault("warnings", []).append("spark_lock: %s" % result.get("reason"))
        return result
