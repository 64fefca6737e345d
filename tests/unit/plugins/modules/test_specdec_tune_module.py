# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""specdec_tune's main(): predictions, the choice, the report files, reuse, check mode; _bench's pure parts."""

from __future__ import annotations

import json

import pytest

from ansible.module_utils import _internal
from ansible.module_utils.common import warnings as ansible_warnings
from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _bench
from ansible_collections.dgx_spark.specdec.plugins.modules import specdec_tune

INPUTS = {"profile": "single_spark_eagle3", "candidates": [1, 2, 3, 4, 8]}
BASELINE = {"tokens_per_s": 100.0, "ttft_ms": {"p50": 50.0, "p95": 60.0}, "itl_ms": {"p50": 10.0, "p95": 11.0}}


def bench(tps, histogram=None):
    return {"tokens_per_s": tps, "accepted_histogram": histogram, "acceptance_rate": 0.5, "mean_acceptance_length": 2.5,
            "ttft_ms": {"p50": 55.0, "p95": 70.0}, "itl_ms": {"p50": 14.0, "p95": 15.0}, "step_ms_mean": 14.0}


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    # Warnings are collected in a process-wide registry: start each test without the previous test's, and keep them in
    # the result as a module's (another test importing controller code sends them to the display instead).
    monkeypatch.setattr(ansible_warnings, "_global_warnings", {})
    monkeypatch.setattr(_internal, "is_controller", False)
    for name in ("AWX_ISOLATED_DATA_DIR", "JOB_ID", "AWX_HOST"):
        monkeypatch.delenv(name, raising=False)


def run(capsys, args):
    ansible_warnings._global_warnings.clear()
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            specdec_tune.main()
    return json.loads(capsys.readouterr().out)


def warnings(result):
    """The warning texts of a result (ansible-core 2.19 returns them as dicts with the text in event.msg)."""
    return [item["event"]["msg"] if isinstance(item, dict) else item for item in result.get("warnings") or []]


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


# -- The controller's libraries: checked before any restart; a missing or broken plotting library loses nothing ----

def no_matplotlib(monkeypatch, error=ImportError("No module named 'matplotlib'")):
    """matplotlib as if it were not installed (or broken): its import raises."""
    def raising():
        raise error
    monkeypatch.setattr(specdec_tune, "import_pyplot", raising)


def test_the_dependency_check_reports_the_libraries_and_the_plan(capsys, tmp_path):
    result = run(capsys, {"results_dir": str(tmp_path / "r"), "inputs": INPUTS, "check_dependencies": True})
    assert result["changed"] is False and result["reuse"] is False and not result.get("failed")
    libs = result["libraries"]
    assert libs["matplotlib"]["present"] is True and libs["matplotlib"]["version"]
    assert libs["python"] and libs["where"] == "the controller"
    assert result["plots"] is True and result["plots_reason"] is None
    assert result["results_dir"] == str(tmp_path / "r") and not (tmp_path / "r").exists()  # changes nothing
    assert "and the plots to %s" % (tmp_path / "r") in result["msg"]


def test_plots_wanted_and_matplotlib_missing_stop_the_run(capsys, tmp_path, monkeypatch):
    no_matplotlib(monkeypatch)
    result = run(capsys, {"results_dir": str(tmp_path), "inputs": INPUTS, "check_dependencies": True})
    assert result["failed"] is True and result["libraries"]["matplotlib"]["present"] is False
    msg = result["msg"]
    assert msg.startswith("matplotlib is missing on the controller (Python ")
    assert "No module named 'matplotlib'" in msg and "Stopped before any server restart or measurement" in msg
    assert "pip install matplotlib" in msg and "-e specdec_tune_plots=false" in msg


def test_the_dependency_check_in_an_ee_says_so(capsys, tmp_path, monkeypatch):
    no_matplotlib(monkeypatch)
    monkeypatch.setattr(specdec_tune, "where", lambda: "the execution environment (EE) image (ansible-runner / AWX)")
    result = run(capsys, {"results_dir": str(tmp_path), "inputs": INPUTS, "check_dependencies": True})
    assert result["failed"] and "matplotlib is missing on the execution environment (EE) image" in result["msg"]
    assert "rebuild the EE with this collection" in result["msg"] and "meta/ee-requirements.txt" in result["msg"]


def test_without_plots_the_check_passes_and_says_there_will_be_none(capsys, tmp_path, monkeypatch):
    no_matplotlib(monkeypatch)
    result = run(capsys, {"results_dir": str(tmp_path), "inputs": INPUTS, "check_dependencies": True, "plots": False})
    assert not result.get("failed") and result["plots"] is False
    assert result["plots_reason"] == "specdec_tune_plots is false" and "(no plots: " in result["msg"]


