# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run the spark_facts module's main() against a fake node (commands, users, /sys and /dev)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import types

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgx_spark.specdec.plugins.modules import spark_facts

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
from fake_host import FakeHost  # noqa: E402  pylint: disable=wrong-import-position

IBDEV2NETDEV = (
    "roceP2p1s0f1 port 1 ==> enP2p1s0f1np1 (Up)\n"
    "rocep1s0f0 port 1 ==> enp1s0f0np0 (Down)\n"
    "rocep1s0f1 port 1 ==> enp1s0f1np1 (Up)\n"
    "roceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Down)\n"
    "mlx5_9 port 1 ==> ib0 (Up)\n"
)

IP_ADDR = [
    {"ifindex": 1, "ifname": "lo", "flags": ["LOOPBACK", "UP"], "mtu": 65536, "operstate": "UNKNOWN",
     "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8, "scope": "host"},
                   {"family": "inet6", "local": "::1", "prefixlen": 128}]},
    {"ifindex": 2, "ifname": "eth0", "mtu": 1500, "operstate": "UP",
     "addr_info": [{"family": "inet", "local": "172.18.0.2", "prefixlen": 16},
                   {"family": "inet", "local": "172.18.0.9", "prefixlen": 16, "secondary": True},
                   {"family": "inet6", "local": "fe80::1", "prefixlen": 64}]},
    {"ifindex": 3, "ifname": "enp1s0f1np1", "mtu": 9000, "operstate": "UP",
     "addr_info": [{"family": "inet", "local": "192.168.200.12", "prefixlen": 24},
                   {"family": "inet6", "local": "fe80::2", "prefixlen": 64}]},
    {"ifindex": 4, "ifname": "enp1s0f0np0", "mtu": 1500, "operstate": "DOWN", "addr_info": []},
    {"ifindex": 5, "ifname": "enP2p1s0f1np1", "mtu": 9000, "operstate": "UP",
     "addr_info": [{"family": "inet6", "local": "fe80::3", "prefixlen": 64}]},
]

ROUTES = [
    {"dst": "default", "gateway": "10.0.0.1", "dev": "wlan0", "protocol": "dhcp", "metric": 600},
    {"dst": "default", "gateway": "172.18.0.1", "dev": "eth0", "protocol": "dhcp", "metric": 100},
]

RUNTIMES = {"runc": {"path": "runc"}, "nvidia": {"path": "nvidia-container-runtime"},
            "io.containerd.runc.v2": {"path": "runc"}}

IMAGE_A = "local/tensorrt-llm-standin:1.2.0rc6"
IMAGE_B = "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc12"
MISSING = "nvcr.io/nvidia/tensorrt-llm/release:9.9.9"
INSPECT = {
    IMAGE_A: {"Id": "sha256:aaaa", "RepoTags": [IMAGE_A], "RepoDigests": [],
              "Config": {"Labels": None, "Env": ["PATH=/usr/bin:/bin", "TRTLLM_VERSION=1.2.0rc6", "OPTS=a=b", "EMPTY="]}},
    IMAGE_B: {"Id": "sha256:bbbb", "RepoTags": [IMAGE_B],
              "RepoDigests": ["nvcr.io/nvidia/tensorrt-llm/release@sha256:cccc"],
              "Config": {"Labels": {"com.nvidia.tensorrt-llm.version": "1.3.0rc12"}, "Env": None}},
}

USERS = {
    "spark": (1000, 1000, "/home/spark"),
    "admin": (1001, 1001, "/home/admin"),
    "doas": (1002, 100, "/var/doas"),
    "root": (0, 0, "/root"),
}


