# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run the spark_lock module's main() on a lock file in a temporary directory, and its action plugin's run() with
the module run in-process in place of the connection."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import stat
import subprocess
import sys
import time
from unittest.mock import MagicMock

import pytest

from ansible.module_utils import _internal
from ansible.module_utils.common import warnings as ansible_warnings
from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgx_spark.specdec.plugins.action import spark_lock as action
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _lock
from ansible_collections.dgx_spark.specdec.plugins.modules import spark_lock

ME = {"run": "ctl:100:5", "user": "nvidia", "controller": "ctl", "pid": 100, "playbook": "Converge"}
OTHER = {"run": "awx:7:9", "user": "awx", "controller": "awx", "pid": 7, "playbook": "Fleet"}
COLLECTIONS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".collections"))


@pytest.fixture(autouse=True)
def on_a_node(monkeypatch):
    # Warnings are collected in a process-wide registry: start each test without the previous test's, and run as
    # on a node (another test importing controller code sends module warnings to the display instead of the result).
    monkeypatch.setattr(ansible_warnings, "_global_warnings", {})
    monkeypatch.setattr(_internal, "is_controller", False)


@pytest.fixture
def lock(tmp_path):
    return tmp_path / "run" / "lock" / "dgx-spark-specdec.lock"


def write(path, holder):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_lock.render(holder))


def held_by(path):
    return _lock.parse(path.read_text())


def run_module(capsys, **args):
    """Run main() like Ansible does; return (rc, parsed JSON result)."""
    args.setdefault("holder", ME)
    # Each run of a module is a process of its own: no warnings of an earlier run.
    ansible_warnings._global_warnings.clear()
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            spark_lock.main()
    return info.value.code, json.loads(capsys.readouterr().out)


def ok(capsys, **args):
    rc, result = run_module(capsys, **args)
    assert rc == 0 and not result.get("failed"), result
    return result


def failed(capsys, **args):
    rc, result = run_module(capsys, **args)
    assert rc == 1 and result["failed"] is True, result
    assert not result.get("changed")
    return result


def warnings(result):
    """The warning texts of a result (ansible-core 2.19 returns them as dicts with the text in event.msg)."""
    return [item["event"]["msg"] if isinstance(item, dict) else item for item in result.get("warnings") or []]


def leftovers(path):
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name)


# -- the module -----------------------------------------------------------------------------------------------------

def test_a_free_lock_is_taken_whole_and_readable_by_all(capsys, lock):
    result = ok(capsys, path=str(lock))
    assert result["changed"] is True and result["reason"] == "free" and result["taken_over"] is None
    assert held_by(lock) == result["holder"] and result["holder"]["run"] == ME["run"]
    assert isinstance(result["holder"]["since"], int)
    assert stat.S_IMODE(lock.stat().st_mode) == 0o644
    assert leftovers(lock) == [] and not warnings(result)


def test_the_same_run_renews_without_a_change(capsys, lock):
    ok(capsys, path=str(lock))
    before = lock.read_text()
    result = ok(capsys, path=str(lock), holder=dict(ME))
    assert result["changed"] is False and result["reason"] == "held by this run"
    assert lock.read_text() == before  # its start is kept


def test_a_held_lock_is_refused_naming_the_holder(capsys, lock):
    ok(capsys, path=str(lock))
    before = lock.read_text()
    result = failed(capsys, path=str(lock), holder=OTHER)
    assert result["msg"].startswith(
        "%s on this node is held by run ctl:100:5 by nvidia@ctl (playbook Converge, pid 100), started " % lock)
    assert (" s ago; this run stops before changing anything. Wait for that run to end, or, if it is gone, remove "
            "%s (a lock older than 21600 s is taken over)" % lock) in result["msg"]
    assert result["holder"]["run"] == ME["run"] and result["taken_over"] is None
    assert lock.read_text() == before


def test_a_stale_lock_is_taken_over_with_a_warning(capsys, lock):
    write(lock, dict(OTHER, since=1000))
    result = ok(capsys, path=str(lock), max_age=600)
    assert result["changed"] is True and result["taken_over"] == dict(OTHER, since=1000)
    assert result["reason"].startswith("took over a stale lock: run awx:7:9 by awx@awx")
    assert warnings(result) == [result["reason"]]
    assert held_by(lock)["run"] == ME["run"] and leftovers(lock) == []


def test_max_age_is_the_task_s(capsys, lock):
    write(lock, dict(OTHER, since=int(time.time()) - 100))
    failed(capsys, path=str(lock), max_age=600)
    assert ok(capsys, path=str(lock), max_age=60)["taken_over"]["run"] == OTHER["run"]


