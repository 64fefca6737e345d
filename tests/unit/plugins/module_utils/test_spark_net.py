"""Unit tests for the QSFP link plan: discovery parsers, NVIDIA's address plans, the netplan document
and every rule of ``plan_links`` with a bad input and its message."""

import copy

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _spark_net as net

PORT1 = ["enp1s0f1np1", "enP2p1s0f1np1"]
PORT0 = ["enp1s0f0np0", "enP2p1s0f0np0"]
OVERRIDE = "(set netplan_qsfp_allow_disruptive: true to override)"

# ibdev2netdev on a DGX Spark with port 1 cabled, plus an unrelated InfiniBand HCA and noise.
IBDEV2NETDEV = """\
rocep1s0f0 port 1 ==> enp1s0f0np0 (Down)
rocep1s0f1 port 1 ==> enp1s0f1np1 (Up)
roceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Down)
roceP2p1s0f1 port 1 ==> enP2p1s0f1np1 (Up)
mlx5_4 port 1 ==> ibp3s0 (Up)
mlx5_5 port 1 ==> enx00e04c680001 (Up)
Warning: some unrelated message
"""

# spark-a's netplan file under the address plan of NVIDIA's two-Spark speculative-decoding playbook.
PLAYBOOK_NETPLAN_A = """\
# Managed by dgx_spark.specdec (netplan_qsfp): QSFP links of spark-a, plan addresses (netplan_qsfp_preset=seed).
# Only the QSFP netdevs are named here; the management NIC lives in other netplan files.
network:
  version: 2
  ethernets:
    enp1s0f1np1:
      dhcp4: false
      mtu: 9000
      addresses:
        - 192.168.200.12/24
      # 192.168.200.0/24 is shared with another QSFP netdev of this node: answer from this port.
      routes:
        - to: 192.168.200.0/24
          scope: link
          from: 192.168.200.12
          table: 101
      routing-policy:
        - from: 192.168.200.12
          table: 101
    enP2p1s0f1np1:
      dhcp4: false
      mtu: 9000
      addresses:
        - 192.168.200.14/24
      # 192.168.200.0/24 is shared with another QSFP netdev of this node: answer from this port.
      routes:
        - to: 192.168.200.0/24
          scope: link
          from: 192.168.200.14
          table: 102
      routing-policy:
        - from: 192.168.200.14
          table: 102
"""


def node(name, index=0, **overrides):
    """A node as the plan module passes it: port 1 Up, management on eth0 (10.0.0.5+index/24)."""
    address = "10.0.0.%d" % (5 + index)
    value = {
        "name": name,
        "up": list(PORT1),
        "up_source": "ibdev2netdev",
        "addresses": {},
        "current": {"eth0": [address + "/24"], "lo": ["127.0.0.1/8"]},
        "management_address": address,
        "default_interface": "eth0",
    }
    value.update(overrides)
    return value


def pair(a=None, b=None):
    return [node("spark-a", 0, **(a or {})), node("spark-b", 1, **(b or {}))]


def plan(nodes=None, **kwargs):
    return net.plan_links(pair() if nodes is None else nodes, **kwargs)


def only_error(nodes=None, **kwargs):
    per_node, errors = plan(nodes, **kwargs)
    assert len(errors) == 1, errors
    return errors[0]


def valid(nodes=None, **kwargs):
    per_node, errors = plan(nodes, **kwargs)
    assert errors == []
    return per_node


# -- discovery ------------------------------------------------------------------------------------


def test_parse_ibdev2netdev_keeps_up_qsfp_netdevs_in_canonical_order():
    assert net.parse_ibdev2netdev(IBDEV2NETDEV) == PORT1


def test_parse_ibdev2netdev_port0_and_order_of_interfaces():
    text = ("roceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Up)\n"
            "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\n"
            "rocep1s0f1 port 1 ==> enp1s0f1np1 (Down)\n")
    assert net.parse_ibdev2netdev(text) == PORT0
    assert net.parse_ibdev2netdev(text, interfaces=("enP2p1s0f0np0", "enp1s0f0np0")) == ["enP2p1s0f0np0", "enp1s0f0np0"]
    assert net.parse_ibdev2netdev(text, interfaces=("enp1s0f0np0",)) == ["enp1s0f0np0"]


def test_parse_ibdev2netdev_netdev_listed_twice_is_up_if_any_line_says_so():
    text = "rocep1s0f1 port 2 ==> enp1s0f1np1 (Down)\nrocep1s0f1 port 1 ==> enp1s0f1np1 (Up)\n"
    assert net.parse_ibdev2netdev(text) == ["enp1s0f1np1"]