class FakeNode(FakeHost):
    """Answers run_command and get_bin_path like a DGX Spark would; records every command."""

    def __init__(self):
        self.bins = {"ip": "/usr/sbin/ip", "ibdev2netdev": "/usr/bin/ibdev2netdev", "docker": "/usr/bin/docker"}
        self.ibdev2netdev = (0, IBDEV2NETDEV, "")
        self.ip_addr = (0, json.dumps(IP_ADDR), "")
        self.routes = (0, json.dumps(ROUTES), "")
        self.docker_info = (0, json.dumps(RUNTIMES) + "\n", "")
        self.images = dict(INSPECT)
        self.containers = []  # `docker container inspect` objects of the collection's containers
        self.calls = []

    # spark_facts passes neither check_rc nor environ_update; its tests read the keyword arguments back.
    plain_env = True

    def record(self, args, kwargs):
        self.calls.append((list(args), kwargs))

    def answer(self, args):
        name = os.path.basename(args[0])
        if name == "ibdev2netdev":
            return self.ibdev2netdev
        if args[1:] == ["-j", "addr", "show"]:
            return self.ip_addr
        if args[1:] == ["-j", "-4", "route", "show", "default"]:
            return self.routes
        if args[1:] == ["info", "--format", "{{json .Runtimes}}"]:
            return self.docker_info
        if args[1:] == ["image", "ls", "--quiet", "--no-trunc"]:
            return 0, "".join(image["Id"] + "\n" for image in self.images.values()), ""
        if args[1:3] == ["image", "inspect"]:
            refs = args[3:]
            by_id = {image["Id"]: image for image in self.images.values()}
            found = [self.images.get(ref) or by_id[ref] for ref in refs if ref in self.images or ref in by_id]
            missing = [ref for ref in refs if ref not in self.images and ref not in by_id]
            err = "".join("Error: No such image: %s\n" % ref for ref in missing)
            return (1 if missing else 0), json.dumps(found, indent=4) + "\n", err
        if args[1:] == ["ps", "-a", "--quiet", "--no-trunc", "--filter", "label=dgx-spark.specdec/role",
                        "--filter", "label=dgx-spark.specdec/node=spark-1"]:
            return 0, "".join(c["Id"] + "\n" for c in self.containers), ""
        if args[1:] == ["-w", "-S"]:
            return 0, ("-P INPUT ACCEPT\n-N DGX-SPECDEC\n-N DGX_SPARK_MPI\n-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT\n"
                       '-A INPUT -p tcp -m multiport --dports 8000 -m comment --comment "dgx-spark.specdec" -j DGX-SPECDEC\n'), ""
        if args[1:3] == ["container", "inspect"]:
            return 0, json.dumps([c for c in self.containers if c["Id"] in args[3:]]), ""
        raise AssertionError("unexpected command %r" % (args,))

    def commands(self):
        return [[os.path.basename(args[0])] + args[1:] for args, dummy in self.calls]


def _fake_pwd():
    def entry(name):
        uid, gid, home = USERS[name]
        return types.SimpleNamespace(pw_name=name, pw_uid=uid, pw_gid=gid, pw_dir=home)

    def getpwnam(name):
        if name not in USERS:
            raise KeyError("getpwnam(): name not found: %r" % name)
        return entry(name)

    def getpwuid(uid):
        if uid == os.geteuid():
            return entry("root")
        raise KeyError("getpwuid(): uid not found: %d" % uid)

    return types.SimpleNamespace(getpwnam=getpwnam, getpwuid=getpwuid)


@pytest.fixture
def node(monkeypatch, tmp_path):
    fake = FakeNode()

    fake.install(monkeypatch)
    monkeypatch.setattr(spark_facts, "pwd", _fake_pwd())
    monkeypatch.setattr(spark_facts, "socket", types.SimpleNamespace(gethostname=lambda: "spark-1"))
    sys_net = tmp_path / "sys" / "class" / "net"
    sys_net.mkdir(parents=True)
    monkeypatch.setattr(spark_facts, "SYS_CLASS_NET", str(sys_net))
    monkeypatch.setattr(spark_facts, "DEV_INFINIBAND", str(tmp_path / "dev" / "infiniband"))
    netplan = tmp_path / "etc" / "netplan"
    netplan.mkdir(parents=True)
    monkeypatch.setattr(spark_facts, "NETPLAN_DIR", str(netplan))
    groups = {1000: "spark", 27: "sudo", 998: "docker"}
    monkeypatch.setattr(spark_facts.os, "getgrouplist", lambda name, gid: [gid, 27, 998, 4242])

    def getgrgid(gid):
        if gid not in groups:
            raise KeyError("getgrgid(): gid not found: %d" % gid)
        return types.SimpleNamespace(gr_name=groups[gid])

    monkeypatch.setattr(spark_facts, "grp", types.SimpleNamespace(getgrgid=getgrgid))
    fake.netplan = netplan
    monkeypatch.delenv("SUDO_USER", raising=False)
    monkeypatch.delenv("DOAS_USER", raising=False)
    monkeypatch.setenv("SUDO_USER", "spark")
    fake.tmp = tmp_path
    fake.sys_net = sys_net
    return fake


