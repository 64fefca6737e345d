"""Smoke test of the simulated two-Spark lab with Docker (marker: docker).

Runs a separate lab instance (SPARK_LAB_PREFIX=labtest-, its own SPARK_LAB_ROOT), so a lab that is
already up (spark-a/spark-b) is left alone. Tests run in file order: the last one tears down and
checks that `docker ps -a`, `docker network ls` and the host's `ip link` are as before.
"""

import os
import shutil
import subprocess
import sys
import time

import pytest

from lab_helpers import LAB_DIR, LAB_SCRIPT, REPO

pytestmark = pytest.mark.docker

PREFIX = "labtest-"
NODE_A, NODE_B = PREFIX + "spark-a", PREFIX + "spark-b"
UP_PORTS = ("enp1s0f1np1", "enP2p1s0f1np1")
ALL_PORTS = ("enp1s0f0np0", "enp1s0f1np1", "enP2p1s0f0np0", "enP2p1s0f1np1")
PLAN = {NODE_A: {"enp1s0f1np1": "192.168.200.12", "enP2p1s0f1np1": "192.168.200.14"},
        NODE_B: {"enp1s0f1np1": "192.168.200.13", "enP2p1s0f1np1": "192.168.200.15"}}
PEER = {NODE_A: NODE_B, NODE_B: NODE_A}


def sh(cmd, check=True, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)
    if check and proc.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s" % (cmd, proc.returncode, proc.stdout, proc.stderr))
    return proc


def dexec(node, *cmd, user=None, check=True, stdin=None):
    args = ["docker", "exec"] + (["-i"] if stdin is not None else []) + (["-u", user] if user else [])
    return sh(args + [node] + list(cmd), check=check, input=stdin)


def host_snapshot():
    containers = sh(["docker", "ps", "-a", "--no-trunc", "--format", "{{.ID}} {{.Names}}"]).stdout.split("\n")
    networks = sh(["docker", "network", "ls", "--no-trunc", "--format", "{{.ID}} {{.Name}}"]).stdout.split("\n")
    links = [line.split(":")[1].strip().split("@")[0]
             for line in sh(["ip", "-o", "link", "show"]).stdout.splitlines()]
    return {"containers": sorted(filter(None, containers)), "networks": sorted(filter(None, networks)),
            "links": sorted(links)}


def docker_available():
    if shutil.which("docker") is None or os.geteuid() != 0:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not docker_available():
        pytest.skip("needs root and a running Docker engine")
    root = str(tmp_path_factory.mktemp("spark-lab-root"))
    env = dict(os.environ, SPARK_LAB_PREFIX=PREFIX, SPARK_LAB_ROOT=root)
    before = host_snapshot()
    started = time.time()
    proc = sh([LAB_SCRIPT, "up"], check=False, env=env, timeout=1200)
    state = {"env": env, "root": root, "before": before, "up_seconds": time.time() - started, "up_log": proc.stderr}
    try:
        assert proc.returncode == 0, proc.stderr
        yield state
    finally:
        sh([LAB_SCRIPT, "down"], check=False, env=env, timeout=300)


def test_up_creates_two_nodes_and_is_idempotent(lab):
    print("lab up took %.1fs" % lab["up_seconds"])
    ids = {n: sh(["docker", "inspect", "-f", "{{.Id}}", n]).stdout.strip() for n in (NODE_A, NODE_B)}
    for node in (NODE_A, NODE_B):
        assert dexec(node, "hostname").stdout.strip() == node[len(PREFIX):]
        caps = sh(["docker", "inspect", "-f", "{{.HostConfig.Privileged}} {{.HostConfig.CapAdd}}", node]).stdout
        assert caps.startswith("false") and "NET_ADMIN" in caps
    started = time.time()
    again = sh([LAB_SCRIPT, "up"], env=lab["env"])
    print("second lab up took %.1fs" % (time.time() - started))
    assert "nothing to do" in again.stderr
    assert {n: sh(["docker", "inspect", "-f", "{{.Id}}", n]).stdout.strip() for n in (NODE_A, NODE_B)} == ids
    status = sh([LAB_SCRIPT, "status"], check=False, env=lab["env"])
    assert status.returncode == 0, status.stdout + status.stderr


def test_ibdev2netdev_on_both_nodes(lab):
    for node in (NODE_A, NODE_B):
        assert dexec(node, "ibdev2netdev").stdout.splitlines() == [
            "rocep1s0f0 port 1 ==> enp1s0f0np0 (Down)",
            "rocep1s0f1 port 1 ==> enp1s0f1np1 (Up)",
            "roceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Down)",
            "roceP2p1s0f1 port 1 ==> enP2p1s0f1np1 (Up)",
        ]


