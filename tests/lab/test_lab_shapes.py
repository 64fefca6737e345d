"""The lab's multi-Spark shapes: a switch cluster and a ring beside a pair and a single (marker: docker).

Its own instance (SPARK_LAB_PREFIX=labshapes-, its own SPARK_LAB_ROOT): runs beside any other lab. Tests run in file
order on one `lab up --pairs 1 --singles 1 --switch 4 --ring 3`; the last one tears down and checks that the host's
containers, networks, links and network namespaces are as before. The first test needs no docker: the stand-in's
placeholder checkpoints carry the real head counts of the profiles' models.
"""

import json
import os
import re
import sys

import pytest
import yaml

from lab_helpers import LAB_SCRIPT, REPO
from test_lab_docker import ALL_PORTS, UP_PORTS, dexec, docker_available, host_snapshot, sh

PREFIX = "labshapes-"
DOWN_PORTS = ("enp1s0f0np0", "enP2p1s0f0np0")
SWITCH = ["switch1-a", "switch1-b", "switch1-c", "switch1-d"]
RING = ["ring1-a", "ring1-b", "ring1-c"]
# Rank order of the shape (MAC addresses: 02:5a:<10 + rank>:<port>:00:01).
NODES = ["pair1-a", "pair1-b", "single1-a"] + SWITCH + RING
NETNS = PREFIX + "spark-lab-switch1"
OMPI5_IMAGE = "local/tensorrt-llm-standin:1.2.0rc6-ompi5"


def netns_list():
    return sorted(line.split()[0] for line in sh(["ip", "netns", "list"]).stdout.splitlines() if line.strip())


def lab(env, *args, check=True):
    return sh([LAB_SCRIPT] + list(args), check=check, env=env, timeout=1200)


def ibdev(node):
    out = dexec(PREFIX + node, "ibdev2netdev").stdout
    return {line.split()[4]: line.split()[5].strip("()") for line in out.splitlines()}


def peer_ifindex(node, port):
    """The ifindex of the other end of a node's veth (ip prints it as <port>@if<index>)."""
    link = dexec(PREFIX + node, "ip", "-o", "link", "show", "dev", port).stdout
    return link.split(":")[1].strip().split("@if")[1]


def ifindex(node, port):
    return dexec(PREFIX + node, "cat", "/sys/class/net/%s/ifindex" % port).stdout.strip()


def mac(node, port):
    return dexec(PREFIX + node, "cat", "/sys/class/net/%s/address" % port).stdout.strip()


def in_netns(node, script):
    """A shell script in the node's network namespace, from the host (the nodes' /proc/sys is read-only)."""
    pid = sh(["docker", "inspect", "-f", "{{.State.Pid}}", PREFIX + node]).stdout.strip()
    return sh(["nsenter", "-t", pid, "-n", "sh", "-c", script])


def node_ids():
    return {n: sh(["docker", "inspect", "-f", "{{.Id}}", PREFIX + n]).stdout.strip() for n in NODES}


def test_placeholder_checkpoints_have_the_models_head_counts():
    """hf download's config.json: the heads of the repositories the profiles serve, 32/8 for any other."""
    # lab_helpers puts the stand-in on the path.
    from trtllm_standin import hfcache  # pylint: disable=import-outside-toplevel

    def config(repo):
        return json.loads(hfcache.placeholder_files(repo)["config.json"])

    expected = {"nvidia/DeepSeek-R1-FP4": (128, 128, "deepseek_v3"), "nvidia/Qwen3-235B-A22B-FP4": (64, 4, "qwen3_moe"),
                "meta-llama/Llama-3.1-8B-Instruct": (32, 8, "llama"), "openai/gpt-oss-120b": (64, 8, "gpt_oss"),
                "openai/gpt-oss-20b": (64, 8, "gpt_oss"), "nvidia/Llama-3.3-70B-Instruct-FP4": (64, 8, "llama"),
                "some-org/Unknown-Model-7B": (32, 8, "llama")}
    for repo, (heads, kv_heads, model_type) in expected.items():
        got = config(repo)
        assert (got["num_attention_heads"], got["num_key_value_heads"], got["model_type"]) == \
            (heads, kv_heads, model_type), repo
    assert config("nvidia/DeepSeek-R1-FP4")["num_nextn_predict_layers"] == 1
    assert config("nvidia/deepseek-r1-fp4")["num_attention_heads"] == 128  # the Hub's ids are case-insensitive
    # Every model a profile names (model:, draft_model:) gets a config with heads that divide among its ranks.
    names = set()
    vars_dir = os.path.join(REPO, "playbooks", "vars")
    for name in os.listdir(vars_dir):
        with open(os.path.join(vars_dir, name), encoding="utf-8") as handle:
            names.update(re.findall(r"^\s*(?:draft_)?model:\s*([\w.-]+/[\w.-]+)\s*$", handle.read(), re.M))
    assert "nvidia/Qwen3-235B-A22B-FP4" in names
    for repo in names:
        got = config(repo)
        assert got["num_attention_heads"] % got["num_key_value_heads"] == 0, repo


