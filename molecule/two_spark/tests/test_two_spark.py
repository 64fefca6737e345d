"""Verify the two-Spark EAGLE-3 converge in the lab (testinfra, nodes spark-a and spark-b)."""

import json
import os
import subprocess
import sys

import pytest
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "resources"))
import verify_helpers as vh  # noqa: E402  pylint: disable=wrong-import-position

testinfra_hosts = vh.testinfra_hosts("spark-a", "spark-b")
PLAN = {"spark-a": ("192.168.200.12", "192.168.200.14"), "spark-b": ("192.168.200.13", "192.168.200.15")}
PEER = {"spark-a": "spark-b", "spark-b": "spark-a"}
QSFP = ("enp1s0f1np1", "enP2p1s0f1np1")


@pytest.fixture(scope="module")
def node(host):
    return vh.node_of(host)


def test_netplan_file_and_generated_output(host, node):
    with host.sudo():
        f = host.file("/etc/netplan/40-cx7.yaml")
        assert f.mode == 0o600 and f.user == "root"
        plan = yaml.safe_load(f.content_string)
        for iface, address in zip(QSFP, PLAN[node]):
            assert plan["network"]["ethernets"][iface]["addresses"] == [address + "/24"]
            assert host.file("/run/systemd/network/10-netplan-%s.network" % iface).contains("Address=%s/24" % address)
        assert "eth0" not in plan["network"]["ethernets"]


def test_addresses_on_the_up_ports_and_both_links_ping(host, node):
    for iface, address, peer in zip(QSFP, PLAN[node], PLAN[PEER[node]]):
        assert address in host.check_output("ip -o -4 addr show dev %s", iface)
        assert host.run("ping -c1 -W2 -I %s %s", iface, peer).rc == 0


def test_mtu_9000_on_both_ends_and_a_full_size_packet_crosses(host, node):
    for iface, peer in zip(QSFP, PLAN[PEER[node]]):
        assert " mtu 9000 " in host.check_output("ip -o link show dev %s", iface)
        assert host.run("ping -c1 -W2 -M do -s 8972 -I %s %s", iface, peer).rc == 0


def test_link_check_from_both_ends_reports_each_link(host, node):
    if node != "spark-a":
        pytest.skip("one run checks both nodes")
    rc, output = vh.run_playbook("qsfp_link.yml")
    assert rc == 0 and vh.changed_total(output) == 0, output[-3000:]
    for me, peer in (("spark-a", "spark-b"), ("spark-b", "spark-a")):
        for iface, address in zip(QSFP, PLAN[peer]):
            assert "%s -> %s %s: MTU 9000" % (iface, peer, address) in output, output[-3000:]
    assert "DF ping 8972 bytes" in output


def test_sshd_listens_on_the_qsfp_addresses_only(host, node):
    listening = host.check_output("ss -Hltn 'sport = :2233'")
    bound = sorted(line.split()[3] for line in listening.splitlines())
    assert bound == sorted("%s:2233" % a for a in PLAN[node])


def test_peer_login_with_the_cluster_key_only(host, node):
    peer_address = PLAN[PEER[node]][0]
    login = vh.in_container(host, node, "ssh -F /etc/dgx-spark/ssh/config %s hostname" % peer_address)
    assert login.rc == 0 and login.stdout.strip() == PEER[node]
    # Without the cluster key (and with host key pinning) the peer refuses.
    denied = vh.in_container(host, node, "ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no "
                             "-o UserKnownHostsFile=/dev/null -p 2233 root@%s true" % peer_address)
    assert denied.rc != 0 and "Permission denied" in denied.stderr + denied.stdout


def test_known_hosts_pins_each_container_host_key(host, node):
    with host.sudo():
        known = host.file(vh.home(node) + "/.dgx-spark/ssh/known_hosts").content_string
    for n in PLAN:
        assert "[%s]:2233" % PLAN[n][0] in known
    assert "StrictHostKeyChecking yes" in vh.in_container(host, node, "cat /etc/dgx-spark/ssh/config").stdout


