"""Nothing lost, nothing opened: what a Spark owner meets after the first run (`lab up --pairs 1 --singles 1`).

Each case is tried as a user would, with playbooks/fleet.yml on a lab of its own: mistakes refused before any change,
directories that were there before keep their owner and mode, the allow-list in force after a flush and a restart
(the reboot of a lab node) with an allowed and a refused client, a hung server restarted without Ansible, a changed
draft downloaded again, a failed download during an upgrade that leaves the old server serving, two runs at once, a
profile switch followed by a restart, the token rotated on a pair without a restart, a lost head's ranks ended, and
the teardown next to the user's own files. Needs Docker and the lab images; `make test` runs it in the stage `fleet`.
"""

import json
import os
import re
import signal
import subprocess
import time

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LAB = os.path.join(REPO, "molecule", "resources", "lab", "lab")
PREFIX = "safe-"
GOOD = "hf_MoleculeSecret1234"
ROTATED = "hf_MoleculeSecret5678"
SINGLE, HEAD, WORKER = "single1-a", "pair1-a", "pair1-b"
SERVER = "trtllm-%s%s" % (PREFIX, SINGLE)
FILES = PREFIX + "spark-lab-files"
# Each lab node's directories live under its own host directory (the sibling containers mount the same paths).
ROOT = "/var/lib/spark-lab/" + PREFIX + "%s"
HOME = ROOT + "/home/spark"
# The single Spark's models in a shared directory that was there before the collection (root's, 0750).
MODELS = ROOT % SINGLE + "/shared-models"
LIVENESS = 20

pytestmark = pytest.mark.skipif(not os.path.exists("/var/run/docker.sock"), reason="needs the Docker engine")


def lab(*args):
    env = dict(os.environ, SPARK_LAB_PREFIX=PREFIX)
    return subprocess.run([LAB, *args], env=env, check=True, capture_output=True, text=True).stdout.strip()


def docker(*args, check=True):
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, timeout=120)


def on(node, command, check=True):
    """A shell command on a lab node (as root)."""
    return docker("exec", PREFIX + node, "bash", "-c", command, check=check).stdout


def files_address():
    return docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", FILES).stdout.strip()


def node_address(node):
    return on(node, "ip -o -4 addr show dev eth0").split()[3].split("/")[0]


GET = ("import sys, urllib.request\n"
       "try:\n"
       "    print(urllib.request.urlopen(sys.argv[1], timeout=3).status)\n"
       "except Exception as exc:\n"
       "    print(type(exc).__name__, getattr(exc, 'reason', exc))\n")


def get_from_files(url):
    """From the lab's file server: the allowed client."""
    return docker("exec", FILES, "python3", "-c", GET, url, check=False).stdout.strip()


def get_from_controller(url):
    return subprocess.run(["python3", "-c", GET, url], capture_output=True, text=True, check=False).stdout.strip()


def started(container):
    return docker("inspect", "-f", "{{.State.StartedAt}}", container).stdout.strip()


@pytest.fixture(scope="module", name="inventory")
def fixture_inventory():
    lab("up", "--pairs", "1", "--singles", "1")
    yield lab("inventory")
    lab("down")


@pytest.fixture(scope="module", name="serving")
def fixture_serving(inventory):
    """The single Spark and the pair served, with the user's own files in place first."""
    # The user's: a shared models directory (root's, 0750) with their notes, and a model of their own in the cache.
    script = ("install -d -m 0750 {models} && echo mine > {models}/notes.txt && "
              "mkdir -p {home}/.cache/huggingface/hub/models--me--mine && "
              "echo weights > {home}/.cache/huggingface/hub/models--me--mine/w.bin")
    on(SINGLE, script.format(models=MODELS, home=HOME % SINGLE))
    # Extra variables reach every host: the single Spark's and the pair's runs are apart.
    for limit, variables in (("single1", None), ("pair1", {})):
        proc, changed = run(inventory, variables=variables, limit=limit)
        assert proc.returncode == 0, proc.stdout[-4000:]
    return inventory


def single_vars(**more):
    variables = {"trtllm_container_models_dir": MODELS, "specdec_serve_host": "0.0.0.0",
                 "specdec_serve_allowed_clients": [files_address()], "specdec_serve_liveness_timeout": LIVENESS}
    variables.update(more)
    return variables


