#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: specdec_hf_access
short_description: Check, before anything changes, that a node may download the models it needs from Hugging Face
version_added: 0.10.0
author:
  - DGX Spark speculative-decoding collection maintainers (@dgx-spark)
description:
  - Asks the Hugging Face hub, from the node that downloads and as its container will, whether the token is valid
    and whether it may read each repository at its revision (the target model, the draft, a tokenizer). A gated
    repository the account has no access to, a private or misspelt id, a missing revision and a revoked token are
    each named with the host, the repository, the input that names it and what to do, before the run changes
    anything on the node.
  - The question is put with C(huggingface_hub)'s own API (C(HfApi.whoami), C(HfApi.auth_check),
    C(HfApi.model_info)). It runs in O(image) when the node has it (the release images carry C(huggingface_hub)),
    with C(docker run --rm -i) on the network O(network_mode) the server gets; the request, token included, goes on
    the container's standard input, so the token is in no command line and no C(docker inspect). Without the image,
    the node's own C(huggingface_hub) is used; without either, the check is skipped with a warning (the download
    then reports the same causes).
  - A repository whose download is complete on the node (its O(repos[].marker) exists) is not asked about, so a run
    without network still serves what was downloaded before.
  - The token's format is checked first, without the network.
extends_documentation_fragment:
  - dgx_spark.specdec.attributes
  - dgx_spark.specdec.attributes.ACTIONGROUP_SPECDEC
attributes:
  check_mode:
    support: full
    details:
      - It only reads, so it asks the hub in check mode too.
  diff_mode:
    support: N/A
  idempotent:
    support: full
options:
  repos:
    description: The repositories the run needs.
    type: list
    elements: dict
    required: true
    suboptions:
      repo:
        description: The Hugging Face id (C(org/name)).
        type: str
        required: true
      revision:
        description: A branch, tag or commit; null for the default branch.
        type: str
      field:
        description: The input that names it, for the messages (for example C(specdec_serve_draft_model)).
        type: str
      marker:
        description: A file on the node that exists once its download is complete; then it is not asked about.
        type: path
  token:
    description:
      - The token the run gives the node. Omitted or empty, the content of O(token_file) is used when it exists
        (the token the container reads), else no token.
    type: str
  token_file:
    description: The token file the container reads (C(HF_TOKEN_PATH)).
    type: path
  image:
    description: The release image the download runs in.
    type: str
  network_mode:
    description: The container's network (C(host), C(container:NAME), a network name).
    type: str
  endpoint:
    description: The hub's address, for a mirror (C(HF_ENDPOINT)); omitted, huggingface.co.
    type: str
  timeout:
    description: Seconds for each request to the hub.
    type: int
    default: 30
  node:
    description: The host's name in messages; omitted, the node's hostname.
    type: str
seealso:
  - name: huggingface_hub HfApi reference
    description: whoami, auth_check and model_info, the calls this module makes.
    link: https://huggingface.co/docs/huggingface_hub/package_reference/hf_api
"""

EXAMPLES = r"""
- name: Check that the node may download the model and the draft
  dgx_spark.specdec.specdec_hf_access:
    repos:
      - repo: meta-llama/Llama-3.1-8B-Instruct
        field: specdec_serve_model
        marker: /home/spark/.cache/huggingface/hub/models--meta-llama--Llama-3.1-8B-Instruct/.dgx-spark-complete
      - repo: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B
        field: specdec_serve_draft_model
    token: "{{ lookup('ansible.builtin.env', 'HF_TOKEN') }}"
    image: nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6
    network_mode: host
"""

RETURN = r"""
checked:
  description: The repositories asked about, each with its status.
  returned: always
  type: list
  elements: dict
  sample: [{"repo": "meta-llama/Llama-3.1-8B-Instruct", "revision": null, "status": "gated"}]
complete:
  description: The repositories not asked about, because their download is complete on the node.
  returned: always
  type: list
  elements: str
token:
  description: What the hub said of the token (C(valid), C(rejected), C(none) when there is none, C(unchecked) when nothing was asked); never the token.
  returned: always
  type: str
via:
  description: Where the question ran (C(image), C(node), C(skipped), C(format)).
  returned: always
  type: str
library:
  description: The huggingface_hub version that asked.
  returned: when asked
  type: str
problems:
  description: One message per problem (the failure message joins them).
  returned: always
  type: list
  elements: str
"""

import os
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _hf_access as hfa


def _read_token(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _in_image(module, image, network_mode, request):
    """The probe's answer from the release image on the node, or None when the node has no such image."""
    answer, problem = hfa.probe_in_image(module.run_command, module.get_bin_path("docker"), image, network_mode,
                                         request)
    if problem:
        module.fail_json(msg="checking Hugging Face access in %s failed (rc %s): %s" % ((image,) + problem),
                         changed=False)
    return answer


def main():
    module = AnsibleModule(
        argument_spec=dict(
            repos=dict(type="list", elements="dict", required=True, options=dict(
                repo=dict(type="str", required=True),
                revision=dict(type="str"),
                field=dict(type="str"),
                marker=dict(type="path"),
            )),
            token=dict(type="str", no_log=True),
            token_file=dict(type="path"),
            image=dict(type="str"),
            network_mode=dict(type="str"),
            endpoint=dict(type="str"),
            timeout=dict(type="int", default=30),
            node=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    host = p["node"] or socket.gethostname()
    repos = p["repos"]
    complete = [r["repo"] for r in repos if r.get("marker") and os.path.exists(r["marker"])]
    todo = [r for r in repos if r["repo"] not in complete]
    token = p["token"] or (_read_token(p["token_file"]) if p["token_file"] else None)
    result = dict(changed=False, checked=[], complete=complete, token="unchecked", via="skipped", problems=[])

    problem = hfa.token_problem(token)
    if problem:
        source = "given (HF_TOKEN or trtllm_container_hf_token)" if p["token"] else "in " + p["token_file"]
        result.update(via="format", problems=["%s: the Hugging Face token %s is not usable: %s"
                                              % (host, source, problem)])
        module.fail_json(msg=result["problems"][0], **result)
    if not todo:
        module.exit_json(**result)

    request = {"repos": [{"repo": r["repo"], "revision": r.get("revision")} for r in todo], "token": token,
               "endpoint": p["endpoint"], "timeout": p["timeout"]}
    answer, via = _in_image(module, p["image"], p["network_mode"], request), "image"
    if answer is None or answer.get("library") is None:
        try:
            answer, via = hfa.run_probe(request), "node"  # the probe itself says when the library is missing
        except Exception as exc:  # pylint: disable=broad-except
            module.fail_json(msg="%s: checking Hugging Face access failed: %s" % (host, to_native(exc)), **result)
        if answer.get("library") is None:
            module.warn("%s: model access was not checked before the run: huggingface_hub is neither in an image %s "
                        "on the node nor in the node's Python; the download will name any problem"
                        % (host, p["image"] or "(none)"))
            module.exit_json(**result)
    result.update(via=via, library=answer.get("library"), token=answer.get("token", "none"),
                  checked=answer.get("repos") or [])
    result["problems"] = hfa.explain(answer, todo, host, bool(token))
    if result["problems"]:
        module.fail_json(msg=" | ".join(result["problems"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
