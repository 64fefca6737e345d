# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Real option files from public sources, judged through the trtllm_options module in check mode.

tests/unit/fixtures/heldout_options.yml holds option files from NVIDIA's DGX Spark playbooks, TensorRT-LLM's
documentation of each release and its curated configs, each with the release it ran on and the outcome it
had there (the source of each is named in the file). It was gathered without reading the collection's tables.
"""

from __future__ import annotations

import json
import os

import pytest
import yaml

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgx_spark.specdec.plugins.modules import trtllm_options

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "..", "..", "fixtures", "heldout_options.yml"), encoding="utf-8") as _handle:
    HELDOUT = yaml.safe_load(_handle)


def run_check_mode(capsys, tmp_path, version, options):
    args = {"dest": str(tmp_path / "extra-llm-api-config.yml"), "trtllm_version": version, "options": options,
            "_ansible_check_mode": True, "_ansible_diff": True}
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            trtllm_options.main()
    return json.loads(capsys.readouterr().out)


def test_the_set_has_both_outcomes_on_every_release_family():
    outcomes = {(e["release"][:3], e["outcome"]) for e in HELDOUT}
    assert {("1.2", "accepted"), ("1.2", "rejected"), ("1.3", "accepted"), ("1.3", "rejected")} <= outcomes


@pytest.mark.parametrize("entry", HELDOUT, ids=[e["id"] for e in HELDOUT])
def test_judged_as_the_release_judged_it(capsys, tmp_path, entry):
    result = run_check_mode(capsys, tmp_path, entry["release"], entry["options"])
    assert not (tmp_path / "extra-llm-api-config.yml").exists()  # check mode writes nothing
    if entry["outcome"] == "accepted":
        assert not result.get("failed"), result.get("msg")
        assert result["changed"] is True and "diff" in result
    else:
        assert result.get("failed"), "accepted a file %s rejected (%s)" % (entry["release"], entry["source"])
        paths = [e.split(": ", 1)[0] for e in result["errors"]]
        assert entry["rejected_key"] in paths, result["errors"]