def set_operstate(node, **states):
    for name, state in states.items():
        (node.sys_net / name).mkdir()
        (node.sys_net / name / "operstate").write_text(state + "\n")


def run_module(capsys, args=None):
    """Run main() like Ansible does; return (rc, parsed JSON result)."""
    with patch_module_args(args or {}):
        with pytest.raises(SystemExit) as info:
            spark_facts.main()
    out = capsys.readouterr().out
    return info.value.code, json.loads(out)


def gather(capsys, args=None, record=None):
    # Never the machine's own record.
    args = dict(args or {}, record=str(record) if record else "/nonexistent/created.json")
    rc, result = run_module(capsys, args)
    assert rc == 0, result
    assert result["changed"] is False and not result.get("failed")
    return result["ansible_facts"]["spark"]


# -- the whole fact ---------------------------------------------------------------------------------------------


def test_the_record_and_what_its_downloads_markers_say(capsys, node):
    draft = node.tmp / "models" / "draft"
    draft.mkdir(parents=True)
    (draft / ".dgx-spark-complete").write_text("org/draft\nrevision: v2\n")
    gone = node.tmp / "models" / "gone"
    record = node.tmp / "created.json"
    record.write_text(json.dumps({"version": 1, "paths": {str(draft): {"kind": "download", "repo": "org/draft"},
                                                          str(gone): {"kind": "download", "repo": "org/gone"},
                                                          "/x/hf_token": {"kind": "token"}}}))
    spark = gather(capsys, record=record)
    assert spark["record"][str(draft)] == {"kind": "download", "repo": "org/draft"}
    assert spark["downloads"] == {str(draft / ".dgx-spark-complete"): "org/draft\nrevision: v2\n"}
    record.write_text("not json")
    assert gather(capsys, record=record)["record"] == {}


def test_full_fact(capsys, node):
    (node.tmp / "dev" / "infiniband").mkdir(parents=True)
    present = node.tmp / "models"
    present.mkdir()
    spark = gather(capsys, {"images": [IMAGE_A], "paths": [str(present), str(node.tmp / "nope")]})
    assert spark == {
        "login_user": "spark",
        "home": "/home/spark",
        "uid": 1000,
        "gid": 1000,
        "hostname": "spark-1",
        "qsfp": {"up": ["enp1s0f1np1", "enP2p1s0f1np1"], "source": "ibdev2netdev",
                 "rdma": ["rocep1s0f1", "roceP2p1s0f1"], "ibdev2netdev": IBDEV2NETDEV},
        "ipv4": {"lo": ["127.0.0.1/8"], "eth0": ["172.18.0.2/16", "172.18.0.9/16"],
                 "enp1s0f1np1": ["192.168.200.12/24"], "enp1s0f0np0": [], "enP2p1s0f1np1": []},
        "mtu": {"lo": 65536, "eth0": 1500, "enp1s0f1np1": 9000, "enp1s0f0np0": 1500, "enP2p1s0f1np1": 9000},
        "default_ipv4": {"interface": "eth0", "address": "172.18.0.2", "gateway": "172.18.0.1"},
        "infiniband": True,
        "docker": {"ok": True, "error": "", "runtimes": ["io.containerd.runc.v2", "nvidia", "runc"]},
        "images": {IMAGE_A: {"present": True, "id": "sha256:aaaa", "repo_digests": [], "labels": {},
                             "env": {"PATH": "/usr/bin:/bin", "TRTLLM_VERSION": "1.2.0rc6", "OPTS": "a=b",
                                     "EMPTY": ""}}},
        "paths": {str(present): True, str(node.tmp / "nope"): False},
        "login_groups": ["spark", "sudo", "docker"],
        "netplan": {},
        "containers": {},
        "tools": {"iptables": False, "ip6tables": False},
        "firewall": [],
        "firewall6": [],
        "record": {},
        "downloads": {},
        "hf_login_token": False,
        "models": {},
        "sysctl": {"file": None, "values": {}},
    }