@pytest.mark.parametrize("text", ["", None, "ibdev2netdev: command not found\n",
                                  "rocep1s0f1 port 1 ==> enp1s0f1np1 (Down)\n"])
def test_parse_ibdev2netdev_nothing_up(text):
    assert net.parse_ibdev2netdev(text) == []


def test_rdma_devices_follow_the_order_of_netdevs():
    assert net.rdma_devices(IBDEV2NETDEV, PORT1) == ["rocep1s0f1", "roceP2p1s0f1"]
    assert net.rdma_devices(IBDEV2NETDEV, ["enP2p1s0f1np1", "enp1s0f1np1"]) == ["roceP2p1s0f1", "rocep1s0f1"]
    # Down netdevs still have their device; unknown netdevs are skipped.
    assert net.rdma_devices(IBDEV2NETDEV, ["enp1s0f0np0", "eth9", "ibp3s0"]) == ["rocep1s0f0", "mlx5_4"]
    assert net.rdma_devices("", PORT1) == []


def test_parse_operstate():
    states = {"enp1s0f0np0": "down\n", "enP2p1s0f0np0": None, "enp1s0f1np1": "up\n", "enP2p1s0f1np1": "UP",
              "eth0": "up\n"}
    assert net.parse_operstate(states) == PORT1
    assert net.parse_operstate({"enp1s0f0np0": "unknown\n", "enp1s0f1np1": "lowerlayerdown\n"}) == []
    assert net.parse_operstate(states, interfaces=("eth0", "enp1s0f1np1")) == ["eth0", "enp1s0f1np1"]
    assert net.parse_operstate({}) == []
    assert net.parse_operstate(None) == []


# -- plans ----------------------------------------------------------------------------------------


def test_playbook_plan_gives_nvidia_addresses_tables_and_document():
    per_node = valid(mtu=9000)
    a, b = per_node["spark-a"], per_node["spark-b"]
    assert a["up"] == PORT1 and a["source"] == "netplan_qsfp_preset=seed"
    assert a["addresses"] == ["192.168.200.12", "192.168.200.14"]
    assert b["addresses"] == ["192.168.200.13", "192.168.200.15"]
    assert a["entries"] == [
        {"iface": "enp1s0f1np1", "cidr": "192.168.200.12/24", "address": "192.168.200.12", "prefix": 24,
         "network": "192.168.200.0/24", "table": 101},
        {"iface": "enP2p1s0f1np1", "cidr": "192.168.200.14/24", "address": "192.168.200.14", "prefix": 24,
         "network": "192.168.200.0/24", "table": 102},
    ]
    assert [e["table"] for e in b["entries"]] == [101, 102]
    assert a["content"] == PLAYBOOK_NETPLAN_A
    assert b["content"] == PLAYBOOK_NETPLAN_A.replace("spark-a", "spark-b").replace(".12", ".13").replace(".14", ".15")
    assert a["missing"] == ["192.168.200.12/24 on enp1s0f1np1", "192.168.200.14/24 on enP2p1s0f1np1"]


def test_playbook_plan_is_deterministic():
    assert plan(mtu=9000) == plan(mtu=9000)


def test_playbook_plan_on_port0_uses_the_port0_netdevs():
    per_node = valid(pair({"up": PORT0}, {"up": PORT0}))
    assert [(e["iface"], e["cidr"]) for e in per_node["spark-a"]["entries"]] == [
        ("enp1s0f0np0", "192.168.200.12/24"), ("enP2p1s0f0np0", "192.168.200.14/24")]


def test_single_up_netdev_gets_the_first_preset_address_without_table():
    per_node = valid(pair({"up": ["enp1s0f1np1"]}, {"up": ["enp1s0f1np1"]}))
    assert per_node["spark-b"]["entries"] == [
        {"iface": "enp1s0f1np1", "cidr": "192.168.200.13/24", "address": "192.168.200.13", "prefix": 24,
         "network": "192.168.200.0/24", "table": None}]
    assert "routes:" not in per_node["spark-b"]["content"]


def test_missing_lists_only_planned_cidrs_absent_from_their_netdev():
    current = {"eth0": ["10.0.0.5/24"], "enp1s0f1np1": ["192.168.200.12/24"], "enP2p1s0f1np1": ["192.168.200.14/16"]}
    per_node = valid(pair({"current": current}))
    assert per_node["spark-a"]["missing"] == ["192.168.200.14/24 on enP2p1s0f1np1"]
    current["enP2p1s0f1np1"] = ["192.168.200.14/24"]
    assert valid(pair({"current": current}))["spark-a"]["missing"] == []


