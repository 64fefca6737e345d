"""Unit tests of a fleet run's bookkeeping: which nodes stop with their cluster, and the summary lines."""

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _fleet as f

HOSTS = ["p1-a", "p1-b", "p2-a", "p2-b", "s1-a"]


def fleet(**per_host):
    """hostvars of a fleet of two pairs and a single, each host with its inventory cluster and what it recorded."""
    hv = {}
    for host in HOSTS:
        cluster = host.rsplit("-", 1)[0]
        hv[host] = {"specdec_cluster": cluster, "specdec_profile_name": "two" if cluster != "s1" else "one"}
        hv[host].update(per_host.get(host.replace("-", "_"), {}))
    return hv


def planned(host, nodes, **extra):
    return dict({"specdec_fleet_started": True, "specdec_plan": {"cluster": host.rsplit("-", 1)[0], "nodes": nodes}},
                **extra)


def serving(host, nodes, port=8355, profile="two"):
    return planned(host, nodes, specdec_fleet_serving={"profile": profile, "head": host, "port": port})


def test_all_clusters_serving():
    hv = fleet(p1_a=serving("p1-a", ["p1-a", "p1-b"]), p1_b=planned("p1-b", ["p1-a", "p1-b"]),
               p2_a=serving("p2-a", ["p2-a", "p2-b"]), p2_b=planned("p2-b", ["p2-a", "p2-b"]),
               s1_a=serving("s1-a", ["s1-a"], port=8000, profile="one"))
    result = f.summary(HOSTS, hv)
    assert result["lines"] == [
        "p1 (p1-a, p1-b): serving - two on p1-a port 8355",
        "p2 (p2-a, p2-b): serving - two on p2-a port 8355",
        "s1 (s1-a): serving - one on s1-a port 8000",
        "fleet: 3 clusters serving, 0 failed",
    ]
    assert (result["serving"], result["failed"]) == (3, 0)
    assert all(f.stop_reason(h, HOSTS, hv) == "" for h in HOSTS)


def test_a_failed_node_stops_its_cluster_only():
    cause = "netplan_qsfp_addresses on p2-b (cluster p2): 192.168.200.12/24 is already on p2-a\nsecond line"
    hv = fleet(p1_a=serving("p1-a", ["p1-a", "p1-b"]), p1_b=planned("p1-b", ["p1-a", "p1-b"]),
               p2_a=planned("p2-a", ["p2-a", "p2-b"]),
               p2_b=planned("p2-b", ["p2-a", "p2-b"], specdec_fleet_failure={"cause": cause}),
               s1_a=serving("s1-a", ["s1-a"], profile="one"))
    reason = f.stop_reason("p2-a", HOSTS, hv)
    assert reason == ("cluster p2 stops: p2-b failed: netplan_qsfp_addresses on p2-b (cluster p2): "
                      "192.168.200.12/24 is already on p2-a; second line")
    assert f.stop_reason("p1-b", HOSTS, hv) == "" and f.stop_reason("s1-a", HOSTS, hv) == ""
    hv["p2-a"]["specdec_fleet_failure"] = {"cause": reason, "stopped_by_cluster": True}
    # The partner that stopped because of the cluster does not bounce the stop back.
    assert f.stop_reason("p2-b", HOSTS, hv) == ""
    lines = f.summary(HOSTS, hv)["lines"]
    assert lines[1] == ("p2 (p2-a, p2-b): FAILED - p2-b: netplan_qsfp_addresses on p2-b (cluster p2): "
                        "192.168.200.12/24 is already on p2-a; second line")
    assert lines[-1] == "fleet: 2 clusters serving, 1 failed"


def test_unplanned_node_uses_the_inventory_cluster():
    # p1-b never answered (no plan): its partner finds it through specdec_cluster.
    hv = fleet(p1_a={"specdec_fleet_started": True},
               p1_b={"specdec_fleet_started": True,
                     "specdec_fleet_failure": {"cause": "p1-b did not answer: ssh: connect to host 10.0.0.2 port 22"}})
    assert f.stop_reason("p1-a", HOSTS, hv) == ("cluster p1 stops: p1-b failed: p1-b did not answer: ssh: connect "
                                                "to host 10.0.0.2 port 22")


@pytest.mark.parametrize("per_host, line", [
    ({}, "p1 (p1-a, p1-b): not run - not in this run (--limit)"),
    ({"p1_a": {"specdec_fleet_started": True}}, "p1 (p1-a, p1-b): FAILED - p1-b not in this run"),
    ({"p1_a": planned("p1-a", ["p1-a", "p1-b"]), "p1_b": planned("p1-b", ["p1-a", "p1-b"])},
     "p1 (p1-a, p1-b): FAILED - the endpoint was not validated"),
])
def test_incomplete_clusters(per_host, line):
    result = f.summary(HOSTS, fleet(**per_host))
    assert result["lines"][0] == line
    assert result["lines"][-1] == "fleet: 0 clusters serving, %d failed" % (0 if "not run" in line else 1)


def test_single_profile_without_cluster_variables_is_one_cluster_per_host():
    hv = {"x": serving("x", ["x"], profile="one"), "y": serving("y", ["y"], profile="one")}
    hv["x"]["specdec_plan"]["cluster"] = "x"
    hv["y"]["specdec_plan"]["cluster"] = "y"
    assert f.summary(["x", "y"], hv)["lines"][-1] == "fleet: 2 clusters serving, 0 failed"


def test_a_plan_error_shared_by_the_cluster_is_told_once_on_one_line():
    message = ("cluster p1: 2 problem(s) found before anything changed:\n- p1-a: no QSFP port is Up (from ibdev2netdev)"
               "\n- specdec_serve_max_draft_len on p1-a (cluster p1): 0 is below 1")
    failure = {"specdec_fleet_failure": {"cause": message}}
    hv = fleet(p1_a=planned("p1-a", ["p1-a", "p1-b"], **failure), p1_b=planned("p1-b", ["p1-a", "p1-b"], **failure))
    assert f.summary(HOSTS, hv)["lines"][0] == (
        "p1 (p1-a, p1-b): FAILED - p1-a, p1-b: p1-a: no QSFP port is Up (from ibdev2netdev); "
        "specdec_serve_max_draft_len on p1-a (cluster p1): 0 is below 1")
