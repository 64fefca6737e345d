"""The AWX workflow of extensions/awx/workflows.yml, run the way AWX runs it: each node's job template through
ansible-runner inside the EE image (scripts/fleet_runner.py), with its survey's defaults as extra variables, its
job_type (check: --check), its limit and credentials; the next nodes follow the job's status (success_nodes,
failure_nodes, always_nodes). The jobs' artifacts (set_stats) are read from the playbook_on_stats event.

Lab: one pair (a QSFP cable: the link node links it) and one single Spark (no cable: the link node skips it); the
inventory gets a spark_head group with the single Spark (what an administrator adds for the tuner, see
extensions/awx/workflows.yml).
Needs the lab images and the EE image (`make ee`); `make test` runs it as the stage `fleet`.
"""

import json
import os
import secrets
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import fleet_runner as fr  # noqa: E402  pylint: disable=wrong-import-position

PREFIX = "awx-"
WORKFLOW = "DGX Spark - link, serve, then tune or diagnose"
TOKEN = "hf_" + secrets.token_hex(12)
# The tuner plays on spark_head: the single Spark, as an administrator's inventory would name it.
SPARK_HEAD = {"spark_head.yml": "---\nsparks:\n  children:\n    spark_head:\n      hosts:\n        single1-a: {}\n"}
# The lab's stand-in serves quickly; two short prompts of 64 tokens keep each tuner measurement to seconds (the
# shipped prompt set is for real Sparks). Extra variables beyond the survey, as a launch with variables would give.
TUNE_LAB = {"specdec_tune_max_tokens": 64,
            "specdec_bench_prompts": ["Write a haiku about rivers.", "List five uses of a paperclip."]}


def _converge_publishes_clusters():
    with open(os.path.join(fr.REPO, "playbooks", "converge.yml"), encoding="utf-8") as handle:
        return "dgx_spark_specdec_clusters" in handle.read()


@pytest.fixture(scope="module")
def lab():
    image = subprocess.run(["docker", "image", "inspect", fr.EE_IMAGE], capture_output=True, check=False)
    if image.returncode:
        pytest.skip("the EE image %s is missing: run `make ee` first" % fr.EE_IMAGE)
    fr.lab("up", "--pairs", "1", "--singles", "1", prefix=PREFIX)
    yield fr.lab_paths(PREFIX)
    fr.lab("down", prefix=PREFIX)


@pytest.fixture(scope="module")
def workflow_run(lab):
    """The workflow, once: [(node identifier, job)] in the order the nodes ran."""
    inventory, key = lab
    # The site's values as shipped: the link node runs on every cluster.
    data = fr.render_awx_data(fr.load_awx_data(), {})
    workflow = next(w for w in data["controller_workflows"] if w["name"] == WORKFLOW)
    templates = {t["name"]: t for t in data["controller_templates"]}
    start = time.monotonic()

    def launch(node):
        template = templates[node["unified_job_template"]["name"]]
        answers = dict(node.get("extra_data") or {})
        if template["playbook"] == "playbooks/tune_draft_len.yml":
            # A user's survey answers for the lab (two candidates, short measurements); the rest are its defaults.
            answers.update(TUNE_LAB, specdec_tune_candidates=["2", "4"])
        return fr.run_template(inventory, key, TOKEN, PREFIX + node["identifier"], template, data, extravars=answers,
                               limit=node.get("limit"), job_type=node.get("job_type"), inventory_files=SPARK_HEAD)

    ran = fr.run_workflow(workflow, launch)
    report = [(ident, job["template"], job["status"], job["seconds"], job["options"]) for ident, job in ran]
    print("\nworkflow: %.1f s\n%s" % (time.monotonic() - start, json.dumps(report)))
    return ran


def test_the_workflow_runs_its_templates_in_order(workflow_run):
    # On success: link, serve, tune; the diagnose node only on a failure.
    assert [ident for ident, dummy in workflow_run] == ["link", "serve", "tune"]
    for ident, job in workflow_run:
        assert job["status"] == "successful", (ident, open(job["stdout"], encoding="utf-8").read()[-3000:])
    jobs = dict(workflow_run)
    # The link ran on the whole inventory: the pair linked, the single Spark skipped with a warning (no cable).
    assert jobs["link"]["options"] == []
    link_output = open(jobs["link"]["stdout"], encoding="utf-8").read()
    assert "cluster single1: one Spark (single1-a), no QSFP link to configure" in link_output, link_output[-3000:]
    assert jobs["serve"]["summary"][-1] == "fleet: 2 clusters serving, 0 failed", jobs["serve"]["summary"]


def test_the_serving_job_publishes_each_cluster(workflow_run):
    if not _converge_publishes_clusters():
        pytest.skip("playbooks/converge.yml publishes no dgx_spark_specdec_clusters yet (set_stats): not asserted")
    clusters = dict(workflow_run)["serve"]["artifact_data"].get("dgx_spark_specdec_clusters")
    assert clusters and sorted(clusters) == ["pair1", "single1"], clusters
    assert all(c["state"] == "serving" and c["url"].startswith("http://") for c in clusters.values()), clusters
    assert clusters["pair1"]["profile"] == "two_spark_eagle3"
    assert clusters["single1"]["profile"] == "single_spark_eagle3"


def test_the_tuner_publishes_its_choice_per_host(workflow_run):
    tuned = dict(workflow_run)["tune"]["artifact_data"].get("dgx_spark_specdec_tune")
    assert tuned and len(tuned) == 1, tuned
    (host, result), = tuned.items()
    assert result["chosen_max_draft_len"] in (2, 4, None) and result["restarts"] >= 1, result
    assert host == "single1-a", tuned


def test_the_token_is_in_no_artifact(workflow_run):
    del workflow_run
    hits = []
    for root, _dirs, files in os.walk(fr.RUNNER_DIR):
        for name in files:
            path = os.path.join(root, name)
            if not os.path.relpath(path, fr.RUNNER_DIR).startswith(PREFIX):
                continue
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as handle:
                if TOKEN.encode() in handle.read():
                    hits.append(os.path.relpath(path, fr.REPO))
    assert hits == []
