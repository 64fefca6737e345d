"""Unit tests for the switch and ring topologies of the QSFP plan: NVIDIA's address schemes, the cabling
checks (a cable in the wrong port, a port down), the subnets and the rules that refuse a bad fabric."""

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _preflight as pre
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _spark_net as net

ALL = list(net.QSFP_INTERFACES)
PORT0 = list(net.PORTS["0"])
PORT1 = list(net.PORTS["1"])


def node(name, index, up=None, **overrides):
    address = "10.0.0.%d" % (5 + index)
    value = {"name": name, "up": list(PORT1 if up is None else up), "up_source": "ibdev2netdev", "addresses": {},
             "current": {"eth0": [address + "/24"]}, "management_address": address, "default_interface": "eth0"}
    value.update(overrides)
    return value


def switch(count=4, **ups):
    return [node("s%d" % (i + 1), i, ups.get("s%d" % (i + 1))) for i in range(count)]


def ring(count=3, **ups):
    return [node("r%d" % (i + 1), i, ups.get("r%d" % (i + 1), ALL)) for i in range(count)]


def plan(nodes, topology, **kwargs):
    return net.plan_links(nodes, topology=topology, mtu=9000, cluster="c", **kwargs)


def valid(nodes, topology, **kwargs):
    per_node, errors = plan(nodes, topology, **kwargs)
    assert errors == []
    return per_node


# -- switch -----------------------------------------------------------------------------------------


def test_switch_follows_nvidias_static_scheme():
    per_node = valid(switch(4), "switch")
    # Node N gets 192.168.100.N on the port's netdev and 192.168.101.N on its twin.
    assert [per_node["s%d" % n]["addresses"] for n in (1, 4)] == [["192.168.100.1", "192.168.101.1"],
                                                                  ["192.168.100.4", "192.168.101.4"]]
    text = per_node["s2"]["content"]
    assert "    enp1s0f1np1:\n      dhcp4: false\n      mtu: 9000\n      addresses:\n        - 192.168.100.2/24\n" in text
    assert "routing-policy" not in text  # one subnet per netdev: no source routing needed


def test_switch_links_list_every_other_spark():
    per_node = valid(switch(4), "switch")
    links = pre.pair_links({h: per_node[h]["entries"] for h in per_node})
    ends = [(link["iface"], link["peer"], link["peer_address"]) for link in links["s1"]]
    assert len(ends) == 6
    assert ("enP2p1s0f1np1", "s3", "192.168.101.3") in ends


def test_switch_with_own_subnets():
    per_node = valid(switch(3), "switch", subnets=["10.20.0.0/24", "10.21.0.0/24"])
    assert per_node["s3"]["addresses"] == ["10.20.0.3", "10.21.0.3"]


@pytest.mark.parametrize("subnets, fragment", [
    (["10.20.0.0/24"], "is not 2 subnets"),
    (["10.20.0.0/24", "10.20.0.0/25"], "overlaps 10.20.0.0/24"),
    (["10.20.0.0/24", "10.21.0.1/24"], "is not a subnet for switch"),
    (["10.20.0.0/30", "10.21.0.0/24"], "with room for 5 hosts"),
])
def test_switch_subnets_are_checked(subnets, fragment):
    per_node, errors = plan(switch(4), "switch", subnets=subnets)
    assert per_node == {} and len(errors) == 1 and fragment in errors[0] and errors[0].startswith("netplan_qsfp_subnets")


def test_switch_of_one_is_refused():
    per_node, errors = plan([node("s1", 0)], "switch")
    assert per_node == {}
    assert "nodes of the QSFP link: [s1]" in errors[0]


def test_switch_of_nine_is_refused():
    per_node, errors = plan(switch(9), "switch")
    assert errors == ["specdec_topology of cluster c: 'switch' joins 2 to 8 Sparks through a switch, but cluster c "
                      "has 9 (s1, s2, s3, s4, s5, s6, s7, s8, s9) (accepted: a cluster of 2 to 8 Sparks; a single "
                      "Spark needs no fabric)"]


def test_switch_cable_in_the_wrong_port_is_named():
    per_node, errors = plan(switch(4, s3=PORT0), "switch")
    assert per_node == {}
    assert errors == ["s3: its cable to the switch is in port 0 (enp1s0f0np0, enP2p1s0f0np0 Up), but s1, s2, s4 use "
                      "port 1 (enp1s0f1np1, enP2p1s0f1np1): every Spark is cabled on the same port in NVIDIA's switch "
                      "playbook; move the cable to port 1 (from ibdev2netdev)"]


def test_switch_half_a_cable_down_is_named():
    per_node, errors = plan(switch(4, s2=["enp1s0f1np1"]), "switch")
    assert errors == ["s2: enP2p1s0f1np1 is Down while enp1s0f1np1 is Up (from ibdev2netdev): they are the two halves "
                      "of the one cable to the switch, expected Up on port 1 like on s1, s3, s4; re-seat the cable or "
                      "check the switch port"]


