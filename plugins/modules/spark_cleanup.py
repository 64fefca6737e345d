#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: spark_cleanup
short_description: Remove exactly what the collection created on a node, as its record lists it
version_added: 0.11.0
author:
  - DGX Spark speculative-decoding collection maintainers (@dgx-spark)
description:
  - Reads the node's record of what the collection created (written by M(dgx_spark.specdec.spark_files) as it
    creates directories, files, keys, the token file and the downloads' directories) and removes that, and nothing
    else - a directory or file that was there before the collection is never in the record.
  - Files, keys and the token file go. The downloads go only with O(remove_models=true). A directory the collection
    created goes once it is empty of everything else - one that still holds files of the user's stays, and is
    reported in RV(kept) with the reason.
  - The record keeps what was kept, so a later teardown with O(remove_models=true) still knows the downloads.
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
  record:
    description: The node's record.
    type: path
    default: /var/lib/dgx-spark-specdec/created.json
  remove_models:
    description: Also remove the downloads the collection made (the Hugging Face cache entries and draft directories it created).
    type: bool
    default: false
"""

EXAMPLES = r"""
---
- name: Remove what the collection created, the downloads included
  dgx_spark.specdec.spark_cleanup:
    remove_models: true
  register: cleanup

- name: Say what stayed
  ansible.builtin.debug:
    msg: "{{ cleanup.kept }}"
"""

RETURN = r"""
removed:
  description: What was (or in check mode would be) removed, each with its path and kind.
  returned: always
  type: list
  elements: dict
  sample: [{"path": "/home/nvidia/.dgx-spark/hf_token", "kind": "token"}]
kept:
  description: What the record lists and stays, each with its path and why.
  returned: always
  type: list
  elements: dict
  sample: [{"path": "/home/nvidia/models", "why": "holds 1 entry the collection did not create (e.g. notes.txt)"}]
"""

import os
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _records


def main():
    module = AnsibleModule(
        argument_spec=dict(record=dict(type="path", default=_records.RECORD),
                           remove_models=dict(type="bool", default=False)),
        supports_check_mode=True,
    )
    record_path = module.params["record"]
    paths = _records.load(record_path)
    remove, keep = _records.cleanup_plan(paths, module.params["remove_models"])
    removed = []
    for path, kind in remove:
        removed.append({"path": path, "kind": kind})
        if module.check_mode:
            continue
        try:
            if kind in ("download", "tree") and os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            elif kind == "directory":
                os.rmdir(path)
            else:
                os.unlink(path)
        except OSError as exc:
            module.fail_json(msg="could not remove %s (%s): %s" % (path, kind, exc), removed=removed[:-1])
    left = {p: e for p, e in paths.items() if os.path.lexists(p)} if not module.check_mode else paths
    if not module.check_mode and left != paths:
        if left:
            _records.save(left, record_path)
        elif os.path.exists(record_path):
            os.unlink(record_path)
    result = dict(changed=bool(removed), removed=removed, kept=[{"path": p, "why": why} for p, why in keep])
    if module._diff and removed:
        result["diff"] = [dict(before_header=r["path"], after_header=r["path"], before="(%s)\n" % r["kind"],
                               after="(absent)\n") for r in removed]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
