# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""playbooks/tune_draft_len.yml without a Spark: with plots wanted and matplotlib missing on the controller, the run
stops at its first step, before any restart or measurement, and says why; the order of its steps."""

from __future__ import annotations

import os
import subprocess
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
PLAYBOOK = os.path.join(ROOT, "playbooks", "tune_draft_len.yml")


def _tasks():
    with open(PLAYBOOK, encoding="utf-8") as handle:
        return yaml.safe_load(handle)[0]["tasks"]


def _playbook(tmp_path, *extra):
    """The tuner against a host that must never be reached, on a controller whose matplotlib cannot be imported."""
    blocker = tmp_path / "blocker" / "matplotlib"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('No module named matplotlib (hidden by the test)')\n")
    inventory = tmp_path / "hosts.yml"
    # An address nothing answers on: a task that reached the Spark would fail as unreachable, not as the check does.
    inventory.write_text(yaml.safe_dump({"all": {"children": {"spark_head": {"hosts": {"spark-x": {
        "ansible_host": "192.0.2.1", "ansible_connection": "ssh", "ansible_ssh_common_args": "-o ConnectTimeout=2"}}}}}}))
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "blocker"), ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_RETRY_FILES_ENABLED="0", PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    results = tmp_path / "results"
    proc = subprocess.run(["ansible-playbook", "-i", str(inventory), PLAYBOOK,
                           "-e", "specdec_tune_results_dir=%s" % results] + list(extra),
                          env=env, capture_output=True, text=True, check=False, timeout=300)
    return proc, results


def test_missing_matplotlib_stops_the_run_before_the_first_measurement(tmp_path):
    proc, results = _playbook(tmp_path)
    out = " ".join((proc.stdout + proc.stderr).split())  # the callback folds long messages
    assert proc.returncode == 2, out[-3000:]
    assert "matplotlib is missing on the controller" in out, out[-3000:]
    assert "Stopped before any server restart or measurement" in out and "-e specdec_tune_plots=false" in out
    for later in ("Check what the tuner varies", "Measure the plain model", "Serve this setting", "UNREACHABLE"):
        assert later not in out, out[-3000:]
    assert not results.exists()


def test_without_plots_the_check_passes_and_the_run_goes_on_to_the_spark(tmp_path):
    proc, dummy = _playbook(tmp_path, "-e", "specdec_tune_plots=false")
    out = " ".join((proc.stdout + proc.stderr).split())  # the callback folds long messages
    assert "(no plots: specdec_tune_plots is false)" in out, out[-3000:]
    # Past the check: the tuner goes for the Spark, which this test does not have.
    assert "Check what the tuner varies" in out and "UNREACHABLE" in out, out[-3000:]
    assert proc.returncode != 0


def test_the_check_is_the_first_step_and_the_results_are_published():
    tasks = _tasks()
    first = tasks[0]
    assert first["dgx_spark.specdec.specdec_tune"]["check_dependencies"] is True
    assert first["dgx_spark.specdec.specdec_tune"]["plots"] == "{{ specdec_tune_plots | bool }}"
    assert first["delegate_to"] == "localhost"
    names = [t["name"] for t in tasks]
    task = next(t for t in tasks if "ansible.builtin.set_stats" in t)
    stats = task["ansible.builtin.set_stats"]
    assert stats["aggregate"] is True and stats["per_host"] is False
    # One expression, keyed by the host (a mapping key would not be templated).
    assert stats["data"]["dgx_spark_specdec_tune"] == "{{ {inventory_hostname: __tune_stats} }}"
    entry = task["vars"]["__tune_stats"]
    assert set(entry) == {"chosen_max_draft_len", "speedup", "tokens_per_s", "baseline_tokens_per_s", "restarts",
                          "results_dir", "plots"}
    assert names.index("Measure") > 0
    with open(os.path.join(ROOT, "playbooks", "tasks", "tune_measure.yml"), encoding="utf-8") as handle:
        measure = yaml.safe_load(handle)
    assert measure[-1]["dgx_spark.specdec.specdec_tune"]["record"] is True