def test_two_subnets_plan_has_no_tables():
    per_node = valid(preset="two_subnets")
    a = per_node["spark-a"]
    assert a["source"] == "netplan_qsfp_preset=two_subnets"
    assert [(e["iface"], e["cidr"], e["network"], e["table"]) for e in a["entries"]] == [
        ("enp1s0f1np1", "192.168.100.10/24", "192.168.100.0/24", None),
        ("enP2p1s0f1np1", "192.168.101.10/24", "192.168.101.0/24", None)]
    assert per_node["spark-b"]["addresses"] == ["192.168.100.11", "192.168.101.11"]
    assert "routes:" not in a["content"] and "routing-policy" not in a["content"] and "mtu:" not in a["content"]
    assert "plan addresses (netplan_qsfp_preset=two_subnets)." in a["content"]


def test_source_routing_off_and_table_base():
    assert [e["table"] for e in valid(source_routing=False)["spark-a"]["entries"]] == [None, None]
    assert "routes:" not in valid(source_routing=False)["spark-a"]["content"]
    per_node = valid(table_base=200)
    assert [e["table"] for e in per_node["spark-a"]["entries"]] == [200, 201]
    assert "          table: 201\n" in per_node["spark-a"]["content"]


def test_table_follows_position_among_the_node_entries():
    # Three entries, only the last two share a subnet: tables base+1 and base+2.
    up = ["enp1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1"]
    a = {"up": up, "addresses": {"enp1s0f0np0": "10.9.0.1/30", "enp1s0f1np1": "192.168.7.1/24",
                                 "enP2p1s0f1np1": "192.168.7.2/24"}}
    b = {"up": up, "addresses": {"enp1s0f0np0": "10.9.0.2/30", "enp1s0f1np1": "192.168.7.3/24",
                                 "enP2p1s0f1np1": "192.168.7.4/24"}}
    per_node = valid(pair(a, b))
    assert [(e["iface"], e["table"]) for e in per_node["spark-a"]["entries"]] == [
        ("enp1s0f0np0", None), ("enp1s0f1np1", 102), ("enP2p1s0f1np1", 103)]


def test_explicit_addresses_in_canonical_order():
    a = {"addresses": {"enP2p1s0f1np1": "10.20.0.1/24", "enp1s0f1np1": "10.10.0.1/24"}}
    b = {"addresses": {"enp1s0f1np1": "10.10.0.2/24", "enP2p1s0f1np1": "10.20.0.2/24"}}
    per_node = valid(pair(a, b), preset="not-used")
    a = per_node["spark-a"]
    assert a["source"] == "netplan_qsfp_addresses"
    assert [e["iface"] for e in a["entries"]] == PORT1
    assert a["addresses"] == ["10.10.0.1", "10.20.0.1"]
    assert a["content"].startswith("# Managed by dgx_spark.specdec (netplan_qsfp): QSFP links of spark-a, "
                                   "plan addresses (netplan_qsfp_addresses).\n")


def test_explicit_addresses_on_one_netdev_only():
    per_node = valid(pair({"addresses": {"enp1s0f1np1": "10.10.0.1/31"}},
                          {"addresses": {"enp1s0f1np1": "10.10.0.0/31"}}))
    assert per_node["spark-b"]["entries"][0]["network"] == "10.10.0.0/31"
    assert "enP2p1s0f1np1" not in per_node["spark-a"]["content"]


def test_link_local_plan():
    current = {"eth0": ["10.0.0.5/24"], "enp1s0f1np1": ["169.254.3.4/16"], "enP2p1s0f1np1": ["169.254.9.8/16"],
               "enp1s0f0np0": ["169.254.1.1/16"]}
    per_node = valid(pair({"current": current}), plan="link_local", mtu=9000, preset="ignored")
    a = per_node["spark-a"]
    assert a["source"] == "netplan_qsfp_plan=link_local"
    assert a["entries"] == [] and a["missing"] == []
    assert a["addresses"] == ["169.254.3.4", "169.254.9.8"]
    assert per_node["spark-b"]["addresses"] == []
    assert a["content"] == (
        "# Managed by dgx_spark.specdec (netplan_qsfp): QSFP links of spark-a, plan link_local.\n"
        "# Only the QSFP netdevs are named here; the management NIC lives in other netplan files.\n"
        "network:\n"
        "  version: 2\n"
        "  ethernets:\n"
        "    enp1s0f1np1:\n"
        "      dhcp4: false\n"
        "      mtu: 9000\n"
        "      link-local: [ipv4]\n"
        "    enP2p1s0f1np1:\n"
        "      dhcp4: false\n"
        "      mtu: 9000\n"
        "      link-local: [ipv4]\n")


