"""The entrypoint's rank mode (how mpirun starts each rank): the node's own RoCE v2 GID index, never pinned."""

import os
import subprocess

import pytest

ENTRYPOINT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "trtllm_container", "files",
                          "entrypoint.sh")


def hca(root, name, gids):
    """A sysfs tree for one RDMA device: gids {index: (type, gid)}."""
    port = root / "class" / "infiniband" / name / "ports" / "1"
    (port / "gids").mkdir(parents=True)
    (port / "gid_attrs" / "types").mkdir(parents=True)
    for index, (kind, gid) in gids.items():
        (port / "gids" / str(index)).write_text(gid + "\n")
        (port / "gid_attrs" / "types" / str(index)).write_text(kind + "\n")


LINK_LOCAL = "fe80:0000:0000:0000:0ac0:ebff:fe2c:1a2e"
MAPPED = "0000:0000:0000:0000:0000:ffff:c0a8:c80c"


def rank_env(tmp_path, hcas, extra=None):
    env = {"PATH": os.environ["PATH"], "DGX_SPARK_SYSFS": str(tmp_path), "NCCL_IB_HCA": hcas}
    env.update(extra or {})
    out = subprocess.run(["bash", ENTRYPOINT, "--rank", "--", "env"], env=env, capture_output=True, text=True,
                         check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def test_each_rank_reads_its_nodes_roce_v2_index(tmp_path):
    gids = {0: ("IB/RoCE v1", LINK_LOCAL), 1: ("RoCE v2", LINK_LOCAL), 2: ("IB/RoCE v1", MAPPED), 3: ("RoCE v2", MAPPED)}
    hca(tmp_path, "rocep1s0f1", gids)
    hca(tmp_path, "roceP2p1s0f1", gids)
    assert rank_env(tmp_path, "rocep1s0f1,roceP2p1s0f1")["NCCL_IB_GID_INDEX"] == "3"


def test_devices_that_disagree_leave_it_to_nccl(tmp_path):
    hca(tmp_path, "rocep1s0f1", {3: ("RoCE v2", MAPPED)})
    hca(tmp_path, "roceP2p1s0f1", {5: ("RoCE v2", MAPPED)})
    assert "NCCL_IB_GID_INDEX" not in rank_env(tmp_path, "rocep1s0f1,roceP2p1s0f1")


def test_no_ipv4_gid_leaves_it_unset(tmp_path):
    hca(tmp_path, "rocep1s0f1", {1: ("RoCE v2", LINK_LOCAL)})
    assert "NCCL_IB_GID_INDEX" not in rank_env(tmp_path, "rocep1s0f1")


def test_a_given_index_is_kept(tmp_path):
    hca(tmp_path, "rocep1s0f1", {3: ("RoCE v2", MAPPED)})
    assert rank_env(tmp_path, "rocep1s0f1", {"NCCL_IB_GID_INDEX": "7"})["NCCL_IB_GID_INDEX"] == "7"


def test_the_nodes_own_nccl_settings_come_from_the_containers_first_process(tmp_path):
    try:
        with open("/proc/1/environ", "rb") as handle:
            first = dict(item.split(b"=", 1) for item in handle.read().split(b"\0") if b"=" in item)
    except OSError:
        pytest.skip("this process cannot read /proc/1/environ (the rank reads its own container's)")
    env = rank_env(tmp_path, "none")
    for name, value in first.items():
        name = name.decode()
        if name.startswith(("NCCL_", "UCX_")) and name != "NCCL_IB_HCA":
            assert env[name] == value.decode()
    assert env["NCCL_IB_HCA"] == "none"  # a setting mpirun passed wins
