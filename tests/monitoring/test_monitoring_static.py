# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Static checks of the monitoring files of role specdec_monitoring (no network, no Prometheus or Grafana).

The dashboard and the rules may only name the canonical TensorRT-LLM metrics (the collection's metric contract,
tensorrt_llm/metrics/collector.py's names) or the rules' own recording rules; the dashboard rates use Grafana's
$__rate_interval; the provisioning files carry what Grafana reads; every alert is documented and every rule has
a promtool unit test. Last, promtool itself (scripts/promtool.sh: PATH or Debian's package) checks the rules and
runs the unit tests; that test is skipped only when promtool cannot be obtained at all.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FILES = os.path.join(ROOT, "roles", "specdec_monitoring", "files")
RULES = os.path.join(FILES, "rules", "trtllm_specdec.rules.yml")
DASHBOARD = os.path.join(FILES, "grafana", "dashboards", "trtllm-specdec.json")
DATASOURCES = os.path.join(FILES, "grafana", "provisioning", "datasources", "specdec.yml")
PROVIDERS = os.path.join(FILES, "grafana", "provisioning", "dashboards", "specdec.yml")
PROMTOOL_TESTS = os.path.join(HERE, "promtool")
PROMTOOL_SH = os.path.join(ROOT, "scripts", "promtool.sh")

# tests/monitoring has no __init__.py and pytest.ini does not list it: load the helper by path.
_SPEC = importlib.util.spec_from_file_location("specdec_dashboard_helper", os.path.join(HERE, "dashboard.py"))
dashboard = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(dashboard)

# The canonical names every cluster exposes (natively on TensorRT-LLM 1.3, through the collection's exporter on 1.2.x).
COUNTERS = {
    "trtllm_spec_decode_num_draft_tokens_total", "trtllm_spec_decode_num_accepted_tokens_total",
    "trtllm_spec_decode_drafted_tokens_total", "trtllm_spec_decode_accepted_tokens_total",
    "trtllm_request_success_total", "trtllm_prompt_tokens_total", "trtllm_generation_tokens_total",
    "trtllm_num_requests_completed_total",
}
GAUGES = {
    "trtllm_spec_decode_acceptance_length", "trtllm_spec_decode_draft_overhead", "trtllm_num_requests_running",
    "trtllm_num_requests_waiting", "trtllm_kv_cache_utilization", "trtllm_kv_cache_max_blocks",
    "trtllm_kv_cache_used_blocks", "trtllm_kv_cache_free_blocks", "trtllm_iteration_latency_seconds",
    "trtllm_speculative_config_info",
    # the collection's exporter: 1 while the server behind it answers
    "trtllm_exporter_upstream_up",
}
HISTOGRAMS = {
    "trtllm_time_to_first_token_seconds", "trtllm_time_per_output_token_seconds",
    "trtllm_e2e_request_latency_seconds", "trtllm_request_queue_time_seconds",
}
CANONICAL = COUNTERS | GAUGES | {name + suffix for name in HISTOGRAMS for suffix in ("_bucket", "_sum", "_count")}
# Series Prometheus itself writes for every scrape target.
SYNTHETIC = {"up"}

TARGET_LABELS = ("job", "instance", "cluster", "profile", "release", "topology")
SERVER_LABELS = ("model_name", "engine_type")
PROMETHEUS_DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}

PROMQL_KEYWORDS = {
    "and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset",
    "inf", "nan", "atan2",
}
STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
MATCHERS_RE = re.compile(r"\{[^{}]*\}")
GROUPING_RE = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
RANGE_RE = re.compile(r"\[[^\[\]]*\]")
DURATION_RE = re.compile(r"(?<![\w:.])\d+(?:ms|s|m|h|d|w|y)\b")
NUMBER_RE = re.compile(r"(?<![\w:.])(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)")
IDENTIFIER_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
RECORD_NAME_RE = re.compile(r"^[a-z_]+:[a-z0-9_]+:[a-z0-9_]+$")
SERIES_RE = re.compile(r"^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{(.*)\}\s*$", re.S)
LABEL_RE = re.compile(r'(\w+)\s*=\s*"([^"]*)"')


def metric_names(expr):
    """The metric names an expression selects: identifiers that are no function, keyword, label or duration."""
    text = STRING_RE.sub(" ", expr)
    text = MATCHERS_RE.sub(" ", text)
    text = GROUPING_RE.sub(" ", text)
    text = RANGE_RE.sub(" ", text)
    text = DURATION_RE.sub(" ", text)
    text = NUMBER_RE.sub(" ", text)
    names = set()
    for match in IDENTIFIER_RE.finditer(text):
        name = match.group(0)
        if name.lower() in PROMQL_KEYWORDS or text[match.end():].lstrip().startswith("("):
            continue
        names.add(name)
    return names


def load_yaml(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def rules():
    return [rule for group in load_yaml(RULES)["groups"] for rule in group["rules"]]


def recorded_names():
    return {rule["record"] for rule in rules() if "record" in rule}


def alerts():
    return {rule["alert"]: rule for rule in rules() if "alert" in rule}


def promtool_test_files():
    return sorted(os.path.join(PROMTOOL_TESTS, name) for name in os.listdir(PROMTOOL_TESTS) if name.endswith(".test.yml"))


def dashboard_json():
    return dashboard.load(DASHBOARD)


def panels():
    return [panel for panel in dashboard.iter_panels(dashboard_json()["panels"]) if panel.get("type") != "row"]


def test_metric_name_extraction():
    """The extractor itself: functions, keywords, labels, strings, durations and numbers are no metric names."""
    expr = ('histogram_quantile(0.95, sum by (cluster, le) (rate(a_bucket{job="trtllm", x=~"(a|b)"}[5m] offset 1h)))'
            ' / on (cluster) group_left (profile) (b:c:d > 0) and ignoring (le) avg_over_time(e[1h:1m]) * 1e3 + inf')
    assert metric_names(expr) == {"a_bucket", "b:c:d", "e"}
    assert metric_names("up == 0") == {"up"}


def test_every_panel_has_a_query():
    assert panels()
    for panel in panels():
        exprs = [target.get("expr") for target in panel.get("targets") or [] if target.get("expr")]
        assert exprs, "panel %r has no target with an expr" % panel.get("title")


def test_dashboard_metric_names_are_canonical_or_recorded():
    allowed = CANONICAL | SYNTHETIC | recorded_names()
    seen = set()
    for title, ref_id, expr in dashboard.panel_queries(DASHBOARD):
        names = metric_names(expr)
        assert names, "no metric name found in %r %s: %s" % (title, ref_id, expr)
        assert names <= allowed, "%r %s uses unknown metrics %s" % (title, ref_id, sorted(names - allowed))
        seen |= names
    # The dashboard reads the recording rules rather than repeating their expressions.
    assert recorded_names() <= seen, "recording rules no panel shows: %s" % sorted(recorded_names() - seen)


def test_rule_metric_names_are_canonical_or_recorded():
    allowed = CANONICAL | SYNTHETIC | recorded_names()
    for rule in rules():
        names = metric_names(rule["expr"])
        assert names, rule
        assert names <= allowed, "%s uses unknown metrics %s" % (rule.get("record") or rule.get("alert"), sorted(names - allowed))


def test_dashboard_rates_use_rate_interval():
    rates = 0
    for panel in panels():
        for target in panel.get("targets") or []:
            expr = target.get("expr") or ""
            rates += len(re.findall(r"\b(?:rate|irate|increase)\s*\(", expr))
            for window in RANGE_RE.findall(expr):
                assert window == "[$__rate_interval]", "%r uses %s, not [$__rate_interval]: %s" % (panel["title"], window, expr)
    assert rates, "the dashboard has no rate() at all: the check above proved nothing"


def test_dashboard_settings():
    board = dashboard_json()
    assert board["schemaVersion"] == 39
    assert board["uid"] == "trtllm-specdec"
    variables = {variable["name"]: variable for variable in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    cluster = variables["cluster"]
    assert cluster["type"] == "query" and cluster["multi"] is True and cluster["includeAll"] is True
    assert cluster["datasource"] == PROMETHEUS_DATASOURCE
    query = cluster["query"]["query"] if isinstance(cluster["query"], dict) else cluster["query"]
    assert query == 'label_values(up{job="trtllm"}, cluster)'
    ids = [panel["id"] for panel in panels()]
    assert len(ids) == len(set(ids)), "duplicate panel ids"
    for panel in panels():
        assert panel["datasource"] == PROMETHEUS_DATASOURCE, panel["title"]
        for target in panel["targets"]:
            assert target.get("datasource", PROMETHEUS_DATASOURCE) == PROMETHEUS_DATASOURCE, panel["title"]
            # Every query follows the cluster selection.
            assert '$cluster' in target["expr"] or '${cluster}' in target["expr"], (panel["title"], target["expr"])


@pytest.mark.parametrize("panel_type, title_re, expr_re", [
    ("timeseries", r"acceptance rate", r"cluster:trtllm_spec_decode_acceptance_rate:rate5m"),
    (r"bargauge|timeseries", r"position", r"token_position"),
    ("timeseries", r"acceptance length", r"mean_acceptance_length"),
    ("timeseries", r"draft overhead", r"draft_overhead"),
    ("timeseries", r"output tokens/s", r"trtllm_generation_tokens"),
    ("timeseries", r"first token.*p50.*p95.*p99", r"trtllm_time_to_first_token_seconds"),
    ("timeseries", r"per output token.*p50.*p95.*p99", r"trtllm_time_per_output_token_seconds"),
    ("timeseries", r"running.*waiting", r"trtllm_num_requests_waiting"),
    ("timeseries", r"kv.cache", r"trtllm_kv_cache_utilization"),
    ("stat", r"up", r"\bup\{"),
    ("table", r"cluster", r"by \(cluster, profile, release, topology\)"),
])
def test_required_panels(panel_type, title_re, expr_re):
    for panel in panels():
        exprs = " ".join(target["expr"] for target in panel["targets"])
        if re.fullmatch(panel_type, panel["type"]) and re.search(title_re, panel["title"], re.I) and re.search(expr_re, exprs):
            return
    pytest.fail("no %s panel titled like %r querying %r" % (panel_type, title_re, expr_re))


def test_panel_queries_substitutes_variables():
    queries = dashboard.panel_queries(DASHBOARD, {"cluster": ["spark-a", "lab.b"], "__rate_interval": "2m"})
    assert len(queries) == sum(len(panel["targets"]) for panel in panels())
    for dummy_title, dummy_ref, expr in queries:
        assert "$" not in expr, expr
        assert 'cluster=~"(spark-a|lab\\\\.b)"' in expr, expr
    assert any("[2m]" in expr for dummy_title, dummy_ref, expr in queries)
    single = dashboard.panel_queries(DASHBOARD, {"cluster": ["spark-a"]})
    assert all('cluster=~"spark-a"' in expr for dummy_title, dummy_ref, expr in single)
    assert dashboard.substitute("x[${__rate_interval}] $__interval ${cluster:regex}", {"cluster": ".*"}) == "x[1m] 15s .*"
    with pytest.raises(KeyError):
        dashboard.substitute("x{a=~\"$typo\"}")


def test_datasource_provisioning():
    document = load_yaml(DATASOURCES)
    assert document["apiVersion"] == 1
    (source,) = document["datasources"]
    assert source["name"] == "Prometheus"
    assert source["type"] == "prometheus"
    assert source["uid"] == "prometheus"
    assert source["url"] == "http://localhost:9090"
    assert source["access"] == "proxy"


def test_dashboard_provisioning():
    document = load_yaml(PROVIDERS)
    assert document["apiVersion"] == 1
    (provider,) = document["providers"]
    assert provider["type"] == "file"
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards/specdec"
    assert provider["name"] and provider["folder"]


def test_rules_file_structure():
    document = load_yaml(RULES)
    assert document["groups"]
    for name in recorded_names():
        assert RECORD_NAME_RE.match(name), "%s does not follow level:metric:operations" % name
        assert name.split(":")[0].startswith("cluster"), name
    for rule in rules():
        # A division without a `> 0` guard turns an idle cluster into NaN or +Inf.
        if "record" in rule and re.search(r"\s/\s", rule["expr"]):
            assert "> 0)" in rule["expr"], rule["record"]
    for name, rule in alerts().items():
        assert rule["labels"]["severity"] in ("critical", "warning", "info"), name
        for key in ("summary", "description", "runbook"):
            assert rule["annotations"].get(key, "").strip(), "%s has no %s annotation" % (name, key)
        assert "{{ $labels.cluster }}" in rule["annotations"]["summary"] + rule["annotations"]["description"], name


def test_required_alerts():
    found = alerts()
    assert set(found) >= {"TrtllmEndpointDown", "TrtllmSpecDecodeAcceptanceCollapsed", "TrtllmKvCacheNearlyFull", "TrtllmRequestsQueueing"}
    down = found["TrtllmEndpointDown"]
    assert down["expr"].strip().startswith('up{job="trtllm"} == 0\nor\n') and "trtllm_exporter_upstream_up" in down["expr"]
    assert down["for"] == "1m" and down["labels"]["severity"] == "critical"
    assert "{{ $labels.instance }}" in down["annotations"]["summary"]
    collapsed = found["TrtllmSpecDecodeAcceptanceCollapsed"]
    assert "avg_over_time(cluster:trtllm_spec_decode_acceptance_rate:rate5m[1h])" in collapsed["expr"] and collapsed["for"] == "10m"
    assert "> 0" in collapsed["expr"], "the acceptance alert must require traffic"
    kv_cache = found["TrtllmKvCacheNearlyFull"]
    assert "trtllm_kv_cache_utilization" in kv_cache["expr"] and "> 0.95" in kv_cache["expr"] and kv_cache["for"] == "5m"
    assert "trtllm_num_requests_waiting" in found["TrtllmRequestsQueueing"]["expr"]


def test_every_rule_has_a_promtool_test():
    """Every alert fires in some test and stays silent in another; every recording rule has an exact value."""
    fired, silent, evaluated = set(), set(), set()
    for path in promtool_test_files():
        document = load_yaml(path)
        assert document["rule_files"] == ["../../../roles/specdec_monitoring/files/rules/trtllm_specdec.rules.yml"], path
        for group in document["tests"]:
            # promtool 2.42 defaults interval to 1m silently; the tests say what they mean.
            assert "interval" in group, path
            for case in group.get("alert_rule_test") or []:
                (fired if case.get("exp_alerts") else silent).add(case["alertname"])
            for case in group.get("promql_expr_test") or []:
                if case.get("exp_samples"):
                    assert all("value" in sample for sample in case["exp_samples"]), case
                    evaluated |= metric_names(case["expr"])
    assert set(alerts()) <= fired, "alerts never seen firing: %s" % sorted(set(alerts()) - fired)
    assert set(alerts()) <= silent, "alerts never seen silent: %s" % sorted(set(alerts()) - silent)
    assert recorded_names() <= evaluated, "recording rules without a value test: %s" % sorted(recorded_names() - evaluated)


def test_promtool_series_carry_the_fleet_labels():
    count = 0
    for path in promtool_test_files():
        for group in load_yaml(path)["tests"]:
            for series in group["input_series"]:
                match = SERIES_RE.match(series["series"])
                assert match, series
                name, labels = match.group(1), dict(LABEL_RE.findall(match.group(2)))
                # `up` has the target labels only: model_name and engine_type come from the server's exposition.
                wanted = TARGET_LABELS if name == "up" else TARGET_LABELS + SERVER_LABELS
                assert set(wanted) <= set(labels), "%s: %s lacks %s" % (path, name, sorted(set(wanted) - set(labels)))
                assert name in CANONICAL | SYNTHETIC, name
                count += 1
    assert count


def test_promtool_check_and_unit_tests():
    """promtool check rules + promtool test rules (Debian 12's 2.42 when none is on PATH)."""
    found = subprocess.run(["bash", PROMTOOL_SH], capture_output=True, text=True, timeout=600, check=False)
    if found.returncode == 3:
        pytest.skip("promtool unavailable: " + found.stderr.strip()[-500:])
    assert found.returncode == 0, found.stderr
    assert os.access(found.stdout.strip().splitlines()[-1], os.X_OK), found.stdout
    result = subprocess.run(["bash", PROMTOOL_SH, "check"], capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_dashboard_is_plain_json():
    """Grafana's file provisioning wants the bare dashboard model (no import wrapper, no __inputs)."""
    with open(DASHBOARD, encoding="utf-8") as handle:
        board = json.load(handle)
    assert "__inputs" not in board and "dashboard" not in board
    assert board.get("id") is None