def test_containers_of_the_collection_and_tools(capsys, node):
    node.bins["iptables"] = "/usr/sbin/iptables"
    node.containers = [{"Id": "c1", "Name": "/trtllm-specdec", "Image": "sha256:aaaa",
                        "Config": {"Image": IMAGE_A, "Labels": {"dgx-spark.specdec/spec": "abc123"}},
                        "State": {"Running": True}},
                       {"Id": "c2", "Name": "/old", "Image": "sha256:bbbb", "Config": {"Image": IMAGE_B},
                        "State": {"Running": False}}]
    spark = gather(capsys)
    nothing = {"dirs": {}, "files": {}, "public_keys": {}, "token": {}, "markers": {}}
    assert spark["containers"] == {
        "trtllm-specdec": {"image_ref": IMAGE_A, "image_id": "sha256:aaaa", "running": True, "spec": "abc123",
                           "mounts": {}, "files": nothing, "role": ""},
        "old": {"image_ref": IMAGE_B, "image_id": "sha256:bbbb", "running": False, "spec": "", "mounts": {},
                "files": nothing, "role": ""},
    }
    assert spark["tools"] == {"iptables": True, "ip6tables": False}
    # Only the collection's lines of the filter table (its two chains and its marked rules).
    assert spark["firewall"] == ["-N DGX-SPECDEC", "-N DGX_SPARK_MPI", '-A INPUT -p tcp -m multiport --dports 8000 -m comment --comment '
                                 '"dgx-spark.specdec" -j DGX-SPECDEC']
    assert ["docker", "container", "inspect", "c1", "c2"] in node.commands()


def test_what_the_containers_mounts_hold_and_whether_the_token_is_there(capsys, node):
    """Digests of the configuration directory (private keys and the token: presence only), public keys, and the
    token compared on the node: the plan knows what a run would write without writing it."""
    config, cache = node.tmp / "home" / ".dgx-spark", node.tmp / "home" / ".cache" / "hf"
    (config / "ssh").mkdir(parents=True)
    cache.mkdir(parents=True)
    (config / "entrypoint.sh").write_text("#!/bin/bash\n")
    (config / "hf_token").write_text("hf_secret_token_1234")
    (config / "ssh" / "id_ed25519").write_text("PRIVATE")
    (config / "ssh" / "id_ed25519.pub").write_text("ssh-ed25519 AAAA comment\n")
    node.containers = [{"Id": "c1", "Name": "/trtllm-specdec", "Image": "sha256:aaaa", "Config": {"Image": IMAGE_A},
                        "State": {"Running": True},
                        "Mounts": [{"Type": "bind", "Source": str(config), "Destination": "/etc/dgx-spark"},
                                   {"Type": "bind", "Source": str(cache), "Destination": "/root/.cache/huggingface"},
                                   {"Type": "volume", "Source": "/var/lib/docker/x", "Destination": "/data"}]}]
    run_rc, result = run_module(capsys, {"hf_token": "hf_secret_token_1234"})
    assert run_rc == 0, result
    found = result["ansible_facts"]["spark"]["containers"]["trtllm-specdec"]
    assert found["mounts"] == {"/etc/dgx-spark": str(config), "/root/.cache/huggingface": str(cache)}
    files = found["files"]
    entry = files["files"][str(config / "entrypoint.sh")]
    assert entry["sha256"] == hashlib.sha256(b"#!/bin/bash\n").hexdigest() and entry["mode"] == "0644"
    assert files["files"][str(config / "hf_token")]["sha256"] is None
    assert files["files"][str(config / "ssh" / "id_ed25519")]["sha256"] is None
    assert files["public_keys"] == {str(config / "ssh" / "id_ed25519.pub"): "ssh-ed25519 AAAA comment"}
    assert set(files["dirs"]) == {str(config), str(config / "ssh"), str(cache)}
    assert files["token"] == {"given": True, "file": "same", "login": "absent"}
    assert "hf_secret_token_1234" not in json.dumps(result)
    found = gather(capsys, {"hf_token": "hf_other"})["containers"]["trtllm-specdec"]["files"]["token"]
    assert found == {"given": True, "file": "differs", "login": "absent"}
    found = gather(capsys, {"hf_token": ""})["containers"]["trtllm-specdec"]["files"]["token"]
    assert found == {"given": False, "file": "differs", "login": "absent"}  # no token: the file should go
    assert gather(capsys)["containers"]["trtllm-specdec"]["files"]["token"] == {}


