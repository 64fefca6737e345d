"""The plan's metrics: the options that switch them on, the exporter next to the server, where they are read."""

import os
import sys

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_plan as p
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _trtllm_releases as rel

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
from spark_nodes import plan_errors, plan_pair, plan_single, spark  # noqa: E402  pylint: disable=wrong-import-position


two, one, errors_of = plan_pair, plan_single, plan_errors


def test_metrics_are_on_by_default_in_the_options_file():
    plans, dummy = one()
    content = plans["spark-a"]["serve"]["options_file"]["content"]
    assert "return_perf_metrics: true" in content and "enable_iter_perf_stats: true" in content


def test_the_exporter_runs_on_the_head_only_with_the_release_image_and_the_servers_supervision():
    plans, dummy = two()
    head, worker = plans["spark-a"]["container"], plans["spark-b"]["container"]
    assert worker["exporter"] is None and worker["exporter_absent"] == []
    exporter = head["exporter"]
    assert exporter["name"] == "trtllm-multinode-metrics" and exporter["image"] == head["image"]
    assert exporter["command"] == ["python3", "/etc/dgx-spark/metrics_exporter.py", "--upstream",
                                   "http://127.0.0.1:8355", "--listen", "0.0.0.0:9464"]
    assert exporter["restart_policy"] == head["docker"]["restart_policy"] == "unless-stopped"
    assert exporter["network_mode"] == "host" and exporter["volumes"] == ["%s:/etc/dgx-spark:ro" % head["config_dir"]]
    assert exporter["labels"]["dgx-spark.specdec/role"] == "metrics" and exporter["current"] is False
    assert exporter["file"] == {"path": head["config_dir"] + "/metrics_exporter.py", "sha256": p.exporter_sha256()}
    endpoint = plans["spark-a"]["serve"]["endpoint"]
    assert endpoint["prometheus_url"] == "http://127.0.0.1:9464/metrics"
    assert "metrics exporter" in plans["spark-a"]["changes"]


def test_metrics_off_leaves_the_options_alone_and_removes_an_exporter_left_running():
    fact = spark("spark-a")
    fact["containers"] = {"trtllm-specdec-metrics": {"running": True, "spec": "x"}}
    plans, dummy = one({"specdec_serve_metrics": False}, facts=fact)
    part = plans["spark-a"]
    assert "return_perf_metrics" not in part["serve"]["options_file"]["content"]
    assert part["container"]["exporter"] is None
    assert part["container"]["exporter_absent"] == ["trtllm-specdec-metrics"]
    assert part["serve"]["endpoint"]["prometheus_url"] is None
    assert "metrics exporter" in part["changes"]


def test_an_options_file_that_turns_the_metrics_off_is_named():
    errors = errors_of(one, {"specdec_serve_options": {"return_perf_metrics": False}})
    assert errors == ["specdec_serve_options on spark-a (cluster spark-a): return_perf_metrics: false turns off the "
                      "metrics that specdec_serve_metrics (true) serves; set specdec_serve_metrics: false to serve "
                      "without them"]


def test_the_exporter_port_must_differ_from_the_servers():
    (error,) = errors_of(one, {"specdec_serve_metrics_port": 8000})
    assert error.startswith("specdec_serve_metrics_port on spark-a (cluster spark-a): 8000 is not a port other than "
                            "specdec_serve_port (8000)")


def test_triton_serves_its_own_metrics_port_and_has_no_exporter():
    plans, dummy = one(prof="single_spark_triton_eagle3")
    assert plans["spark-a"]["container"]["exporter"] is None
    assert plans["spark-a"]["serve"]["endpoint"]["prometheus_url"] is None


def test_a_release_with_native_counters_is_read_on_the_servers_own_path(monkeypatch):
    # A manifest entry saying so (no supported release is known to serve the counters).
    monkeypatch.setitem(rel.RELEASES["1.2.0rc6"], "metrics", "spec_decoding")
    plans, dummy = one()
    assert plans["spark-a"]["container"]["exporter"] is None
    assert plans["spark-a"]["serve"]["endpoint"]["prometheus_url"] == "http://127.0.0.1:8000/prometheus/metrics"
    assert not plans["spark-a"]["container"]["firewall"]["enabled"]  # no allow-list: nothing to guard


def test_ipv6_bind_listens_in_brackets():
    plans, dummy = one({"specdec_serve_host": "::"})
    assert plans["spark-a"]["container"]["exporter"]["command"][-1] == "[::]:9464"