@pytest.fixture(scope="module")
def shapes_lab(tmp_path_factory):
    if not docker_available():
        pytest.skip("needs root and a running Docker engine")
    root = str(tmp_path_factory.mktemp("spark-lab-shapes"))
    env = dict(os.environ, SPARK_LAB_PREFIX=PREFIX, SPARK_LAB_ROOT=root)
    before = dict(host_snapshot(), netns=netns_list())
    proc = lab(env, "up", "--pairs", "1", "--singles", "1", "--switch", "4", "--ring", "3", check=False)
    try:
        assert proc.returncode == 0, proc.stderr
        yield {"env": env, "root": root, "before": before, "up_log": proc.stderr}
    finally:
        lab(env, "down", check=False)


@pytest.mark.docker
def test_options_are_checked(shapes_lab):
    for args, message in ((["--switch", "1"], "--switch must be 2 to 8"), (["--switch", "9"], "--switch must be 2 to 8"),
                          (["--ring", "5"], "--ring must be 3 or 4"), (["--ring", "x"], "--ring must be 3 or 4")):
        proc = lab(shapes_lab["env"], "up", *args, check=False)
        assert proc.returncode == 1 and message in proc.stderr, proc.stderr


@pytest.mark.docker
def test_nodes_shape_file_and_idempotence(shapes_lab):
    names = sh(["docker", "ps", "--filter", "label=spark-lab.instance=" + PREFIX, "--filter", "label=spark-lab.node",
                "--format", "{{.Names}}"]).stdout.split()
    assert sorted(names) == sorted(PREFIX + n for n in NODES)
    for node in SWITCH + RING:
        assert dexec(PREFIX + node, "hostname").stdout.strip() == node
        cluster = node.split("-", maxsplit=1)[0]
        assert sh(["docker", "inspect", "-f", '{{ index .Config.Labels "spark-lab.cluster" }}',
                   PREFIX + node]).stdout.strip() == cluster
    with open(os.path.join(shapes_lab["root"], "lab-" + PREFIX, "shape"), encoding="utf-8") as handle:
        assert handle.read() == "1 1 4 3 -\n"  # PAIRS SINGLES SWITCH RING MONITORING
    ids = node_ids()
    # Without options: the saved shape, nothing rewired or recreated.
    again = lab(shapes_lab["env"], "up")
    assert "nothing to do" in again.stderr and "wired" not in again.stderr, again.stderr
    assert "1 pair(s), 1 single(s), a switch of 4, a ring of 3" in again.stderr
    assert node_ids() == ids
    status = lab(shapes_lab["env"], "status", check=False)
    assert status.returncode == 0, status.stdout + status.stderr
    assert "%s br0 UP" % NETNS in status.stdout
    assert re.search(r"ring1-a .*\n\s+enp1s0f1np1\s+-> ring1-c enp1s0f0np0\s+UP", status.stdout), status.stdout
    assert re.search(r"switch1-b .*\n\s+enp1s0f1np1\s+-> switch port b-enp1s0f1np1\s+UP", status.stdout), status.stdout