def test_the_heads_of_the_checkpoints_in_the_containers_cache(capsys, node):
    """The plan checks the tensor-parallel split against the model's heads: config.json of each cached snapshot."""
    cache = node.tmp / "home" / ".cache" / "hf"
    snapshot = cache / "hub" / "models--nvidia--DeepSeek-R1-FP4" / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps({"num_attention_heads": 128, "num_key_value_heads": 128,
                                                      "model_type": "deepseek_v3", "hidden_size": 7168}))
    broken = cache / "hub" / "models--org--broken" / "snapshots" / "1"
    broken.mkdir(parents=True)
    (broken / "config.json").write_text("{not json")
    vlm = cache / "hub" / "models--org--vlm" / "snapshots" / "2"
    vlm.mkdir(parents=True)
    (vlm / "config.json").write_text(json.dumps({"model_type": "llava", "text_config": {"num_attention_heads": 32,
                                                                                        "num_key_value_heads": 8}}))
    node.containers = [{"Id": "c1", "Name": "/trtllm-multinode", "Image": "sha256:aaaa", "Config": {"Image": IMAGE_A},
                        "State": {"Running": True},
                        "Mounts": [{"Type": "bind", "Source": str(cache), "Destination": "/root/.cache/huggingface"}]}]
    models = gather(capsys)["models"]
    assert models == {"nvidia/DeepSeek-R1-FP4": {"num_attention_heads": 128, "num_key_value_heads": 128,
                                                 "model_type": "deepseek_v3"},
                      "org/vlm": {"num_attention_heads": 32, "num_key_value_heads": 8, "model_type": "llava"}}


def test_the_qsfp_arp_settings_and_their_file(capsys, node, monkeypatch):
    conf = node.tmp / "conf"
    (conf / "enp1s0f1np1").mkdir(parents=True)
    (conf / "enp1s0f1np1" / "arp_ignore").write_text("1\n")
    (conf / "enp1s0f1np1" / "arp_announce").write_text("2\n")
    sysctl_file = node.tmp / "60-dgx-spark-qsfp.conf"
    sysctl_file.write_text("net.ipv4.conf.enp1s0f1np1.arp_ignore=1\n")
    monkeypatch.setattr(spark_facts, "PROC_SYS_IPV4_CONF", str(conf))
    monkeypatch.setattr(spark_facts, "SYSCTL_FILE", str(sysctl_file))
    found = gather(capsys)["sysctl"]
    assert found == {"file": hashlib.sha256(b"net.ipv4.conf.enp1s0f1np1.arp_ignore=1\n").hexdigest(),
                     "values": {"net.ipv4.conf.enp1s0f1np1.arp_ignore": "1",
                                "net.ipv4.conf.enp1s0f1np1.arp_announce": "2"}}


def test_netplan_files_with_checksum_and_mode(capsys, node):
    cx7 = node.netplan / "40-cx7.yaml"
    cx7.write_text("network: {version: 2}\n")
    cx7.chmod(0o600)
    (node.netplan / "README").write_text("not netplan")
    files = gather(capsys)["netplan"]
    assert list(files) == [str(cx7)]
    assert files[str(cx7)]["sha256"] == hashlib.sha256(b"network: {version: 2}\n").hexdigest()
    assert files[str(cx7)]["mode"] == "0600"


def test_commands_are_argv_lists_and_read_only(capsys, node):
    gather(capsys, {"images": [IMAGE_A, IMAGE_B]})
    assert node.commands() == [
        ["ibdev2netdev"],
        ["ip", "-j", "addr", "show"],
        ["ip", "-j", "-4", "route", "show", "default"],
        ["docker", "info", "--format", "{{json .Runtimes}}"],
        ["docker", "image", "inspect", IMAGE_A, IMAGE_B],
        ["docker", "ps", "-a", "--quiet", "--no-trunc", "--filter", "label=dgx-spark.specdec/role",
         "--filter", "label=dgx-spark.specdec/node=spark-1"],
    ]
    assert all(kwargs.get("check_rc") is False for dummy, kwargs in node.calls)


