# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One run at a time on a node: who holds the node's run lock, and whether another run may take it.

Standard library only. The lock is a small JSON file in /run/lock (gone after a reboot):
{"run", "user", "controller", "pid", "playbook", "since"}. ``spark_lock`` (the module, on the node) reads and writes
it; its action plugin (on the controller) names the run and sees whether a holder's ansible-playbook is gone.
"""

import json
import time

LOCK = "/run/lock/dgx-spark-specdec.lock"
FIELDS = ("run", "user", "controller", "pid", "playbook", "since")


def parse(text):
    """The holder in a lock file's text, None when it is not a lock of ours (an unreadable one is stale)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not data.get("run"):
        return None
    return {key: data.get(key) for key in FIELDS}


def render(holder):
    return json.dumps({key: holder.get(key) for key in FIELDS}, sort_keys=True) + "\n"


def describe(holder, now=None):
    """"run R by USER@CONTROLLER (playbook P, pid N), started 2026-11-27T01:02:03Z, 12 min ago"."""
    now = time.time() if now is None else now
    since = holder.get("since")
    try:
        since = float(since)
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since))
        age = _age(now - since)
    except (TypeError, ValueError):
        started, age = "at an unknown time", "age unknown"
    return "run %s by %s@%s (playbook %s, pid %s), started %s, %s" % (
        holder.get("run"), holder.get("user") or "?", holder.get("controller") or "?", holder.get("playbook") or "?",
        holder.get("pid") if holder.get("pid") is not None else "?", started, age)


def _age(seconds):
    seconds = max(0, int(seconds))
    if seconds < 120:
        return "%d s ago" % seconds
    if seconds < 7200:
        return "%d min ago" % (seconds // 60)
    return "%.1f h ago" % (seconds / 3600.0)


def decide(current, me, now, max_age, take_over=None):
    """("take", reason) or ("held", reason) for ``me`` against the lock's ``current`` holder (None: free)."""
    if current is None:
        return "take", "free"
    if current.get("run") == me.get("run"):
        return "take", "held by this run"
    if take_over and current.get("run") == take_over:
        return "take", "took over the lock of %s (its ansible-playbook is gone)" % describe(current, now)
    try:
        age = now - float(current.get("since"))
    except (TypeError, ValueError):
        age = max_age + 1
    if age > max_age:
        return "take", "took over the lock of %s (older than %d s)" % (describe(current, now), max_age)
    return "held", describe(current, now)