@pytest.mark.docker
def test_ibdev2netdev_for_each_shape(shapes_lab):
    for node in ("pair1-a", "pair1-b") + tuple(SWITCH):
        assert ibdev(node) == {"enp1s0f0np0": "Down", "enp1s0f1np1": "Up", "enP2p1s0f0np0": "Down",
                               "enP2p1s0f1np1": "Up"}, node
    assert ibdev("single1-a") == {p: "Down" for p in ALL_PORTS}
    for node in RING:
        assert ibdev(node) == {p: "Up" for p in ALL_PORTS}, node
    # An uncabled port of a switch node stays without carrier even set up.
    dexec(PREFIX + "switch1-a", "ip", "link", "set", "dev", "enp1s0f0np0", "up")
    assert "NO-CARRIER" in dexec(PREFIX + "switch1-a", "ip", "link", "show", "dev", "enp1s0f0np0").stdout
    dexec(PREFIX + "switch1-a", "ip", "link", "set", "dev", "enp1s0f0np0", "down")


@pytest.mark.docker
def test_switch_is_a_bridge_in_its_own_namespace(shapes_lab):
    assert NETNS in netns_list()
    bridge = sh(["ip", "-n", NETNS, "-d", "-j", "link", "show", "dev", "br0"]).stdout
    bridge = json.loads(bridge)[0]
    assert bridge["mtu"] == 9216 and bridge["operstate"] == "UP"
    assert bridge["linkinfo"]["info_data"]["stp_state"] == 0
    listed = sh(["ip", "-n", NETNS, "-j", "link", "show", "master", "br0"]).stdout
    ports = {link["ifname"]: link for link in json.loads(listed)}
    assert sorted(ports) == sorted("%s-%s" % (n[-1], p) for n in SWITCH for p in UP_PORTS)
    for node in SWITCH:
        rank = NODES.index(node)
        for number, port in ((1, "enp1s0f1np1"), (3, "enP2p1s0f1np1")):
            bport = ports["%s-%s" % (node[-1], port)]
            assert bport["mtu"] == 9216 and bport["operstate"] == "UP"
            # The node's netdev and the bridge port are the two ends of one veth, with fixed MAC addresses.
            assert str(bport["ifindex"]) == peer_ifindex(node, port)
            assert mac(node, port) == "02:5a:%02x:%02x:00:01" % (10 + rank, number)
            assert bport["address"] == "02:5a:%02x:%02x:00:01" % (10 + rank, 0x80 + number)
    # The host never sees the fabric.
    host_links = sh(["ip", "-o", "link", "show"]).stdout
    assert "a-enp1s0f1np1" not in host_links and "br0" not in host_links


@pytest.mark.docker
def test_every_switch_node_reaches_every_other_on_both_twins_with_jumbo_frames(shapes_lab):
    # One subnet per twin. Both twins share the switch's L2 domain, so each node answers ARP on the twin that holds
    # the address only (arp_ignore=1, arp_announce=2), as a multi-homed host must (otherwise ARP flux: replies from
    # the other twin's MAC address, which a ping bound to a port never sees).
    plan = {node: {"enp1s0f1np1": "192.168.100.%d" % (11 + i), "enP2p1s0f1np1": "192.168.101.%d" % (11 + i)}
            for i, node in enumerate(SWITCH)}
    for node in SWITCH:
        in_netns(node, "echo 1 >/proc/sys/net/ipv4/conf/all/arp_ignore; echo 2 >/proc/sys/net/ipv4/conf/all/arp_announce")
        for port, addr in plan[node].items():
            dexec(PREFIX + node, "ip", "link", "set", "dev", port, "mtu", "9000")
            dexec(PREFIX + node, "ip", "addr", "add", addr + "/24", "dev", port)
    try:
        for node in SWITCH:
            for other in SWITCH:
                if other == node:
                    continue
                for port in UP_PORTS:
                    dexec(PREFIX + node, "ping", "-c1", "-W2", "-M", "do", "-s", "8972", "-I", port, plan[other][port])
        too_big = dexec(PREFIX + "switch1-a", "ping", "-c1", "-W2", "-M", "do", "-s", "8973", "-I", "enp1s0f1np1",
                        plan["switch1-b"]["enp1s0f1np1"], check=False)
        assert too_big.returncode != 0 and "mtu=9000" in too_big.stdout + too_big.stderr
    finally:
        for node in SWITCH:
            for port, addr in plan[node].items():
                dexec(PREFIX + node, "ip", "addr", "del", addr + "/24", "dev", port, check=False)
                dexec(PREFIX + node, "ip", "link", "set", "dev", port, "mtu", "1500", check=False)
            in_netns(node, "echo 0 >/proc/sys/net/ipv4/conf/all/arp_ignore; "
                           "echo 0 >/proc/sys/net/ipv4/conf/all/arp_announce; ip neigh flush all")


