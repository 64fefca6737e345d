# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The spark_progress action's wait: its lines and their pace, the jobs' outcomes, the loading's end and timeout.

The node is a double of the two module calls the wait makes (async_status and spark_progress's snapshot); time is a
fake clock that each sleep advances.
"""

from __future__ import annotations

from unittest.mock import MagicMock

import pytest

from ansible.errors import AnsibleActionFail

from ansible_collections.dgx_spark.specdec.plugins.action import spark_progress as action_module


class Clock:
    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class Node:
    """Answers like the node: a job finishes at a given time; a download grows 10 MiB/s; health 200 from a time."""

    def __init__(self, clock, finish_at=None, ready_at=None, job_result=None):
        self.clock, self.finish_at, self.ready_at = clock, finish_at, ready_at
        self.job_result = job_result or {"changed": True, "status": 0}
        self.calls = []
        self.start = clock.now

    def __call__(self, module_name=None, module_args=None, task_vars=None, **_kw):
        self.calls.append((module_name, module_args))
        elapsed = self.clock.now - self.start
        if module_name == "ansible.legacy.async_status":
            finish_at = self.finish_at.get(module_args["jid"]) if isinstance(self.finish_at, dict) else self.finish_at
            if finish_at is not None and elapsed >= finish_at:
                return dict(self.job_result, finished=1, started=1)
            return {"finished": 0, "started": 1}
        snapshot = []
        for watch in module_args["watch"]:
            if watch["kind"] == "download":
                entry = {"bytes": int(elapsed * 10 * 1024 ** 2), "files": [int(elapsed) // 10, 12]}
                if module_args["sizes"]:
                    entry["size"] = 1024 ** 3
            elif watch["kind"] == "load":
                ready = self.ready_at is not None and elapsed >= self.ready_at
                entry = {"exists": True, "running": True, "health": 200 if ready else 503,
                         "last": "Loading weights" if not ready else "Application startup complete."}
            else:
                entry = {"layers": 10, "done": min(10, int(elapsed) // 20), "fetched": min(10, int(elapsed) // 15),
                         "last": ""}
            snapshot.append(dict(entry, label=watch["label"], kind=watch["kind"]))
        return {"changed": False, "snapshot": snapshot}


@pytest.fixture
def run(monkeypatch):
    clock = Clock()
    shown = []
    monkeypatch.setattr(action_module.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(action_module.time, "sleep", clock.sleep)

    def display(msg, stderr=False, **dummy):
        assert stderr, "progress lines go to stderr (stdout may be a machine-read callback's)"
        shown.append((clock.now, msg))

    monkeypatch.setattr(action_module.display, "display", display)

    def _run(args, node_kwargs=None, async_val=0):
        node = Node(clock, **(node_kwargs or {}))
        task = MagicMock()
        task.args = args
        task.async_val = async_val
        task.check_mode = False
        action = action_module.ActionModule(task, MagicMock(), MagicMock(), loader=None, templar=None,
                                            shared_loader_obj=None)
        action._execute_module = node
        action._remote_expand_user = lambda path: "/root/.ansible_async"
        action.get_shell_option = lambda name, default=None: default
        action._remove_tmp_path = lambda path: None
        return action.run(task_vars={"inventory_hostname": "spark-a"}), node, shown
    return _run


DOWNLOAD = {"label": "Qwen/Qwen3-8B", "kind": "download", "dir": "/x", "container": "c-fetch-0", "probe": {}}


def test_a_download_prints_size_rate_and_estimate_at_the_pace_asked_and_returns_the_jobs_outcome(run):
    job = {"ansible_job_id": "j1.1", "started": 1, "finished": 0, "item": {"repo": "Qwen/Qwen3-8B"}}
    result, node, shown = run({"watch": [DOWNLOAD], "jobs": [job], "timeout": 600, "every": 20},
                              {"finish_at": 61})
    times = [t - 1000.0 for t, dummy in shown]
    # The first reading at once, then one line every 20 s, and one when it ends.
    assert times[0] == 0 and all(b - a <= 20 for a, b in zip(times, times[1:])) and len(shown) >= 4
    assert all(msg.startswith("[spark-a] downloading Qwen/Qwen3-8B: ") for dummy, msg in shown)
    assert "of 1.0 GiB" in shown[-2][1] and "10.0 MiB/s" in shown[-2][1] and "left" in shown[-2][1]
    assert "/12 files" in shown[-2][1]
    # The job's end: done, with the size the hub listed.
    assert shown[-1][1] == "[spark-a] downloading Qwen/Qwen3-8B: done after 1m05s, 1.0 GiB"
    # The hub was asked for the size once.
    assert [args["sizes"] for name, args in node.calls if name.endswith("spark_progress")].count(True) == 1
    assert result["outcomes"] == [dict(finished=True, started=True, changed=True, status=0, ansible_job_id="j1.1",
                                       item=job)]
    assert result["changed"] is True and "results" not in result and not result.get("failed")


def test_each_job_that_ends_gets_its_done_line(run):
    jobs = [{"ansible_job_id": "j%d" % n, "started": 1, "finished": 0, "item": {"repo": "r%d" % n}} for n in (1, 2)]
    watches = [dict(DOWNLOAD, label="r1"), dict(DOWNLOAD, label="r2")]
    result, dummy, shown = run({"watch": watches, "jobs": jobs, "timeout": 600, "every": 30},
                               {"finish_at": {"j1": 12, "j2": 40}})
    # r1 ends between two lines of the pace: its line comes when it ends, not never.
    assert [(t - 1000.0, msg) for t, msg in shown if "done after" in msg] == [
        (15.0, "[spark-a] downloading r1: done after 15s, 1.0 GiB"),
        (40.0, "[spark-a] downloading r2: done after 40s, 1.0 GiB")]
    assert result["outcomes"][1]["finished"] is True


def test_a_job_not_finished_in_time_is_the_callers_to_judge(run):
    job = {"ansible_job_id": "j2.2", "started": 1, "finished": 0, "item": {"repo": "a/b"}}
    result, dummy, shown = run({"watch": [DOWNLOAD], "jobs": [job], "timeout": 30, "every": 15}, {"finish_at": None})
    assert result["outcomes"][0]["finished"] is False and not result.get("failed")
    assert result["waited_s"] >= 30


def test_a_failed_job_is_returned_not_raised(run):
    job = {"ansible_job_id": "j3.3", "started": 1, "finished": 0, "item": {"repo": "a/b"}}
    result, dummy, dummy = run({"watch": [DOWNLOAD], "jobs": [job], "timeout": 300},
                               {"finish_at": 5, "job_result": {"failed": True, "status": 1, "msg": "403 gated"}})
    assert result["outcomes"][0]["failed"] is True and result["outcomes"][0]["msg"] == "403 gated"
    assert not result.get("failed")


def test_the_loading_ends_when_health_answers_200(run):
    watch = {"label": "trtllm-specdec", "kind": "load", "container": "trtllm-specdec", "url": "http://127.0.0.1:8355/health"}
    result, dummy, shown = run({"watch": [watch], "timeout": 1800}, {"ready_at": 47})
    assert result["ready"] is True and not result.get("failed")
    assert shown[0][1] == "[spark-a] trtllm-specdec: loading, 0s of 30m00s, health 503; last log: Loading weights"
    assert "Application startup complete." in shown[-1][1]
    assert all(b[0] - a[0] <= 15 for a, b in zip(shown, shown[1:]))


def test_a_server_that_already_answers_is_not_reported(run):
    watch = {"label": "trtllm-specdec", "kind": "load", "container": "trtllm-specdec", "url": "http://127.0.0.1:8355/health"}
    result, dummy, shown = run({"watch": [watch], "timeout": 1800}, {"ready_at": 0})
    assert result["ready"] is True and shown == [] and result["lines"] == []


def test_a_server_that_never_answers_fails_with_its_last_line(run):
    watch = {"label": "trtllm-specdec", "kind": "load", "container": "trtllm-specdec", "url": "http://127.0.0.1:8355/health"}
    result, dummy, dummy = run({"watch": [watch], "timeout": 60}, {"ready_at": None})
    assert result["failed"] is True and result["ready"] is False
    assert result["msg"].startswith("http://127.0.0.1:8355/health did not answer 200 within 60 s")
    assert "last log: Loading weights" in result["msg"]


def test_a_pull_reports_layers(run):
    job = {"ansible_job_id": "j4.4", "started": 1, "finished": 0}
    watch = {"label": "nvcr.io/nvidia/tensorrt-llm/release:1.2.0", "kind": "pull", "log": "/run/x.log"}
    result, dummy, shown = run({"watch": [watch], "jobs": [job], "timeout": 7200, "every": 30}, {"finish_at": 200})
    assert "pulling nvcr.io/nvidia/tensorrt-llm/release:1.2.0: 9 of 10 layers done (10 downloaded)" in shown[-2][1]
    assert shown[-1][1] == "[spark-a] pulling nvcr.io/nvidia/tensorrt-llm/release:1.2.0: done after 3m20s"
    assert result["outcomes"][0]["finished"] is True


def test_every_is_bounded_to_30_seconds(run):
    job = {"ansible_job_id": "j5.5", "started": 1, "finished": 0, "item": {"repo": "a/b"}}
    dummy, dummy, shown = run({"watch": [DOWNLOAD], "jobs": [job], "timeout": 600, "every": 300}, {"finish_at": 200})
    assert all(b[0] - a[0] <= 30 for a, b in zip(shown, shown[1:]))


def test_jobs_must_match_the_watches_and_a_wait_is_not_async(run):
    with pytest.raises(AnsibleActionFail, match="one registered async result per watch"):
        run({"watch": [DOWNLOAD], "jobs": [], "timeout": 60})
    with pytest.raises(AnsibleActionFail, match="runs in the foreground"):
        run({"watch": [DOWNLOAD], "jobs": [{}], "timeout": 60}, async_val=100)
