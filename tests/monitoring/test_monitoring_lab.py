"""Prometheus from the monitoring role scrapes a served fleet in the lab (`lab up --pairs 2 --singles 1 --monitoring`).

playbooks/fleet.yml serves pair1 (TensorRT-LLM 1.2.0rc6), pair2 (1.3.0rc12) and single1, then runs
playbooks/monitoring.yml on the lab's monitoring host (Debian's prometheus package, installed by the role). Under
load, every panel query of the dashboard returns data; stopping a server fires TrtllmEndpointDown and starting it
again resolves it. Needs Docker and the lab images (`make test` runs it as the stage `monitoring`); about 5 minutes.
"""

import importlib.util
import json
import math
import os
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import pytest
import yaml

_SPEC = importlib.util.spec_from_file_location("specdec_dashboard_lab", os.path.join(os.path.dirname(__file__), "dashboard.py"))
dashboard = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(dashboard)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LAB = os.path.join(REPO, "molecule", "resources", "lab", "lab")
PREFIX = "mon-"
TOKEN = "hf_MoleculeSecret1234"
CLUSTERS = {"pair1": ("pair1-a", 8355, "1.2.0rc6", "two_spark_eagle3", "direct"),
            "pair2": ("pair2-a", 8355, "1.3.0rc12", "two_spark_eagle3", "direct"),
            "single1": ("single1-a", 8000, "1.2.0rc6", "single_spark_eagle3", "single")}
DASHBOARD = os.path.join(REPO, "roles", "specdec_monitoring", "files", "grafana", "dashboards", "trtllm-specdec.json")

pytestmark = pytest.mark.skipif(not os.path.exists("/var/run/docker.sock"), reason="needs the Docker engine")


def lab(*args):
    env = dict(os.environ, SPARK_LAB_PREFIX=PREFIX)
    return subprocess.run([LAB, *args], env=env, check=True, capture_output=True, text=True).stdout.strip()