@pytest.mark.docker
def test_ring_cables_and_neighbours_reach_each_other(shapes_lab):
    """NVIDIA's Connect three Sparks playbook: node i's port 0 to node i+1's port 1, both twins."""
    added = []
    try:
        for i, node in enumerate(RING):
            nxt = RING[(i + 1) % len(RING)]
            for k, (port0, port1) in enumerate(zip(DOWN_PORTS, UP_PORTS)):
                assert peer_ifindex(node, port0) == ifindex(nxt, port1)
                assert peer_ifindex(nxt, port1) == ifindex(node, port0)
                here, there = "192.168.%d.1" % (110 + 2 * i + k), "192.168.%d.2" % (110 + 2 * i + k)
                for name, port, local, remote in ((node, port0, here, there), (nxt, port1, there, here)):
                    dexec(PREFIX + name, "ip", "link", "set", "dev", port, "mtu", "9000")
                    dexec(PREFIX + name, "ip", "addr", "add", local, "peer", remote, "dev", port)
                    added.append((name, port, local, remote))
        for name, port, _local, remote in added:
            dexec(PREFIX + name, "ping", "-c1", "-W2", "-M", "do", "-s", "8972", "-I", port, remote)
    finally:
        for name, port, local, remote in added:
            dexec(PREFIX + name, "ip", "addr", "del", local, "peer", remote, "dev", port, check=False)
            dexec(PREFIX + name, "ip", "link", "set", "dev", port, "mtu", "1500", check=False)


