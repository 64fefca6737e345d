# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin of dgx_spark.specdec.spark_progress: waits on the controller, printing progress lines.

A wait is a loop here rather than ``until``/``retries``: a retry prints ``FAILED - RETRYING`` and nothing else, while
this prints what the node's module read (``Display.display`` on stderr, which a terminal and AWX's job output show as
the task runs). Each
poll is one module call on the node (and one ``async_status`` per running job). ``pull`` alone is handed to the module
as any module is, so it runs with ``async``.
"""

from __future__ import annotations

import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _progress as progress

display = Display()
MODULE = "dgx_spark.specdec.spark_progress"
# Between polls: often enough that a finished job is seen soon, rarely enough to cost nothing.
POLL = 5.0
EVERY = (5, 30)


class ActionModule(ActionBase):

    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        if not args.get("watch"):
            wrap_async = self._task.async_val and not self._connection.has_native_async
            result = merge_hash(result, self._execute_module(module_name=MODULE, task_vars=task_vars,
                                                             wrap_async=wrap_async))
            if not wrap_async:
                self._remove_tmp_path(self._connection._shell.tmpdir)
            return result
        if self._task.async_val:
            raise AnsibleActionFail("spark_progress: a wait (watch) runs in the foreground; use async with pull only")
        try:
            return merge_hash(result, self._wait(task_vars, args))
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)

    def _async_status(self, task_vars, jid):
        async_dir = self._remote_expand_user(self.get_shell_option("async_dir", default="~/.ansible_async"))
        status = self._execute_module(module_name="ansible.legacy.async_status", task_vars=task_vars,
                                      module_args={"jid": jid, "mode": "status", "_async_dir": async_dir})
        status["ansible_job_id"] = jid
        for key in ("started", "finished"):
            status[key] = bool(status.get(key))
        return status

    def _snapshot(self, task_vars, watch, sizes):
        answer = self._execute_module(module_name=MODULE, task_vars=task_vars,
                                      module_args={"watch": watch, "sizes": sizes})
        if answer.get("failed"):
            raise AnsibleActionFail("reading the progress on the node failed: %s" % answer.get("msg"))
        return answer["snapshot"]

    def _wait(self, task_vars, args):
        watch = list(args["watch"])
        jobs = list(args.get("jobs") or [])
        timeout = float(args.get("timeout", 1800))
        every = min(max(int(args.get("every", 15)), EVERY[0]), EVERY[1])
        host = task_vars.get("inventory_hostname", "")
        if any(w.get("kind") != "load" for w in watch) and len(jobs) != len(watch):
            raise AnsibleActionFail("spark_progress: jobs must hold one registered async result per watch entry "
                                    "(%d watches, %d jobs)" % (len(watch), len(jobs)))
        pending = {i: job["ansible_job_id"] for i, job in enumerate(jobs) if job.get("ansible_job_id")}
        finals = {i: dict(job, finished=True) for i, job in enumerate(jobs) if not job.get("ansible_job_id")}
        start = time.monotonic()
        first = {}        # watch index -> (seconds, bytes) at the first reading, for the average rate
        sizes = {}        # watch index -> expected bytes (asked once)
        printed = -every  # print at the first poll
        lines, ready, snapshot = [], None, []
        while True:
            elapsed = time.monotonic() - start
            # Read before the jobs' status: a job that just finished gets its last line.
            open_watches = [(i, w) for i, w in enumerate(watch) if i in pending or w.get("kind") == "load"]
            ended = False
            for i, jid in list(pending.items()):
                status = self._async_status(task_vars, jid)
                if status["finished"]:
                    finals[i] = status
                    del pending[i]
                    ended = True
            loads = [w for w in watch if w.get("kind") == "load"]
            if open_watches:
                ask_sizes = any(w.get("kind") == "download" and i not in sizes for i, w in open_watches)
                snapshot = self._snapshot(task_vars, [w for dummy, w in open_watches], ask_sizes)
                for (i, w), entry in zip(open_watches, snapshot):
                    if w.get("kind") == "download" and i not in sizes and ask_sizes:
                        sizes[i] = entry.get("size")
                    entry["index"] = i
            if loads:
                ready = all(e.get("health") == 200 for e in snapshot if e.get("kind") == "load")
            done = not pending and (not loads or ready)
            timed_out = not done and elapsed >= timeout
            # Nothing to say when there was nothing to wait for (a server that already answers, a no-op run).
            quiet = done and printed < 0
            # A job that ended gets its line now: the next reading no longer includes it.
            if open_watches and not quiet and (elapsed - printed >= every or ended or done or timed_out):
                lines = [self._line(entry, first, sizes, elapsed, timeout, finals.get(entry["index"]))
                         for entry in snapshot]
                for line in lines:
                    # On stderr, as Ansible's warnings: a terminal and AWX's job output (a pty) show it, and a
                    # machine-read stdout (the json callback) stays one document.
                    display.display("[%s] %s" % (host, line), stderr=True)
                printed = elapsed
            if done or timed_out:
                break
            time.sleep(min(POLL, max(0.5, timeout - elapsed)))
        out = {"changed": any(f.get("changed") for f in finals.values()), "snapshot": snapshot, "lines": lines,
               "waited_s": round(time.monotonic() - start, 1)}
        if jobs:
            # Shaped like an async_status loop's results (the final result, with the start result as its item); not
            # "results", which Ansible would read for failed and changed.
            unfinished = {"finished": False}
            out["outcomes"] = [dict(finals.get(i, dict(unfinished, ansible_job_id=job.get("ansible_job_id"))), item=job)
                               for i, job in enumerate(jobs)]
        if loads:
            out["ready"] = bool(ready)
            if not ready:
                out["failed"] = True
                out["msg"] = ("%s did not answer 200 within %d s (%s)"
                              % (", ".join(w.get("url") or w["label"] for w in loads), timeout,
                                 "; ".join(lines) or "no reading"))
        return out

    @staticmethod
    def _line(entry, first, sizes, elapsed, timeout, final=None):
        kind, label = entry.get("kind"), entry.get("label")
        if final is not None and not final.get("failed") and kind in ("pull", "download"):
            # Said plainly: hf download skips the files it has at the planned revision, so the bytes it wrote may stay
            # below the size.
            expected = sizes.get(entry["index"])
            return "%s %s: done after %s%s" % ("pulling" if kind == "pull" else "downloading", label,
                                               progress.duration(elapsed),
                                               ", %s" % progress.size(expected) if expected else "")
        if kind == "pull":
            return "pulling " + progress.pull_line(label, entry, elapsed, timeout)
        if kind == "download":
            reading = (elapsed, entry.get("bytes") or 0)
            first.setdefault(entry["index"], reading)
            speed = progress.rate(first[entry["index"]], reading)
            return "downloading " + progress.download_line(label, reading[1], sizes.get(entry["index"]), speed,
                                                           entry.get("files"))
        return progress.load_line(label, entry, elapsed, timeout)