def test_render_netplan_without_entries_and_quoted_names():
    text = net.render_netplan("n", "addresses", "netplan_qsfp_addresses", [], [], None)
    assert text.endswith("network:\n  version: 2\n  ethernets: {}\n")
    text = net.render_netplan("n", "link_local", "x", [], ["yes", "eth0.5"], 1500)
    assert '    "yes":\n' in text and '    "eth0.5":\n      dhcp4: false\n      mtu: 1500\n' in text


# -- rule 1: settings and nodes -------------------------------------------------------------------


def test_plan_must_be_known():
    per_node, errors = plan(plan="static")
    assert per_node == {}
    assert errors == ["netplan_qsfp_plan on spark-a, spark-b: 'static' is not a plan (accepted: addresses, link_local, dhcp)"]


def test_preset_checked_only_when_used():
    message = only_error(preset="three_subnets")
    assert message == ("netplan_qsfp_preset on spark-a, spark-b: 'three_subnets' is not a preset "
                       "(accepted: seed, two_subnets)")
    explicit = pair({"addresses": {"enp1s0f1np1": "10.10.0.1/24"}}, {"addresses": {"enp1s0f1np1": "10.10.0.2/24"}})
    assert plan(explicit, preset="three_subnets")[1] == []


def test_bad_preset_still_reports_other_nodes_errors():
    per_node, errors = plan(pair(b={"addresses": {"eth0": "10.10.0.2/24"}}), preset="nope")
    assert errors[0].startswith("netplan_qsfp_preset on spark-a, spark-b: 'nope' is not a preset")
    assert "netplan_qsfp_addresses on spark-b: 'eth0' is not a QSFP netdev" in errors[1]
    assert len(errors) == 2


@pytest.mark.parametrize("mtu, shown", [(True, "True (bool)"), ("9000", "'9000'"), (575, "575"), (9217, "9217"),
                                        (9000.0, "9000.0 (float)")])
def test_mtu_range(mtu, shown):
    message = only_error(mtu=mtu)
    assert message.startswith("netplan_qsfp_mtu on spark-a, spark-b: %s is not an MTU" % shown)
    assert "576..9216" in message


@pytest.mark.parametrize("mtu", [576, 9216, None])
def test_mtu_bounds_accepted(mtu):
    content = valid(mtu=mtu)["spark-a"]["content"]
    assert ("      mtu: %s\n" % mtu in content) == (mtu is not None)


@pytest.mark.parametrize("base", [0, -1, True, "101", 4294967292, None])
def test_table_base_range(base):
    message = only_error(table_base=base)
    assert message.startswith("netplan_qsfp_routing_table_base on spark-a, spark-b: %s is not a routing table number"
                              % net._show(base))
    assert "1..4294967291" in message


@pytest.mark.parametrize("base, hit", [(250, "253"), (251, "253, 254"), (253, "253, 254, 255"), (255, "255")])
def test_table_base_avoids_reserved_tables(base, hit):
    message = only_error(table_base=base)
    assert message.startswith("netplan_qsfp_routing_table_base on spark-a, spark-b: %d uses tables %d..%d, which "
                              "include the reserved table(s) %s " % (base, base, base + 3, hit))


@pytest.mark.parametrize("base", [1, 249, 256, 4294967291])
def test_table_base_accepted(base):
    assert [e["table"] for e in valid(table_base=base)["spark-a"]["entries"]] == [base, base + 1]


def test_one_node_is_not_a_link():
    per_node, errors = plan([node("spark-a")])
    assert per_node == {}
    assert errors == ["nodes of the QSFP link: [spark-a] (accepted: netplan pairing needs the two (or more) nodes "
                      "joined by the cable, each once)"]


def test_duplicate_nodes():
    per_node, errors = plan([node("spark-a"), node("spark-a", 1)])
    assert per_node == {}
    assert errors == ["nodes of the QSFP link: [spark-a, spark-a]; listed more than once: spark-a (accepted: netplan "
                      "pairing needs the two (or more) nodes joined by the cable, each once)"]


# -- rules 2 and 3: the cable ---------------------------------------------------------------------