@pytest.mark.docker
def test_inventory_groups_of_each_cluster(shapes_lab):
    inv_dir = lab(shapes_lab["env"], "inventory").stdout.strip()
    with open(os.path.join(inv_dir, "hosts.yml"), encoding="utf-8") as handle:
        clusters = yaml.safe_load(handle)["all"]["children"]["sparks"]["children"]
    assert list(clusters) == ["pair1", "single1", "switch1", "ring1"]
    assert clusters["switch1"]["vars"] == {
        "specdec_cluster": "switch1", "specdec_cluster_head": "switch1-a", "specdec_topology": "switch",
        "specdec_profile_name": "four_spark_mtp", "trtllm_container_image_tag": "1.2.0rc6-ompi5"}
    assert clusters["ring1"]["vars"] == {
        "specdec_cluster": "ring1", "specdec_cluster_head": "ring1-a", "specdec_topology": "ring",
        "specdec_profile_name": "four_spark_mtp"}
    assert clusters["pair1"]["vars"]["specdec_profile_name"] == "two_spark_eagle3"
    assert clusters["single1"]["vars"]["specdec_profile_name"] == "single_spark_eagle3"
    assert "specdec_topology" not in clusters["pair1"]["vars"]
    assert list(clusters["switch1"]["hosts"]) == SWITCH and list(clusters["ring1"]["hosts"]) == RING
    assert clusters["ring1"]["hosts"]["ring1-c"]["trtllm_container_network_mode"] == "container:%sring1-c" % PREFIX
    ansible = os.path.join(os.path.dirname(sys.executable), "ansible")
    env = dict(shapes_lab["env"], ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"))
    proc = sh([ansible, "-i", inv_dir, "switch1:ring1", "-m", "ansible.builtin.command", "-a", "id -un"],
              check=False, env=env, cwd=REPO, timeout=180)
    assert proc.returncode == 0 and proc.stdout.count("\nspark") == 7, proc.stdout + proc.stderr


@pytest.mark.docker
def test_ompi5_standin_image(shapes_lab):
    labels = json.loads(sh(["docker", "image", "inspect", "-f", "{{json .Config.Labels}}", OMPI5_IMAGE]).stdout)
    assert labels["org.open-mpi.version"] == "5.0.11"
    assert labels["com.nvidia.tensorrt-llm.version"] == "1.2.0rc6"
    image_env = json.loads(sh(["docker", "image", "inspect", "-f", "{{json .Config.Env}}", OMPI5_IMAGE]).stdout)
    assert "PRTE_PREFIX=/opt/hpcx/ompi5" in image_env and "TRTLLM_VERSION=1.2.0rc6" in image_env
    script = ("set -e; mpirun --version | head -n1; command -v mpirun prted; ls /opt/hpcx/ompi5/lib/libmpi.so.40; "
              "test ! -e /usr/bin/orted && test ! -e /usr/bin/mpirun.openmpi && echo no-ompi4; cd /tmp; "
              "mpirun -np 2 --host 127.0.0.1:2 --allow-run-as-root env | grep '^OMPI_COMM_WORLD_RANK=' | sort; "
              # The worker rank waits for the leader until it is stopped (as under Open MPI 4): cut it short.
              "timeout 5 mpirun -np 2 --host 127.0.0.1:2 --allow-run-as-root trtllm-llmapi-launch "
              "sh -c 'echo world=$TRTLLM_STANDIN_WORLD_SIZE' 2>&1 | grep -E '^world=|rank 1/2' || true")
    proc = sh(["docker", "run", "--rm", "--label", "spark-lab.instance=" + PREFIX, "-e", "STANDIN_QUIET_BANNER=1",
               OMPI5_IMAGE, "bash", "-c", script], check=False, timeout=120)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "mpirun (Open MPI) 5.0.11" in out
    assert "/opt/hpcx/ompi5/bin/mpirun\n/opt/hpcx/ompi5/bin/prted" in out and "no-ompi4" in out
    assert "OMPI_COMM_WORLD_RANK=0\nOMPI_COMM_WORLD_RANK=1" in out
    assert "world=2" in out and "rank 1/2" in out


@pytest.mark.docker
def test_mpirun_over_the_switch_with_open_mpi_5(shapes_lab):
    """Sibling ompi5 stand-ins in the switch nodes' namespaces: mpirun from the head starts prted on every node over
    ssh on the fabric (sshd as the collection runs it: UsePAM no, on the QSFP address, port 2233)."""
    addrs = {node: "192.168.100.%d" % (11 + i) for i, node in enumerate(SWITCH)}
    keydir = os.path.join(shapes_lab["root"], "mpi-ssh")
    os.makedirs(keydir, exist_ok=True)
    sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(keydir, "id_ed25519")])
    with open(os.path.join(keydir, "id_ed25519.pub"), encoding="utf-8") as handle:
        pub = handle.read()
    with open(os.path.join(keydir, "id_ed25519"), encoding="utf-8") as handle:
        key = handle.read()
    containers = []
    try:
        for node in SWITCH:
            in_netns(node, "echo 1 >/proc/sys/net/ipv4/conf/all/arp_ignore; "
                           "echo 2 >/proc/sys/net/ipv4/conf/all/arp_announce; "
                           "ip link set dev enp1s0f1np1 mtu 9000; ip addr add %s/24 dev enp1s0f1np1" % addrs[node])
            name = "%smpi-%s" % (PREFIX, node)
            sh(["docker", "run", "-d", "--name", name, "--network", "container:" + PREFIX + node,
                "--label", "spark-lab.instance=" + PREFIX, OMPI5_IMAGE, "sleep", "infinity"])
            containers.append(name)
            sshd = ("ListenAddress %s:2233\nHostKey /etc/ssh/ssh_host_ed25519_key\nAuthorizedKeysFile /root/mpi/keys\n"
                    "PermitRootLogin prohibit-password\nPasswordAuthentication no\nUsePAM no\nPidFile /run/mpi.pid\n"
                    % addrs[node])
            ssh = ("Host 192.168.100.*\n Port 2233\n User root\n IdentityFile /root/mpi/id\n StrictHostKeyChecking no\n"
                   " UserKnownHostsFile /dev/null\n BatchMode yes\n LogLevel ERROR\n")
            setup = ("set -e; mkdir -p /root/mpi /root/.ssh /run/sshd; cat >/root/mpi/all; "
                     "python3 -c 'import json; d = json.load(open(\"/root/mpi/all\")); "
                     "[open(\"/root/mpi/\" + k, \"w\").write(v) for k, v in d.items()]'; "
                     "mv /root/mpi/ssh /root/.ssh/config; chmod 600 /root/mpi/id; /usr/sbin/sshd -f /root/mpi/sshd")
            dexec(name, "sh", "-c", setup, stdin=json.dumps({"keys": pub, "id": key, "sshd": sshd, "ssh": ssh}))
        hosts = ",".join("%s:1" % addrs[n] for n in SWITCH)
        proc = dexec(containers[0], "sh", "-c", "cd /tmp && timeout 60 mpirun --allow-run-as-root -np 4 --host %s "
                     "sh -c 'echo $(hostname) $OMPI_COMM_WORLD_RANK/$OMPI_COMM_WORLD_SIZE'" % hosts, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        ranks = sorted(line for line in proc.stdout.splitlines() if line.startswith("switch1-"))
        assert ranks == ["%s %d/4" % (n, i) for i, n in enumerate(SWITCH)], proc.stdout + proc.stderr
    finally:
        if containers:
            sh(["docker", "rm", "-f"] + containers, check=False)
        for node in SWITCH:
            in_netns(node, "echo 0 >/proc/sys/net/ipv4/conf/all/arp_ignore; "
                           "echo 0 >/proc/sys/net/ipv4/conf/all/arp_announce; "
                           "ip addr flush dev enp1s0f1np1; ip link set dev enp1s0f1np1 mtu 1500; ip neigh flush all")


@pytest.mark.docker
def test_up_repairs_only_what_is_broken(shapes_lab):
    env = shapes_lab["env"]
    ids = node_ids()
    # A switch node gone: only it is created and cabled again.
    sh(["docker", "rm", "-f", PREFIX + "switch1-c"])
    assert lab(env, "status", check=False).returncode == 1
    again = lab(env, "up")
    assert re.findall(r"wired (\S+)", again.stderr) == ["switch1-c"], again.stderr
    new_ids = node_ids()
    assert {n for n in NODES if new_ids[n] != ids[n]} == {"switch1-c"}
    assert ibdev("switch1-c")["enP2p1s0f1np1"] == "Up"
    # A ring node gone: the ring is cabled again as a whole (its neighbours lost their ends of its cables).
    sh(["docker", "rm", "-f", PREFIX + "ring1-b"])
    again = lab(env, "up")
    assert "wired ring1-a enp1s0f0np0 enP2p1s0f0np0 <-> ring1-b" in again.stderr
    assert all(ibdev(n) == {p: "Up" for p in ALL_PORTS} for n in RING)
    # The switch gone (its namespace deleted): created again, every switch node cabled again.
    sh(["ip", "netns", "del", NETNS])
    assert lab(env, "status", check=False).returncode == 1
    again = lab(env, "up")
    assert "created switch %s" % NETNS in again.stderr
    assert sorted(re.findall(r"wired (\S+)", again.stderr)) == SWITCH
    assert lab(env, "status", check=False).returncode == 0


@pytest.mark.docker
def test_a_shape_without_switch_removes_it_and_down_restores_host(shapes_lab):
    env = shapes_lab["env"]
    smaller = lab(env, "up", "--pairs", "1", "--ring", "3")
    assert "removed switch %s" % NETNS in smaller.stderr
    assert NETNS not in netns_list()
    # Back to the switch: the Open MPI 5 image is current, the switch comes back.
    again = lab(env, "up", "--switch", "2")
    assert "created switch %s" % NETNS in again.stderr and "removed node %sring1-a" % PREFIX in again.stderr
    assert ibdev("switch1-b")["enp1s0f1np1"] == "Up"
    lab(env, "down")
    assert dict(host_snapshot(), netns=netns_list()) == shapes_lab["before"]
    assert not os.path.exists(os.path.join(shapes_lab["root"], "lab-" + PREFIX))
