"""Unit tests for the node's run lock: who holds it, when another run may take it, and the module on a file."""

import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgx_spark.specdec.plugins.action import spark_lock as action
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _lock
from ansible_collections.dgx_spark.specdec.plugins.modules import spark_lock

ME = {"run": "ctl:100:5", "user": "nvidia", "controller": "ctl", "pid": 100, "playbook": "Converge"}
OTHER = {"run": "awx:7:9", "user": "awx", "controller": "awx", "pid": 7, "playbook": "Converge", "since": 1000.0}


def test_free_held_same_run_stale_and_taken_over():
    assert _lock.decide(None, ME, 2000, 600) == ("take", "free")
    assert _lock.decide(dict(ME, since=10), ME, 2000, 600) == ("take", "held by this run")
    verdict, reason = _lock.decide(OTHER, ME, 1100, 600)
    assert verdict == "held"
    assert reason == ("run awx:7:9 by awx@awx (playbook Converge, pid 7), started 1970-01-01T00:16:40Z, 100 s ago")
    assert _lock.decide(OTHER, ME, 1000 + 601, 600)[0] == "take"
    assert "older than 600 s" in _lock.decide(OTHER, ME, 1000 + 601, 600)[1]
    assert _lock.decide(OTHER, ME, 1100, 600, take_over="awx:7:9")[1].endswith("(its ansible-playbook is gone)")
    assert _lock.decide(OTHER, ME, 1100, 600, take_over="awx:8:9")[0] == "held"


def test_parse_and_render():
    assert _lock.parse(_lock.render(dict(OTHER, extra=1))) == OTHER
    assert _lock.parse("garbage") is None and _lock.parse("{}") is None and _lock.parse("[1]") is None


def run(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            spark_lock.main()
    return info.value.code, json.loads(capsys.readouterr().out)


def test_the_module_takes_refuses_renews_and_releases(capsys, tmp_path):
    path = str(tmp_path / "lock")
    rc, result = run(capsys, path=path, holder=ME)
    assert rc == 0 and result["changed"] and _lock.parse(open(path).read())["run"] == ME["run"]
    rc, result = run(capsys, path=path, holder=ME)
    assert rc == 0 and not result["changed"] and result["reason"] == "held by this run"
    rc, result = run(capsys, path=path, holder=dict(OTHER))
    assert rc == 1 and "is held by run ctl:100:5 by nvidia@ctl" in result["msg"]
    assert "this run stops before changing anything" in result["msg"] and result["holder"]["run"] == ME["run"]
    # Another run never releases it; this one does.
    rc, result = run(capsys, path=path, holder=OTHER, state="absent")
    assert rc == 0 and not result["changed"] and os.path.exists(path)
    rc, result = run(capsys, path=path, holder=ME, state="absent")
    assert rc == 0 and result["changed"] and not os.path.exists(path)


def test_check_mode_writes_nothing_and_still_refuses(capsys, tmp_path):
    path = str(tmp_path / "lock")
    rc, result = run(capsys, path=path, holder=ME, _ansible_check_mode=True)
    assert rc == 0 and result["changed"] and not os.path.exists(path)
    with open(path, "w") as handle:
        handle.write(_lock.render(dict(OTHER, since=9e12)))
    rc, result = run(capsys, path=path, holder=ME, _ansible_check_mode=True)
    assert rc == 1


def test_a_stale_or_unreadable_lock_is_taken_over(capsys, tmp_path):
    path = str(tmp_path / "lock")
    with open(path, "w") as handle:
        handle.write(_lock.render(OTHER))  # since 1970: older than any max_age
    rc, result = run(capsys, path=path, holder=ME)
    assert rc == 0 and result["taken_over"]["run"] == OTHER["run"]
    with open(path, "w") as handle:
        handle.write("not json")
    rc, result = run(capsys, path=path, holder=dict(ME, run="ctl:101:5"))
    assert rc == 0 and result["reason"] == "took over an unreadable lock file"


def test_two_runs_racing_for_a_free_lock_cannot_both_win(capsys, tmp_path, monkeypatch):
    path = str(tmp_path / "lock")
    real = spark_lock._create

    def other_run_first(where, text):
        real(where, _lock.render(dict(OTHER, since=9e12)))  # the other run creates it between our read and write
        return real(where, text)

    monkeypatch.setattr(spark_lock, "_create", other_run_first)
    rc, result = run(capsys, path=path, holder=ME)
    assert rc == 1 and "held by run awx:7:9" in result["msg"]


def test_the_action_names_the_run_and_sees_a_gone_process():
    me = action.run_id(os.getpid(), "ctl")
    assert me.startswith("ctl:%d:" % os.getpid()) and me == action.run_id(os.getpid(), "ctl")
    holder = {"controller": "ctl", "pid": os.getpid(), "run": me}
    assert not action.process_gone(holder, "ctl")
    assert action.process_gone(dict(holder, pid=2 ** 22 + 12345, run="ctl:%d:1" % (2 ** 22 + 12345)), "ctl")
    # Same pid, another start time: the process was replaced.
    assert action.process_gone(dict(holder, run="ctl:%d:1" % os.getpid()), "ctl")
    # Another controller's process cannot be seen from here.
    assert not action.process_gone(dict(holder, controller="awx", run="x"), "ctl")