def test_qsfp_ports_have_no_addresses_and_down_ports_have_no_carrier(lab):
    for node in (NODE_A, NODE_B):
        for port in ALL_PORTS:
            assert dexec(node, "ip", "-4", "-o", "addr", "show", "dev", port).stdout == "", (node, port)
        # Even set up, an uncabled port stays without carrier.
        dexec(node, "ip", "link", "set", "dev", "enp1s0f0np0", "up")
        assert "NO-CARRIER" in dexec(node, "ip", "link", "show", "dev", "enp1s0f0np0").stdout
        assert "(Down)" in dexec(node, "ibdev2netdev").stdout.splitlines()[0]
        dexec(node, "ip", "link", "set", "dev", "enp1s0f0np0", "down")


def test_links_with_temporary_addresses(lab):
    """Each cabled port reaches the same-named port of the other node, and only that one."""
    for node in (NODE_A, NODE_B):
        for port in UP_PORTS:
            dexec(node, "ip", "addr", "add", PLAN[node][port], "peer", PLAN[PEER[node]][port], "dev", port)
    try:
        for node in (NODE_A, NODE_B):
            for port in UP_PORTS:
                dexec(node, "ping", "-c1", "-W2", "-I", port, PLAN[PEER[node]][port])
        # Each cable is one veth pair: A's port's peer is B's same-named port (and vice versa).
        for node in (NODE_A, NODE_B):
            for port in UP_PORTS:
                link = dexec(node, "ip", "-o", "link", "show", "dev", port).stdout
                peer_index = link.split(":")[1].strip().split("@if")[1]
                assert dexec(PEER[node], "cat", "/sys/class/net/%s/ifindex" % port).stdout.strip() == peer_index
    finally:
        for node in (NODE_A, NODE_B):
            for port in UP_PORTS:
                dexec(node, "ip", "addr", "flush", "dev", port)


NETPLAN = """network:
  version: 2
  ethernets:
    enp1s0f1np1:
      dhcp4: false
      mtu: 9000
      addresses: [{a}/24]
      routes: [{{to: 192.168.200.0/24, table: 101}}]
      routing-policy: [{{from: {a}, table: 101}}]
    enP2p1s0f1np1:
      dhcp4: false
      mtu: 9000
      addresses: [{b}/24]
      routes: [{{to: 192.168.200.0/24, table: 102}}]
      routing-policy: [{{from: {b}, table: 102}}]
"""


def test_netplan_generate_and_lab_networkd_apply(lab):
    for node in (NODE_A, NODE_B):
        yaml_text = NETPLAN.format(a=PLAN[node]["enp1s0f1np1"], b=PLAN[node]["enP2p1s0f1np1"])
        dexec(node, "sh", "-c", "umask 077; cat > /etc/netplan/40-cx7.yaml", stdin=yaml_text)
        dexec(node, "netplan", "generate")
        out = dexec(node, "/usr/local/sbin/lab-networkd-apply").stdout.strip().splitlines()
        assert len(out) == 1 and out[0].startswith("lab-networkd-apply: changed: 2 interface(s)"), out
        again = dexec(node, "/usr/local/sbin/lab-networkd-apply").stdout.strip()
        assert again.startswith("lab-networkd-apply: unchanged:"), again
        assert "from %s lookup 101" % PLAN[node]["enp1s0f1np1"] in dexec(node, "ip", "rule").stdout
        assert "mtu 9000" in dexec(node, "ip", "link", "show", "dev", "enP2p1s0f1np1").stdout
    for node in (NODE_A, NODE_B):
        for port in UP_PORTS:
            dexec(node, "ping", "-c1", "-W2", "-I", port, PLAN[PEER[node]][port])
        # Jumbo frames pass unfragmented on both links.
        dexec(node, "ping", "-c1", "-W2", "-M", "do", "-s", "8000", "-I", "enP2p1s0f1np1",
              PLAN[PEER[node]]["enP2p1s0f1np1"])


def test_user_group_and_home(lab):
    sock_gid = os.stat("/var/run/docker.sock").st_gid
    for node in (NODE_A, NODE_B):
        group = dexec(node, "getent", "group", "docker").stdout.strip().split(":")
        assert int(group[2]) == sock_gid
        assert "docker" not in dexec(node, "id", "-nG", "spark").stdout.split()
        home = dexec(node, "sh", "-c", "echo $HOME", user="spark").stdout.strip()
        assert home == os.path.join(lab["root"], node, "home", "spark")  # per instance: the prefixed name
        assert os.path.isdir(home), "the home must be a host path too"
        assert dexec(node, "id", "-u", user="spark").stdout.strip() == "1000"
        assert dexec(node, "sudo", "-n", "id", "-u", user="spark").stdout.strip() == "0"
        assert dexec(node, "docker", "ps", user="spark", check=False).returncode != 0   # not in group docker yet
        assert NODE_A in dexec(node, "sudo", "-n", "docker", "ps", "--format", "{{.Names}}", user="spark").stdout