def test_take_over_takes_exactly_that_run(capsys, lock):
    write(lock, dict(OTHER, since=9e9))  # fresh, in the future even
    failed(capsys, path=str(lock), take_over="awx:7:8")
    result = ok(capsys, path=str(lock), take_over="awx:7:9")
    assert result["taken_over"]["run"] == "awx:7:9" and result["reason"].endswith("(its ansible-playbook process is gone)")
    assert warnings(result) == []  # the action plugin words that warning
    assert held_by(lock)["run"] == ME["run"]


@pytest.mark.parametrize("text", ["", "garbage\n", '{"run": ', '{"user": "nvidia"}'])
def test_an_unreadable_lock_file_is_taken_over(capsys, lock, text):
    lock.parent.mkdir(parents=True)
    lock.write_text(text)
    result = ok(capsys, path=str(lock))
    assert result["changed"] is True and result["taken_over"] is None
    assert result["reason"].startswith("took over an unreadable lock file (%r" % text)
    assert warnings(result) == [result["reason"]] and held_by(lock)["run"] == ME["run"]


def test_absent_removes_only_this_run_s_lock(capsys, lock):
    result = ok(capsys, path=str(lock), state="absent")
    assert result["changed"] is False and result["reason"] == "no lock" and not lock.parent.exists()
    write(lock, dict(OTHER, since=1000))
    result = ok(capsys, path=str(lock), state="absent")
    assert result["changed"] is False and result["holder"]["run"] == OTHER["run"] and lock.exists()
    assert warnings(result) == ["%s: %s" % (lock, result["reason"])] and "awx:7:9" in result["reason"]
    lock.write_text("garbage")
    assert ok(capsys, path=str(lock), state="absent")["changed"] is False and lock.read_text() == "garbage"
    lock.unlink()
    ok(capsys, path=str(lock))
    result = ok(capsys, path=str(lock), state="absent")
    assert result["changed"] is True and result["reason"] == "released" and result["holder"] is None
    assert not lock.exists() and leftovers(lock) == []


def test_check_mode_writes_nothing_and_refuses_the_same(capsys, lock):
    result = ok(capsys, path=str(lock), _ansible_check_mode=True)
    assert result["changed"] is True and not lock.parent.exists()
    write(lock, dict(OTHER, since=9e9))
    assert "is held by run awx:7:9" in failed(capsys, path=str(lock), _ansible_check_mode=True)["msg"]
    write(lock, dict(OTHER, since=1000))
    result = ok(capsys, path=str(lock), _ansible_check_mode=True)
    assert result["changed"] is True and result["taken_over"]["run"] == OTHER["run"]
    assert held_by(lock)["run"] == OTHER["run"] and leftovers(lock) == []
    write(lock, dict(ME, since=1000))
    assert ok(capsys, path=str(lock), state="absent", _ansible_check_mode=True)["changed"] is True
    assert lock.exists()


def test_a_run_creating_the_lock_between_the_read_and_the_write_wins(capsys, lock, monkeypatch):
    lock.parent.mkdir(parents=True)
    real = spark_lock._read
    reads = []

    def racer_creates_it_after_our_read(path):
        text = real(path)
        if not reads:
            write(lock, dict(OTHER, since=9e9))  # the other run's create lands after our read saw none
        reads.append(text)
        return text

    monkeypatch.setattr(spark_lock, "_read", racer_creates_it_after_our_read)
    result = failed(capsys, path=str(lock))
    assert reads[0] is None and len(reads) == 2  # read again after the exclusive create failed
    assert "is held by run awx:7:9" in result["msg"] and held_by(lock)["run"] == OTHER["run"]
    assert leftovers(lock) == []


def test_without_hard_links_o_excl_settles_the_race(capsys, lock, monkeypatch):
    def no_links(src, dst):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(spark_lock.os, "link", no_links)
    assert ok(capsys, path=str(lock))["changed"] is True and held_by(lock)["run"] == ME["run"]
    assert stat.S_IMODE(lock.stat().st_mode) == 0o644 and leftovers(lock) == []
    lock.write_text(_lock.render(dict(OTHER, since=9e9)))
    assert spark_lock._create(str(lock), _lock.render(dict(ME, since=1))) is False
    assert held_by(lock)["run"] == OTHER["run"]


def test_a_lock_that_keeps_changing_hands_fails(capsys, lock, monkeypatch):
    lock.parent.mkdir(parents=True)
    monkeypatch.setattr(spark_lock, "_read", lambda path: None)  # never sees the lock that is there
    write(lock, dict(OTHER, since=9e9))
    assert "changed hands three times" in failed(capsys, path=str(lock))["msg"]


