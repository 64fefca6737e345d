"""What a real Spark needs that the lab hides, as far as the lab shows it (runs after test_single_spark.py).

Memory from the node's /proc/meminfo (the lab simulates it), the page-cache drop (not possible in a container: reported
as not done), the load guard, the gpt-oss encodings from the lab's file server, the allow-list, the image report and a
moved tag, and NVIDIA's older guide on its dev image with the `huggingface-cli login` token.
"""

import json
import os
import subprocess

import pytest
import verify_helpers as vh

testinfra_hosts = vh.testinfra_hosts("spark-a")
LAB = os.path.join(os.environ.get("MOLECULE_PROJECT_DIRECTORY", "."), "molecule", "resources", "lab", "lab")
FILES = vh.PREFIX + "spark-lab-files"
HEALTH = "http://127.0.0.1:8000/health"


def lab(*args):
    return subprocess.run([LAB] + list(args), capture_output=True, text=True, timeout=120, check=True).stdout


def node_address(host):
    return host.check_output("ip -o -4 addr show dev eth0").split()[3].split("/")[0]


# GET a URL: the HTTP status, or the connection error.
GET = ("import sys, urllib.request\n"
       "try:\n"
       "    print(urllib.request.urlopen(sys.argv[1], timeout=5).status)\n"
       "except Exception as exc:\n"
       "    print(type(exc).__name__, getattr(exc, 'reason', exc))\n")


def get_from(container, url):
    """From another container of the lab's management network."""
    return vh.docker("exec", container, "python3", "-c", GET, url, check=False).stdout.strip()


def get_from_controller(url):
    """From the controller: the host, on the management network's gateway address."""
    return subprocess.run(["python3", "-c", GET, url], capture_output=True, text=True, timeout=30,
                          check=False).stdout.strip()


@pytest.fixture(scope="module", autouse=True)
def memory_reset():
    yield
    lab("meminfo", "spark-a", "--reset")


def test_too_little_memory_stops_before_anything_changes(host):
    """Held-out: a node with too little memory. The server is stopped, so MemAvailable is what there is to load into."""
    rc, output = vh.run_playbook("single_spark_draft_target.yml")  # the teardown ran before: serve again
    assert rc == 0, output[-3000:]
    name = vh.serving_container("spark-a")
    vh.docker("stop", name)
    before = vh.inspect(host, "spark-a")["State"]
    lab("meminfo", "spark-a", "--available-mib", "3072")
    try:
        rc, output = vh.run_playbook("single_spark_draft_target.yml")
    finally:
        lab("meminfo", "spark-a", "--reset")
    assert rc != 0
    assert vh.failed_in_preflight(output), output[-3000:]
    assert "memory on spark-a: MemAvailable is 3.0 GiB" in output, output[-3000:]
    assert "specdec_serve_memory_headroom_gib" in output and "specdec_serve_memory_check: warn" in output
    assert "changed=0" in output and "changed=1" not in output
    assert vh.inspect(host, "spark-a")["State"] == before  # still stopped, untouched


def test_server_start_reports_the_drop_not_done_in_a_container(host):
    """The role drops the page cache right before the server starts; a lab node cannot, and says so (no change)."""
    rc, output = vh.run_playbook("single_spark_draft_target.yml")
    assert rc == 0, output[-3000:]
    assert "/proc/sys/vm/drop_caches is not writable here" in output, output[-3000:]
    assert "page cache was not dropped" in output
    vh.wait_for_endpoint(host, HEALTH)
    # Serving: nothing to drop and nothing to check against MemAvailable any more.
    rc, output = vh.run_playbook("single_spark_draft_target.yml")
    assert rc == 0 and vh.changed_total(output) == 0, output[-3000:]
    assert "drop_caches is not writable" not in output