def test_sibling_trtllm_container_shares_the_node_network(lab):
    name = "trtllm-" + NODE_A
    home = dexec(NODE_A, "sh", "-c", "echo $HOME", user="spark").stdout.strip()
    dexec(NODE_A, "mkdir", "-p", home + "/.cache/huggingface", user="spark")
    dexec(NODE_A, "sudo", "-n", "docker", "run", "-d", "--name", name, "--network", "container:" + NODE_A,
          "--ulimit", "memlock=8388608", "--ulimit", "stack=67108864", "-e", "STANDIN_STARTUP_SECONDS=0.5",
          "-v", home + "/.cache/huggingface:/root/.cache/huggingface",
          "local/tensorrt-llm-standin:1.2.0rc6", user="spark")
    assert "enp1s0f1np1" in sh(["docker", "exec", name, "ip", "-o", "link"]).stdout
    sh(["docker", "exec", name, "hf", "download", "nvidia/Qwen3-8B-FP4", "--quiet"])
    # The download went through the bind mount into the node's home on the host.
    assert os.path.isdir(os.path.join(home, ".cache", "huggingface", "hub", "models--nvidia--Qwen3-8B-FP4"))
    sh(["docker", "exec", "-d", name, "sh", "-c",
        "trtllm-serve nvidia/Qwen3-8B-FP4 --host 0.0.0.0 --port 8355 >/tmp/serve.log 2>&1"])
    probe = ("import json, time, urllib.request\n"
             "for _ in range(100):\n"
             "    try:\n"
             "        print(json.load(urllib.request.urlopen('http://127.0.0.1:8355/v1/models'))['data'][0]['id'])\n"
             "        break\n"
             "    except Exception:\n"
             "        time.sleep(0.1)\n")
    # The node itself reaches the server on localhost: same network namespace.
    assert dexec(NODE_A, "python3", "-c", probe).stdout.strip() == "nvidia/Qwen3-8B-FP4"


def test_inventory_reaches_the_nodes(lab):
    ansible = os.path.join(os.path.dirname(sys.executable), "ansible")
    if not os.path.exists(ansible):
        pytest.skip("ansible not installed next to the test interpreter")
    env = dict(lab["env"], ANSIBLE_PIPELINING="True", ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"))
    proc = sh([ansible, "-i", os.path.join(REPO, "inventories", "lab", "hosts.yml"), "sparks", "-b", "-m",
               "ansible.builtin.command", "-a", "id -u"], check=False, env=env, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("CHANGED | rc=0 >>") == 2 and "\n0\n" in proc.stdout + "\n"


def test_nodes_read_a_spark_meminfo_that_lab_meminfo_changes_in_place(lab):
    meminfo = dexec(NODE_A, "cat", "/proc/meminfo").stdout
    assert "MemTotal:       125904132 kB" in meminfo and "MemAvailable:   117440512 kB" in meminfo
    assert dexec(NODE_A, "free", "-m").stdout.split("\n")[1].split()[1] == "122953"
    sh([LAB_SCRIPT, "meminfo", "spark-a", "--available-mib", "2048"], env=lab["env"])
    assert "MemAvailable:    2097152 kB" in dexec(NODE_A, "cat", "/proc/meminfo").stdout
    assert "MemAvailable:   117440512 kB" in dexec(NODE_B, "cat", "/proc/meminfo").stdout  # per node
    sh([LAB_SCRIPT, "meminfo", "spark-a", "--total-mib", "4096", "--available-mib", "3072"], env=lab["env"])
    assert "MemTotal:        4194304 kB" in sh([LAB_SCRIPT, "meminfo", "spark-a"], env=lab["env"]).stdout
    sh([LAB_SCRIPT, "meminfo", "spark-a", "--reset"], env=lab["env"])
    assert "MemAvailable:   117440512 kB" in dexec(NODE_A, "cat", "/proc/meminfo").stdout
    # The page cache cannot be dropped from a lab node (a container): /proc/sys is read-only.
    assert dexec(NODE_A, "sh", "-c", "echo 3 > /proc/sys/vm/drop_caches", check=False).returncode != 0


def test_file_server_serves_the_encodings_to_the_nodes(lab):
    sums = {}
    with open(os.path.join(LAB_DIR, "files", "encodings", "SHA256SUMS"), encoding="utf-8") as handle:
        for line in handle:
            digest, name = line.split()
            sums[name] = digest
    for name, digest in sums.items():
        url = "http://%sspark-lab-files:8080/encodings/%s" % (PREFIX, name)
        got = dexec(NODE_B, "sh", "-c", "curl -sf %s | sha256sum" % url).stdout.split()[0]
        assert got == digest, name


def test_down_restores_host(lab):
    started = time.time()
    proc = sh([LAB_SCRIPT, "down"], env=lab["env"])
    print("lab down took %.1fs" % (time.time() - started))
    assert "sibling" in proc.stderr            # the trtllm container started above was removed too
    after = host_snapshot()
    assert after == lab["before"]
    assert not os.path.exists(os.path.join(lab["root"], "spark-a"))
    assert not os.path.exists(os.path.join(lab["root"], "spark-b"))
    again = sh([LAB_SCRIPT, "down"], env=lab["env"])
    assert "lab down" in again.stderr
    assert sh([LAB_SCRIPT, "status"], check=False, env=lab["env"]).returncode == 3
