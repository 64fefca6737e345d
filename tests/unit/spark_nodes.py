# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What the plan's tests feed it: the playbooks' profiles and the ``spark`` fact of healthy nodes."""

from __future__ import annotations

import os

import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
QSFP = ("enp1s0f1np1", "enP2p1s0f1np1")
# The RoCE device of each QSFP netdev, as ibdev2netdev names them on a Spark.
RDMA = {"enp1s0f0np0": "rocep1s0f0", "enP2p1s0f0np0": "roceP2p1s0f0", "enp1s0f1np1": "rocep1s0f1",
        "enP2p1s0f1np1": "roceP2p1s0f1"}
# The address plan of NVIDIA's two-Spark speculative-decoding playbook ("Run on Two Sparks",
# https://github.com/NVIDIA/dgx-spark-playbooks/tree/main/nvidia/speculative-decoding), as in inventories/example.
PLAYBOOK_ADDRESSES = {"spark-a": {"enp1s0f1np1": "192.168.200.12/24", "enP2p1s0f1np1": "192.168.200.14/24"},
                      "spark-b": {"enp1s0f1np1": "192.168.200.13/24", "enP2p1s0f1np1": "192.168.200.15/24"}}
SEED_ADDRESSES = PLAYBOOK_ADDRESSES  # old name, used by the plan tests


def profile(name):
    """``specdec_profile`` of playbooks/vars/NAME.yml."""
    with open(os.path.join(ROOT, "playbooks", "vars", name + ".yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["specdec_profile"]


def spark(name, up=QSFP, ipv4=None, images=None, docker_ok=True, user="spark"):
    """The ``spark`` fact that spark_facts returns for a node (healthy unless told otherwise)."""
    return {
        "login_user": user, "home": "/home/" + user, "uid": 1000, "gid": 1000, "hostname": name,
        "qsfp": {"up": list(up), "source": "ibdev2netdev", "rdma": [RDMA.get(i, "roce" + i) for i in up]},
        "ipv4": ipv4 if ipv4 is not None else {"eth0": ["172.18.0.2/16"]},
        "default_ipv4": {"interface": "eth0", "address": "172.18.0.2"},
        "infiniband": False,
        "docker": {"ok": docker_ok, "error": "" if docker_ok else "Cannot connect to the Docker daemon",
                   "runtimes": ["runc"]},
        "images": images if images is not None else {},
        "containers": {},
        "tools": {"iptables": True, "ip6tables": True},
        "hf_login_token": False,
    }


def plan_pair(variables=None, facts=None):
    """The plan of NVIDIA's two-Spark playbook on spark-a and spark-b, with ``variables`` on both."""
    from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_plan as p
    node_vars = {h: dict(netplan_qsfp_addresses=PLAYBOOK_ADDRESSES[h], **(variables or {}))
                 for h in ("spark-a", "spark-b")}
    facts = facts or {h: spark(h) for h in node_vars}
    return p.plan_cluster("sparks", ["spark-a", "spark-b"], profile("two_spark_eagle3"), node_vars, facts)


def plan_single(variables=None, prof="single_spark_eagle3", facts=None):
    """The plan of a single Spark spark-a with the profile ``prof``."""
    from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_plan as p
    return p.plan_cluster("spark-a", ["spark-a"], profile(prof), {"spark-a": dict(variables or {})},
                          {"spark-a": facts or spark("spark-a")})


def plan_errors(call, *args, **kwargs):
    """The plan's error messages of ``call(*args, **kwargs)``, which must refuse."""
    from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_plan as p
    try:
        call(*args, **kwargs)
    except p.PlanError as exc:
        return exc.errors
    raise AssertionError("no PlanError")