def test_unplugged_cable_names_every_node_and_returns_early():
    nodes = pair({"addresses": {"eth0": "bad"}}, {"up": [], "up_source": "/sys/class/net/*/operstate"})
    per_node, errors = plan(nodes)
    assert per_node == {}
    assert errors == [
        "spark-b: no QSFP port is Up (from /sys/class/net/*/operstate): cable unplugged? Up QSFP ports per node: "
        "spark-a: enp1s0f1np1, enP2p1s0f1np1 (from ibdev2netdev); spark-b: none (from /sys/class/net/*/operstate). "
        "Nothing was written."]


def test_both_ends_unplugged():
    message = only_error(pair({"up": ["eth0"]}, {"up": []}))
    assert message.startswith("spark-a: no QSFP port is Up (from ibdev2netdev); "
                              "spark-b: no QSFP port is Up (from ibdev2netdev): cable unplugged?")


def test_mismatched_ports_name_each_node_and_return_early():
    nodes = pair({"addresses": {"enp1s0f1np1": "192.168.200.012/24"}}, {"up": PORT0})
    per_node, errors = plan(nodes)
    assert per_node == {}
    assert errors == [
        "The nodes do not see the same QSFP ports Up, so the cable does not join the same port on both Sparks (or one "
        "end is down): spark-a: enp1s0f1np1, enP2p1s0f1np1 (port 1, from ibdev2netdev); spark-b: enp1s0f0np0, "
        "enP2p1s0f0np0 (port 0, from ibdev2netdev). Re-seat the cable in the same port on both nodes; nothing was "
        "written."]


def test_one_end_half_up():
    message = only_error(pair(b={"up": ["enp1s0f1np1", "enp1s0f0np0"], "up_source": "/sys/class/net/*/operstate"}))
    assert "spark-b: enp1s0f0np0, enp1s0f1np1 (port 0+1, from /sys/class/net/*/operstate)" in message
    assert "re-seat the cable in the same port on both nodes" in message.lower()


# -- rule 4: each node's addresses ----------------------------------------------------------------


def test_key_not_a_qsfp_netdev():
    message = only_error(pair({"addresses": {"eth0": "10.10.0.1/24", "enp1s0f1np1": "192.168.200.12/24"}},
                              {"addresses": {"enp1s0f1np1": "192.168.200.13/24"}}))
    assert message == ("netplan_qsfp_addresses on spark-a: 'eth0' is not a QSFP netdev (accepted: enp1s0f0np0, "
                       "enP2p1s0f0np0, enp1s0f1np1, enP2p1s0f1np1); no other interface is ever configured")


def test_key_not_up():
    per_node, errors = plan(pair({"addresses": {"enp1s0f0np0": "10.10.0.1/24"}},
                                 {"addresses": {"enp1s0f0np0": "10.10.0.2/24"},
                                  "up_source": "/sys/class/net/*/operstate"}))
    assert errors == [
        "netplan_qsfp_addresses on spark-a: 'enp1s0f0np0' is not Up (Up: enp1s0f1np1, enP2p1s0f1np1, from ibdev2netdev)",
        "netplan_qsfp_addresses on spark-b: 'enp1s0f0np0' is not Up (Up: enp1s0f1np1, enP2p1s0f1np1, "
        "from /sys/class/net/*/operstate)"]


@pytest.mark.parametrize("value, shown", [
    ("192.168.200.012/24", "'192.168.200.012/24'"),
    ("1.2.3/24", "'1.2.3/24'"),
    ("192.168.200.12", "'192.168.200.12'"),
    ("192.168.200.12/33", "'192.168.200.12/33'"),
    ("192.168.200.12/0", "'192.168.200.12/0'"),
    ("192.168.200.12/024", "'192.168.200.12/024'"),
    ("256.1.1.1/24", "'256.1.1.1/24'"),
    (" 192.168.200.12/24", "' 192.168.200.12/24'"),
    ("192.168.200.12/24\n", "'192.168.200.12/24\n'"),
    ("fe80::1/64", "'fe80::1/64'"),
    (3232286732, "3232286732"),
    (None, "None (NoneType)"),
    (["192.168.200.12/24"], "['192.168.200.12/24'] (list)"),
])
def test_bad_cidr_values(value, shown):
    message = only_error(pair({"addresses": {"enp1s0f1np1": value}}, {"addresses": {"enp1s0f1np1": "10.1.1.2/24"}}))
    assert message == ("netplan_qsfp_addresses on spark-a (enp1s0f1np1): %s is not an IPv4 address with a prefix "
                       "length (accepted: A.B.C.D/N: a dotted quad without leading zeros and a prefix length "
                       "N = 1..32)" % shown)


