"""playbooks/tune_draft_len.yml on the lab with held-out acceptance and cost profiles (CI stage `tune`).

For each profile: the tuner (baseline, the largest candidate, at most two confirmations) and a full sweep; the
tuner's choice must reach 95 % of the sweep's best with at most 3 restarts besides the baseline; the report files and
plots must be there and readable; a second run with apply must change nothing.
"""

import json
import os
import struct
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tune_lab  # noqa: E402  pylint: disable=wrong-import-position

NAMES = ("long-draft", "short-draft")


@pytest.fixture(scope="module", name="results")
def fixture_results(tmp_path_factory):
    tune_lab.lab("up")
    workdir = str(tmp_path_factory.mktemp("tune"))
    try:
        yield {name: tune_lab.evaluate(name, workdir) for name in NAMES}, workdir
    finally:
        tune_lab.lab("down")


@pytest.mark.parametrize("name", NAMES)
def test_few_restarts_and_near_the_sweeps_best(results, name):
    figures = results[0][name]
    assert figures["tuner_restarts"] <= 3 < figures["sweep_restarts"]
    assert figures["share_of_best"] >= 0.95, figures
    assert figures["tune"]["speculation_wins"] and figures["tune"]["speedup"] > 1.0


@pytest.mark.parametrize("name", NAMES)
def test_the_report_files_and_plots(results, name):
    directory = results[0][name]["tune"]["results_dir"]
    with open(os.path.join(directory, "tune.json"), encoding="utf-8") as handle:
        doc = json.load(handle)
    for key in ("chosen_max_draft_len", "restarts", "baseline_tokens_per_s"):
        assert key in doc
    assert all({"max_draft_len", "tokens_per_s"} <= set(s) for s in doc["settings"])
    with open(os.path.join(directory, "report.md"), encoding="utf-8") as handle:
        report = handle.read()
    assert "**Chosen: `max_draft_len: %d`**" % doc["chosen_max_draft_len"] in report
    for plot in ("tokens_per_s.png", "acceptance.png"):
        with open(os.path.join(directory, plot), "rb") as handle:
            head = handle.read(24)
        assert head[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", head[16:24])
        assert (width, height) == (640, 400)


def test_apply_serves_the_choice_and_a_second_run_changes_nothing(results):
    figures, workdir = results
    name = NAMES[0]
    profile_path = os.path.join(workdir, name + ".json")
    results_dir = figures[name]["tune"]["results_dir"]
    first = tune_lab.playbook(profile_path, results_dir, "-e", "specdec_tune_apply=true")
    assert first[0] == 0, first[3][-3000:]
    second = tune_lab.playbook(profile_path, results_dir, "-e", "specdec_tune_apply=true")
    assert second[0] == 0 and "changed=0" in second[2], second[3][-3000:]
    assert "failed=0" in second[2]