def test_switch_twins_in_one_subnet_are_refused():
    nodes = switch(2)
    nodes[0]["addresses"] = {"enp1s0f1np1": "10.1.0.1/24", "enP2p1s0f1np1": "10.1.0.11/24"}
    nodes[1]["addresses"] = {"enp1s0f1np1": "10.1.0.2/24", "enP2p1s0f1np1": "10.1.0.12/24"}
    per_node, errors = plan(nodes, "switch")
    assert errors[0] == ("netplan_qsfp_addresses on s1: enp1s0f1np1 and enP2p1s0f1np1 are both in 10.1.0.0/24 "
                         "(accepted: a subnet of its own for each netdev on a switch or a ring: two interfaces in one "
                         "subnet cause routing ambiguity and NCCL failures)")
    assert len(errors) == 2


def test_switch_duplicate_address_is_refused():
    nodes = switch(3)
    nodes[2]["addresses"] = {"enp1s0f1np1": "192.168.100.1/24", "enP2p1s0f1np1": "192.168.101.3/24"}
    per_node, errors = plan(nodes, "switch")
    assert any("192.168.100.1 is planned more than once" in e for e in errors)


def test_switch_dhcp_plan():
    nodes = switch(2)
    nodes[0]["current"]["enp1s0f1np1"] = ["192.168.100.57/24"]
    per_node = valid(nodes, "switch", plan="dhcp")
    assert "      dhcp4: true\n      mtu: 9000\n" in per_node["s1"]["content"]
    assert per_node["s1"]["addresses"] == ["192.168.100.57"] and per_node["s2"]["addresses"] == []


def test_dhcp_only_on_a_switch():
    per_node, errors = plan(ring(3), "ring", plan="dhcp")
    assert errors == ["netplan_qsfp_plan of cluster c: 'dhcp' needs a DHCP server on the fabric, which only a switch "
                      "has (specdec_topology is ring; accepted: addresses or link_local)"]


# -- ring -------------------------------------------------------------------------------------------


def test_ring_follows_nvidias_three_spark_scheme():
    per_node = valid(ring(3), "ring")
    # NVIDIA's "Connect three Sparks": node1 .0.1 .1.1 .2.1 .3.1; node2 .4.1 .5.1 .0.2 .1.2 (in netdev order).
    assert [e["cidr"] for e in per_node["r1"]["entries"]] == ["192.168.0.1/24", "192.168.1.1/24", "192.168.2.1/24",
                                                              "192.168.3.1/24"]
    assert [e["cidr"] for e in per_node["r2"]["entries"]] == ["192.168.4.1/24", "192.168.5.1/24", "192.168.0.2/24",
                                                              "192.168.1.2/24"]
    assert [e["cidr"] for e in per_node["r3"]["entries"]] == ["192.168.2.2/24", "192.168.3.2/24", "192.168.4.2/24",
                                                              "192.168.5.2/24"]


def test_ring_links_are_the_neighbours_cables():
    per_node = valid(ring(3), "ring")
    links = pre.pair_links({h: per_node[h]["entries"] for h in per_node})
    ends = sorted((link["iface"], link["peer"], link["peer_iface"]) for link in links["r1"])
    # r1's port 0 goes to r2's port 1, r3's port 0 comes to r1's port 1.
    assert ends == [("enP2p1s0f0np0", "r2", "enP2p1s0f1np1"), ("enP2p1s0f1np1", "r3", "enP2p1s0f0np0"),
                    ("enp1s0f0np0", "r2", "enp1s0f1np1"), ("enp1s0f1np1", "r3", "enp1s0f0np0")]


def test_ring_port_down_names_the_expected_peer():
    per_node, errors = plan(ring(3, r2=["enp1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1"]), "ring")
    assert errors == ["r2: enP2p1s0f0np0 is Down (from ibdev2netdev), expected a cable from port 0 to r3's port 1 "
                      "(enP2p1s0f1np1): in a ring each Spark's port 0 goes to the next one's port 1"]


def test_ring_of_two_is_a_direct_pair():
    per_node, errors = plan(ring(2), "ring")
    assert errors == ["specdec_topology of cluster c: 'ring': a ring of two Sparks is one cable between them, a "
                      "direct pair (cluster c has 2 (r1, r2); accepted: direct)"]


def test_ring_of_four_is_refused_with_the_reason():
    per_node, errors = plan(ring(4), "ring")
    assert len(errors) == 1 and "Sparks that are not neighbours have no cable between them" in errors[0]


def test_ring_addresses_of_a_cable_must_share_a_subnet():
    nodes = ring(3)
    nodes[0]["addresses"] = {"enp1s0f0np0": "10.9.0.1/24", "enP2p1s0f0np0": "10.9.1.1/24",
                             "enp1s0f1np1": "10.9.2.1/24", "enP2p1s0f1np1": "10.9.3.1/24"}
    per_node, errors = plan(nodes, "ring")
    assert any("the ends of the cable r1 enp1s0f0np0 - r2 enp1s0f1np1 are in different subnets" in e for e in errors)


def test_unknown_topology():
    per_node, errors = plan(ring(3), "mesh")
    assert errors == ["specdec_topology of cluster c: 'mesh' is not a topology (accepted: direct, switch, ring)"]