@pytest.mark.parametrize("value, what", [("192.168.200.0/24", "network"), ("192.168.200.255/24", "broadcast"),
                                         ("10.1.1.4/30", "network"), ("10.1.1.7/30", "broadcast")])
def test_network_and_broadcast_addresses(value, what):
    message = only_error(pair({"addresses": {"enp1s0f1np1": value}}, {"addresses": {"enp1s0f1np1": "10.1.1.5/30"}}))
    network = "192.168.200.0/24" if value.startswith("192") else "10.1.1.4/30"
    assert message.startswith("netplan_qsfp_addresses on spark-a (enp1s0f1np1): '%s' is the %s address of %s "
                              "(accepted:" % (value, what, network))


@pytest.mark.parametrize("value", ["127.0.0.2/8", "224.0.0.5/24", "240.0.0.1/24", "0.1.2.3/8", "255.255.255.255/32"])
def test_non_unicast_addresses(value):
    assert "is not a unicast host address" in net.cidr_errors("f", value)[0]


@pytest.mark.parametrize("value", ["10.1.1.0/31", "10.1.1.1/31", "10.1.1.1/32", "169.254.1.2/16", "1.2.3.4/1"])
def test_cidr_errors_accepts(value):
    assert net.cidr_errors("field", value) == []


def test_cidr_errors_names_the_field():
    assert net.cidr_errors("x on h", "1.2.3.4") == [
        "x on h: '1.2.3.4' is not an IPv4 address with a prefix length (accepted: A.B.C.D/N: a dotted quad without "
        "leading zeros and a prefix length N = 1..32)"]


def test_same_address_on_two_netdevs_of_one_node():
    message = only_error(pair({"addresses": {"enp1s0f1np1": "10.1.1.1/24", "enP2p1s0f1np1": "10.1.1.1/24"}},
                              {"addresses": {"enp1s0f1np1": "10.1.1.2/24", "enP2p1s0f1np1": "10.1.1.3/24"}}))
    assert message == ("netplan_qsfp_addresses on spark-a: 10.1.1.1 is planned on more than one netdev "
                       "(enp1s0f1np1, enP2p1s0f1np1) (accepted: each address once)")


def test_a_third_node_needs_a_switch_or_a_ring():
    nodes = pair() + [node("spark-c", 2)]
    per_node, errors = plan(nodes)
    assert per_node == {}
    assert errors == [
        "specdec_topology of cluster sparks: 'direct' joins two Sparks with one cable, but cluster sparks has 3 "
        "(spark-a, spark-b, spark-c) (accepted: switch for 2 to 8 Sparks through a switch, ring for three Sparks "
        "cabled in a ring)"]
    per_node = valid(nodes, topology="switch")
    assert per_node["spark-c"]["addresses"] == ["192.168.100.3", "192.168.101.3"]


def test_addresses_must_be_a_mapping():
    message = only_error(pair({"addresses": ["192.168.200.12/24"]}))
    assert message.startswith("netplan_qsfp_addresses on spark-a: ['192.168.200.12/24'] (list) is not a mapping "
                              "(accepted: a mapping of QSFP netdev to A.B.C.D/N")


# -- rule 5: across nodes -------------------------------------------------------------------------


def test_address_planned_twice_across_nodes():
    message = only_error(pair({"addresses": {"enp1s0f1np1": "10.1.1.1/24"}},
                              {"addresses": {"enp1s0f1np1": "10.1.1.1/24"}}))
    assert message == ("netplan_qsfp_addresses on spark-a, netplan_qsfp_addresses on spark-b: 10.1.1.1 is planned "
                       "more than once (spark-a enp1s0f1np1, spark-b enp1s0f1np1) (accepted: every QSFP address once "
                       "in the cluster)")


def test_explicit_plan_clashing_with_the_preset_of_the_other_node():
    message = only_error(pair(b={"addresses": {"enp1s0f1np1": "192.168.200.12/24",
                                               "enP2p1s0f1np1": "192.168.200.15/24"}}))
    assert message.startswith("netplan_qsfp_preset=seed on spark-a, netplan_qsfp_addresses on spark-b: 192.168.200.12 "
                              "is planned more than once (spark-a enp1s0f1np1, spark-b enp1s0f1np1)")


def test_missing_end_of_a_link():
    message = only_error(pair({"addresses": {"enp1s0f1np1": "10.1.1.1/24", "enP2p1s0f1np1": "10.2.2.1/24"}},
                              {"addresses": {"enp1s0f1np1": "10.1.1.2/24"}}))
    assert message == ("netplan_qsfp_addresses on spark-b: no address for enP2p1s0f1np1, but spark-a has "
                       "10.2.2.1/24 on its end of that link (accepted: an address in 10.2.2.0/24 on every node)")