def test_mpirun_reaches_both_nodes(host, node):
    if node != "spark-a":
        pytest.skip("mpirun is started from the head")
    out = vh.in_container(host, node, "timeout 60 mpirun -np 2 hostname")
    assert out.rc == 0, out.stderr
    assert sorted(out.stdout.split()) == ["spark-a", "spark-b"]


def test_container_environment_and_mounts(host, node):
    c = vh.inspect(host, node)
    env = dict(e.split("=", 1) for e in c["Config"]["Env"])
    for key in ("UCX_NET_DEVICES", "NCCL_SOCKET_IFNAME", "OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_oob_tcp_if_include"):
        assert env[key] == "enp1s0f1np1,enP2p1s0f1np1"
    assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/openmpi-hostfile"
    assert env["OMPI_MCA_rmaps_ppr_n_pernode"] == "1"
    assert env["OMPI_ALLOW_RUN_AS_ROOT"] == env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"
    # Both halves of the cabled port, from ibdev2netdev: NCCL's full bandwidth over one QSFP cable.
    assert env["NCCL_IB_HCA"] == "rocep1s0f1,roceP2p1s0f1"
    assert env["CPATH"] == "/usr/local/cuda/include"
    assert env["TRITON_PTXAS_PATH"] == "/usr/local/cuda/bin/ptxas"
    # The server (head) or sshd (worker) is the container's own process, supervised by Docker.
    cmd = c["Config"]["Cmd"]
    assert cmd[:2] == ["/bin/bash", "/etc/dgx-spark/entrypoint.sh"]
    if node == "spark-a":
        assert cmd[cmd.index("--") + 1] == "mpirun"
    else:
        assert cmd[cmd.index("--sshd") + 1] == "/etc/dgx-spark/ssh/sshd_config" and "--" not in cmd
    # Open MPI's pinned ports: the entrypoint applies the spec (only lo and the QSFP netdevs) before sshd starts.
    assert cmd[cmd.index("--firewall") + 1] == "/etc/dgx-spark/firewall.json"
    spec = json.loads(vh.in_container(host, node, "cat /etc/dgx-spark/firewall.json").stdout)
    assert spec["mpi"] == {"ports": "50100:50132", "interfaces": ["enp1s0f1np1", "enP2p1s0f1np1"]}
    assert c["HostConfig"]["CapAdd"] == ["NET_ADMIN"]
    assert c["HostConfig"]["RestartPolicy"]["Name"] == "unless-stopped"
    assert c["State"]["Running"]
    # Only the configuration directory (keys, ssh config) is mounted, never ~/.ssh.
    assert sorted(m["Destination"] for m in c["Mounts"]) == ["/etc/dgx-spark", "/models", "/root/.cache/huggingface"]
    hostfile = vh.in_container(host, node, "cat /etc/openmpi-hostfile").stdout
    assert [line.split()[0] for line in hostfile.splitlines() if not line.startswith("#")] == \
        ["192.168.200.12", "192.168.200.13"]


def test_each_node_generated_its_own_keys(host, node):
    with host.sudo():
        for name in ("id_ed25519", "ssh_host_ed25519_key"):
            key = host.file(vh.home(node) + "/.dgx-spark/ssh/" + name)
            assert key.mode == 0o600 and key.user == "root"
            assert "PRIVATE KEY" in key.content_string
    # Each node's home is a directory on the lab's host, where this test runs.
    mine = _read(node, "id_ed25519.pub").split()[1]
    theirs = _read(PEER[node], "id_ed25519.pub").split()[1]
    assert mine != theirs
    authorized = _read(node, "authorized_keys")
    assert mine in authorized and theirs in authorized and authorized.count('from="') == 2


def test_options_file_on_both_nodes(host, node):
    options = yaml.safe_load(host.file(vh.home(node) + "/.dgx-spark/extra-llm-api-config.yml").content_string)
    assert options["speculative_config"] == {"decoding_type": "Eagle", "max_draft_len": 3,
                                             "speculative_model_dir": "/models/Qwen3-235B-A22B-Eagle3/"}
    assert options["enable_chunked_prefill"] is False