def test_check_mode_returns_the_same(capsys, node):
    args = {"images": [IMAGE_A, MISSING], "paths": ["/"]}
    normal = gather(capsys, args)
    calls = node.commands()
    node.calls = []
    rc, result = run_module(capsys, dict(args, _ansible_check_mode=True))
    assert rc == 0 and result["changed"] is False
    assert result["ansible_facts"]["spark"] == normal
    assert node.commands() == calls


# -- QSFP --------------------------------------------------------------------------------------------------------


def test_ibdev2netdev_up_down_and_foreign_devices(capsys, node):
    qsfp = gather(capsys)["qsfp"]
    # canonical (option) order, not ibdev2netdev's order; ib0 (not a QSFP netdev) is ignored
    assert qsfp["up"] == ["enp1s0f1np1", "enP2p1s0f1np1"]
    assert qsfp["rdma"] == ["rocep1s0f1", "roceP2p1s0f1"]
    assert qsfp["source"] == "ibdev2netdev"
    assert qsfp["ibdev2netdev"] == IBDEV2NETDEV


def test_interfaces_option_sets_order_and_selection(capsys, node):
    qsfp = gather(capsys, {"interfaces": ["enP2p1s0f1np1", "ib0", "enp1s0f0np0"]})["qsfp"]
    assert qsfp["up"] == ["enP2p1s0f1np1", "ib0"]
    assert qsfp["rdma"] == ["roceP2p1s0f1", "mlx5_9"]


def test_all_down_from_ibdev2netdev(capsys, node):
    node.ibdev2netdev = (0, IBDEV2NETDEV.replace("(Up)", "(Down)"), "")
    set_operstate(node, enp1s0f1np1="up")  # ibdev2netdev is authoritative when it lists the netdevs
    qsfp = gather(capsys)["qsfp"]
    assert qsfp["up"] == [] and qsfp["rdma"] == [] and qsfp["source"] == "ibdev2netdev"


def test_sysfs_fallback_when_ibdev2netdev_missing(capsys, node):
    del node.bins["ibdev2netdev"]
    set_operstate(node, enp1s0f0np0="down", enp1s0f1np1="up", enP2p1s0f1np1="UP")
    qsfp = gather(capsys)["qsfp"]
    assert qsfp == {"up": ["enp1s0f1np1", "enP2p1s0f1np1"], "source": "/sys/class/net/*/operstate",
                    "rdma": [], "ibdev2netdev": ""}
    assert "ibdev2netdev" not in [c[0] for c in node.commands()]


def test_sysfs_fallback_when_ibdev2netdev_fails(capsys, node):
    node.ibdev2netdev = (1, "", "ibdev2netdev: no RDMA devices\n")
    set_operstate(node, enp1s0f1np1="up")
    qsfp = gather(capsys)["qsfp"]
    assert qsfp == {"up": ["enp1s0f1np1"], "source": "/sys/class/net/*/operstate", "rdma": [], "ibdev2netdev": ""}


def test_sysfs_fallback_when_ibdev2netdev_lists_no_qsfp_netdev(capsys, node):
    node.ibdev2netdev = (0, "mlx5_9 port 1 ==> ib0 (Up)\n", "")
    set_operstate(node, enP2p1s0f0np0="up", enp1s0f1np1="lowerlayerdown")
    qsfp = gather(capsys)["qsfp"]
    assert qsfp["up"] == ["enP2p1s0f0np0"] and qsfp["source"] == "/sys/class/net/*/operstate"
    assert qsfp["ibdev2netdev"] == "mlx5_9 port 1 ==> ib0 (Up)\n"


def test_sysfs_without_any_qsfp_netdev(capsys, node):
    del node.bins["ibdev2netdev"]
    assert gather(capsys)["qsfp"]["up"] == []


# -- addresses and routes -----------------------------------------------------------------------------------------


def test_ip_addresses_and_mtu(capsys, node):
    spark = gather(capsys)
    assert spark["ipv4"]["eth0"] == ["172.18.0.2/16", "172.18.0.9/16"]  # several, in order
    assert spark["ipv4"]["enp1s0f0np0"] == []  # no address at all
    assert spark["ipv4"]["enP2p1s0f1np1"] == []  # only IPv6
    assert spark["mtu"]["enp1s0f1np1"] == 9000 and spark["mtu"]["enp1s0f0np0"] == 1500


