"""The AWX-shaped run: playbooks/fleet.yml through ansible-runner inside the EE image, over SSH, twice, then
with one cluster's cable pulled. Asserts from the job events, and that the token is in none of the artifacts.

Needs the lab images and the EE image (`make ee`); `make test` runs it as the stage `fleet`.
"""

import os
import secrets
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import fleet_runner as fr  # noqa: E402  pylint: disable=wrong-import-position

PREFIX = "fleettest-"
# A token the runs must never write anywhere but the Sparks (the lab's hub accepts hf_ + alphanumerics).
# Made at run time: the project the runs copy holds this file.
TOKEN = "hf_" + secrets.token_hex(12)


def lab(*args):
    return fr.lab(*args, prefix=PREFIX)


@pytest.fixture(scope="module")
def fleet():
    image = subprocess.run(["docker", "image", "inspect", fr.EE_IMAGE], capture_output=True, check=False)
    if image.returncode:
        pytest.fail("the EE image %s is missing: run `make ee` first" % fr.EE_IMAGE)
    lab("up", "--pairs", "2", "--singles", "1")
    inventory, key = fr.lab_paths(PREFIX)
    yield inventory, key
    lab("down")


def cluster_lines(job):
    return {line.split(" ", 1)[0]: line for line in job["summary"][:-1]}


def test_two_runs_converge_every_cluster_then_change_nothing(fleet):
    inventory, key = fleet
    first = fr.run_job(inventory, key, TOKEN, "fleettest-1")
    assert first["rc"] == 0, open(first["stdout"]).read()[-3000:]
    lines = cluster_lines(first)
    assert sorted(lines) == ["pair1", "pair2", "single1"]
    assert all(": serving - " in line for line in lines.values()), first["summary"]
    assert first["summary"][-1] == "fleet: 3 clusters serving, 0 failed"
    assert sum(first["changed"].values()) > 0
    # The credential reached the Sparks: the serving containers read it from the token file.
    for node in ("pair1-a", "pair2-b", "single1-a"):
        delivered = subprocess.run(["docker", "exec", "trtllm-" + PREFIX + node, "cat", "/etc/dgx-spark/hf_token"],
                                   capture_output=True, text=True, check=False)
        assert delivered.stdout.strip() == TOKEN, (node, delivered.stderr)
    # pair2 runs 1.3.0rc12 (its inventory says so): its stand-in judged a file spelled for that release.
    options = subprocess.run(["docker", "exec", "trtllm-" + PREFIX + "pair2-a", "cat",
                              "/etc/dgx-spark/extra-llm-api-config.yml"], capture_output=True, text=True, check=False)
    assert "TensorRT-LLM 1.3.0rc12" in options.stdout and "decoding_type: Eagle3\n" in options.stdout, options

    # The job's output says how the loading goes while it waits (what AWX shows as the job runs).
    stdout = open(first["stdout"], encoding="utf-8").read()
    assert "[single1-a] trtllm-%ssingle1-a: loading, " % PREFIX in stdout, stdout[-3000:]
    # Each cluster's result is a job artifact (set_stats), as AWX keeps it for the job and a workflow's next node.
    clusters = first["artifact_data"]["dgx_spark_specdec_clusters"]
    assert sorted(clusters) == ["pair1", "pair2", "single1"]
    assert clusters["single1"]["state"] == "serving" and clusters["single1"]["tokens_per_s"] > 0
    assert clusters["pair1"]["url"].startswith("http://") and clusters["pair1"]["head"] == "pair1-a"

    second = fr.run_job(inventory, key, TOKEN, "fleettest-2")
    assert second["rc"] == 0
    assert second["summary"][-1] == "fleet: 3 clusters serving, 0 failed"
    assert second["changed"] == {h: 0 for h in ("pair1-a", "pair1-b", "pair2-a", "pair2-b", "single1-a", "localhost")}


def test_a_pulled_cable_fails_its_cluster_only(fleet):
    inventory, key = fleet
    pid = subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", PREFIX + "pair2-b"], check=True,
                         capture_output=True, text=True).stdout.strip()
    for port in ("enp1s0f1np1", "enP2p1s0f1np1"):  # both halves of the one QSFP cable
        subprocess.run(["nsenter", "-t", pid, "-n", "ip", "link", "del", port], check=True)
    try:
        job = fr.run_job(inventory, key, TOKEN, "fleettest-3")
    finally:
        lab("up")  # re-wires the cable
    assert job["rc"] != 0
    lines = cluster_lines(job)
    assert "FAILED" in lines["pair2"] and "no QSFP port is Up" in lines["pair2"], lines["pair2"]
    assert ": serving - " in lines["pair1"] and ": serving - " in lines["single1"]
    assert job["summary"][-1] == "fleet: 2 clusters serving, 1 failed"
    assert job["changed"]["pair1-a"] == 0 and job["changed"]["single1-a"] == 0


def test_the_token_is_in_no_artifact(fleet):
    del fleet
    hits = []
    for top in (fr.RUNNER_DIR, os.path.join(fr.REPO, "build")):
        for root, _dirs, files in os.walk(top):
            for name in files:
                path = os.path.join(root, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue  # ssh_key_data is a FIFO
                with open(path, "rb") as handle:
                    if TOKEN.encode() in handle.read():
                        hits.append(os.path.relpath(path, fr.REPO))
    assert hits == []
    jobs = [d for d in os.listdir(fr.RUNNER_DIR) if d.startswith("fleettest-")]
    assert len(jobs) == 3
    for job in jobs:
        artifacts = os.path.join(fr.RUNNER_DIR, job, "artifacts", job)
        for name in ("stdout", "job_events", "env.list", "command"):
            assert os.path.exists(os.path.join(artifacts, name)), (job, name)
        assert os.path.exists(os.path.join(fr.RUNNER_DIR, job, "env", "extravars"))