def playbook(inventory, name, *extra):
    env = dict(os.environ, SPARK_LAB_PREFIX=PREFIX, HF_TOKEN=TOKEN, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"), ANSIBLE_STDOUT_CALLBACK="json")
    proc = subprocess.run(["ansible-playbook", "-i", inventory, os.path.join(REPO, "playbooks", name), *extra],
                          env=env, capture_output=True, text=True, check=False)
    try:
        stats = json.loads(proc.stdout)["stats"]
    except (ValueError, KeyError):
        stats = None
    return proc, stats


@pytest.fixture(scope="module")
def fleet():
    lab("up", "--pairs", "2", "--singles", "1", "--monitoring")
    inventory = lab("inventory")
    with open(os.path.join(inventory, "hosts.yml"), encoding="utf-8") as handle:
        hosts = yaml.safe_load(handle)["all"]["children"]
    addresses = {name: spec["ansible_host"] for group in hosts["sparks"]["children"].values()
                 for name, spec in group["hosts"].items()}
    addresses["monitor"] = hosts["monitoring"]["hosts"]["monitor"]["ansible_host"]
    yield inventory, addresses
    lab("down")


def query(addresses, expr):
    url = "http://%s:9090/api/v1/query?%s" % (addresses["monitor"], urllib.parse.urlencode({"query": expr}))
    with urllib.request.urlopen(url, timeout=10) as resp:
        body = json.load(resp)
    assert body["status"] == "success", body
    return body["data"]["result"]


def api(addresses, path):
    with urllib.request.urlopen("http://%s:9090%s" % (addresses["monitor"], path), timeout=10) as resp:
        return json.load(resp)["data"]


def wait_for(check, timeout, what, step=3.0):
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail("%s: not within %d s" % (what, timeout))
        time.sleep(step)


def test_the_fleet_is_served_and_prometheus_scrapes_every_cluster_with_its_labels(fleet):
    inventory, addresses = fleet
    proc, stats = playbook(inventory, "fleet.yml")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert stats["monitor"]["changed"] > 0
    # A second run changes nothing, the monitoring host included; check mode too.
    proc, stats = playbook(inventory, "fleet.yml")
    assert proc.returncode == 0 and {h: s["changed"] for h, s in stats.items()} == {h: 0 for h in stats}, stats
    proc, stats = playbook(inventory, "monitoring.yml", "--check")
    assert proc.returncode == 0 and stats["monitor"]["changed"] == 0, stats

    def targets():
        found = {t["labels"].get("cluster"): t for t in api(addresses, "/api/v1/targets")["activeTargets"]
                 if t["labels"].get("job") == "trtllm"}
        return found if len(found) == 3 and all(t["health"] == "up" for t in found.values()) else None

    found = wait_for(targets, 60, "three trtllm targets up")
    for cluster, (head, dummy, release, profile, topology) in CLUSTERS.items():
        labels = found[cluster]["labels"]
        assert (labels["profile"], labels["release"], labels["topology"]) == (profile, release, topology)
        assert labels["instance"] == "%s:9464" % addresses[head]


def _load(addresses, seconds):
    """Completions to every cluster, one at a time per cluster, for ``seconds``."""
    stop = time.monotonic() + seconds
    errors = []

    def worker(cluster):
        head, port = CLUSTERS[cluster][:2]
        base = "http://%s:%d" % (addresses[head], port)
        with urllib.request.urlopen(base + "/v1/models", timeout=10) as resp:
            model = json.load(resp)["data"][0]["id"]
        while time.monotonic() < stop:
            body = json.dumps({"model": model, "prompt": "Explain speculative decoding in one paragraph.",
                               "max_tokens": 48, "temperature": 0}).encode()
            request = urllib.request.Request(base + "/v1/completions", data=body,
                                             headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=60) as resp:
                    resp.read()
            except OSError as exc:
                errors.append("%s: %s" % (cluster, exc))
                return

    threads = [threading.Thread(target=worker, args=(c,)) for c in CLUSTERS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors


def test_every_panel_query_returns_data_for_every_cluster_under_load(fleet):
    dummy, addresses = fleet
    _load(addresses, 45)
    clusters = sorted(CLUSTERS)
    # Grafana's $__rate_interval for a 5 s scrape: 4 scrapes.
    variables = {"cluster": clusters, "__rate_interval": "20s", "__interval": "5s"}
    empty = []
    for title, ref, expr in dashboard.panel_queries(DASHBOARD, variables):
        result = query(addresses, expr)
        seen = {r["metric"].get("cluster") for r in result}
        if not seen >= set(clusters):
            empty.append("%s (%s): %s -> clusters %s" % (title, ref, expr, sorted(c for c in seen if c)))
    assert not empty, "\n".join(empty)


@pytest.mark.parametrize("expr, per", [
    # acceptance rate per cluster
    ('sum by (cluster) (rate(trtllm_spec_decode_num_accepted_tokens_total[1m]))'
     ' / sum by (cluster) (rate(trtllm_spec_decode_num_draft_tokens_total[1m]))', None),
    # acceptance per draft position, non-increasing along the positions
    ('sum by (cluster, token_position) (rate(trtllm_spec_decode_accepted_tokens_total[1m]))'
     ' / sum by (cluster, token_position) (rate(trtllm_spec_decode_drafted_tokens_total[1m]))', "token_position"),
    # TTFT p95 per cluster
    ('histogram_quantile(0.95, sum by (cluster, le) (rate(trtllm_time_to_first_token_seconds_bucket[1m])))', None),
])
def test_queries_written_by_hand_return_data(fleet, expr, per):
    dummy, addresses = fleet
    result = query(addresses, expr)
    assert {r["metric"]["cluster"] for r in result} == set(CLUSTERS), result
    values = {}
    for item in result:
        value = float(item["value"][1])
        assert not math.isnan(value) and value >= 0, item
        if per:
            values.setdefault(item["metric"]["cluster"], {})[int(item["metric"][per])] = value
    for cluster, by_position in values.items():
        ordered = [by_position[k] for k in sorted(by_position)]
        assert ordered == sorted(ordered, reverse=True), (cluster, by_position)
        assert 0 < ordered[0] <= 1, (cluster, by_position)


def test_a_stopped_server_fires_endpoint_down_and_its_restart_resolves_it(fleet):
    dummy, addresses = fleet
    container = "trtllm-%ssingle1-a" % PREFIX

    def firing():
        return [a for a in api(addresses, "/api/v1/alerts")["alerts"]
                if a["labels"].get("alertname") == "TrtllmEndpointDown" and a["state"] == "firing"]

    assert not firing()
    subprocess.run(["docker", "stop", "-t", "5", container], check=True, capture_output=True)
    try:
        alerts = wait_for(firing, 150, "TrtllmEndpointDown firing")
        assert [a["labels"]["cluster"] for a in alerts] == ["single1"], alerts
        assert alerts[0]["annotations"]["summary"].endswith("of cluster single1 is down")
    finally:
        subprocess.run(["docker", "start", container], check=True, capture_output=True)
    wait_for(lambda: not firing(), 120, "TrtllmEndpointDown resolved")