def run(inventory, *extra, variables=None, token=GOOD, limit=None, playbook="fleet.yml", wait=True):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"), HF_TOKEN=token)
    key = os.path.join(os.path.dirname(inventory), "ssh", "id_ed25519")
    argv = ["ansible-playbook", "-i", inventory, "--private-key", key, os.path.join(REPO, "playbooks", playbook)]
    argv += ["-e", json.dumps(single_vars() if variables is None else variables)]
    argv += ["--limit", limit] if limit else []
    proc = subprocess.Popen(argv + list(extra), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if not wait:
        return proc
    return finish(proc)


def finish(proc):
    out, dummy = proc.communicate(timeout=600)
    proc.stdout = out
    changed = {host: int(n) for host, n in re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", out, re.M)}
    return proc, changed


def flat(text):
    return re.sub(r"\s+", " ", text)


# -- mistakes named before anything changes --------------------------------------------------------------------

@pytest.mark.parametrize("variables,expected", [
    ({"trtllm_container_models_dir": "/"}, 'trtllm_container_models_dir on single1-a: "/" is not a directory of its '
                                           "own, not a system directory (/etc, /usr, /bin, /sbin, ...), not the home "
                                           "directory, and not inside another directory the collection manages; / is "
                                           "the system's"),
    ({"trtllm_container_config_dir": "/etc"}, 'trtllm_container_config_dir on single1-a: "/etc" is not a directory '
                                              "of its own"),
    ({"trtllm_container_models_dir": HOME % SINGLE}, "%s is the login user's home" % HOME % SINGLE),
    ({"trtllm_container_hf_cache_dir": HOME % SINGLE + "/models/hf"},
     "it overlaps trtllm_container_hf_cache_dir (%s/models/hf)" % HOME % SINGLE),
    ({"specdec_serve_extra_args": ["--port", "9000"]},
     "specdec_serve_extra_args on single1-a (cluster single1): --port is set by the plan (set specdec_serve_port "
     "instead)"),
    ({"specdec_serve_options": {"tensor_parallel_size": 2}}, "tensor_parallel_size: 2 would override the plan's 1"),
], ids=["root", "etc", "home", "overlap", "extra-port", "options-tp"])
def test_a_mistake_is_named_before_anything_changes(inventory, variables, expected):
    before = on(SINGLE, "stat -c '%U %a' / /etc/ssh")
    proc, changed = run(inventory, variables=variables, limit="single1")
    assert proc.returncode != 0 and changed[SINGLE] == 0, proc.stdout[-3000:]
    assert expected in flat(proc.stdout), proc.stdout[-3000:]
    assert on(SINGLE, "stat -c '%U %a' / /etc/ssh") == before
    assert docker("ps", "-aq", "--filter", "name=" + SERVER).stdout.strip() == ""


def test_the_netplan_file_must_be_in_etc_netplan(inventory):
    proc, changed = run(inventory, "-e", "netplan_qsfp_file=/etc/ssh/sshd_config", variables={}, limit="pair1")
    assert proc.returncode != 0 and changed[HEAD] == 0
    assert ('netplan_qsfp_file on pair1-a (cluster pair1): "/etc/ssh/sshd_config" is not a file directly in '
            "/etc/netplan/ ending in .yaml" in flat(proc.stdout)), proc.stdout[-3000:]


# -- served: the directories, the allow-list ---------------------------------------------------------------------

def test_a_directory_that_was_there_keeps_its_owner_and_mode(serving):
    assert on(SINGLE, "stat -c '%U %a' " + MODELS).split() == ["root", "750"]
    proc, changed = run(serving, limit="single1")
    assert proc.returncode == 0 and changed == {SINGLE: 0}, proc.stdout[-3000:]
    proc, changed = run(serving, variables={}, limit="pair1")
    assert proc.returncode == 0 and changed == {HEAD: 0, WORKER: 0}, proc.stdout[-3000:]


def test_the_allow_list_holds_after_a_flush_and_a_restart_without_ansible(serving):
    url = "http://%s:8000/health" % node_address(SINGLE)
    assert get_from_files(url) == "200"
    assert "Connection refused" in get_from_controller(url)
    # A flush while it serves: the container's watcher restores the rules within seconds.
    on(SINGLE, "iptables -F && iptables -X DGX-SPECDEC && ip6tables -F && ip6tables -X DGX-SPECDEC")
    time.sleep(4)
    assert "DGX-SPECDEC" in on(SINGLE, "iptables -S INPUT") and "DGX-SPECDEC" in on(SINGLE, "ip6tables -S INPUT")
    assert "Connection refused" in get_from_controller(url)
    # A reboot: the firewall gone, the containers started again by Docker. Refused from the first answer on.
    on(SINGLE, "iptables -F && iptables -X DGX-SPECDEC")
    docker("restart", SERVER)
    answers = []
    for dummy in range(20):
        answers.append(get_from_controller(url))
        if get_from_files(url) == "200":
            break
        time.sleep(1)
    assert get_from_files(url) == "200"
    assert all(not a.startswith("200") for a in answers), answers
    proc, changed = run(serving, limit="single1")
    assert proc.returncode == 0 and changed[SINGLE] == 0, proc.stdout[-3000:]


def wait_served(node, timeout=60):
    url = "http://%s:8000/health" % node_address(node)
    for dummy in range(timeout):
        if get_from_files(url) == "200":
            return
        time.sleep(1)
    assert get_from_files(url) == "200"


def test_a_hung_server_is_restarted_without_ansible(serving):
    # Ready first, as its entrypoint saw it: a server still loading is given its time (a 120B model loads for minutes).
    wait_served(SINGLE)
    before = started(SERVER)
    for dummy in range(30):
        if "ready: http://127.0.0.1:8000/health answers" in docker("logs", "--since", before, SERVER).stdout:
            break
        time.sleep(1)
    # SIGSTOP, from the host (where `docker top` shows the processes' IDs): alive, but it answers nothing.
    top = docker("top", SERVER, "-eo", "pid,args").stdout.splitlines()[1:]
    # The server's own process (its program is trtllm-serve), not tini's or the entrypoint's command lines.
    pids = [int(line.split()[0]) for line in top if any(w.endswith("/trtllm-serve") for w in line.split()[1:3])]
    assert pids, top
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    time.sleep(3)
    assert get_from_files("http://%s:8000/health" % node_address(SINGLE)).startswith(("URLError", "TimeoutError"))
    deadline = time.time() + LIVENESS + 60
    while time.time() < deadline and started(SERVER) == before:
        time.sleep(2)
    assert started(SERVER) != before, "\n".join(line for line in docker("logs", SERVER).stdout.splitlines()
                                                if "dgx-spark" in line) + "\n" + docker("top", SERVER).stdout
    logs = docker("logs", SERVER)
    assert "has not answered for" in logs.stderr + logs.stdout and "restarting it" in logs.stderr + logs.stdout
    wait_served(SINGLE)


def test_only_the_endpoint_answers_on_the_management_network(serving):
    """One Spark's server starts Open MPI's runtime (its executor worker): Open MPI 4.1 listens on the wildcard, on
    the pinned port, which only loopback reaches."""
    listening = on(SINGLE, "ss -Hltn")
    assert "0.0.0.0:50100" in listening, listening
    assert "DGX_SPARK_MPI" in on(SINGLE, "iptables -S INPUT")
    probe = "import socket; socket.create_connection(('%s', 50100), timeout=3); print('open')"
    assert on(SINGLE, "python3 -c \"%s\"" % probe % "127.0.0.1").strip() == "open"
    refused = docker("exec", FILES, "python3", "-c", probe % node_address(SINGLE), check=False)
    assert refused.returncode != 0 and "timed out" in refused.stderr, refused.stdout + refused.stderr


def test_check_mode_changes_nothing(serving):
    before = started(SERVER), on(SINGLE, "cat %s/gpt-oss-120b-Eagle3/.dgx-spark-complete" % MODELS)
    proc, changed = run(serving, "--check", variables=single_vars(specdec_serve_draft_revision="b" * 40,
                                                                  specdec_serve_max_draft_len=2), limit="single1")
    assert proc.returncode == 0 and changed[SINGLE] > 0, proc.stdout[-3000:]
    assert (started(SERVER), on(SINGLE, "cat %s/gpt-oss-120b-Eagle3/.dgx-spark-complete" % MODELS)) \
        == before
    assert on(SINGLE, "test -e /run/lock/dgx-spark-specdec.lock && echo held || echo free").strip() == "free"


# -- what is served is what was asked -----------------------------------------------------------------------------

def test_a_new_draft_revision_is_downloaded_again_while_the_server_serves(serving):
    marker = MODELS + "/gpt-oss-120b-Eagle3/.dgx-spark-complete"
    assert on(SINGLE, "cat " + marker) == "nvidia/gpt-oss-120b-Eagle3-long-context\n"
    revision = "a" * 40
    proc, changed = run(serving, variables=single_vars(specdec_serve_draft_revision=revision), limit="single1")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert on(SINGLE, "cat " + marker) == "nvidia/gpt-oss-120b-Eagle3-long-context\nrevision: %s\n" % revision
    assert "Start the missing downloads" in proc.stdout
    # Another model into the same directory: refused, naming both, before anything changes.
    proc, changed = run(serving, variables=single_vars(specdec_serve_draft_model="spark-lab/other-draft"),
                        limit="single1")
    assert proc.returncode != 0 and changed[SINGLE] == 0
    assert ("holds nvidia/gpt-oss-120b-Eagle3-long-context (its marker %s), and specdec_serve_draft_model is "
            "spark-lab/other-draft" % marker) in flat(proc.stdout), proc.stdout[-3000:]
    proc, changed = run(serving, limit="single1")
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_the_long_waits_say_how_far_they_are(serving):
    """A download of 40 s and a load of 40 s (the stand-ins' simulated durations): progress lines every 5 s."""
    env = {"STANDIN_DOWNLOAD_SECONDS": "40", "STANDIN_STARTUP_SECONDS": "40"}
    variables = single_vars(specdec_serve_draft_revision="b" * 40, trtllm_container_env=env,
                            specdec_serve_download_poll=5)
    proc, changed = run(serving, variables=variables, limit="single1")
    assert proc.returncode == 0, proc.stdout[-3000:]
    # The expected size from the hub (the stand-in's HfApi.model_info with files_metadata), the rate, the files.
    downloads = re.findall(r"^\[single1-a\] downloading nvidia/gpt-oss-120b-Eagle3-long-context: (.*)$",
                           proc.stdout, re.M)
    assert len(downloads) >= 5, proc.stdout[-3000:]
    assert all(re.match(r"[\d.]+ (B|KiB|MiB) of [\d.]+ (B|KiB|MiB) \(\d+%\)", d) for d in downloads[:-1]), downloads
    assert any(re.search(r"/s, .*\d+/\d+ files", d) for d in downloads), downloads
    assert re.match(r"done after [0-9hms]+, [\d.]+ (B|KiB)$", downloads[-1]), downloads
    # The loading: time against the timeout, the health answer, the server's last log line.
    loads = re.findall(r"^\[single1-a\] %s: loading, (.*)$" % SERVER, proc.stdout, re.M)
    assert len(loads) >= 3, proc.stdout[-3000:]
    assert any("of 30m00s" in line and "health" in line and "last log:" in line for line in loads), loads
    assert "health 200" in loads[-1]
    # The waits' own tasks, not Ansible's retries, told how it went.
    assert "FAILED - RETRYING" not in proc.stdout
    proc, changed = run(serving, variables=variables, limit="single1")
    assert proc.returncode == 0 and changed == {SINGLE: 0}, proc.stdout[-3000:]
    # Nothing waited for, nothing said.
    assert "] downloading " not in proc.stdout and ": loading," not in proc.stdout, proc.stdout[-3000:]


def test_a_failed_download_during_an_upgrade_leaves_the_old_server_serving(serving):
    before = started(SERVER)
    variables = single_vars(specdec_serve_draft_model="spark-lab/huge-draft", specdec_serve_draft_dir="/models/huge/",
                            specdec_serve_hub_check=False)
    proc, changed = run(serving, variables=variables, limit="single1")
    assert proc.returncode != 0
    text = flat(proc.stdout)
    assert "the disk is full while downloading spark-lab/huge-draft" in text, proc.stdout[-3000:]
    assert "the server that was running keeps serving" in text
    assert started(SERVER) == before
    assert get_from_files("http://%s:8000/health" % node_address(SINGLE)) == "200"


# -- one server per node, one run at a time -----------------------------------------------------------------------

def test_a_profile_switch_leaves_one_server_after_a_restart(serving):
    other = "trtllm-%sother" % PREFIX
    proc, changed = run(serving, variables=single_vars(trtllm_container_name=other), limit="single1")
    assert proc.returncode == 0, proc.stdout[-3000:]
    mine = docker("ps", "-a", "--format", "{{.Names}}", "--filter", "name=trtllm-" + PREFIX).stdout.split()
    assert SERVER not in mine and other in mine
    # A reboot: Docker starts what it has; only the current server is there to start.
    docker("restart", other)
    proc, changed = run(serving, limit="single1")
    assert proc.returncode == 0, proc.stdout[-3000:]
    names = docker("ps", "-a", "--format", "{{.Names}}", "--filter", "name=trtllm-" + PREFIX).stdout.split()
    assert other not in names and SERVER in names


def test_two_runs_at_once_the_second_stops_at_once_naming_the_first(serving):
    first = run(serving, variables=single_vars(specdec_serve_max_draft_len=2), limit="single1", wait=False)
    time.sleep(6)
    began = time.time()
    proc, changed = run(serving, limit="single1")
    assert proc.returncode != 0 and changed.get(SINGLE, 0) == 0
    assert time.time() - began < 60
    assert "is held by run" in flat(proc.stdout) and "started" in flat(proc.stdout), proc.stdout[-3000:]
    first, dummy = finish(first)
    assert first.returncode == 0, first.stdout[-3000:]
    # An interrupted run's lock (its ansible-playbook gone) does not block the next one.
    stale = {"run": "%s:999999:1" % os.uname().nodename, "user": "root", "controller": os.uname().nodename,
             "pid": 999999, "playbook": "fleet.yml", "since": time.time() - 60}
    on(SINGLE, "mkdir -p /run/lock && echo '%s' > /run/lock/dgx-spark-specdec.lock" % json.dumps(stale))
    proc, changed = run(serving, limit="single1")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "took over the lock of run" in flat(proc.stdout)


# -- the pair: the token, a lost head ------------------------------------------------------------------------------

def test_rotating_the_token_restarts_nothing_and_shows_nothing(serving):
    containers = ["trtllm-%s%s" % (PREFIX, h) for h in (HEAD, WORKER)]
    before = [started(c) for c in containers]
    proc, changed = run(serving, "--diff", variables={}, token=ROTATED, limit="pair1")
    assert proc.returncode == 0 and changed[HEAD] > 0, proc.stdout[-3000:]
    assert [started(c) for c in containers] == before
    for host in (HEAD, WORKER):
        assert on(host, "cat %s/.dgx-spark/hf_token" % HOME % host) == ROTATED
    assert ROTATED not in proc.stdout and GOOD not in proc.stdout
    # Only the secret is hidden: no masked paths, owners or modes.
    body = "\n".join(line for line in proc.stdout.splitlines() if not line.startswith(("TASK [", "PLAY", "RUNNING")))
    assert "********" not in body and "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" not in body


def test_a_lost_heads_ranks_are_ended_before_the_next_start(serving):
    # A rank left on the worker (started the way mpirun starts one), then the head's container starts again.
    on(WORKER, "docker exec -d trtllm-%s%s /bin/bash /etc/dgx-spark/entrypoint.sh --rank -- sleep 600" % (PREFIX, WORKER))
    time.sleep(2)
    assert "sleep 600" in docker("top", "trtllm-%s%s" % (PREFIX, WORKER)).stdout
    docker("restart", "trtllm-%s%s" % (PREFIX, HEAD))
    deadline = time.time() + 60
    while time.time() < deadline and "sleep 600" in docker("top", "trtllm-%s%s" % (PREFIX, WORKER)).stdout:
        time.sleep(2)
    assert "sleep 600" not in docker("top", "trtllm-%s%s" % (PREFIX, WORKER)).stdout
    logs = docker("logs", "trtllm-%s%s" % (PREFIX, HEAD))
    assert "ending rank" in logs.stdout + logs.stderr


# -- the teardown --------------------------------------------------------------------------------------------------

def test_the_teardown_removes_what_the_collection_created_and_keeps_the_users_files(serving):
    # The user keeps notes in the configuration directory the collection created.
    on(SINGLE, "echo mine > %s/.dgx-spark/my-notes.txt" % HOME % SINGLE)
    for limit, variables in (("single1", single_vars()), ("pair1", {})):
        proc, changed = run(serving, "-e", "specdec_teardown_remove_models=true", playbook="teardown.yml",
                            variables=variables, limit=limit)
        assert proc.returncode == 0, proc.stdout[-3000:]
        if limit == "single1":
            kept = flat(proc.stdout)
    # The user's files and the directory that was there before stay; what the collection downloaded goes.
    assert on(SINGLE, "cat %s/notes.txt %s/.cache/huggingface/hub/models--me--mine/w.bin" % (MODELS, HOME % SINGLE)) \
        == "mine\nweights\n"
    assert on(SINGLE, "stat -c '%U %a' " + MODELS).split() == ["root", "750"]
    assert on(SINGLE, "ls %s" % MODELS).split() == ["notes.txt"]
    assert on(SINGLE, "ls %s/.cache/huggingface/hub" % HOME % SINGLE).split() == ["models--me--mine"]
    # The token file, the keys, the collection's files and its firewall rules go.
    assert on(SINGLE, "ls -A %s/.dgx-spark" % HOME % SINGLE).split() == ["my-notes.txt"]
    for host in (SINGLE, HEAD, WORKER):
        if host != SINGLE:
            assert on(host, "ls -A %s/.dgx-spark 2>/dev/null || true" % HOME % host).strip() == ""
        assert "DGX" not in on(host, "iptables -S; ip6tables -S")
    assert docker("ps", "-aq", "--filter", "name=trtllm-" + PREFIX).stdout.strip() == ""
    assert "holds 1 entry the collection did not create (e.g. my-notes.txt)" in kept
