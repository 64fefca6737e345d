# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: hf_token
author: DGX Spark speculative-decoding collection maintainers (@dgx-spark)
version_added: 0.7.0
short_description: The Hugging Face token from the controller's environment
description:
  - Returns C(HF_TOKEN) from the controller's environment, else the content of the file C(HF_TOKEN_FILE) names (how
    the collection's AWX credential type injects it, so the token is in no job environment AWX stores), else an
    empty string.
  - The default of C(trtllm_container_hf_token), and what the pre-flight compares the nodes' token files with.
notes:
  - Use it where its value is never shown (C(no_log), or a module option marked C(no_log)).
"""

EXAMPLES = r"""
---
- name: Pass the token to a module option that is marked no_log
  dgx_spark.specdec.spark_facts:
    hf_token: "{{ lookup('dgx_spark.specdec.hf_token') }}"
"""

RETURN = r"""
_raw:
  description: One element, the token (empty when none is set).
  type: list
  elements: str
"""

import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        token = os.environ.get("HF_TOKEN") or ""
        path = os.environ.get("HF_TOKEN_FILE") or ""
        if not token and path:
            try:
                with open(path, encoding="utf-8") as handle:
                    token = handle.read().strip()
            except OSError as exc:
                raise AnsibleLookupError("HF_TOKEN_FILE names %s, which cannot be read: %s" % (path, exc.strerror))
        return [token]
