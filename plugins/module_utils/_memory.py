# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Memory checks for a DGX Spark, whose CPU and GPU share one pool of memory (UMA, about 128 GB).

This is a private module_utils file (leading underscore): its API may change
without notice. It holds the pure logic of the ``spark_memory`` module so that
it can be unit-tested without Ansible: reading ``/proc/meminfo``, measuring the
weights on disk, deciding whether a model fits, dropping the page cache and the
load-time guard loop (with injected clock, sleep, readiness probe and dropper).
Standard library only.
"""

from __future__ import annotations

import os
import stat

GIB = 1024 ** 3
DEFAULT_HEADROOM_BYTES = 8 * GIB

SOURCE_MEASURED = "measured"
SOURCE_ESTIMATE = "estimate"
SOURCE_UNKNOWN = "unknown"

# Option names quoted in messages when the caller does not name its own variables (option ``names``).
DEFAULT_NAMES = {
    "weights": "weights",
    "headroom": "headroom_bytes",
    "check": "check",
    "estimate": "estimate_bytes",
}
NAME_KEYS = tuple(DEFAULT_NAMES)


class MeminfoError(ValueError):
    """/proc/meminfo lacks a line the check needs."""


def parse_meminfo(text):
    """The text of /proc/meminfo -> {field: value}; values given in kB are returned in bytes.

    Lines without a unit (``HugePages_Total: 0``) keep their number; lines that do not parse are skipped.
    """
    info = {}
    for line in (text or "").splitlines():
        name, sep, rest = line.partition(":")
        if not sep or not name.strip():
            continue
        parts = rest.split()
        if not parts:
            continue
        try:
            value = int(parts[0])
        except ValueError:
            continue
        if len(parts) > 1 and parts[1].lower() == "kb":
            value *= 1024
        info[name.strip()] = value
    return info


def memory_of(info, where="/proc/meminfo"):
    """Parsed meminfo -> {total_bytes, available_bytes, free_bytes}; raises MeminfoError when a line is missing."""
    missing = [name for name in ("MemTotal", "MemAvailable", "MemFree") if name not in info]
    if missing:
        raise MeminfoError("%s has no %s line%s (MemAvailable needs Linux 3.14 or later), so the memory cannot be checked"
                           % (where, " and no ".join(missing), "s" if len(missing) > 1 else ""))
    return {"total_bytes": info["MemTotal"], "available_bytes": info["MemAvailable"], "free_bytes": info["MemFree"]}


def tree_size(path):
    """Bytes of the regular files at ``path`` (a file or a directory tree); None when ``path`` does not exist.

    The tree is walked without following symbolic links and every entry is read with lstat, so the
    ``snapshots/`` links of a Hugging Face hub cache to its ``blobs/`` count once; hard links count once too.
    ``path`` itself may be a link to the directory or file. Raises OSError when a directory cannot be read.
    """
    if not os.path.exists(path):
        return None
    if not os.path.isdir(path):
        st = os.stat(path)
        return st.st_size if stat.S_ISREG(st.st_mode) else 0
    errors = []
    seen = set()
    total = 0
    for root, dummy, files in os.walk(path, onerror=errors.append, followlinks=False):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except FileNotFoundError:
                continue  # removed while walking (a download finishing)
            if not stat.S_ISREG(st.st_mode):
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen:
                continue
            seen.add(key)
            total += st.st_size
    if errors:
        raise errors[0]
    return total


def gib(value):
    """Bytes -> ``61.2 GiB`` (one decimal); None -> ``unknown``."""
    if value is None:
        return "unknown"
    return "%.1f GiB" % (value / GIB)


def _names(names):
    merged = dict(DEFAULT_NAMES)
    for key, value in (names or {}).items():
        if value:
            merged[key] = str(value)
    return merged


def _share_text(share):
    if share is None or share >= 1:
        return ""
    return ", %s%% of them on this node" % ("%.1f" % (share * 100)).rstrip("0").rstrip(".")


def fit(against_bytes, weights_bytes, headroom_bytes, against="MemAvailable", node="", source=SOURCE_MEASURED,
        share=1.0, names=None):
    """Whether the weights plus the headroom fit in ``against_bytes``.

    ``weights_bytes`` is this node's share of the weights already (None when unknown: only the headroom counts).
    ``against`` names the figure compared with (``MemAvailable``, or ``MemTotal`` while the server is serving).

    Returns (fits, needed_bytes, message); the message explains the shortfall and is empty when it fits.
    """
    needed = int(headroom_bytes) + int(weights_bytes or 0)
    if needed <= against_bytes:
        return True, needed, ""
    n = _names(names)
    where = "memory on %s: " % node if node else "memory: "
    head = "%s%s is %s, but " % (where, against, gib(against_bytes))
    if weights_bytes is None or source == SOURCE_UNKNOWN:
        body = ("%s of headroom (%s) is needed even before the weights, whose size is unknown (%s not found on disk "
                "and no %s given). " % (gib(headroom_bytes), n["headroom"], n["weights"], n["estimate"]))
    else:
        how = "measured on disk" if source == SOURCE_MEASURED else "estimated with %s, not on disk yet" % n["estimate"]
        body = ("the weights need %s (%s, %s%s) plus %s of headroom (%s): %s. "
                % (gib(weights_bytes), n["weights"], how, _share_text(share), gib(headroom_bytes), n["headroom"],
                   gib(needed)))
    if against == "MemTotal":
        advice = ("The model does not fit in this node's memory even with nothing else running: serve a smaller model "
                  "or spread it over more nodes; %s: warn starts it anyway" % n["check"])
    else:
        advice = ("Free memory (stop other servers or containers; dropping the page cache helps only with what it "
                  "holds), or serve a smaller model; %s: warn starts it anyway" % n["check"])
    return False, needed, head + body + advice


def summary(against, against_bytes, weights_bytes, source, headroom_bytes, fits):
    """One line such as ``MemAvailable 110.0 GiB, weights 61.2 GiB (measured), headroom 8.0 GiB: fits``."""
    if weights_bytes is None or source == SOURCE_UNKNOWN:
        weights = "weights unknown"
    else:
        weights = "weights %s (%s)" % (gib(weights_bytes), source)
    verdict = "not checked" if fits is None else "fits" if fits else "does not fit"
    return "%s %s, %s, headroom %s: %s" % (against, gib(against_bytes), weights, gib(headroom_bytes), verdict)


def drop_caches(path, sync=None):
    """``sync`` then write ``3`` to ``path`` (/proc/sys/vm/drop_caches): free the page cache, dentries and inodes.

    Returns (done, error): error is empty when done, else a sentence naming the reason
    (``... is not writable here (Read-only file system): the page cache was not dropped``).
    """
    (sync or os.sync)()
    try:
        with open(path, "w", encoding="ascii") as handle:
            handle.write("3\n")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return False, "%s is not writable here (%s): the page cache was not dropped" % (path, reason)
    return True, ""


def guard_loop(read_available, drop, is_ready, sleep, clock, below, interval, timeout, log=None):
    """Watch a model load: until ``is_ready()`` or ``timeout`` seconds passed, every ``interval`` seconds read
    MemAvailable and ``drop()`` the page cache when it is below ``below`` bytes.

    ``drop()`` returns (done, error) like drop_caches; the first failed drop ends the guard (it cannot do its job).
    Returns {drops, seconds, ready, min_available_bytes, error}.
    """
    start = clock()
    drops = 0
    lowest = None
    error = ""
    ready = False
    while True:
        if is_ready():
            ready = True
            break
        available = read_available()
        lowest = available if lowest is None else min(lowest, available)
        if available < below:
            done, error = drop()
            if not done:
                if log:
                    log("guard: MemAvailable %s is below %s, but %s" % (gib(available), gib(below), error))
                break
            drops += 1
            if log:
                log("guard: MemAvailable %s is below %s: page cache dropped (drop %d)" % (gib(available), gib(below), drops))
        elapsed = clock() - start
        if elapsed >= timeout:
            break
        sleep(min(interval, timeout - elapsed))
    return {"drops": drops, "seconds": int(round(clock() - start)), "ready": ready, "min_available_bytes": lowest,
            "error": error}