def test_the_guard_serialises_calls_and_a_stuck_one_is_only_warned_about(capsys, lock, monkeypatch):
    lock.parent.mkdir(parents=True)
    fd = spark_lock._guard(str(lock.parent))
    try:
        assert fd is not None
        monkeypatch.setattr(spark_lock, "GUARD_WAIT", 0.1)
        assert spark_lock._guard(str(lock.parent)) is None  # held by the fd above
        result = ok(capsys, path=str(lock))
        assert "no flock of the directory" in warnings(result)[0] and held_by(lock)["run"] == ME["run"]
    finally:
        os.close(fd)
    again = spark_lock._guard(str(lock.parent))
    assert again is not None  # released by the close
    os.close(again)
    # And the module releases its own.
    ok(capsys, path=str(lock))
    probe = os.open(str(lock.parent), os.O_RDONLY)
    try:
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(probe)


def test_bad_arguments_fail(capsys, lock):
    assert "holder" in failed(capsys, path=str(lock), holder=None)["msg"]
    assert "run" in failed(capsys, path=str(lock), holder={"user": "nvidia"})["msg"]
    assert "max_age: -1 is negative" in failed(capsys, path=str(lock), max_age=-1)["msg"]
    assert not lock.exists()


def test_an_unwritable_place_fails_with_the_cause(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = failed(capsys, path=str(blocker / "lock"))
    assert result["msg"].startswith("%s: " % (blocker / "lock")) and result["holder"] is None


def test_processes_racing_for_a_free_lock_leave_exactly_one_winner(lock):
    lock.parent.mkdir(parents=True)
    # Imported first, then all go at the same instant (a busy wait: sleep would add its own jitter).
    driver = ("import json, sys, time; sys.path.insert(0, %r)\n"
              "from ansible.module_utils.testing import patch_module_args\n"
              "from ansible_collections.dgx_spark.specdec.plugins.modules import spark_lock\n"
              "while time.time() < float(sys.argv[2]):\n"
              "    pass\n"
              "with patch_module_args(json.loads(sys.argv[1])):\n"
              "    spark_lock.main()\n" % COLLECTIONS)
    go = str(time.time() + 2)
    runs = [subprocess.Popen([sys.executable, "-c", driver, json.dumps({"path": str(lock),
                                                                        "holder": dict(ME, run="ctl:%d:1" % n)}), go],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(8)]
    results = [(run.wait(timeout=120), json.loads(run.stdout.read())) for run in runs]
    for run in runs:
        run.stdout.close()
        run.stderr.close()
    winners = [result for rc, result in results if rc == 0]
    assert len(winners) == 1 and winners[0]["changed"] is True
    winner = winners[0]["holder"]["run"]
    assert held_by(lock)["run"] == winner and leftovers(lock) == []
    assert all("is held by run %s " % winner in result["msg"] for rc, result in results if rc != 0)


# -- the action plugin ----------------------------------------------------------------------------------------------

def gone_pid():
    """The pid of a process that ran and was reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_run_id_names_the_controller_the_process_and_its_start():
    me = action.run_id(os.getpid(), "ctl")
    host, pid, start = me.split(":", 2)
    assert (host, pid) == ("ctl", str(os.getpid())) and start not in ("", "0") and ":" not in start
    assert action.run_id(os.getpid(), "ctl") == me  # the same for every task of the run
    with open("/proc/%d/stat" % os.getpid(), encoding="ascii") as handle:
        assert start == handle.read().rsplit(")", 1)[1].split()[19]
    assert action.run_id(gone_pid(), "ctl").endswith(":0")


def test_a_process_is_alive_while_it_runs_with_its_start():
    start = action._start_time(os.getpid())
    assert action._process_alive(os.getpid(), start) is True
    assert action._process_alive(os.getpid(), "1") is False  # the pid was reused by a later process
    assert action._process_alive(os.getpid(), "0") is True  # no start known: only the pid tells
    assert action._process_alive(gone_pid(), start) is False
    for pid in (0, -1, None, "100", True):
        assert action._process_alive(pid, "1") is True  # never os.kill(0) - the process group


def test_only_a_gone_run_of_this_controller_is_taken_over():
    mine = {"run": action.run_id(os.getpid(), "ctl"), "controller": "ctl", "pid": os.getpid()}
    assert action.holder_gone(mine, "ctl") is False
    dead = gone_pid()
    assert action.holder_gone({"run": "ctl:%d:123" % dead, "controller": "ctl", "pid": dead}, "ctl") is True
    assert action.holder_gone(dict(mine, run="ctl:%d:1" % os.getpid()), "ctl") is True  # pid reused
    # Another controller's processes cannot be seen from here; a run id not of this plugin is not checked.
    assert action.holder_gone({"run": "awx:%d:123" % dead, "controller": "awx", "pid": dead}, "ctl") is False
    assert action.holder_gone({"run": "by hand", "controller": "ctl", "pid": dead}, "ctl") is False
    assert action.holder_gone({"run": "ctl:%d:123" % (dead + 1), "controller": "ctl", "pid": dead}, "ctl") is False
    assert action.holder_gone(None, "ctl") is False


def make_action(args, capsys, calls):
    task = MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = False
    task.action = "dgx_spark.specdec.spark_lock"
    connection = MagicMock()
    connection._shell.tmpdir = None
    play_context = MagicMock()
    play_context.check_mode = False
    plugin = action.ActionModule(task, connection, play_context, loader=MagicMock(), templar=MagicMock(),
                                 shared_loader_obj=None)
    plugin._display = MagicMock()

    def execute_module(module_name=None, module_args=None, **kwargs):  # pylint: disable=unused-argument
        # The node is this machine: run the module itself on the arguments the plugin sends.
        calls.append((module_name, json.loads(json.dumps(module_args))))
        rc, result = run_module(capsys, **module_args)
        result["failed"] = rc != 0 or result.get("failed", False)
        return result

    plugin._execute_module = execute_module
    return plugin


def test_the_action_names_the_run_and_takes_the_lock(capsys, lock, monkeypatch):
    monkeypatch.setattr(action.os, "getppid", os.getpid)  # this test process stands for ansible-playbook
    calls = []
    result = make_action({"path": str(lock)}, capsys, calls).run(task_vars={"ansible_play_name": "Converge"})
    assert not result.get("failed") and result["changed"] is True
    host = socket.gethostname()
    holder = calls[0][1]["holder"]
    assert holder == {"run": action.run_id(os.getpid(), host), "user": action._user(), "controller": host,
                      "pid": os.getpid(), "playbook": "Converge"}
    assert calls[0][0] == "dgx_spark.specdec.spark_lock" and len(calls) == 1
    assert held_by(lock)["run"] == holder["run"]
    # The next task of the run (another worker, same ansible-playbook) holds it already; its release removes it.
    assert make_action({"path": str(lock)}, capsys, calls).run(task_vars={})["changed"] is False
    assert make_action({"path": str(lock), "state": "absent"}, capsys, calls).run(task_vars={})["changed"] is True
    assert not lock.exists()


def test_the_action_takes_over_the_lock_of_a_gone_run_with_a_warning(capsys, lock, monkeypatch):
    monkeypatch.setattr(action.os, "getppid", os.getpid)
    host = socket.gethostname()
    dead = gone_pid()
    write(lock, {"run": "%s:%d:123" % (host, dead), "user": "nvidia", "controller": host, "pid": dead,
                 "playbook": "Converge", "since": 9e9})
    calls = []
    result = make_action({"path": str(lock)}, capsys, calls).run(task_vars={})
    assert not result.get("failed") and result["changed"] is True
    assert [args.get("take_over") for name, args in calls] == [None, "%s:%d:123" % (host, dead)]
    assert result["taken_over"]["pid"] == dead
    assert result["warnings"][-1].startswith("took over the lock of run %s:%d:123 by nvidia@%s" % (host, dead, host))
    assert result["warnings"][-1].endswith("(its ansible-playbook process is gone)")
    assert held_by(lock)["run"] == action.run_id(os.getpid(), host)


@pytest.mark.parametrize("alive", ["running", "other controller"])
def test_the_action_refuses_a_lock_of_a_live_or_unseen_run(capsys, lock, monkeypatch, alive):
    monkeypatch.setattr(action.os, "getppid", gone_pid)  # this task's run is another one
    host = socket.gethostname() if alive == "running" else "awx"
    holder = {"run": action.run_id(os.getpid(), host), "user": "nvidia", "controller": host, "pid": os.getpid(),
              "playbook": "Converge", "since": 9e9}
    write(lock, holder)
    calls = []
    result = make_action({"path": str(lock)}, capsys, calls).run(task_vars={})
    assert result["failed"] is True and len(calls) == 1
    assert "is held by run %s by nvidia@%s" % (holder["run"], host) in result["msg"]
    assert held_by(lock) == holder