def test_the_head_serves_the_speculative_decoding_metrics_through_the_exporter(host, node):
    """1.2.0rc6 has no speculative-decoding metrics: the exporter next to the server folds its iteration stats into
    TensorRT-LLM's names; supervised like the server, on the head only."""
    exporter = vh.serving_container(node) + "-metrics"
    if node != "spark-a":
        assert vh.docker("inspect", exporter, check=False).returncode != 0
        return
    assert vh.docker("inspect", "-f", "{{.HostConfig.RestartPolicy.Name}}", exporter).stdout.strip() == "unless-stopped"
    status, body = vh.http_get(host, "http://127.0.0.1:9464/metrics")
    samples = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name = line.split("{", 1)[0].split(" ", 1)[0]
            samples[name] = samples.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    # The endpoint validation drafted through the server; the release's own histograms come under trtllm_ names.
    assert status == 200 and samples["trtllm_spec_decode_num_draft_tokens_total"] > 0
    assert samples["trtllm_exporter_upstream_up"] == 1
    assert "trtllm_time_to_first_token_seconds_count" in samples and "time_to_first_token_seconds_count" not in samples


def test_draft_downloaded_on_both_nodes(host, node):
    assert host.file(vh.home(node) + "/models/Qwen3-235B-A22B-Eagle3/.dgx-spark-complete").exists


def test_endpoint_on_8355_with_tp2_and_world_size_2(host, node):
    if node != "spark-a":
        assert host.run("ss -Hltn 'sport = :8355'").stdout.strip() == ""
        return
    status, body = vh.http_get(host, "http://127.0.0.1:8355/v1/models")
    assert status == 200 and yaml.safe_load(body)["data"][0]["id"] == "nvidia/Qwen3-235B-A22B-FP4"
    cmd = vh.inspect(host, node)["Config"]["Cmd"]
    args = " ".join(cmd[cmd.index("--") + 1:])
    assert args.startswith("mpirun ") and "trtllm-llmapi-launch trtllm-serve" in args and "--tp_size 2" in args
    log = vh.logs(node)
    assert "world size 2" in log.lower() or "world_size=2" in log.lower(), log[-2000:]


def test_token_never_exposed(host, node):
    c = vh.inspect(host, node)
    assert vh.TOKEN and vh.TOKEN not in str(c)
    assert vh.TOKEN not in vh.logs(node)
    assert vh.TOKEN not in vh.in_container(host, node, "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '").stdout


def test_nothing_but_the_endpoint_listens_on_the_management_interface(host, node):
    """From the peer, over the management network, only the head's OpenAI endpoint and its metrics exporter (and the
    Spark's own sshd) answer.

    sshd listens on the QSFP addresses only. Open MPI 4.1 binds its listeners to every interface whatever
    *_if_include says, so the plan pins them to ports 50100-50132 and the entrypoint closes those to every
    interface but loopback and the QSFP ones; over the QSFP link they stay reachable.
    """
    management = host.check_output("ip -o -4 addr show dev eth0").split()[3].split("/")[0]
    ports = set()
    for line in vh.in_container(host, node, "ss -Hltn").stdout.splitlines():
        address, port = line.split()[3].rsplit(":", 1)
        if address in ("0.0.0.0", "*", "[::]", management) and int(port) != vh.MANAGEMENT_SSH_PORT:
            ports.add(int(port))
    assert 50100 in ports  # mpirun (head) or orted (worker): the reason for the firewall
    peer = vh.node_name(PEER[node])
    probe = "timeout 3 bash -c '</dev/tcp/%s/%d' 2>/dev/null && echo open || echo closed"
    reachable = sorted(p for p in ports
                       if vh.docker("exec", peer, "sh", "-c", probe % (management, p)).stdout.strip() == "open")
    assert reachable == ([8355, 9464] if node == "spark-a" else []), reachable
    # The MPI port stays reachable over the QSFP link (what mpirun needs).
    assert vh.docker("exec", peer, "sh", "-c", probe % (PLAN[node][0], 50100)).stdout.strip() == "open"


