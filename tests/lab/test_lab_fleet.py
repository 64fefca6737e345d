"""The lab in a fleet's shape (pairs and singles), reached over SSH as the login user (marker: docker).

Its own instance (SPARK_LAB_PREFIX=labfleet-, its own SPARK_LAB_ROOT): runs beside any other lab.
"""

import os
import subprocess
import sys

import pytest
import yaml

from lab_helpers import LAB_SCRIPT, REPO
from test_lab_docker import ALL_PORTS, UP_PORTS, dexec, docker_available, host_snapshot, sh

pytestmark = pytest.mark.docker

PREFIX = "labfleet-"


@pytest.fixture(scope="module")
def fleet_lab(tmp_path_factory):
    if not docker_available():
        pytest.skip("needs root and a running Docker engine")
    root = str(tmp_path_factory.mktemp("spark-lab-fleet"))
    env = dict(os.environ, SPARK_LAB_PREFIX=PREFIX, SPARK_LAB_ROOT=root)
    before = host_snapshot()
    proc = sh([LAB_SCRIPT, "up", "--pairs", "1", "--singles", "2"], check=False, env=env, timeout=1200)
    try:
        assert proc.returncode == 0, proc.stderr
        yield {"env": env, "root": root, "before": before}
    finally:
        sh([LAB_SCRIPT, "down"], check=False, env=env, timeout=300)


def ports(node):
    out = dexec(PREFIX + node, "ibdev2netdev").stdout
    return {line.split()[4]: line.split()[5].strip("()") for line in out.splitlines()}


def test_shape_nodes_and_cables(fleet_lab):
    names = sh(["docker", "ps", "--filter", "label=spark-lab.instance=" + PREFIX, "--filter", "label=spark-lab.node",
                "--format", "{{.Names}}"]).stdout.split()
    assert sorted(names) == [PREFIX + n for n in ("pair1-a", "pair1-b", "single1-a", "single2-a")]
    for node in ("pair1-a", "pair1-b"):
        assert {p: s for p, s in ports(node).items() if s == "Up"} == {p: "Up" for p in UP_PORTS}
    for node in ("single1-a", "single2-a"):
        assert ports(node) == {p: "Down" for p in ALL_PORTS}
    # Every node has its own sshd host key.
    keys = {dexec(PREFIX + n, "cat", "/etc/ssh/ssh_host_ed25519_key.pub").stdout.split()[1]
            for n in ("pair1-a", "pair1-b", "single1-a")}
    assert len(keys) == 3


def test_written_inventory_and_ssh_login_as_the_login_user(fleet_lab):
    inv_dir = sh([LAB_SCRIPT, "inventory"], env=fleet_lab["env"]).stdout.strip()
    assert inv_dir == os.path.join(fleet_lab["root"], "lab-" + PREFIX, "inventory")
    with open(os.path.join(inv_dir, "hosts.yml")) as handle:
        inventory = yaml.safe_load(handle)
    clusters = inventory["all"]["children"]["sparks"]["children"]
    assert {name: (c["vars"]["specdec_cluster_head"], c["vars"]["specdec_profile_name"], sorted(c["hosts"]))
            for name, c in clusters.items()} == {
        "pair1": ("pair1-a", "two_spark_eagle3", ["pair1-a", "pair1-b"]),
        "single1": ("single1-a", "single_spark_eagle3", ["single1-a"]),
        "single2": ("single2-a", "single_spark_eagle3", ["single2-a"])}
    assert clusters["pair1"]["hosts"]["pair1-b"]["trtllm_container_name"] == "trtllm-" + PREFIX + "pair1-b"
    ansible = os.path.join(os.path.dirname(sys.executable), "ansible")
    env = dict(fleet_lab["env"], ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"))
    # SSH as spark (the pinned host keys, the lab key), then sudo: what AWX's machine credential does.
    proc = sh([ansible, "-i", inv_dir, "sparks", "-m", "ansible.builtin.command", "-a", "id -un"],
              check=False, env=env, cwd=REPO, timeout=120)
    assert proc.returncode == 0 and proc.stdout.count("\nspark") == 4, proc.stdout + proc.stderr
    proc = sh([ansible, "-i", inv_dir, "single1-a", "-b", "-m", "ansible.builtin.command", "-a", "id -un"],
              check=False, env=env, cwd=REPO, timeout=120)
    assert proc.returncode == 0 and "\nroot" in proc.stdout, proc.stdout + proc.stderr
    # Password login is off, and an unknown key is refused.
    addr = clusters["single1"]["hosts"]["single1-a"]["ansible_host"]
    denied = subprocess.run(["ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
                             "-o", "UserKnownHostsFile=/dev/null", "-i", "/dev/null", "spark@" + addr, "true"],
                            capture_output=True, text=True, timeout=30, check=False)
    assert denied.returncode == 255 and "Permission denied (publickey)" in denied.stderr


def test_up_again_is_a_no_op_and_a_new_shape_removes_old_nodes(fleet_lab):
    again = sh([LAB_SCRIPT, "up"], env=fleet_lab["env"])
    assert "nothing to do" in again.stderr and "1 pair(s), 2 single(s)" in again.stderr
    smaller = sh([LAB_SCRIPT, "up", "--pairs", "1", "--singles", "1"], env=fleet_lab["env"])
    assert "removed node %ssingle2-a (not in the shape any more)" % PREFIX in smaller.stderr
    assert not os.path.exists(os.path.join(fleet_lab["root"], PREFIX + "single2-a"))


def test_down_restores_host(fleet_lab):
    sh([LAB_SCRIPT, "down"], env=fleet_lab["env"])
    assert host_snapshot() == fleet_lab["before"]
    assert not os.path.exists(os.path.join(fleet_lab["root"], "lab-" + PREFIX))