def test_default_route_lowest_metric(capsys, node):
    assert gather(capsys)["default_ipv4"] == {"interface": "eth0", "address": "172.18.0.2", "gateway": "172.18.0.1"}


def test_default_route_prefsrc_wins(capsys, node):
    node.routes = (0, json.dumps([{"dst": "default", "gateway": "172.18.0.1", "dev": "eth0",
                                   "prefsrc": "172.18.0.9"}]), "")
    assert gather(capsys)["default_ipv4"]["address"] == "172.18.0.9"


def test_default_route_on_interface_without_ipv4(capsys, node):
    node.routes = (0, json.dumps([{"dst": "default", "dev": "enP2p1s0f1np1", "scope": "link"}]), "")
    assert gather(capsys)["default_ipv4"] == {"interface": "enP2p1s0f1np1", "address": "", "gateway": ""}


def test_default_route_multipath(capsys, node):
    node.routes = (0, json.dumps([{"dst": "default", "nexthops": [
        {"gateway": "192.168.200.1", "dev": "enp1s0f1np1", "weight": 1},
        {"gateway": "172.18.0.1", "dev": "eth0", "weight": 1}]}]), "")
    assert gather(capsys)["default_ipv4"] == {"interface": "enp1s0f1np1", "address": "192.168.200.12",
                                              "gateway": "192.168.200.1"}


@pytest.mark.parametrize("output", ["[]\n", ""])
def test_no_default_route(capsys, node, output):
    node.routes = (0, output, "")
    assert gather(capsys)["default_ipv4"] == {"interface": "", "address": "", "gateway": ""}


def test_ip_failure_fails_clearly(capsys, node):
    node.ip_addr = (255, "", "Option \"-j\" is unknown, try \"ip -help\".\n")
    rc, result = run_module(capsys)
    assert rc == 1 and result["failed"] is True and result["changed"] is False
    assert result["msg"] == 'ip -j addr show failed (rc=255: Option "-j" is unknown, try "ip -help".)'


def test_ip_missing_fails(capsys, node):
    del node.bins["ip"]
    rc, result = run_module(capsys)
    assert rc == 1 and '"ip"' in result["msg"]


def test_infiniband_absent(capsys, node):
    assert gather(capsys)["infiniband"] is False


# -- docker -------------------------------------------------------------------------------------------------------


def test_docker_missing_is_reported_not_fatal(capsys, node):
    del node.bins["docker"]
    spark = gather(capsys, {"images": [IMAGE_A]})
    assert spark["docker"] == {"ok": False, "error": "the docker command is not installed (not found in PATH)",
                               "runtimes": []}
    assert spark["images"] == {}
    assert not [c for c in node.commands() if c[0] == "docker"]


def test_docker_info_failure_is_reported(capsys, node):
    node.docker_info = (1, "null\n", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
                                     "Is the docker daemon running?\n")
    spark = gather(capsys, {"images": [IMAGE_A]})
    assert spark["docker"]["ok"] is False and spark["docker"]["runtimes"] == []
    assert spark["docker"]["error"] == ("docker info failed (rc=1: Cannot connect to the Docker daemon at "
                                        "unix:///var/run/docker.sock. Is the docker daemon running?)")
    assert spark["images"] == {}
    assert ["docker", "image", "inspect", IMAGE_A] not in node.commands()


def test_docker_info_garbage_is_reported(capsys, node):
    node.docker_info = (0, "null\n", "")
    docker = gather(capsys)["docker"]
    assert docker["ok"] is False and docker["error"].startswith("docker info returned no runtimes")


def test_docker_false_asks_nothing(capsys, node):
    spark = gather(capsys, {"docker": False, "images": [IMAGE_A]})
    assert spark["docker"] == {"ok": False, "error": "not queried (docker=false)", "runtimes": []}
    assert spark["images"] == {}
    assert "docker" not in [c[0] for c in node.commands()]