def test_gpt_oss_with_encodings_allow_list_and_guard(host):
    """gpt-oss fetches its encodings from the lab's file server; only the allowed client reaches the endpoint."""
    allowed = vh.docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", FILES).stdout.strip()
    assert allowed, "the lab's file server is not running"
    extra = ["-e", "specdec_serve_host=0.0.0.0", "-e", json.dumps({"specdec_serve_allowed_clients": [allowed]}),
             "-e", "specdec_serve_memory_guard=true"]
    rc, output = vh.run_playbook("single_spark_eagle3.yml", *extra)
    assert rc == 0, output[-3000:]
    # The image report of the pre-flight.
    assert "local/tensorrt-llm-standin:1.2.0rc6: ID sha256:" in output
    assert "digest none (built or loaded locally, never pulled), TensorRT-LLM 1.2.0rc6" in output
    # The encodings: fetched with the lab's checksums, mounted, named by TIKTOKEN_ENCODINGS_BASE.
    with open(os.path.join(os.path.dirname(LAB), "files", "encodings", "SHA256SUMS"), encoding="utf-8") as handle:
        sums = dict(reversed(line.split()) for line in handle.read().splitlines())
    for name in ("o200k_base.tiktoken", "cl100k_base.tiktoken"):
        path = vh.home("spark-a") + "/.dgx-spark/tiktoken/" + name
        with host.sudo():
            assert host.file(path).sha256sum == sums[name]
    env = vh.inspect(host, "spark-a")["Config"]["Env"]
    assert "TIKTOKEN_ENCODINGS_BASE=/etc/dgx-spark/tiktoken" in env
    # The allowed client is served, the controller (another address) is refused at once, the node itself is served.
    url = "http://%s:8000/health" % node_address(host)
    vh.wait_for_endpoint(host, HEALTH)
    assert get_from(FILES, url) == "200"
    refused = get_from_controller(url)
    assert refused.startswith("URLError") and "Connection refused" in refused, refused
    assert vh.http_get(host, HEALTH)[0] == 200
    # The guard watched the load in the background and ended once the server was ready.
    with host.sudo():
        jobs = host.run("grep -l '\"guard\"' /root/.ansible_async/* 2>/dev/null").stdout.split()
        results = [json.loads(host.file(job).content_string) for job in jobs]
    assert any((r.get("guard") or {}).get("ready") for r in results), results


def test_encodings_are_not_fetched_again_and_work_offline(host):
    allowed = vh.docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", FILES).stdout.strip()
    extra = ["-e", "specdec_serve_host=0.0.0.0", "-e", json.dumps({"specdec_serve_allowed_clients": [allowed]})]
    vh.docker("stop", FILES)
    try:
        rc, output = vh.run_playbook("single_spark_eagle3.yml", *extra)
    finally:
        vh.docker("start", FILES)
    assert rc == 0 and vh.changed_total(output) == 0, output[-3000:]
    # The allow-list dropped: its rules go, the rest of the node's firewall stays.
    rc, output = vh.run_playbook("single_spark_eagle3.yml", "-e", "specdec_serve_host=0.0.0.0")
    assert rc == 0, output[-3000:]
    with host.sudo():
        rules = host.check_output("iptables -w -S")
    # The endpoint's chain and its jump go; Open MPI's pinned ports stay closed to all but loopback.
    assert "DGX-SPECDEC" not in rules and "-A DGX_SPARK_MPI -i lo" in rules
    assert get_from_controller("http://%s:8000/health" % node_address(host)) == "200"


def test_a_moved_tag_is_reported_before_anything_changes(host):
    image = "local/tensorrt-llm-standin:1.2.0rc6"
    original = vh.docker("image", "inspect", "-f", "{{.Id}}", image).stdout.strip()
    build = subprocess.run(["docker", "build", "-q", "-t", image, "-"], input="FROM %s\nLABEL spark-lab.moved=1\n" % original,
                           capture_output=True, text=True, timeout=120, env=dict(os.environ, DOCKER_BUILDKIT="0"),
                           check=True)
    try:
        rc, output = vh.run_playbook("single_spark_eagle3.yml", "--check", "-e", "specdec_serve_host=0.0.0.0")
    finally:
        vh.docker("tag", original, image)
        vh.docker("image", "rm", build.stdout.strip(), check=False)
    assert rc == 0, output[-3000:]
    assert "%s now points to sha256:" % image in output and "in an earlier run" in output, output[-3000:]
    assert "Pin the image by digest" in output


def test_older_guide_on_its_dev_image_with_the_login_token(host):
    """NVIDIA's older single-Spark Draft-Target guide: spark-single-gpu-dev, token where `huggingface-cli login` puts it."""
    rc, output = vh.run_playbook("single_spark_draft_target.yml", "-e", "specdec_profile_name=single_spark_draft_target_dev")
    assert rc == 0, output[-3000:]
    container = vh.inspect(host, "spark-a")
    assert container["Config"]["Image"] == "local/tensorrt-llm-standin:spark-single-gpu-dev"
    assert "HF_TOKEN_PATH=/root/.cache/huggingface/token" in container["Config"]["Env"]
    token = host.file(vh.home("spark-a") + "/.cache/huggingface/token")
    with host.sudo():
        assert token.user == "spark" and token.mode == 0o600 and token.content_string == vh.TOKEN
    assert vh.TOKEN not in json.dumps(container) and vh.TOKEN not in output
    vh.wait_for_endpoint(host, HEALTH)
    rc, output = vh.run_playbook("single_spark_draft_target.yml", "-e", "specdec_profile_name=single_spark_draft_target_dev")
    assert rc == 0 and vh.changed_total(output) == 0, output[-3000:]
