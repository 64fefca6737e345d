#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: trtllm_options
short_description: Render and validate a TensorRT-LLM extra LLM API options file
version_added: 0.1.0
author:
  - DGX Spark speculative-decoding collection maintainers (@dgx-spark)
description:
  - Writes the YAML file passed to C(trtllm-serve --extra_llm_api_options) (or C(--config)).
  - Validates the options against the option set of the chosen TensorRT-LLM release B(before) writing anything
    (every options model of TensorRT-LLM forbids extra keys, so a typo or an old key name stops the server at start-up).
    Unknown keys are rejected at every level; types and ranges, the accepted C(decoding_type) spellings, the draft model
    path key, the fields each speculative method requires, C(moe_config.backend) values and the CUDA graph batch sizes
    are checked per release. Each error names the full key path, the bad value, what the release accepts and a close
    match where one exists. On error nothing is written.
  - The file is rendered in a stable key order (the order of the DGX Spark playbooks, then alphabetical), written
    atomically, and left alone when its content is already right.
  - Only the PyTorch backend (C(trtllm-serve --backend pytorch)) options are modelled.
extends_documentation_fragment:
  - ansible.builtin.files
  - dgx_spark.specdec.attributes
  - dgx_spark.specdec.attributes.ACTIONGROUP_SPECDEC
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  idempotent:
    support: full
  safe_file_operations:
    support: full
    description: Uses Ansible's atomic move so readers never see a partly written file.