def test_images_all_present_in_one_call(capsys, node):
    images = gather(capsys, {"images": [IMAGE_A, IMAGE_B, IMAGE_A]})["images"]
    assert list(images) == [IMAGE_A, IMAGE_B]
    assert images[IMAGE_B] == {"present": True, "id": "sha256:bbbb",
                               "repo_digests": ["nvcr.io/nvidia/tensorrt-llm/release@sha256:cccc"],
                               "labels": {"com.nvidia.tensorrt-llm.version": "1.3.0rc12"}, "env": {}}
    assert images[IMAGE_A]["labels"] == {} and images[IMAGE_A]["env"]["TRTLLM_VERSION"] == "1.2.0rc6"
    assert [c for c in node.commands() if c[1:3] == ["image", "inspect"]] == [
        ["docker", "image", "inspect", IMAGE_A, IMAGE_B]]


def test_images_some_missing(capsys, node):
    images = gather(capsys, {"images": [MISSING, IMAGE_B]})["images"]
    assert images[MISSING] == {"present": False, "id": "", "repo_digests": [], "labels": {}, "env": {}}
    assert images[IMAGE_B]["present"] is True and images[IMAGE_B]["id"] == "sha256:bbbb"
    assert [c for c in node.commands() if c[1:3] == ["image", "inspect"]] == [
        ["docker", "image", "inspect", MISSING, IMAGE_B],
        ["docker", "image", "inspect", MISSING],
        ["docker", "image", "inspect", IMAGE_B],
    ]


def test_single_missing_image_one_call(capsys, node):
    images = gather(capsys, {"images": [MISSING]})["images"]
    assert images == {MISSING: {"present": False, "id": "", "repo_digests": [], "labels": {}, "env": {}}}
    assert [c for c in node.commands() if c[1:3] == ["image", "inspect"]] == [["docker", "image", "inspect", MISSING]]


def test_no_images_no_inspect(capsys, node):
    assert gather(capsys, {"images": []})["images"] == {}
    assert not [c for c in node.commands() if c[1:3] == ["image", "inspect"]]


def test_without_images_every_local_image_by_tag_and_digest(capsys, node):
    images = gather(capsys)["images"]
    assert sorted(images) == sorted([IMAGE_A, IMAGE_B, "nvcr.io/nvidia/tensorrt-llm/release@sha256:cccc"])
    assert images[IMAGE_B]["labels"] == {"com.nvidia.tensorrt-llm.version": "1.3.0rc12"}
    assert images["nvcr.io/nvidia/tensorrt-llm/release@sha256:cccc"]["id"] == "sha256:bbbb"
    inspects = [c for c in node.commands() if c[1:3] == ["image", "inspect"]]
    assert inspects == [["docker", "image", "inspect", "sha256:aaaa", "sha256:bbbb"]]


# -- login user ---------------------------------------------------------------------------------------------------


def test_explicit_login_user_wins(capsys, node, monkeypatch):
    monkeypatch.setenv("DOAS_USER", "doas")
    spark = gather(capsys, {"login_user": "admin"})
    assert (spark["login_user"], spark["home"], spark["uid"], spark["gid"]) == ("admin", "/home/admin", 1001, 1001)


def test_sudo_user_when_omitted(capsys, node, monkeypatch):
    monkeypatch.setenv("DOAS_USER", "doas")
    spark = gather(capsys, {"login_user": ""})
    assert spark["login_user"] == "spark" and spark["home"] == "/home/spark"


def test_doas_user_after_sudo_user(capsys, node, monkeypatch):
    monkeypatch.delenv("SUDO_USER")
    monkeypatch.setenv("DOAS_USER", "doas")
    spark = gather(capsys)
    assert (spark["login_user"], spark["home"], spark["gid"]) == ("doas", "/var/doas", 100)


def test_effective_user_last(capsys, node, monkeypatch):
    monkeypatch.delenv("SUDO_USER")
    spark = gather(capsys)
    assert (spark["login_user"], spark["home"], spark["uid"]) == ("root", "/root", 0)


@pytest.mark.parametrize("args,env,source", [
    ({"login_user": "ghost"}, {}, "login_user"),
    ({}, {"SUDO_USER": "ghost"}, "SUDO_USER"),
])
def test_unknown_login_user_fails_clearly(capsys, node, monkeypatch, args, env, source):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    rc, result = run_module(capsys, args)
    assert rc == 1 and result["failed"] is True and result["changed"] is False
    assert result["msg"].startswith("login user ghost does not exist on this node (it is taken from %s)" % source)
    assert "ansible_facts" not in result
    assert node.calls == []
