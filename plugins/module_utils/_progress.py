# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Progress of the long waits, in lines a person reads: the image pull, the model downloads, the server's loading.

On a DGX Spark these are most of a run: the TensorRT-LLM image is about 20 GB, a model download takes up to two hours
and a 120-235B model loads for up to 30 minutes. The node's module (``spark_progress``) reads where each wait stands -
the ``docker pull`` log's layers, the bytes a download has on disk and ``hf download``'s file count, the server
container's state, health answer and log - and the controller's action plugin turns two readings into a line with a
rate and an estimate. Pure Python, standard library only.
"""

from __future__ import annotations

import calendar
import os
import re

# `docker pull` without a terminal prints one line per layer and state change ("<12 hex>: Pull complete").
_LAYER = re.compile(r"^([0-9a-f]{12,64}): (.+?)\s*$")
_LAYER_DONE = ("Pull complete", "Already exists")
_LAYER_FETCHED = _LAYER_DONE + ("Download complete", "Verifying Checksum", "Extracting")
# `hf download` (tqdm, also without a terminal): "Fetching 12 files:  42%|####      | 5/12 [...]".
_FETCHING = re.compile(r"Fetching (\d+) files:.*?\|\s*(\d+)/(\d+)")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Lines that say nothing about the load: access log lines of the health and metrics polls, progress bar redraws.
_NOISE = re.compile(r'"(GET|HEAD|POST) /(health|v2/health|metrics|prometheus/metrics|perf_metrics|v1/models)|^[\s|#=.-]*$')
LINE_MAX = 160
_BOOKKEEPING = (".metadata", ".lock")


def pull_progress(log_text):
    """Layers of a ``docker pull`` log: ``{layers, done, fetched, last}`` (last: its last line)."""
    layers = {}
    last = ""
    for line in (log_text or "").replace("\r", "\n").splitlines():
        line = line.strip()
        if not line:
            continue
        last = line
        match = _LAYER.match(line)
        if match and match.group(2) not in ("Waiting",):
            layers[match.group(1)] = match.group(2)
        elif match:
            layers.setdefault(match.group(1), match.group(2))
    return {"layers": len(layers), "done": sum(1 for s in layers.values() if s in _LAYER_DONE),
            "fetched": sum(1 for s in layers.values() if s in _LAYER_FETCHED), "last": clip(last)}


def files_progress(log_text):
    """``hf download``'s last "Fetching N files ... done/total": ``(done, total)``, or None."""
    found = None
    for match in _FETCHING.finditer(log_text or ""):
        found = (int(match.group(2)), int(match.group(3)))
    return found


def dir_bytes(path, since=None):
    """Bytes of the regular files under ``path``, of those modified at or after ``since`` (seconds) when given.

    Symbolic links are not followed (the hub cache's snapshots link to its blobs, which are counted once); the
    ``*.incomplete`` files of a download in progress are counted, ``hf download``'s own ``*.metadata`` and ``*.lock``
    files (in ``.cache/huggingface`` of a local directory) are not. ``since`` - the download's start - leaves out what
    an earlier revision or another model left in the same directory.
    """
    total = 0
    for root, dirs, files in os.walk(path, followlinks=False):
        for name in files:
            if name.endswith(_BOOKKEEPING):
                continue
            try:
                stat = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if not os.path.islink(os.path.join(root, name)) and (since is None or stat.st_mtime >= since):
                total += stat.st_size
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
    return total


def docker_time(text):
    """Seconds since the epoch of a time Docker reports (``2026-11-27T04:43:40.784642148Z``); None for its zero
    time or anything else."""
    match = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z$", text or "")
    if not match or match.group(1) == "0001":
        return None
    fields = [int(g) for g in match.groups()[:6]]
    fraction = float("0." + match.group(7)) if match.group(7) else 0.0
    return calendar.timegm(tuple(fields) + (0, 0, 0)) + fraction


def meaningful_line(log_text):
    """The server log's last line that says something about its state (not a health poll), clipped."""
    for line in reversed((log_text or "").replace("\r", "\n").splitlines()):
        line = _ANSI.sub("", line).strip()
        if line and not _NOISE.search(line):
            return clip(line)
    return ""


def clip(text, limit=LINE_MAX):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def size(num):
    """``3.2 GiB``, ``512.0 MiB``, ``12.0 KiB``, ``0 B``."""
    num = float(num or 0)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(num) < 1024 or unit == "GiB":
            return "%d B" % num if unit == "B" else "%.1f %s" % (num, unit)
        num /= 1024.0
    return "%.1f GiB" % num  # not reached


def duration(seconds):
    """``1h02m``, ``5m10s``, ``40s``."""
    seconds = max(0, int(round(seconds or 0)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return "%dh%02dm" % (hours, minutes)
    if minutes:
        return "%dm%02ds" % (minutes, secs)
    return "%ds" % secs


def rate(first, now):
    """Bytes per second between two readings ``(seconds, bytes)``; None until there is a span to measure."""
    if first is None or now is None or now[0] - first[0] < 1:
        return None
    return max(0.0, (now[1] - first[1]) / float(now[0] - first[0]))


def download_line(label, done_bytes, expected, speed, files=None):
    """One download: what is on disk of what is expected, the rate, the estimate, the files done."""
    parts = []
    if expected:
        percent = min(100, int(100 * done_bytes / float(expected)))
        parts.append("%s of %s (%d%%)" % (size(done_bytes), size(expected), percent))
    else:
        parts.append("%s so far (total unknown)" % size(done_bytes))
    if speed is not None:
        parts.append("%s/s" % size(speed))
        if expected and speed > 0 and done_bytes < expected:
            parts.append("about %s left" % duration((expected - done_bytes) / speed))
    if files:
        parts.append("%d/%d files" % tuple(files))
    return "%s: %s" % (label, ", ".join(parts))


def pull_line(label, progress, elapsed, timeout):
    if progress.get("layers"):
        what = "%d of %d layers done (%d downloaded)" % (progress["done"], progress["layers"], progress["fetched"])
    else:
        what = progress.get("last") or "starting"
    return "%s: %s, %s of %s" % (label, what, duration(elapsed), duration(timeout))


def load_line(label, state, elapsed, timeout):
    """The server's loading: its container state, the health answer, the last meaningful log line."""
    bits = ["%s of %s" % (duration(elapsed), duration(timeout))]
    if not state.get("exists", True):
        bits.append("container not created yet")
    elif not state.get("running"):
        bits.append("container %s" % (state.get("status") or "not running"))
    if state.get("restarts"):
        bits.append("restarted %d time(s)" % state["restarts"])
    if state.get("health") is not None:
        bits.append("health %s" % state["health"])
    line = "%s: loading, %s" % (label, ", ".join(bits))
    if state.get("last"):
        line += "; last log: %s" % state["last"]
    return line
