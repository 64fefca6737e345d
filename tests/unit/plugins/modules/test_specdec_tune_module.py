# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""specdec_tune's main(): predictions, the choice, the report files, reuse, check mode; _bench's pure parts."""

from __future__ import annotations

import json

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _bench
from ansible_collections.dgx_spark.specdec.plugins.modules import specdec_tune

INPUTS = {"profile": "single_spark_eagle3", "candidates": [1, 2, 3, 4, 8]}
BASELINE = {"tokens_per_s": 100.0, "ttft_ms": {"p50": 50.0, "p95": 60.0}, "itl_ms": {"p50": 10.0, "p95": 11.0}}


def bench(tps, histogram=None):
    return {"tokens_per_s": tps, "accepted_histogram": histogram, "acceptance_rate": 0.5, "mean_acceptance_length": 2.5,
            "ttft_ms": {"p50": 55.0, "p95": 70.0}, "itl_ms": {"p50": 14.0, "p95": 15.0}, "step_ms_mean": 14.0}


def run(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            specdec_tune.main()
    return json.loads(capsys.readouterr().out)


def test_predicts_then_chooses_and_writes_the_report(capsys, tmp_path):
    largest = bench(150.0, [10, 20, 20, 20, 10, 10, 5, 3, 2])
    largest["acceptance_per_position"] = [{"position": 0, "drafted": 100, "accepted": 90, "rate": 0.9},
                                          {"position": 1, "drafted": 100, "accepted": 70, "rate": 0.7}]
    measured = [{"max_draft_len": 8, "bench": largest}]
    first = run(capsys, {"results_dir": str(tmp_path), "inputs": INPUTS, "baseline": BASELINE, "measured": measured})
    assert first["changed"] is False and first["reuse"] is False
    assert sorted(first["predicted"], key=int) == ["1", "2", "3", "4", "8"]
    assert len(first["to_confirm"]) == 2 and 8 not in first["to_confirm"]
    measured += [{"max_draft_len": d, "bench": bench(190.0 + d)} for d in first["to_confirm"]]
    written = run(capsys, {"results_dir": str(tmp_path), "inputs": INPUTS, "baseline": BASELINE, "measured": measured,
                           "write": True, "_ansible_diff": True})
    assert written["changed"] is True and written["restarts"] == 3
    assert written["chosen_max_draft_len"] == max(first["to_confirm"])
    doc = json.loads((tmp_path / "tune.json").read_text())
    assert doc["baseline_tokens_per_s"] == 100.0 and doc["speculation_wins"] is True
    report = (tmp_path / "report.md").read_text()
    assert "**Chosen: `max_draft_len: %d`**" % written["chosen_max_draft_len"] in report
    # The measured acceptance per draft position, from the counters.
    assert "| max_draft_len | pos 1 | pos 2 |\n|---|---|---|\n| 8 | 0.90 | 0.70 |" in report
    assert doc["settings"][-1]["acceptance_per_position"][0]["rate"] == 0.9
    for plot in ("tokens_per_s.png", "acceptance.png"):
        assert (tmp_path / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = run(capsys, {"results_dir": str(tmp_path), "inputs": INPUTS, "baseline": BASELINE, "measured": measured,
                         "write": True})
    assert again["changed"] is False  # same measurements, same bytes


def test_an_earlier_result_with_the_same_inputs_is_reused(capsys, tmp_path):
    (tmp_path / "tune.json").write_text(json.dumps({"inputs": INPUTS, "chosen_max_draft_len": 3, "speedup": 1.8,
                                                    "restarts": 3, "predicted": {}}))
    reused = run(capsys, {"results_dir": str(tmp_path), "inputs": INPUTS})
    assert reused["reuse"] is True and reused["chosen_max_draft_len"] == 3 and reused["changed"] is False
    other = run(capsys, {"results_dir": str(tmp_path), "inputs": dict(INPUTS, profile="other")})
    assert other["reuse"] is False
    forced = run(capsys, {"results_dir": str(tmp_path), "inputs": INPUTS, "force": True})
    assert forced["reuse"] is False


def test_speculation_that_loses_is_reported(capsys, tmp_path):
    measured = [{"max_draft_len": 2, "bench": bench(80.0, [50, 30, 20])}]
    result = run(capsys, {"results_dir": str(tmp_path), "inputs": INPUTS, "candidates": [1, 2], "baseline": BASELINE,
                          "measured": measured, "write": True})
    assert result["chosen_max_draft_len"] is None
    assert "Speculative decoding loses here" in (tmp_path / "report.md").read_text()


def test_check_mode_writes_nothing(capsys, tmp_path):
    measured = [{"max_draft_len": 2, "bench": bench(150.0, [10, 30, 60])}]
    result = run(capsys, {"results_dir": str(tmp_path / "new"), "inputs": INPUTS, "candidates": [1, 2],
                          "baseline": BASELINE, "measured": measured, "write": True, "_ansible_check_mode": True})
    assert result["changed"] is True and not (tmp_path / "new").exists()


def test_bad_measurements_are_named(capsys, tmp_path):
    result = run(capsys, {"results_dir": str(tmp_path), "inputs": INPUTS, "measured": [{"bench": {}}]})
    assert result["failed"] and "max_draft_len (int) and bench" in result["msg"]


# -- _bench, the measurement's pure parts ----------------------------------------------------------

def fake_opener(lines):
    def opener(url, body, headers, timeout):
        for when, line in lines:
            yield when, line
    return opener


def test_one_streamed_request():
    lines = [(0.10, b"data: " + json.dumps({"choices": [{"text": " Hello"}]}).encode() + b"\n"), (0.12, b"\n"),
             (0.15, b"data: " + json.dumps({"choices": [{"text": " world"}]}).encode() + b"\n"),
             (0.16, b"data: " + json.dumps({"choices": [], "usage": {"completion_tokens": 5}}).encode() + b"\n"),
             (0.17, b"data: [DONE]\n")]
    clock = iter([0.0, 0.2]).__next__
    result = _bench.stream_one(fake_opener(lines), "http://x/v1/completions", "completions", {}, {}, 5, clock)
    assert result["ttft_s"] == pytest.approx(0.10) and result["output_tokens"] == 5
    assert result["gaps_s"] == [pytest.approx(0.05)] and result["latency_s"] == pytest.approx(0.2)


def test_a_stream_without_text_is_an_error():
    with pytest.raises(_bench.EndpointError):
        _bench.stream_one(fake_opener([(0.1, b"data: [DONE]\n")]), "u", "chat", {}, {}, 5, iter([0.0, 0.1]).__next__)


def test_percentiles():
    # Linear between the closest ranks (numpy's default, as AIPerf computes them).
    assert _bench.percentile([5, 1, 3, 2, 4], 0.5) == 3 and _bench.percentile([1, 2, 3, 4, 100], 0.95) == pytest.approx(80.8)