def test_the_dependency_check_reuses_an_earlier_result_whatever_the_libraries(capsys, tmp_path, monkeypatch):
    no_matplotlib(monkeypatch)
    (tmp_path / "tune.json").write_text(json.dumps({
        "inputs": INPUTS, "chosen_max_draft_len": 3, "speedup": 1.8, "restarts": 3, "predicted": {},
        "chosen_tokens_per_s": 180.0, "baseline_tokens_per_s": 100.0, "plots": {"drawn": True}}))
    result = run(capsys, {"results_dir": str(tmp_path), "inputs": INPUTS, "check_dependencies": True})
    assert not result.get("failed") and result["reuse"] is True and result["chosen_max_draft_len"] == 3
    assert result["chosen_tokens_per_s"] == 180.0 and result["plots"] is True
    assert result["results_dir"] == str(tmp_path)


@pytest.mark.parametrize("error", [ImportError("No module named 'matplotlib'"),
                                   RuntimeError("numpy ABI mismatch")], ids=["missing", "broken"])
def test_plots_that_fail_leave_the_json_and_the_report_and_a_warning(capsys, tmp_path, monkeypatch, error):
    no_matplotlib(monkeypatch, error)
    measured = [{"max_draft_len": 2, "bench": bench(150.0, [10, 30, 60])}]
    results_dir = tmp_path / "deep" / "results"  # parents created
    result = run(capsys, {"results_dir": str(results_dir), "inputs": INPUTS, "candidates": [1, 2],
                          "baseline": BASELINE, "measured": measured, "write": True})
    assert not result.get("failed") and result["changed"] is True
    assert result["plots"] is False and str(error) in result["plots_reason"]
    assert any("The plots were not drawn" in w and str(error) in w for w in warnings(result))
    assert result["chosen_max_draft_len"] == 2 and result["results_dir"] == str(results_dir)
    doc = json.loads((results_dir / "tune.json").read_text())
    assert doc["chosen_max_draft_len"] == 2 and doc["plots"]["drawn"] is False
    report = (results_dir / "report.md").read_text()
    assert "Plots were not drawn: %s: %s" % (type(error).__name__, error) in report
    assert "tokens_per_s.png" not in report
    assert not (results_dir / "tokens_per_s.png").exists() and not (results_dir / "acceptance.png").exists()
    assert json.loads((results_dir / "measurements.json").read_text())["complete"] is True


def test_the_json_and_the_report_are_written_before_the_plots(capsys, tmp_path, monkeypatch):
    seen = []

    def plots(doc):
        seen.append(sorted(p.name for p in tmp_path.iterdir()))
        raise MemoryError("out of memory while drawing")
    monkeypatch.setattr(specdec_tune, "plots", plots)
    measured = [{"max_draft_len": 2, "bench": bench(150.0, [10, 30, 60])}]
    result = run(capsys, {"results_dir": str(tmp_path), "inputs": INPUTS, "candidates": [1, 2], "baseline": BASELINE,
                          "measured": measured, "write": True})
    assert seen == [["measurements.json", "report.md", "tune.json"]]
    assert result["plots"] is False and "MemoryError: out of memory while drawing" in result["plots_reason"]


def test_no_plots_wanted_writes_no_plots_and_says_why(capsys, tmp_path, monkeypatch):
    no_matplotlib(monkeypatch)
    measured = [{"max_draft_len": 2, "bench": bench(150.0, [10, 30, 60])}]
    result = run(capsys, {"results_dir": str(tmp_path), "inputs": INPUTS, "candidates": [1, 2], "baseline": BASELINE,
                          "measured": measured, "write": True, "plots": False})
    assert result["plots"] is False and not warnings(result)
    assert "Plots were not drawn: specdec_tune_plots is false." in (tmp_path / "report.md").read_text()


def test_measurements_are_recorded_as_they_come(capsys, tmp_path):
    results_dir = tmp_path / "new"
    first = run(capsys, {"results_dir": str(results_dir), "inputs": INPUTS, "baseline": BASELINE, "record": True})
    assert first["changed"] is True and first["results_dir"] == str(results_dir)
    partial = json.loads((results_dir / "measurements.json").read_text())
    assert partial == {"inputs": INPUTS, "complete": False, "baseline": BASELINE, "measured": []}
    measured = [{"max_draft_len": 8, "bench": bench(150.0, [10, 20, 20, 20, 10, 10, 5, 3, 2])}]
    run(capsys, {"results_dir": str(results_dir), "inputs": INPUTS, "baseline": BASELINE, "measured": measured,
                 "record": True})
    assert json.loads((results_dir / "measurements.json").read_text())["measured"][0]["max_draft_len"] == 8
    assert not (results_dir / "tune.json").exists()


def test_a_results_dir_in_the_job_s_private_data_dir_is_warned_about(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("AWX_ISOLATED_DATA_DIR", str(tmp_path / "artifacts" / "7"))
    result = run(capsys, {"results_dir": str(tmp_path / "project" / "tune-results"), "inputs": INPUTS,
                          "check_dependencies": True})
    assert any("which AWX discards after the job" in w and "specdec_tune_results_dir" in w for w in warnings(result))
    monkeypatch.setenv("AWX_ISOLATED_DATA_DIR", "/runner/artifacts/7")
    result = run(capsys, {"results_dir": str(tmp_path / "kept"), "inputs": INPUTS, "check_dependencies": True})
    assert not warnings(result)
