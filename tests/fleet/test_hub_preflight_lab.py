"""Model access is checked in the pre-flight, from the node, before anything changes (`lab up --singles 1`).

The lab's stand-in hub (trtllm_standin/hub.py, inside the release stand-in image; the pre-flight asks it through the
image's huggingface_hub) has gated and private repositories and tokens with and without grants. Each refused run must
change nothing and name the host and the repository; a model already downloaded needs no hub at all.
Needs Docker and the lab images; `make test` runs it in the stage `fleet`, about a minute.
"""

import os
import re
import subprocess

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LAB = os.path.join(REPO, "molecule", "resources", "lab", "lab")
PREFIX = "hub-"
HOST = "single1-a"
GATED = "meta-llama/Llama-3.1-8B-Instruct"  # gated on the hub, as on huggingface.co
MODEL = "openai/gpt-oss-120b"  # single_spark_eagle3's, public
GOOD = "hf_MoleculeSecret1234"
NO_GRANTS = "hf_LabNoGrants00000000000000000000001"  # a valid token whose account was not granted the gated model
REVOKED = "hf_LabRevoked000000000000000000000001"

pytestmark = pytest.mark.skipif(not os.path.exists("/var/run/docker.sock"), reason="needs the Docker engine")


def lab(*args):
    env = dict(os.environ, SPARK_LAB_PREFIX=PREFIX)
    return subprocess.run([LAB, *args], env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module", name="inventory")
def fixture_inventory():
    lab("up", "--singles", "1")
    yield lab("inventory")
    lab("down")


def run(inventory, token, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"))
    env.pop("HF_TOKEN", None)
    if token:
        env["HF_TOKEN"] = token
    key = os.path.join(os.path.dirname(inventory), "ssh", "id_ed25519")
    proc = subprocess.run(["ansible-playbook", "-i", inventory, "--private-key", key,
                           os.path.join(REPO, "playbooks", "fleet.yml"), *extra],
                          env=env, capture_output=True, text=True, check=False)
    recap = re.search(r"^%s\s+: ok=\d+\s+changed=(\d+)" % HOST, proc.stdout, re.M)
    assert recap, proc.stdout[-3000:]
    return proc, int(recap.group(1))


@pytest.mark.parametrize("token,extra,expected", [
    (None, ("-e", "specdec_serve_model=" + GATED),
     "%s: %s (specdec_serve_model) is gated and no Hugging Face token was given: request access on "
     "https://huggingface.co/%s" % (HOST, GATED, GATED)),
    (NO_GRANTS, ("-e", "specdec_serve_model=" + GATED),
     "%s: %s (specdec_serve_model) is gated and the token's account has no access" % (HOST, GATED)),
    (GOOD, ("-e", "specdec_serve_draft_model=nvidai/gpt-oss-120b-Eagle3-long-context"),
     "%s: nvidai/gpt-oss-120b-Eagle3-long-context (specdec_serve_draft_model) does not exist" % HOST),
    (GOOD, ("-e", "specdec_serve_model_revision=v9.9"), '%s: %s (specdec_serve_model) has no revision "v9.9"'
                                                        % (HOST, MODEL)),
    (REVOKED, (), "%s: the Hugging Face hub rejected the token" % HOST),
], ids=["no-token", "no-grant", "misspelt-draft", "missing-revision", "revoked-token"])
def test_a_refused_repository_stops_the_run_before_any_change(inventory, token, extra, expected):
    proc, changed = run(inventory, token, *extra)
    assert proc.returncode != 0
    assert changed == 0
    text = re.sub(r"\s+", " ", proc.stdout)
    assert expected in text, proc.stdout[-3000:]
    assert "Unknown error" not in text and GOOD not in proc.stdout + proc.stderr
    running = subprocess.run(["docker", "ps", "-q", "--filter", "name=%s%s" % (PREFIX, HOST), "--filter",
                              "label=dgx-spark.specdec/role"], capture_output=True, text=True, check=True)
    assert running.stdout.strip() == ""  # no server was started


def test_a_downloaded_model_serves_without_asking_the_hub(inventory):
    proc, changed = run(inventory, GOOD)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert changed > 0
    # Everything is on the node now: the re-run asks the hub nothing, so it needs no network.
    proc, changed = run(inventory, GOOD)
    assert changed == 0 and proc.returncode == 0, proc.stdout[-3000:]
    task = proc.stdout.split("TASK [Check that the hub lets this node download what it needs]", 1)[1]
    assert task.split("TASK [", 1)[0].strip("* \n").startswith("skipping: [%s]" % HOST)
    # A change that fetches nothing new (the draft length) still asks nothing: the downloads are complete.
    proc, changed = run(inventory, GOOD, "-v", "-e", "specdec_serve_max_draft_len=2")
    assert proc.returncode == 0 and changed > 0, proc.stdout[-3000:]
    assert "via: skipped" in proc.stdout and "checked: []" in proc.stdout