def test_ends_of_a_link_in_different_subnets():
    message = only_error(pair({"addresses": {"enp1s0f1np1": "10.1.1.1/24"}},
                              {"addresses": {"enp1s0f1np1": "10.1.2.2/24"}}))
    assert message == ("netplan_qsfp_addresses on spark-a, netplan_qsfp_addresses on spark-b: the ends of link "
                       "enp1s0f1np1 are in different subnets (spark-a 10.1.1.1/24, spark-b 10.1.2.2/24) "
                       "(accepted: both ends in one subnet)")


def test_different_prefix_is_a_different_subnet():
    message = only_error(pair({"addresses": {"enp1s0f1np1": "10.1.1.1/24"}},
                              {"addresses": {"enp1s0f1np1": "10.1.1.2/25"}}))
    assert "the ends of link enp1s0f1np1 are in different subnets (spark-a 10.1.1.1/24, spark-b 10.1.1.2/25)" in message


def test_cross_checks_wait_for_valid_nodes():
    # spark-b's value is bad: no "no address for enp1s0f1np1" noise on top of its own message.
    per_node, errors = plan(pair({"addresses": {"enp1s0f1np1": "10.1.1.1/24"}},
                                 {"addresses": {"enp1s0f1np1": "10.1.1.300/24"}}))
    assert len(errors) == 1 and errors[0].startswith("netplan_qsfp_addresses on spark-b (enp1s0f1np1): '10.1.1.300/24'")


# -- rule 6: the management path ------------------------------------------------------------------


def test_planned_netdev_carries_the_default_route():
    message = only_error(pair({"default_interface": "enp1s0f1np1"}))
    assert message == ("netplan_qsfp_preset=seed on spark-a: enp1s0f1np1 carries the default IPv4 route; configuring "
                       "it could cut the node off from the controller " + OVERRIDE)


def test_planned_netdev_carries_the_management_address():
    current = {"eth0": ["10.0.0.5/24"], "enP2p1s0f1np1": ["172.16.5.5/16"]}
    message = only_error(pair(b={"current": current, "management_address": "172.16.5.5"}))
    assert message == ("netplan_qsfp_preset=seed on spark-b: enP2p1s0f1np1 carries the management address 172.16.5.5; "
                       "configuring it could cut the node off from the controller " + OVERRIDE)


def test_management_address_inside_a_planned_subnet():
    current = {"eth0": ["192.168.200.50/16"]}
    per_node, errors = plan(pair({"current": current, "management_address": "192.168.200.50"}))
    assert errors[0] == ("netplan_qsfp_preset=seed on spark-a: the management address 192.168.200.50 lies in the "
                         "planned subnet 192.168.200.0/24 (192.168.200.12/24 on enp1s0f1np1) " + OVERRIDE)
    # The /16 on eth0 overlaps both planned /24 entries as well.
    assert errors[1:] == [
        "netplan_qsfp_preset=seed on spark-a: planned 192.168.200.12/24 on enp1s0f1np1 overlaps 192.168.200.50/16 "
        "(192.168.0.0/16) on eth0, the interface of the management address 192.168.200.50 and the default IPv4 route "
        + OVERRIDE,
        "netplan_qsfp_preset=seed on spark-a: planned 192.168.200.14/24 on enP2p1s0f1np1 overlaps 192.168.200.50/16 "
        "(192.168.0.0/16) on eth0, the interface of the management address 192.168.200.50 and the default IPv4 route "
        + OVERRIDE]


def test_planned_subnet_overlaps_the_default_interface():
    current = {"eth0": ["10.0.0.5/24", "192.168.0.9/16"]}
    per_node, errors = plan(pair(b={"current": current}), preset="two_subnets")
    assert errors == [
        "netplan_qsfp_preset=two_subnets on spark-b: planned 192.168.100.11/24 on enp1s0f1np1 overlaps 192.168.0.9/16 "
        "(192.168.0.0/16) on eth0, the interface of the default IPv4 route " + OVERRIDE,
        "netplan_qsfp_preset=two_subnets on spark-b: planned 192.168.101.11/24 on enP2p1s0f1np1 overlaps "
        "192.168.0.9/16 (192.168.0.0/16) on eth0, the interface of the default IPv4 route " + OVERRIDE]


