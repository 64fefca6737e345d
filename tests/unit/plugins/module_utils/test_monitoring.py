"""Scrape targets from the plans of an inventory's clusters."""

import os
import sys

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _monitoring as mon
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_plan as p

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
from spark_nodes import PLAYBOOK_ADDRESSES, profile, spark  # noqa: E402  pylint: disable=wrong-import-position


def _pair_plans():
    node_vars = {h: {"netplan_qsfp_addresses": PLAYBOOK_ADDRESSES[h]} for h in ("spark-a", "spark-b")}
    plans, dummy = p.plan_cluster("pair1", ["spark-a", "spark-b"], profile("two_spark_eagle3"), node_vars,
                                  {h: spark(h) for h in node_vars})
    return {h: dict(plan, profile="two_spark_eagle3") for h, plan in plans.items()}


def test_one_target_per_cluster_at_its_heads_address_with_the_labels():
    plans = _pair_plans()
    single, dummy = p.plan_cluster("single1", ["spark-c"], profile("single_spark_eagle3"),
                                   {"spark-c": {"specdec_serve_host": "0.0.0.0"}}, {"spark-c": spark("spark-c")})
    hostvars = {"spark-a": {"specdec_plan": plans["spark-a"], "ansible_host": "10.0.0.1"},
                "spark-b": {"specdec_plan": plans["spark-b"], "ansible_host": "10.0.0.2"},
                "spark-c": {"specdec_plan": single["spark-c"]}}
    targets, skipped = mon.scrape_targets(["spark-b", "spark-a", "spark-c"], hostvars)
    assert skipped == []
    assert targets == [
        {"targets": ["10.0.0.1:9464"], "labels": {"cluster": "pair1", "profile": "two_spark_eagle3", "release": "1.2.0rc6",
                                                  "topology": "direct", "__metrics_path__": "/metrics"}},
        {"targets": ["spark-c:9464"], "labels": {"cluster": "single1", "profile": "custom", "release": "1.2.0rc6",
                                                 "topology": "single", "__metrics_path__": "/metrics"}}]


def test_clusters_without_metrics_or_plan_are_named():
    plans = _pair_plans()
    plans["spark-a"]["metrics"] = None
    hostvars = {"spark-a": {"specdec_plan": plans["spark-a"], "ansible_host": "fd00::1"},
                "spark-b": {"specdec_plan": plans["spark-b"]},
                "spark-x": {"specdec_cluster": "lost"}}
    targets, skipped = mon.scrape_targets(["spark-a", "spark-b", "spark-x"], hostvars)
    assert targets == []
    assert skipped == ["pair1: no Prometheus metrics (specdec_serve_metrics is false, or Triton's own metrics port)",
                       "lost: no plan (the node did not answer, or its plan failed)"]


def test_ipv6_addresses_are_bracketed():
    assert mon._address("h", {"ansible_host": "fd00::1"}) == "[fd00::1]"
    assert mon._address("h", {}) == "h"


def test_the_roles_own_inputs_are_checked_against_the_catalogue():
    from ansible_collections.dgx_spark.specdec.plugins.module_utils import _inputs as inputs
    errors = inputs.role_errors("specdec_monitoring", "mon", {
        "specdec_monitoring_port": 70000, "specdec_monitoring_scrape_interval": "15 seconds",
        "specdec_monitoring_targets": ["spark-a:9464"], "specdec_monitoring_retention": "15d",
        "specdec_monitoring_grafana_dir": None, "specdec_serve_port": "x"})
    assert errors == [
        'specdec_monitoring_targets item on mon: "spark-a:9464" is not a mapping',
        "specdec_monitoring_port on mon: 70000 is not an integer from 1 to 65535",
        'specdec_monitoring_scrape_interval on mon: "15 seconds" is not a Prometheus duration such as 15s, 5m, 15d '
        "(ms, s, m, h, d, w, y)"]


def test_a_cluster_listening_on_loopback_only_is_named_not_scraped():
    single, dummy = p.plan_cluster("single1", ["spark-c"], profile("single_spark_eagle3"), {"spark-c": {}},
                                   {"spark-c": spark("spark-c")})
    targets, skipped = mon.scrape_targets(["spark-c"], {"spark-c": {"specdec_plan": single["spark-c"]}})
    assert targets == [] and skipped == [
        "single1: its server and metrics listen on loopback only (specdec_serve_host); set specdec_serve_host to an "
        "address the monitoring host reaches"]
