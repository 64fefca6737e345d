"""playbooks/tune_draft_len.yml as AWX runs it: through ansible-runner in the EE image (CI stage `tune`).

The tuning module runs on the controller, which here is the EE container (local/dgx-spark-specdec-ee:latest,
`make ee`): its matplotlib draws the plots, whatever the host's venv has. The results go to a host directory mounted
into the EE (specdec_tune_results_dir), the way an AWX job must keep them (its project directory is discarded), and
the headline figures are the job's artifacts (set_stats dgx_spark_specdec_tune in playbook_on_stats).

One Spark (lab instance tune-, `--singles 1`), candidates [1, 2] in mode tune and short completions: a few minutes.
"""

import json
import os
import struct
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import fleet_runner  # noqa: E402  pylint: disable=wrong-import-position

PREFIX = "tune-"
HOST = "single1-a"
INSIDE = "/tune-results"  # the mount point in the EE
CHECK_TASK = "Check the controller's libraries, say what the run will do, look for an earlier result (before any restart)"
# A profile the stand-in serves (lab README, "Speculative-decoding profiles"): speculation wins, 2 beats 1.
PROFILE = {"acceptance": [0.9, 0.85], "target_step_ms": 6.0, "draft_token_ms": 0.4, "verify_token_ms": 0.4, "seed": 21}
EXTRAVARS = {
    "specdec_tune_candidates": [1, 2],
    "specdec_tune_mode": "tune",
    "specdec_tune_max_tokens": 64,
    "specdec_bench_prompts": ["Write a haiku about rivers.", "Explain a hash map to a child.",
                              "List five uses of a paperclip.", "Describe a sunrise over a harbour."],
    "specdec_tune_results_dir": INSIDE + "/" + HOST,
    "trtllm_container_env": {"STANDIN_SPEC_PROFILE": json.dumps(PROFILE)},
    "specdec_serve_ready_timeout": 600,
}


def _lab(*args):
    return subprocess.run([fleet_runner.LAB] + list(args), check=True, capture_output=True, text=True,
                          env=dict(os.environ, SPARK_LAB_PREFIX=PREFIX)).stdout.strip()


@pytest.fixture(scope="module", name="job")
def fixture_job(tmp_path_factory):
    image = fleet_runner.EE_IMAGE
    if "SPECDEC_EE_IMAGE" not in os.environ:
        # The EE carries the collection as the checkout has it: scripts/ee.sh rebuilds it when an input changed (a
        # few seconds when it is current). The `tune` stage of scripts/test.sh comes before its `ee` stage.
        build = subprocess.run([os.path.join(REPO, "scripts", "ee.sh")], capture_output=True, text=True, check=False)
        if build.returncode:
            pytest.fail("scripts/ee.sh failed:\n%s" % (build.stdout + build.stderr)[-3000:])
    if subprocess.run(["docker", "image", "inspect", image], capture_output=True, check=False).returncode:
        pytest.fail("no EE image %s: build it with `make ee`" % image)
    results = tmp_path_factory.mktemp("tune-ee-results")
    _lab("up", "--singles", "1")
    try:
        inventory, key = fleet_runner.lab_paths(PREFIX)
        job = fleet_runner.run_playbook_job(
            inventory, key, os.environ.get("HF_TOKEN", ""), "tune-ee", "playbooks/tune_draft_len.yml",
            extravars=EXTRAVARS, volumes={str(results): INSIDE},
            # The lab's inventory has a group per cluster; the tuner plays on spark_head (as AWX's "DGX Spark cluster").
            inventory_files={"spark_head.yml": {"all": {"children": {"sparks": {"children": {
                "spark_head": {"hosts": {HOST: None}}}}}}}})
        yield job, results / HOST
    finally:
        _lab("down")


def _task_result(job, task):
    return next(e["event_data"]["res"] for e in job["events"]
                if e.get("event") == "runner_on_ok" and e["event_data"].get("task") == task)


def test_the_tuner_runs_in_the_ee(job):
    job = job[0]
    with open(job["stdout"], encoding="utf-8") as handle:
        tail = handle.read()[-4000:]
    assert job["rc"] == 0 and job["status"] == "successful", tail
    assert job["seconds"] < 480, job["seconds"]


def test_the_dependency_check_ran_in_the_ee_and_found_matplotlib(job):
    check = _task_result(job[0], CHECK_TASK)
    libs = check["libraries"]
    assert libs["matplotlib"]["present"] is True, libs
    assert libs["where"].startswith("the execution environment"), libs
    assert libs["python"] == "/usr/bin/python3"  # the EE's Python; the host's venv plays no part
    assert check["plots"] is True and check["results_dir"] == INSIDE + "/" + HOST
    assert "matplotlib" not in sys.modules  # nor did this process import it


def test_results_are_in_the_named_directory(job):
    directory = job[1]
    doc = json.loads((directory / "tune.json").read_text())
    assert doc["plots"]["drawn"] is True and doc["candidates"] == [1, 2]
    assert json.loads((directory / "measurements.json").read_text())["complete"] is True
    report = (directory / "report.md").read_text()
    assert "![tokens/s](tokens_per_s.png)" in report
    for plot in ("tokens_per_s.png", "acceptance.png"):
        head = (directory / plot).read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24]) == (640, 400)


def test_the_choice_is_the_job_s_artifact(job):
    job, directory = job
    doc = json.loads((directory / "tune.json").read_text())
    artifact = job["artifact_data"]["dgx_spark_specdec_tune"][HOST]
    assert artifact == {"chosen_max_draft_len": doc["chosen_max_draft_len"], "speedup": doc["speedup"],
                        "tokens_per_s": doc["chosen_tokens_per_s"], "baseline_tokens_per_s": doc["baseline_tokens_per_s"],
                        "restarts": doc["restarts"], "results_dir": INSIDE + "/" + HOST, "plots": True}
    assert artifact["chosen_max_draft_len"] in (1, 2) and artifact["speedup"] > 1.0