def test_a_restart_of_the_containers_brings_the_endpoint_back_then_a_run_changes_nothing(host, node):
    if node != "spark-a":
        pytest.skip("restarted from the head's test")
    vh.docker("restart", vh.serving_container("spark-b"), vh.serving_container("spark-a"))
    vh.wait_for_endpoint(host, "http://127.0.0.1:8355/health")
    rc, output = vh.run_playbook("two_spark_eagle3.yml", "--diff")
    assert rc == 0, output[-3000:]
    assert vh.changed_total(output) == 0, output[-3000:]
    # Nothing secret in the run's output: no private key, no token.
    assert "PRIVATE KEY" not in output and vh.TOKEN not in output


def test_kill_9_of_the_server_brings_it_back(host, node):
    if node != "spark-a":
        pytest.skip("the server runs on the head")
    name = vh.serving_container("spark-a")
    before = vh.docker("inspect", "--format", "{{.RestartCount}}", name).stdout.strip()
    top = vh.docker("top", name, "-eo", "pid,args").stdout.splitlines()[1:]
    server = [line.split()[0] for line in top if "trtllm-serve" in line and "mpirun" not in line]
    assert server, top
    subprocess.run(["kill", "-9", server[0]], check=True)
    vh.wait_for_endpoint(host, "http://127.0.0.1:8355/health")
    after = vh.docker("inspect", "--format", "{{.RestartCount}}", name).stdout.strip()
    assert int(after) > int(before)


def test_no_private_key_on_the_controller(host, node):
    """Each node's private keys stay on it: none is in the controller's files (nor in the run's output, see above)."""
    if node != "spark-a":
        pytest.skip("checked once for both nodes")
    needles = []
    for n in PLAN:
        for name in ("id_ed25519", "ssh_host_ed25519_key"):
            key = _read(n, name)
            body = [line for line in key.splitlines() if "PRIVATE KEY" not in line]
            needles.append(body[1] if len(body) > 1 else body[0])
    assert vh.controller_files_containing(needles) == []


def test_unplugged_cable_fails_early_and_changes_nothing(host, node):
    """Last: take spark-b's Up links down, run the playbook, and expect a failure before any change."""
    if node != "spark-b":
        pytest.skip("the cable is pulled on the worker")
    before = _fingerprint(host)
    for iface in QSFP:
        host.run("sudo ip link set %s down", iface)
    try:
        rc, output = vh.run_playbook("two_spark_eagle3.yml")
        assert rc != 0
        assert vh.failed_in_preflight(output), output[-3000:]
        assert "unplugged" in output.lower() or "no up qsfp" in output.lower(), output[-3000:]
        assert "changed=0" in output and "changed=1" not in output
        assert _fingerprint(host) == before
    finally:
        for iface in QSFP:
            host.run("sudo ip link set %s up", iface)


def test_mtu_differing_between_the_ends_fails_early_and_changes_nothing(host, node):
    """Held-out: one end of a link set back to MTU 1500; netplan's file is current, so the run must stop first."""
    if node != "spark-b":
        pytest.skip("the MTU is changed on the worker")
    before = _fingerprint(host)
    host.run("sudo ip link set dev %s mtu 1500", QSFP[0])
    try:
        rc, output = vh.run_playbook("two_spark_eagle3.yml")
        assert rc != 0
        assert vh.failed_in_preflight(output), output[-3000:]
        assert ("QSFP link enp1s0f1np1 of spark-a (192.168.200.12) to spark-b (192.168.200.13): the MTU would be 9000 "
                "on spark-a and 1500 on spark-b after this run") in output, output[-3000:]
        assert "changed=0" in output and "changed=1" not in output
        assert _fingerprint(host) == before
    finally:
        host.run("sudo ip link set dev %s mtu 9000", QSFP[0])


def _read(node, name):
    with open(vh.home(node) + "/.dgx-spark/ssh/" + name, encoding="utf-8") as handle:
        return handle.read()


def _fingerprint(host):
    with host.sudo():
        netplan = host.file("/etc/netplan/40-cx7.yaml").md5sum
    container = vh.inspect(host, "spark-b")
    return netplan, container["Id"], container["State"]["StartedAt"]
