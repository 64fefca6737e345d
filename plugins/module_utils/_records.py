# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What the collection created on a node, recorded on that node, so the teardown removes exactly that.

Standard library only. The record is one JSON file, root's: {"version": 1, "paths": {path: {"kind": ...}}}.
``spark_files`` adds every directory, file and key it creates (never one that was there before: the user's), and the
downloads add the directory they created with its repository and revision. ``spark_facts`` reads it (the plan then
leaves the owner and mode of directories it did not create alone), ``spark_cleanup`` removes what it lists.
"""

import json
import os
import tempfile

RECORD = "/var/lib/dgx-spark-specdec/created.json"
# Removed by the teardown always (what only the collection uses) or only when the models are asked to go.
KINDS = ("directory", "file", "key", "token", "tree", "download")


def load(path=RECORD):
    """The record's paths ({} when there is none or it cannot be read: nothing is then known to be ours)."""
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    paths = data.get("paths") if isinstance(data, dict) else None
    return {str(k): dict(v) for k, v in (paths or {}).items() if isinstance(v, dict)}


def save(paths, path=RECORD):
    """Write the record atomically (root only reads and writes it: it names the token file)."""
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd, tmp = tempfile.mkstemp(prefix=".created.", dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump({"version": 1, "paths": paths}, handle, indent=1, sort_keys=True)
            handle.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def cleanup_plan(paths, remove_models, exists=os.path.lexists, isdir=os.path.isdir, listdir=os.listdir):
    """(remove, keep) for the teardown: files and keys of ours go; the downloads of ours go when asked; directories of
    ours go deepest first once nothing else is left in them (the user's files keep them, and are reported).

    ``remove``: [(path, kind)] in order; ``keep``: [(path, why)].
    """
    remove, keep = [], []
    gone = set()
    for path, entry in sorted(paths.items()):
        kind = entry.get("kind")
        if not exists(path):
            gone.add(path)
            continue
        if kind == "download":
            if remove_models:
                remove.append((path, kind))
                gone.add(path)
            else:
                keep.append((path, "a download (specdec_teardown_remove_models=true removes it)"))
        elif kind in ("file", "key", "token", "tree"):
            # A tree: a directory only the collection fills (Triton's repository copy, the fetched encodings).
            remove.append((path, kind))
            gone.add(path)
    # Directories: deepest first, each once what it holds is gone (only entries the teardown removes count).
    for path in sorted((p for p, e in paths.items() if e.get("kind") == "directory"), key=len, reverse=True):
        if not exists(path) or not isdir(path):
            continue
        left = [os.path.join(path, name) for name in listdir(path)]
        others = sorted(p for p in left if p not in gone and not _under_any(p, gone))
        users = [p for p in others if p not in paths]
        if users:
            keep.append((path, "holds %d entr%s the collection did not create (e.g. %s)"
                         % (len(users), "y" if len(users) == 1 else "ies", os.path.basename(users[0]))))
        elif others:
            keep.append((path, "holds what the collection keeps (%s)" % ", ".join(os.path.basename(p) for p in others)))
        else:
            remove.append((path, "directory"))
            gone.add(path)
    return remove, keep


def _under_any(path, roots):
    return any(path.startswith(root.rstrip("/") + "/") for root in roots)
