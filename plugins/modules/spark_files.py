#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: spark_files
short_description: Create related directories, files and SSH keys on a node in one call
version_added: 0.2.0
author:
  - DGX Spark speculative-decoding collection maintainers (@dgx-spark)
description:
  - Creates directories and writes small text files (configuration rendered by M(dgx_spark.specdec.specdec_plan)) with
    their owner, group and mode, in one call instead of one task per file, so a run that changes nothing stays quick.
  - Files are written atomically and only when their content, owner, group or mode differ. Directories are created in
    the order given. Reports the paths it changed.
  - Its diff shows the contents of O(files); secrets go in O(secret_files), whose values are hidden.
  - With O(record), every directory, file and key it creates is added to the node's record of what the collection
    created (the teardown removes exactly that), and a directory that existed before and is not in the record keeps
    its owner and mode (it is the user's or the system's; reported in RV(kept)).
extends_documentation_fragment:
  - dgx_spark.specdec.attributes
  - dgx_spark.specdec.attributes.ACTIONGROUP_SPECDEC
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  idempotent:
    support: full
options:
  directories:
    description:
      - Directories to create (parents first), with C(path), C(owner), C(group) and C(mode) (octal string), and
        optionally C(record), a dict added to the record's entry of a directory this call creates (a download's
        C(kind), C(repo) and C(revision)).
    type: list
    elements: dict
    default: []
  files:
    description: Files to write, with C(path), C(content), C(owner), C(group) and C(mode) (octal string), and C(kind),
      how the record lists a file this call creates (default C(file); C(none) leaves it out). Parents must exist or be
      listed in O(directories).
    type: list
    elements: dict
    default: []
  secret_files:
    description:
      - Like O(files), for secrets (the Hugging Face token) - only the contents are hidden (in the task's output and
        in the diff, which shows only that the file changed); paths, owners and modes show as they are.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The file.
        type: path
        required: true
      content:
        description: The secret.
        type: str
        required: true
      mode:
        description: Its mode (octal string).
        type: raw
      owner:
        description: Its owner (default root).
        type: str
      group:
        description: Its group (default the owner's).
        type: str
      kind:
        description: How the record lists it when this call creates it (default C(token); C(none) leaves it out).
        type: str
  record:
    description:
      - The node's record of what the collection created (JSON, root only), for example
        C(/var/lib/dgx-spark-specdec/created.json). Without it nothing is recorded and existing directories get the
        owner and mode asked.
    type: path
  exists:
    description: Paths to report on in RV(exists), for example the markers of completed downloads (read-only).
    type: list
    elements: path
    default: []
  expect:
    description:
      - Files to compare, read-only, with C(path) and C(content) - whether each holds exactly that content is returned
        in RV(matches) (a download's marker names the repository and revision it holds).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The file.
        type: path
        required: true
      content:
        description: The content it should hold.
        type: str
        required: true
      mode:
        description: Ignored (a file's entry of O(files) can be given as it is).
        type: raw
      kind:
        description: Ignored (a file's entry of O(files) can be given as it is).
        type: str
  absent:
    description: Files to remove when present.
    type: list
    elements: path
    default: []
  ssh_keys:
    description:
      - Ed25519 key pairs to generate with C(ssh-keygen) where they are missing, with C(path) (of the private key, 0600,
        owned by root) and C(comment). Existing keys are kept. The private key never leaves the node; the public keys are
        returned in RV(public_keys).
    type: list
    elements: dict
    default: []
"""

EXAMPLES = r"""
---
- name: Write the container's configuration
  dgx_spark.specdec.spark_files:
    directories:
      - {path: /home/nvidia/.dgx-spark, owner: root, mode: "0755"}
    files:
      - {path: /home/nvidia/.dgx-spark/openmpi-hostfile, content: "192.168.200.12 slots=1\n", mode: "0644"}
"""

RETURN = r"""
changed_paths:
  description: The directories and files that were (or in check mode would be) created or changed.
  returned: always
  type: list
  elements: str
  sample: [/home/nvidia/.dgx-spark/openmpi-hostfile]
exists:
  description: Whether each path of O(exists) exists, by path.
  returned: always
  type: dict
  sample: {/home/nvidia/models/Qwen3-235B-A22B-Eagle3/.dgx-spark-complete: true}
matches:
  description: Whether each file of O(expect) holds exactly its content, by path (false when it is missing).
  returned: always
  type: dict
  sample: {/home/nvidia/models/Qwen3-235B-A22B-Eagle3/.dgx-spark-complete: true}
kept:
  description: Existing directories not in the record whose owner or mode differ from the ones asked - left as they are.
  returned: always
  type: list
  elements: str
  sample: [/data]
recorded:
  description: The paths this call added to the record (what it created).
  returned: always
  type: list
  elements: str
  sample: [/home/nvidia/.dgx-spark/hf_token]
public_keys:
  description: The public key of each pair of O(ssh_keys), by private key path (empty in check mode for a key not made yet).
  returned: always
  type: dict
  sample: {/home/nvidia/.dgx-spark/ssh/id_ed25519: "ssh-ed25519 AAAAC3Nza... trtllm-multinode@spark-a"}
"""

import grp
import os
import pwd
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _records


def _ids(module, item):
    owner = item.get("owner") or "root"
    group = item.get("group") or owner
    try:
        uid = pwd.getpwnam(owner).pw_uid
    except KeyError:
        module.fail_json(msg="%s: owner %s does not exist on this node" % (item["path"], owner))
    if item.get("group"):
        try:
            gid = grp.getgrnam(group).gr_gid
        except KeyError:
            module.fail_json(msg="%s: group %s does not exist on this node" % (item["path"], group))
    else:
        gid = pwd.getpwnam(owner).pw_gid
    return uid, gid


def _mode(module, item, default):
    mode = item.get("mode") or default
    if isinstance(mode, int):
        return mode  # an unquoted YAML 0644 arrives as 420, as Ansible's file modules take it
    text = str(mode)
    try:
        return int(text, 8)
    except ValueError:
        return module.fail_json(msg="%s: mode %s is not an octal string such as 0644" % (item["path"], text))


def _precheck(module):
    """Fail before changing anything when an item cannot be applied."""
    planned = set()
    for item in module.params["directories"]:
        path = item.get("path")
        if not path or not os.path.isabs(path):
            module.fail_json(msg="directories: %r is not an absolute path" % path)
        if os.path.lexists(path) and not os.path.isdir(path):
            module.fail_json(msg="directories: %s exists and is not a directory" % path)
        planned.add(os.path.normpath(path))
    for item in module.params["files"] + module.params["secret_files"]:
        path = item.get("path")
        if not path or not os.path.isabs(path):
            module.fail_json(msg="files: %r is not an absolute path" % path)
        if os.path.isdir(path) and not os.path.islink(path):
            module.fail_json(msg="%s is a directory" % path)
        parent = os.path.dirname(path)
        # In check mode a missing directory is only a prediction: an earlier task would have created it.
        if not os.path.isdir(parent) and os.path.normpath(parent) not in planned and not module.check_mode:
            module.fail_json(msg="%s: the directory %s does not exist" % (path, parent))
    for path in module.params["absent"]:
        if not os.path.isabs(path):
            module.fail_json(msg="absent: %r is not an absolute path" % path)
        if os.path.isdir(path) and not os.path.islink(path):
            module.fail_json(msg="absent: %s is a directory; only files are removed" % path)


def _missing_dirs(path):
    """path and its missing parents, outermost first."""
    missing = []
    probe = path
    while not os.path.isdir(probe):
        missing.append(probe)
        probe = os.path.dirname(probe)
    return list(reversed(missing))


def _makedirs(path, uid, gid, mode):
    """Create path and its missing parents, all with the owner and mode asked for the path."""
    for directory in _missing_dirs(path):
        os.mkdir(directory)
        os.chown(directory, uid, gid)
        os.chmod(directory, mode)


def _holds(path, content):
    try:
        with open(path, "rb") as handle:
            return handle.read() == to_bytes(content)
    except OSError:
        return False


def _needs_attrs(path, uid, gid, mode):
    st = os.lstat(path)
    return (st.st_uid, st.st_gid, st.st_mode & 0o7777) != (uid, gid, mode)


def main():
    module = AnsibleModule(
        argument_spec=dict(directories=dict(type="list", elements="dict", default=[]),
                           files=dict(type="list", elements="dict", default=[]),
                           # Only the contents are secret: the paths, owners and modes show (and are not masked
                           # wherever else they appear in the output).
                           secret_files=dict(type="list", elements="dict", default=[], no_log=False, options=dict(
                               path=dict(type="path", required=True), content=dict(type="str", required=True, no_log=True),
                               mode=dict(type="raw"), owner=dict(type="str"), group=dict(type="str"),
                               kind=dict(type="str"))),
                           record=dict(type="path"),
                           exists=dict(type="list", elements="path", default=[]),
                           expect=dict(type="list", elements="dict", default=[], options=dict(
                               path=dict(type="path", required=True), content=dict(type="str", required=True),
                               mode=dict(type="raw"), kind=dict(type="str"))),
                           absent=dict(type="list", elements="path", default=[]),
                           ssh_keys=dict(type="list", elements="dict", default=[], no_log=False)),
        supports_check_mode=True,
    )
    _precheck(module)
    changed = []
    diffs = []
    record_path = module.params["record"]
    record = _records.load(record_path) if record_path else None
    created = {}  # path -> record entry, for what this call creates
    kept = []
    for item in module.params["directories"]:
        path = os.path.normpath(item["path"])
        uid, gid = _ids(module, item)
        mode = _mode(module, item, "0755")
        if not os.path.isdir(path):
            changed.append(path)
            diffs.append(dict(before_header=path, after_header=path, before="(absent)\n", after="(directory)\n"))
            for directory in _missing_dirs(path):
                created[directory] = {"kind": "directory"}
            created[path] = dict({"kind": "directory"}, **(item.get("record") or {}))
            if not module.check_mode:
                _makedirs(path, uid, gid, mode)
        elif record is not None and path not in record:
            # A directory that was there before: the user's (or the system's). Its owner and mode stay as they are.
            if _needs_attrs(path, uid, gid, mode):
                kept.append(path)
        elif _needs_attrs(path, uid, gid, mode):
            changed.append(path)
            if not module.check_mode:
                os.chown(path, uid, gid)
                os.chmod(path, mode)
    plain = len(module.params["files"])  # the rest are secret_files
    for index, item in enumerate(module.params["files"] + module.params["secret_files"]):
        path = item["path"]
        content = to_bytes(item.get("content") or "")
        uid, gid = _ids(module, item)
        mode = _mode(module, item, "0644")
        current = None
        if not os.path.islink(path):  # a symlink is replaced by a regular file: its target is not ours to write
            try:
                with open(path, "rb") as handle:
                    current = handle.read()
            except FileNotFoundError:
                pass
        kind = item.get("kind") or ("file" if index < plain else "token")
        if not os.path.lexists(path) and kind != "none":
            created[path] = {"kind": kind}
        if current != content:
            changed.append(path)
            if index < plain:
                diffs.append(dict(before_header=path, after_header=path,
                                  before=to_native(current, errors="replace") if current is not None else "",
                                  after=to_native(content, errors="replace")))
            else:
                diffs.append(dict(before_header=path, after_header=path, before="(secret)\n" if current else "",
                                  after="(secret, changed)\n"))
            if not module.check_mode:
                parent = os.path.dirname(path)
                fd, tmp = tempfile.mkstemp(prefix=".spark_files.", dir=parent)
                try:
                    with os.fdopen(fd, "wb") as handle:
                        handle.write(content)
                    os.chown(tmp, uid, gid)
                    os.chmod(tmp, mode)
                    os.replace(tmp, path)  # same directory: atomic; keeps the owner and mode set above
                finally:
                    if os.path.exists(tmp):
                        os.unlink(tmp)
        elif _needs_attrs(path, uid, gid, mode):
            changed.append(path)
            if not module.check_mode:
                os.chown(path, uid, gid)
                os.chmod(path, mode)
    for path in module.params["absent"]:
        if os.path.lexists(path):
            changed.append(path)
            diffs.append(dict(before_header=path, after_header=path, before="(present)\n", after="(absent)\n"))
            if not module.check_mode:
                os.unlink(path)
    public_keys = {}
    for item in module.params["ssh_keys"]:
        path = item.get("path")
        if not path or not os.path.isabs(path):
            module.fail_json(msg="ssh_keys: %r is not an absolute path" % path)
        if not os.path.exists(path) or not os.path.exists(path + ".pub"):
            changed.append(path)
            if module.check_mode:
                public_keys[path] = ""
                continue
            for stale in (path, path + ".pub"):
                created[stale] = {"kind": "key"}
                if os.path.lexists(stale):
                    os.unlink(stale)
            module.run_command(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", item.get("comment") or "",
                                "-f", path], check_rc=True)
        with open(path + ".pub", encoding="utf-8") as handle:
            public_keys[path] = handle.read().strip()
    recorded = {p: e for p, e in created.items() if record is not None and record.get(p) != e}
    if recorded and not module.check_mode:
        record.update(recorded)
        _records.save(record, record_path)
    result = dict(changed=bool(changed), changed_paths=changed, public_keys=public_keys, kept=kept,
                  recorded=sorted(recorded), exists={path: os.path.exists(path) for path in module.params["exists"]},
                  matches={item["path"]: _holds(item["path"], item["content"]) for item in module.params["expect"]})
    if module._diff and diffs:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