options:
  dest:
    description:
      - Path of the options file to write, for example V(/etc/trtllm/extra-llm-api-config.yml).
      - The parent directory must exist (in check mode a missing directory only predicts a change, so the module can
        validate options before anything is created).
    type: path
    required: true
  options:
    description:
      - The options, as they appear in the YAML file (top-level keys of C(TorchLlmArgs) such as
        C(enable_attention_dp), C(cuda_graph_config), C(speculative_config), C(kv_cache_config)).
      - Merged over the C(speculative_config) generated from O(method), so any key given here wins.
    type: dict
    default: {}
  trtllm_version:
    description:
      - The TensorRT-LLM release whose option set the file is validated against and whose spelling of
        O(method) is used. Match it to the tag of the container image.
      - "Known releases: V(1.2.0rc1), V(1.2.0rc6), V(1.2.0), V(1.2.1), V(1.3.0rc11), V(1.3.0rc12), V(1.3.0rc13). Their field tables are
        generated from each release's C(tensorrt_llm/llmapi/llm_args.py); V(1.3.0rc12), which has no published source,
        is checked with the V(1.3.0rc13) table and keys V(1.3.0rc11) lacks are warned about."
      - Any other release is refused before anything changes, with the known releases and how to add one
        (C(tools/llm_args_table.py) in the collection's repository).
      - Quoted numbers and booleans are read the way the release's pydantic models read them (V("4") becomes
        V(4), with a warning), except where the release would not validate them (1.2's C(Eagle) path).
    type: str
    default: 1.2.0rc6
  method:
    description:
      - High-level speculative decoding method. When set (and not V(none)), the module generates
        C(speculative_config) spelled the way O(trtllm_version) accepts it, for example C(decoding_type=Eagle) on
        1.2.x and C(decoding_type=Eagle3) on 1.3.x for V(eagle3).
      - Leave unset to take C(speculative_config) from O(options) only.
    type: str
    choices: [eagle3, draft_target, ngram, mtp, none]
  draft_model:
    description:
      - Draft model (EAGLE-3 head or Draft-Target model) for O(method), written as C(speculative_model_dir),
        which every supported release accepts. A local directory such as V(/opt/gpt-oss-120b-Eagle3/).
    type: str
  max_draft_len:
    description:
      - Number of draft tokens per step for O(method) (C(speculative_config.max_draft_len)).
    type: int
  backup:
    description:
      - Create a backup file including the timestamp information so you can get the original file back if you
        somehow clobbered it incorrectly.
    type: bool
    default: false
notes:
  - The module needs no Python packages beyond the standard library on the target.
seealso:
  - module: dgx_spark.specdec.specdec_endpoint
  - name: TensorRT-LLM trtllm-serve documentation
    description: The C(--extra_llm_api_options) flag and the LLM API arguments.
    link: https://nvidia.github.io/TensorRT-LLM/commands/trtllm-serve/trtllm-serve.html
"""

EXAMPLES = r"""
---
- name: EAGLE-3 on one DGX Spark (the speculative-decoding playbook's file)
  dgx_spark.specdec.trtllm_options:
    dest: /etc/trtllm/extra-llm-api-config.yml
    trtllm_version: 1.2.0rc6
    method: eagle3
    draft_model: /opt/gpt-oss-120b-Eagle3/
    max_draft_len: 5
    options:
      enable_attention_dp: false
      disable_overlap_scheduler: false
      enable_autotuner: false
      cuda_graph_config:
        max_batch_size: 1
      kv_cache_config:
        free_gpu_memory_fraction: 0.9
        enable_block_reuse: false
    mode: "0644"

- name: Draft-Target, written out in full
  dgx_spark.specdec.trtllm_options:
    dest: /etc/trtllm/draft-target.yml
    options:
      print_iter_log: false
      disable_overlap_scheduler: true
      speculative_config:
        decoding_type: DraftTarget
        max_draft_len: 4
        speculative_model_dir: /opt/Llama-3.1-8B-Instruct-FP4/
      kv_cache_config:
        enable_block_reuse: false

- name: Only validate (check mode writes nothing)
  dgx_spark.specdec.trtllm_options:
    dest: /tmp/low_latency.yaml
    trtllm_version: 1.2.0rc1
    options:
      enable_attention_dp: false
      cuda_graph_config:
        max_batch_size: 1
        enable_padding: true
      moe_config:
        backend: CUTLASS
  check_mode: true
"""

RETURN = r"""
dest:
  description: Path of the options file.
  returned: always
  type: str
  sample: /etc/trtllm/extra-llm-api-config.yml
options:
  description: The validated options as written, in the file's key order.
  returned: success
  type: dict
  sample:
    enable_attention_dp: false
    cuda_graph_config:
      max_batch_size: 1
    speculative_config:
      decoding_type: Eagle
      max_draft_len: 5
      speculative_model_dir: /opt/gpt-oss-120b-Eagle3/
content:
  description: The rendered YAML text.
  returned: success
  type: str
  sample: "enable_attention_dp: false\n"
trtllm_version:
  description: The release the options were validated against.
  returned: always
  type: str
  sample: 1.2.0rc6
errors:
  description: One message per problem found, each naming the key path, the bad value and what the release accepts.
  returned: failure
  type: list
  elements: str
  sample:
    - "speculative_config.decoding_type: \"Eagle3\" is not accepted by TensorRT-LLM 1.2.0rc6 (accepted: ...); did you mean 'Eagle'?"
backup_file:
  description: Name of the backup file that was created.
  returned: changed and if O(backup=true)
  type: str
  sample: /etc/trtllm/extra-llm-api-config.yml.12345.2026-11-22@20:00:00~
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native

from ansible_collections.dgx_spark.specdec.plugins.module_utils._trtllm_options import (
    DEFAULT_VERSION,
    METHODS,
    OptionsError,
    options_file,
)


def read_current(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None


def write_atomically(module, dest, content):
    directory = os.path.dirname(dest) or "."
    fd, tmp = tempfile.mkstemp(prefix=".trtllm_options.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(to_bytes(content))
        module.atomic_move(tmp, dest, unsafe_writes=module.params["unsafe_writes"])
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type="path", required=True),
            options=dict(type="dict", default={}),
            trtllm_version=dict(type="str", default=DEFAULT_VERSION),
            method=dict(type="str", choices=list(METHODS)),
            draft_model=dict(type="str"),
            max_draft_len=dict(type="int"),
            backup=dict(type="bool", default=False),
        ),
        add_file_common_args=True,
        supports_check_mode=True,
    )
    dest = module.params["dest"]
    version = module.params["trtllm_version"]
    result = dict(changed=False, dest=dest, trtllm_version=version)

    try:
        p = module.params
        content, validated = options_file(version, p["method"], p["draft_model"], p["max_draft_len"], p["options"])
    except OptionsError as exc:
        module.fail_json(msg=to_native(exc), errors=exc.errors, **result)
    for warning in validated.warnings:
        module.warn(warning)

    if os.path.isdir(dest):
        module.fail_json(msg="dest %s is a directory; give the path of the options file" % dest, **result)
    parent = os.path.dirname(dest) or "."
    # In check mode a missing directory is only a prediction (a pre-flight runs before it is created).
    if not os.path.isdir(parent) and not module.check_mode:
        module.fail_json(msg="the directory %s of dest does not exist; create it first" % parent, **result)

    current = read_current(dest)
    result.update(options=validated.options, content=content)
    if current != content:
        result["changed"] = True
        if module._diff:
            result["diff"] = dict(before=current or "", after=content,
                                  before_header=dest if current is not None else "%s (absent)" % dest, after_header=dest)
        if not module.check_mode:
            if module.params["backup"] and current is not None:
                result["backup_file"] = module.backup_local(dest)
            write_atomically(module, dest, content)

    if os.path.exists(dest):
        file_args = module.load_file_common_arguments(module.params, path=dest)
        result["changed"] = module.set_fs_attributes_if_different(file_args, result["changed"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
