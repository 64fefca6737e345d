# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One run at a time on a node: who holds the node's run lock, and whether another run may take it.

Standard library only, no I/O: ``spark_lock`` (the module, on the node) reads and writes the lock file, its action
plugin (on the controller) names the run and sees whether a holder's ``ansible-playbook`` process is gone. The lock is
a small JSON file, by default in /run/lock (a reboot clears /run, which ends any lock)::

    {"run": "ctl:4242:1234567", "user": "nvidia", "controller": "ctl", "pid": 4242, "playbook": "Converge",
     "since": 1795000000}
"""

from __future__ import annotations

import json
import math
import time

LOCK = "/run/lock/dgx-spark-specdec.lock"
MAX_AGE = 21600
FIELDS = ("run", "user", "controller", "pid", "playbook", "since")


def parse(text):
    """The holder in a lock file's text, or None when it is not a lock of ours (empty, cut short, not JSON).

    None is what a free lock gives too: the caller, which knows the file exists, treats such a file as stale.
    """
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("run"), str) or not data["run"]:
        return None
    return {key: data.get(key) for key in FIELDS}


def render(holder):
    """The lock file's text for ``holder`` (only the known fields, so parse(render(h)) gives them back)."""
    return json.dumps({key: holder.get(key) for key in FIELDS}, sort_keys=True) + "\n"


def describe(holder, now):
    """"run R by USER@CONTROLLER (playbook P, pid N), started 2026-11-27T01:02:03Z, 12 min ago"."""
    def shown(key):
        value = holder.get(key)
        return "?" if value is None or value == "" else value

    age = _age(holder, now)
    started = "started at an unknown time"
    if age is not None:
        try:
            started = "started %s, %s" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(holder["since"])),
                                          _ago(age))
        except (ValueError, OverflowError, OSError):
            pass  # a start out of the calendar's range: still name the holder
    return "run %s by %s@%s (playbook %s, pid %s), %s" % (
        shown("run"), shown("user"), shown("controller"), shown("playbook"), shown("pid"), started)


def decide(current, me, now, max_age, holder_alive=None):
    """("take", reason) or ("held", reason) for the run ``me`` against the lock's holder ``current``.

    ``current`` None: no lock (the caller words the reason for an unreadable file itself). ``holder_alive``: False
    when the caller saw the holder's ansible-playbook process gone (same controller), True when it saw it running,
    None when it cannot tell. A holder known to be running is never taken over, however old its lock: that is the
    collision the lock is there to prevent; ``max_age`` is for the holders nobody can check (another controller).
    """
    if current is None:
        return "take", "free"
    if current.get("run") == me.get("run"):
        # The same run again (a second play, a retried task): it keeps its lock as it is.
        return "take", "held by this run"
    if holder_alive is False:
        return "take", "took over the lock of %s (its ansible-playbook process is gone)" % describe(current, now)
    if holder_alive is None:
        age = _age(current, now)
        if age is None:
            # Without a start a lock could never be judged fresh, nor ever expire: stale.
            return "take", "took over a stale lock with no start time: %s" % describe(current, now)
        if age > max_age:
            return "take", "took over a stale lock: %s (older than max_age %d s)" % (describe(current, now), max_age)
    return "held", describe(current, now)


def _age(holder, now):
    """Seconds since the holder took the lock, None when its ``since`` is missing or not a number."""
    since = holder.get("since")
    if isinstance(since, bool) or not isinstance(since, (int, float)) or not math.isfinite(since):
        return None
    return now - since


def _ago(seconds):
    # ``since`` and ``now`` are both the node's clock; one stepped back (NTP) is not "in the future".
    seconds = max(0, int(seconds))
    if seconds < 120:
        return "%d s ago" % seconds
    if seconds < 7200:
        return "%d min ago" % (seconds // 60)
    return "%.1f h ago" % (seconds / 3600.0)
