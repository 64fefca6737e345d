# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The run lock's rules: reading a lock file, naming its holder, and whether another run may take it."""

from __future__ import annotations

import json

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _lock

ME = {"run": "ctl:100:5", "user": "nvidia", "controller": "ctl", "pid": 100, "playbook": "Converge"}
# Took the lock at 1000 s after the epoch: 1970-01-01T00:16:40Z.
OTHER = {"run": "awx:7:9", "user": "awx", "controller": "awx", "pid": 7, "playbook": "Fleet", "since": 1000}


def test_a_lock_file_reads_back_as_its_holder():
    assert _lock.parse(_lock.render(OTHER)) == OTHER
    # Unknown keys are dropped, missing ones read as None.
    assert _lock.parse(json.dumps({"run": "r", "extra": 1})) == {"run": "r", "user": None, "controller": None,
                                                                 "pid": None, "playbook": None, "since": None}
    assert json.loads(_lock.render(dict(OTHER, extra=1))) == OTHER


@pytest.mark.parametrize("text", ["", "garbage", "{", "[1]", "null", "{}", '{"run": ""}', '{"run": 5}',
                                  '{"user": "nvidia"}', None])
def test_garbage_is_no_holder(text):
    assert _lock.parse(text) is None


def test_describe_names_the_holder_its_start_and_age():
    assert _lock.describe(OTHER, 1000 + 12 * 60 + 5) == (
        "run awx:7:9 by awx@awx (playbook Fleet, pid 7), started 1970-01-01T00:16:40Z, 12 min ago")
    assert _lock.describe(OTHER, 1042).endswith(", 42 s ago")
    assert _lock.describe(OTHER, 1000 + 3 * 3600).endswith(", 3.0 h ago")
    # The node's clock stepped back: not "-5 s ago".
    assert _lock.describe(OTHER, 995).endswith(", 0 s ago")


@pytest.mark.parametrize("since", [None, "yesterday", True, float("nan"), 9e300])
def test_describe_without_a_usable_start_still_names_the_holder(since):
    text = _lock.describe(dict(OTHER, since=since, user=None, playbook=""), 2000)
    assert text == "run awx:7:9 by ?@awx (playbook ?, pid 7), started at an unknown time"


def test_a_free_lock_is_taken():
    assert _lock.decide(None, ME, 2000, 600) == ("take", "free")


def test_a_fresh_lock_of_another_run_is_held_and_named():
    verdict, reason = _lock.decide(OTHER, ME, 1100, 600)
    assert verdict == "held"
    assert reason == "run awx:7:9 by awx@awx (playbook Fleet, pid 7), started 1970-01-01T00:16:40Z, 100 s ago"
    # Exactly max_age old is still held; a second more is stale.
    assert _lock.decide(OTHER, ME, 1600, 600)[0] == "held"


def test_the_same_run_keeps_its_lock_however_old():
    assert _lock.decide(dict(ME, since=10), ME, 10 ** 9, 600) == ("take", "held by this run")


def test_a_lock_older_than_max_age_is_taken_over_naming_it():
    verdict, reason = _lock.decide(OTHER, ME, 1601, 600)
    assert verdict == "take"
    assert reason.startswith("took over a stale lock: run awx:7:9 by awx@awx")
    assert "10 min ago" in reason and "older than max_age 600 s" in reason


def test_a_lock_without_a_start_is_stale():
    verdict, reason = _lock.decide(dict(OTHER, since=None), ME, 1100, 600)
    assert verdict == "take" and "no start time" in reason and "awx:7:9" in reason


def test_a_holder_seen_gone_is_taken_over_and_one_seen_running_never():
    verdict, reason = _lock.decide(OTHER, ME, 1100, 600, holder_alive=False)
    assert verdict == "take"
    assert reason == ("took over the lock of run awx:7:9 by awx@awx (playbook Fleet, pid 7), started "
                      "1970-01-01T00:16:40Z, 100 s ago (its ansible-playbook process is gone)")
    # Seen running: held even past max_age (the collision the lock prevents).
    assert _lock.decide(OTHER, ME, 10 ** 9, 600, holder_alive=True)[0] == "held"