def test_planned_subnet_overlaps_the_management_interface_without_default_route():
    current = {"eth0": ["10.0.0.5/24"], "wlan0": ["192.168.200.77/25"]}
    per_node, errors = plan(pair({"current": current, "management_address": "192.168.200.77",
                                  "default_interface": "",
                                  "addresses": {"enp1s0f1np1": "192.168.200.130/25"}},
                                 {"addresses": {"enp1s0f1np1": "192.168.200.131/25"}}))
    assert errors == []  # 192.168.200.128/25 does not overlap 192.168.200.0/25
    per_node, errors = plan(pair({"current": current, "management_address": "192.168.200.77",
                                  "default_interface": "",
                                  "addresses": {"enp1s0f1np1": "192.168.200.12/25"}},
                                 {"addresses": {"enp1s0f1np1": "192.168.200.13/25"}}))
    assert errors[0].startswith("netplan_qsfp_addresses on spark-a: the management address 192.168.200.77 lies in "
                                "the planned subnet 192.168.200.0/25")
    assert errors[1] == ("netplan_qsfp_addresses on spark-a: planned 192.168.200.12/25 on enp1s0f1np1 overlaps "
                         "192.168.200.77/25 (192.168.200.0/25) on wlan0, the interface of the management address "
                         "192.168.200.77 " + OVERRIDE)
    assert len(errors) == 2


def test_link_local_refuses_the_default_interface_and_a_link_local_management_address():
    current = {"enP2p1s0f1np1": ["169.254.7.7/16"]}
    per_node, errors = plan(pair(b={"current": current, "management_address": "169.254.7.7",
                                    "default_interface": "enP2p1s0f1np1"}), plan="link_local")
    assert errors == [
        "netplan_qsfp_plan=link_local on spark-b: enP2p1s0f1np1 carries the management address 169.254.7.7 and the "
        "default IPv4 route; configuring it could cut the node off from the controller " + OVERRIDE,
        "netplan_qsfp_plan=link_local on spark-b: the management address 169.254.7.7 is link-local, like the planned "
        "QSFP addresses " + OVERRIDE]


def test_link_local_management_address_on_another_nic():
    message = only_error(pair({"current": {"eth0": ["169.254.1.1/16"]}, "management_address": "169.254.1.1"}),
                         plan="link_local")
    assert message.startswith("netplan_qsfp_plan=link_local on spark-a: the management address 169.254.1.1 is "
                              "link-local")
    # The addresses plan does not mind a link-local management address outside its subnets.
    assert plan(pair({"current": {"eth0": ["169.254.1.1/16"]}, "management_address": "169.254.1.1"}))[1] == []


def test_allow_disruptive_skips_the_management_checks():
    nodes = pair({"default_interface": "enp1s0f1np1", "current": {"enp1s0f1np1": ["192.168.200.12/24"]},
                  "management_address": "192.168.200.12"})
    assert len(plan(nodes)[1]) == 2
    per_node = valid(nodes, allow_disruptive=True)
    assert per_node["spark-a"]["missing"] == ["192.168.200.14/24 on enP2p1s0f1np1"]


def test_unknown_or_hostname_management_address_is_only_checked_by_interface():
    assert plan(pair({"management_address": "", "current": {}}))[1] == []
    assert plan(pair({"management_address": "spark-a.lab", "default_interface": ""}))[1] == []
    message = only_error(pair({"management_address": "", "default_interface": "enp1s0f1np1"}))
    assert "enp1s0f1np1 carries the default IPv4 route" in message


def test_malformed_current_addresses_are_ignored():
    current = {"eth0": ["garbage", None, "10.0.0.5/24"], "enp1s0f1np1": "not-a-list-of-cidrs"}
    per_node = valid(pair({"current": current}))
    assert per_node["spark-a"]["missing"] == ["192.168.200.12/24 on enp1s0f1np1", "192.168.200.14/24 on enP2p1s0f1np1"]


def test_inputs_are_not_modified():
    nodes = pair({"addresses": {"enp1s0f1np1": "10.1.1.1/24"}}, {"addresses": {"enp1s0f1np1": "10.1.1.2/24"}})
    before = copy.deepcopy(nodes)
    valid(nodes)
    assert nodes == before


@pytest.mark.parametrize("empty", [{}, None, []])
def test_empty_addresses_use_the_preset(empty):
    per_node = valid(pair({"addresses": empty}))
    assert per_node["spark-a"]["source"] == "netplan_qsfp_preset=seed"
    assert per_node["spark-a"]["addresses"] == ["192.168.200.12", "192.168.200.14"]
