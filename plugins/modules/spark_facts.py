#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: spark_facts
short_description: Read what the pre-flight needs from a DGX Spark in one call
version_added: 0.2.0
author:
  - DGX Spark speculative-decoding collection maintainers (@dgx-spark)
description:
  - Reads, in one call and without changing anything, the state of a DGX Spark that the collection's pre-flight
    (M(dgx_spark.specdec.specdec_plan)) needs, and returns it as the host fact C(spark) (C(ansible_facts.spark)).
  - The login user and its home, UID and GID (the home holds the model caches).
  - Which QSFP netdevs are Up and their RoCE devices, from C(ibdev2netdev), or from C(/sys/class/net/*/operstate) when
    C(ibdev2netdev) is missing, fails or lists none of O(interfaces).
  - The IPv4 addresses and MTU of every interface (C(ip -j addr show)), the default route's interface, gateway and
    address (C(ip -j -4 route show default); no packet is sent), and whether C(/dev/infiniband) exists.
  - The Docker runtimes (C(docker info)) and, for the references in O(images), whether each image is on the node with
    its ID, repository digests, labels and C(Config.Env) (C(docker image inspect)). A missing C(docker) command or
    an engine that does not answer is reported in C(docker.error); the module does not fail for it.
  - The containers this collection created on this node (labels C(dgx-spark.specdec/role), and
    C(dgx-spark.specdec/node) with the node's host name) - the image each was created from and
    whether it runs, so the plan can tell when an image tag has moved since the last run.
  - Whether C(iptables) is installed and the rules of the collection's endpoint allow-list (C(iptables -w -S), only the
    chain C(DGX-SPECDEC) and rules marked C(dgx-spark.specdec)), and whether the login user has a Hugging Face token
    stored by C(huggingface-cli login) (C(~/.cache/huggingface/token)).
  - For each of those containers, what is in the directories it mounts (its configuration directory, the Hugging
    Face cache and the models directory) - each directory's mode and owner, each file's SHA-256, mode and owner
    under the configuration directory (private keys and the token file - presence only), the public SSH keys, and
    with O(hf_token) whether each token file holds that token. The plan compares them with what it would write, so a
    run that changes nothing writes nothing.
  - Whether each path of O(paths) exists.
  - Commands run without a shell. The module never reports a change.
extends_documentation_fragment:
  - dgx_spark.specdec.attributes
  - dgx_spark.specdec.attributes.INFO_MODULE
  - dgx_spark.specdec.attributes.ACTIONGROUP_SPECDEC
attributes:
  check_mode:
    support: full
    details:
      - The module only reads, so it reads the same in check mode.
  diff_mode:
    support: N/A
  idempotent:
    support: full
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
options:
  hf_token:
    description:
      - The Hugging Face token the run would write. Only whether the container's token files hold it is returned
        (C(same), C(differs), C(absent)) and whether one was given; the token is never returned or logged.
      - Omitted, the token files are not read.
    type: str
    version_added: 0.7.0
  login_user:
    description:
      - The user whose home holds the model caches, normally the user Ansible connects as.
      - When omitted (or empty), the user that became root is used (E(SUDO_USER), else E(DOAS_USER)), else the
        user the module runs as.
      - The module fails when the user does not exist on the node.
    type: str
  interfaces:
    description:
      - The QSFP netdevs to check, in the order in which RV(ansible_facts.spark.qsfp.up) lists the Up ones.
      - The default is the four netdevs of the two QSFP ports of a DGX Spark.
    type: list
    elements: str
    default: [enp1s0f0np0, enP2p1s0f0np0, enp1s0f1np1, enP2p1s0f1np1]
  images:
    description:
      - Docker image references to look up with C(docker image inspect), for example V(nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6).
      - When omitted, every local image, keyed by each of its tags (C(repository:tag)) and digests
        (C(repository@sha256:...)), so the plan can look up whichever reference the inventory names.
      - Ignored when O(docker=false).
    type: list
    elements: str
  docker:
    description:
      - Query the Docker engine (runtimes and O(images)).
      - With V(false) no C(docker) command runs, RV(ansible_facts.spark.docker.ok) is V(false) and
        RV(ansible_facts.spark.images) is empty.
    type: bool
    default: true
  paths:
    description:
      - Paths to check for existence (on the node, as the user the module runs as).
    type: list
    elements: path
    default: []
  record:
    description:
      - The node's record of what the collection created (written by M(dgx_spark.specdec.spark_files)), returned as
        RV(ansible_facts.spark.record).
    type: path
    default: /var/lib/dgx-spark-specdec/created.json
notes:
  - Run it with C(become=true) so that C(docker) and every path can be read; the login user is then taken from
    E(SUDO_USER).
  - Needs the C(ip) command (iproute2) on the node.
seealso:
  - module: dgx_spark.specdec.specdec_plan
  - module: ansible.builtin.setup
"""

EXAMPLES = r"""
---
- name: Read each node's state in one call
  dgx_spark.specdec.spark_facts:
    login_user: "{{ ansible_user | default(omit) }}"
    images:
      - nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6
    paths:
      - /opt/gpt-oss-120b-Eagle3
  become: true

- name: Show the Up QSFP netdevs
  ansible.builtin.debug:
    msg: "{{ ansible_facts.spark.qsfp.up | join(', ') or 'none' }} (from {{ ansible_facts.spark.qsfp.source }})"

- name: Only the login user's home, without asking Docker
  dgx_spark.specdec.spark_facts:
    docker: false
  become: true
"""

RETURN = r"""
ansible_facts:
  description: The facts read from the node.
  returned: success
  type: dict
  contains:
    spark:
      description: What the pre-flight needs from this DGX Spark.
      returned: success
      type: dict
      contains:
        login_user:
          description: The login user (O(login_user), else E(SUDO_USER), else E(DOAS_USER), else the effective user).
          returned: success
          type: str
          sample: spark
        home:
          description: Home directory of the login user.
          returned: success
          type: str
          sample: /home/spark
        login_groups:
          description: The groups of the login user (primary and supplementary), by name.
          returned: success
          type: list
          elements: str
          sample: [spark, sudo, docker]
        netplan:
          description:
            - The netplan files in C(/etc/netplan) (C(*.yaml), C(*.yml)) with their C(sha256), C(mode) (octal string),
              C(owner) and C(group), so a run that changes nothing needs no second look at them.
          returned: success
          type: dict
          sample: {"/etc/netplan/40-cx7.yaml": {"sha256": "4f2c...", "mode": "0600", "owner": "root", "group": "root"}}
        uid:
          description: UID of the login user.
          returned: success
          type: int
          sample: 1000
        gid:
          description: Primary GID of the login user.
          returned: success
          type: int
          sample: 1000
        hostname:
          description: The node's host name, as the C(hostname) command prints it.
          returned: success
          type: str
          sample: spark-1
        qsfp:
          description: State of the QSFP netdevs of O(interfaces).
          returned: success
          type: dict
          contains:
            up:
              description: The Up netdevs among O(interfaces), in the order of O(interfaces).
              returned: success
              type: list
              elements: str
              sample: [enp1s0f1np1, enP2p1s0f1np1]
            source:
              description: Where RV(ansible_facts.spark.qsfp.up) comes from, V(ibdev2netdev) or V(/sys/class/net/*/operstate).
              returned: success
              type: str
              sample: ibdev2netdev
            rdma:
              description:
                - RoCE devices of the Up netdevs, in the same order, from C(ibdev2netdev).
                - Empty when the state was read from C(/sys/class/net).
              returned: success
              type: list
              elements: str
              sample: [rocep1s0f1, roceP2p1s0f1]
            ibdev2netdev:
              description: Standard output of C(ibdev2netdev), empty when it is missing or failed.
              returned: success
              type: str
              sample: "rocep1s0f0 port 1 ==> enp1s0f0np0 (Down)\nrocep1s0f1 port 1 ==> enp1s0f1np1 (Up)\n"
        ipv4:
          description: Every interface, with the list of its IPv4 addresses as V(A.B.C.D/N) (empty without IPv4).
          returned: success
          type: dict
          sample: {"lo": ["127.0.0.1/8"], "eth0": ["172.18.0.2/16"], "enp1s0f1np1": ["192.168.200.12/24"],
                   "enp1s0f0np0": []}
        mtu:
          description: Every interface, with its MTU.
          returned: success
          type: dict
          sample: {"lo": 65536, "eth0": 1500, "enp1s0f1np1": 9000, "enp1s0f0np0": 1500}
        default_ipv4:
          description:
            - The IPv4 default route (the one with the lowest metric) of the main routing table.
            - All three values are empty strings when there is no default route.
          returned: success
          type: dict
          contains:
            interface:
              description: Interface of the default route.
              returned: success
              type: str
              sample: eth0
            address:
              description:
                - The route's preferred source address, else the first IPv4 address of RV(ansible_facts.spark.default_ipv4.interface),
                  without prefix length; empty when the interface has none.
              returned: success
              type: str
              sample: 172.18.0.2
            gateway:
              description: Gateway of the default route, empty for a route without gateway.
              returned: success
              type: str
              sample: 172.18.0.1
          sample: {"interface": "eth0", "address": "172.18.0.2", "gateway": "172.18.0.1"}
        infiniband:
          description: Whether C(/dev/infiniband) exists.
          returned: success
          type: bool
          sample: true
        docker:
          description: What the Docker engine answered.
          returned: success
          type: dict
          contains:
            ok:
              description: Whether C(docker info) answered. V(false) also when O(docker=false).
              returned: success
              type: bool
              sample: true
            error:
              description: Why RV(ansible_facts.spark.docker.ok) is V(false), empty otherwise.
              returned: success
              type: str
              sample: "docker info failed (rc=1): Cannot connect to the Docker daemon at unix:///var/run/docker.sock."
            runtimes:
              description: Names of the engine's runtimes, sorted.
              returned: success
              type: list
              elements: str
              sample: [io.containerd.runc.v2, nvidia, runc]
          sample: {"ok": true, "error": "", "runtimes": ["io.containerd.runc.v2", "nvidia", "runc"]}
        images:
          description:
            - One entry per reference of O(images), keyed by the reference as given; without O(images), one per tag
              and digest of every local image.
            - Each entry has C(present) (bool), C(id) (str, empty when absent), C(repo_digests) (list of str),
              C(labels) (dict, C(Config.Labels)) and C(env) (dict, C(Config.Env) split at the first V(=)).
            - Empty when O(docker=false) or the engine does not answer.
          returned: success
          type: dict
          sample: {"nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6": {"present": true, "id": "sha256:0123abcd",
                   "repo_digests": ["nvcr.io/nvidia/tensorrt-llm/release@sha256:4567ef01"], "labels": {},
                   "env": {"TRTLLM_VERSION": "1.2.0rc6"}}}
        containers:
          description:
            - The containers created by this collection (label C(dgx-spark.specdec/role)), by name, with C(image_ref)
              (the reference they were created from), C(image_id), C(running), C(role) (head, worker, single or
              metrics), C(spec) (the digest of the settings
              it was created with, its label C(dgx-spark.specdec/spec)), C(mounts) (container path to host path) and
              C(files) (C(dirs), C(files), C(public_keys), C(token) and C(markers), the completed downloads with what their marker says, of the
              mounted directories, see the description).
            - Empty when O(docker=false) or the engine does not answer.
          returned: success
          type: dict
          sample: {"trtllm-specdec": {"image_ref": "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6",
                   "image_id": "sha256:0123abcd", "running": true, "spec": "4f2a...",
                   "mounts": {"/etc/dgx-spark": "/home/spark/.dgx-spark"},
                   "files": {"dirs": {"/home/spark/.dgx-spark": {"mode": "0755", "owner": "root", "group": "root"}},
                             "files": {"/home/spark/.dgx-spark/entrypoint.sh": {"sha256": "9b1c...", "mode": "0755",
                                                                               "owner": "root", "group": "root"}},
                             "public_keys": {}, "token": {"given": true, "file": "same", "login": "absent"}}}}
        downloads:
          description: What the marker of each download the record lists says (repository, revision), by marker path.
          returned: success
          type: dict
          sample: {"/home/spark/models/eagle3/.dgx-spark-complete": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\n"}
        record:
          description:
            - What the collection created on this node, by path, with its C(kind) (directory, file, key, token,
              download with C(repo) and C(revision)); empty when nothing is recorded.
          returned: success
          type: dict
          sample: {"/home/spark/.dgx-spark/hf_token": {"kind": "token"}}
        tools:
          description: Whether the commands the roles may need are installed - C(iptables), C(ip6tables).
          returned: success
          type: dict
          sample: {"iptables": true, "ip6tables": true}
        firewall:
          description:
            - The lines of C(iptables -w -S) (filter table) that belong to the collection - the chains
              C(DGX-SPECDEC) (the endpoint's allow-list) and C(DGX_SPARK_MPI) (Open MPI's ports) and the rules marked
              with the comment C(dgx-spark.specdec). Empty without iptables.
          returned: success
          type: list
          elements: str
          sample: ["-N DGX-SPECDEC", "-A INPUT -p tcp -m multiport --dports 8000 -m comment --comment \"dgx-spark.specdec\" -j DGX-SPECDEC"]
        firewall6:
          description: The same lines of C(ip6tables -w -S). Empty without ip6tables.
          returned: success
          type: list
          elements: str
          sample: ["-N DGX-SPECDEC"]
        sysctl:
          description:
            - The digest of C(/etc/sysctl.d/60-dgx-spark-qsfp.conf) (null when absent) and the live C(arp_ignore)
              and C(arp_announce) of each QSFP netdev.
          returned: success
          type: dict
          sample: {"file": null, "values": {"net.ipv4.conf.enp1s0f1np1.arp_ignore": "0"}}
          version_added: 0.8.0
        models:
          description:
            - The checkpoints in the Hugging Face caches of the login user (C(~/.cache/huggingface)) and of the
              collection's containers, by repository id, with what their C(config.json) says of the attention
              (the tensor-parallel size must divide the heads).
          returned: success
          type: dict
          sample: {"nvidia/DeepSeek-R1-FP4": {"num_attention_heads": 128, "num_key_value_heads": 128,
                   "model_type": "deepseek_v3"}}
          version_added: 0.8.0
        hf_login_token:
          description: Whether C(~/.cache/huggingface/token) of the login user exists (written by C(huggingface-cli login)).
          returned: success
          type: bool
          sample: false
        paths:
          description: Every path of O(paths), with whether it exists.
          returned: success
          type: dict
          sample: {"/opt/gpt-oss-120b-Eagle3": true}
"""

import glob
import grp
import hashlib
import json
import os
import pwd
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _addresses as addresses
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _firewall
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _records
from ansible_collections.dgx_spark.specdec.plugins.module_utils import _spark_net as net

SOURCE_IBDEV2NETDEV = "ibdev2netdev"
SOURCE_SYSFS = "/sys/class/net/*/operstate"
# Module-level so that the unit tests can point them at a scratch directory.
SYS_CLASS_NET = "/sys/class/net"
DEV_INFINIBAND = "/dev/infiniband"
NETPLAN_DIR = "/etc/netplan"
CONTAINER_LABEL = "dgx-spark.specdec/role"
SPEC_LABEL = "dgx-spark.specdec/spec"
NODE_LABEL = "dgx-spark.specdec/node"
# The collection's chains (the endpoint's allow-list, Open MPI's ports) and the comment on each of its rules.
FIREWALL_MARKS = (_firewall.CHAIN, _firewall.MPI_CHAIN, _firewall.COMMENT)


CONFIG_MOUNT = "/etc/dgx-spark"
HF_MOUNT = "/root/.cache/huggingface"
# The QSFP netdevs' ARP settings on a switch (written by the netplan_qsfp role), and where the kernel shows them.
SYSCTL_FILE = "/etc/sysctl.d/60-dgx-spark-qsfp.conf"
PROC_SYS_IPV4_CONF = "/proc/sys/net/ipv4/conf"
MODELS_MOUNT = "/models"
TOKEN_FILE = "hf_token"
# Written by the collection after a download completed (role specdec_serve).
DOWNLOAD_MARKER = ".dgx-spark-complete"
PRIVATE_KEYS = ("ssh_host_ed25519_key", "id_ed25519")


def _head(path, size=512):
    """The first bytes of a small text file (a download's marker), "" when unreadable."""
    try:
        with open(path, "rb") as handle:
            return handle.read(size).decode("utf-8", "replace")
    except OSError:
        return ""


def _stat(path):
    st = os.stat(path)
    try:
        owner, group = pwd.getpwuid(st.st_uid).pw_name, grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        owner, group = str(st.st_uid), str(st.st_gid)
    return {"mode": "%04o" % (st.st_mode & 0o7777), "owner": owner, "group": group}


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_text(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _read_operstates(interfaces):
    states = {}
    for name in interfaces:
        try:
            with open(os.path.join(SYS_CLASS_NET, name, "operstate"), "r", encoding="utf-8") as handle:
                states[name] = handle.read()
        except (OSError, ValueError):
            states[name] = None
    return states


def _parse_ip_addr(text):
    """``ip -j addr show`` -> ({ifname: ["A.B.C.D/N", ...]}, {ifname: mtu}), read as spark_addresses reads it."""
    links = addresses.parse_links(text)
    mtu = {link["ifname"]: link["mtu"] for link in links
           if isinstance(link, dict) and isinstance(link.get("ifname"), str) and isinstance(link.get("mtu"), int)}
    return addresses.ipv4_of(links), mtu


def _parse_default_route(text, ipv4):
    """``ip -j -4 route show default`` and the addresses -> {interface, address, gateway} (empty strings if none)."""
    best = None
    for route in json.loads(text or "[]") or []:
        if not isinstance(route, dict) or route.get("dst", "default") != "default":
            continue
        hop = route
        if not route.get("dev") and route.get("nexthops"):
            hop = route["nexthops"][0] or {}
        if not hop.get("dev"):
            continue
        metric = route.get("metric", 0) if isinstance(route.get("metric", 0), int) else 0
        if best is None or metric < best[0]:
            best = (metric, hop.get("dev"), hop.get("gateway") or "", route.get("prefsrc") or "")
    if best is None:
        return {"interface": "", "address": "", "gateway": ""}
    dummy, dev, gateway, prefsrc = best
    address = prefsrc or next((a.split("/")[0] for a in ipv4.get(dev) or []), "")
    return {"interface": dev, "address": address, "gateway": gateway}


def _env_dict(entries):
    """Config.Env ["K=V", ...] -> {K: V}."""
    env = {}
    for entry in entries or []:
        key, dummy, value = to_native(entry).partition("=")
        if key:
            env[key] = value
    return env


def _image_entry(inspected):
    if not inspected:
        return {"present": False, "id": "", "repo_digests": [], "labels": {}, "env": {}}
    config = inspected.get("Config") or {}
    return {
        "present": True,
        "id": inspected.get("Id") or "",
        "repo_digests": list(inspected.get("RepoDigests") or []),
        "labels": dict(config.get("Labels") or {}),
        "env": _env_dict(config.get("Env")),
    }


def _error_text(rc, out, err):
    text = " ".join((to_native(err).strip() or to_native(out).strip()).split())
    return "rc=%s: %s" % (rc, text[:500]) if text else "rc=%s" % rc


class SparkFacts:
    def __init__(self, module):
        self.module = module
        self.params = module.params

    def fail(self, msg):
        self.module.fail_json(msg=msg, changed=False)

    def run(self, argv):
        return self.module.run_command(argv, check_rc=False, environ_update={"LC_ALL": "C"})

    def user(self):
        explicit = self.params["login_user"]
        source = "login_user" if explicit else "SUDO_USER" if os.environ.get("SUDO_USER") else "DOAS_USER"
        name = explicit or os.environ.get("SUDO_USER") or os.environ.get("DOAS_USER")
        if not name:
            source = "the effective user"
            try:
                name = pwd.getpwuid(os.geteuid()).pw_name
            except KeyError:
                self.fail("cannot name the user the module runs as (UID %d); set login_user" % os.geteuid())
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            self.fail("login user %s does not exist on this node (it is taken from %s); set login_user to the user "
                      "whose home holds the model caches" % (name, source))
        groups = []
        for gid in os.getgrouplist(name, entry.pw_gid):
            try:
                groups.append(grp.getgrgid(gid).gr_name)
            except KeyError:
                continue
        return {"login_user": name, "home": entry.pw_dir, "uid": entry.pw_uid, "gid": entry.pw_gid,
                "login_groups": groups}

    def qsfp(self):
        interfaces = self.params["interfaces"]
        raw = ""
        ibdev2netdev = self.module.get_bin_path("ibdev2netdev")
        if ibdev2netdev:
            rc, out, dummy = self.run([ibdev2netdev])
            if rc == 0:
                raw = out
                # ibdev2netdev wins when it names any of the interfaces, even if all are Down.
                if net.listed_netdevs(out) & set(interfaces):
                    up = net.parse_ibdev2netdev(out, interfaces)
                    return {"up": up, "source": SOURCE_IBDEV2NETDEV, "rdma": net.rdma_devices(out, up),
                            "ibdev2netdev": raw}
        up = net.parse_operstate(_read_operstates(interfaces), interfaces)
        return {"up": up, "source": SOURCE_SYSFS, "rdma": [], "ibdev2netdev": raw}

    def network(self):
        ip = self.module.get_bin_path("ip", required=True)
        rc, out, err = self.run([ip, "-j", "addr", "show"])
        if rc != 0:
            self.fail("ip -j addr show failed (%s)" % _error_text(rc, out, err))
        try:
            ipv4, mtu = _parse_ip_addr(out)
        except ValueError as exc:
            self.fail("cannot parse the output of ip -j addr show: %s" % to_native(exc))
        rc, out, err = self.run([ip, "-j", "-4", "route", "show", "default"])
        if rc != 0:
            self.fail("ip -j -4 route show default failed (%s)" % _error_text(rc, out, err))
        try:
            default = _parse_default_route(out, ipv4)
        except (ValueError, AttributeError, TypeError) as exc:
            self.fail("cannot parse the output of ip -j -4 route show default: %s" % to_native(exc))
        return {"ipv4": ipv4, "mtu": mtu, "default_ipv4": default}

    def docker(self):
        """-> (docker fact, images fact)."""
        if not self.params["docker"]:
            return {"ok": False, "error": "not queried (docker=false)", "runtimes": []}, {}
        docker = self.module.get_bin_path("docker")
        if not docker:
            return {"ok": False, "error": "the docker command is not installed (not found in PATH)", "runtimes": []}, {}
        rc, out, err = self.run([docker, "info", "--format", "{{json .Runtimes}}"])
        if rc != 0:
            return {"ok": False, "error": "docker info failed (%s)" % _error_text(rc, out, err), "runtimes": []}, {}
        try:
            runtimes = json.loads(out)
            if not isinstance(runtimes, dict):
                raise ValueError("expected a JSON object, got %s" % out.strip()[:200])
        except ValueError as exc:
            return {"ok": False, "error": "docker info returned no runtimes: %s" % to_native(exc), "runtimes": []}, {}
        return {"ok": True, "error": "", "runtimes": sorted(runtimes)}, self.images(docker)

    def containers(self, docker):
        """The collection's containers (by label) -> {name: {image_ref, image_id, running, spec}}."""
        # This node's only: where nodes share one engine (the lab), the others' are not ours to read.
        rc, out, dummy = self.run([docker, "ps", "-a", "--quiet", "--no-trunc", "--filter", "label=" + CONTAINER_LABEL,
                                   "--filter", "label=%s=%s" % (NODE_LABEL, socket.gethostname())])
        ids = out.split() if rc == 0 else []
        if not ids:
            return {}
        rc, out, dummy = self.run([docker, "container", "inspect"] + ids)
        try:
            found = json.loads(out) if rc == 0 else []
        except ValueError:
            found = []
        containers = {}
        for item in found if isinstance(found, list) else []:
            name = str(item.get("Name") or "").lstrip("/")
            if name:
                config = item.get("Config") or {}
                mounts = {str(m.get("Destination")): str(m.get("Source")) for m in item.get("Mounts") or []
                          if m.get("Type") == "bind" and m.get("Destination") and m.get("Source")}
                containers[name] = {"image_ref": config.get("Image") or "",
                                    "mounts": mounts,
                                    "files": self.mounted_files(mounts),
                                    "image_id": item.get("Image") or "",
                                    "running": bool((item.get("State") or {}).get("Running")),
                                    "role": str((config.get("Labels") or {}).get(CONTAINER_LABEL) or ""),
                                    # The plan compares it with its own: the same settings run the same server.
                                    "spec": str((config.get("Labels") or {}).get(SPEC_LABEL) or "")}
        return containers

    def mounted_files(self, mounts):
        """What the collection wrote where the container's configuration directory and caches are mounted: each
        file's digest, mode and owner (a private key's or the token's: presence only), each directory's mode and
        owner, and whether the token files hold O(hf_token). Empty when the directories are not on this node."""
        out = {"dirs": {}, "files": {}, "public_keys": {}, "token": {}, "markers": {}}
        # Completed downloads: <hub cache>/hub/models--*/ and <models>/NAME/ (or one level deeper).
        for mount, patterns in ((CONFIG_MOUNT, ()), (HF_MOUNT, ("hub/*/",)), (MODELS_MOUNT, ("*/", "*/*/"))):
            source = mounts.get(mount)
            if source and os.path.isdir(source):
                out["dirs"][source] = _stat(source)
                for pattern in patterns:
                    for marker in sorted(glob.glob(os.path.join(source, pattern + DOWNLOAD_MARKER))):
                        # It names the repository and revision downloaded there: the plan compares them.
                        out["markers"][marker] = _head(marker)
        config = mounts.get(CONFIG_MOUNT)
        if config and os.path.isdir(config):
            for root, dirs, files in os.walk(config):
                dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(root, d)))
                for name in dirs:
                    out["dirs"][os.path.join(root, name)] = _stat(os.path.join(root, name))
                for name in sorted(files):
                    path = os.path.join(root, name)
                    if os.path.islink(path) or not os.path.isfile(path):
                        continue
                    secret = name == TOKEN_FILE or (os.path.basename(root) == "ssh" and name in PRIVATE_KEYS)
                    out["files"][path] = dict(_stat(path), sha256=None if secret else _sha256(path))
                    if os.path.basename(root) == "ssh" and name.endswith(".pub"):
                        out["public_keys"][path] = _read_text(path).strip()
        token = self.params.get("hf_token")
        if token is not None:
            # Only whether each token file holds the given token: its content never leaves the node.
            out["token"]["given"] = bool(token)
            for key, path in (("file", os.path.join(config or "/nonexistent", TOKEN_FILE)),
                              ("login", os.path.join(mounts.get(HF_MOUNT) or "/nonexistent", "token"))):
                if not os.path.isfile(path):
                    out["token"][key] = "absent"
                else:
                    out["token"][key] = "same" if token and _read_text(path) == token else "differs"
        return out

    def inspect(self, docker, refs):
        """-> list of inspect objects, or None when docker did not answer rc=0 with a JSON list."""
        rc, out, dummy = self.run([docker, "image", "inspect"] + refs)
        if rc != 0:
            return None
        try:
            found = json.loads(out)
        except ValueError:
            return None
        return found if isinstance(found, list) else None

    def all_images(self, docker):
        rc, out, dummy = self.run([docker, "image", "ls", "--quiet", "--no-trunc"])
        ids = sorted(set(out.split())) if rc == 0 else []
        images = {}
        for item in (self.inspect(docker, ids) if ids else None) or []:
            entry = _image_entry(item)
            for ref in list(item.get("RepoTags") or []) + list(item.get("RepoDigests") or []):
                images[ref] = entry
        return images

    def images(self, docker):
        if self.params["images"] is None:
            return self.all_images(docker)
        refs = []
        for ref in self.params["images"]:
            if ref and ref not in refs:
                refs.append(ref)
        if not refs:
            return {}
        found = self.inspect(docker, refs)
        if found is not None and len(found) == len(refs):
            return {ref: _image_entry(item) for ref, item in zip(refs, found)}
        # Some are missing (docker exits 1 and lists only the others): ask for each one.
        images = {}
        for ref in refs:
            one = self.inspect(docker, [ref]) if len(refs) > 1 else None
            images[ref] = _image_entry(one[0] if one else None)
        return images

    def firewall(self, iptables):
        """The collection's lines of ``iptables -w -S`` (or ip6tables): the plan compares them with its rules."""
        rc, out, dummy = self.run([iptables, "-w", "-S"])
        if rc != 0:
            return []
        return [line for line in out.splitlines() if any(mark in line for mark in FIREWALL_MARKS)]

    def paths(self):
        return {path: os.path.exists(path) for path in self.params["paths"]}

    def netplan(self):
        files = {}
        for path in sorted(glob.glob(NETPLAN_DIR + "/*.yaml") + glob.glob(NETPLAN_DIR + "/*.yml")):
            try:
                st = os.stat(path)
                with open(path, "rb") as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
            except OSError:
                continue
            try:
                owner, group = pwd.getpwuid(st.st_uid).pw_name, grp.getgrgid(st.st_gid).gr_name
            except KeyError:
                owner, group = str(st.st_uid), str(st.st_gid)
            files[path] = {"sha256": digest, "mode": "%04o" % (st.st_mode & 0o7777), "owner": owner, "group": group}
        return files

    def gather(self):
        spark = self.user()
        spark["hostname"] = socket.gethostname()
        spark["qsfp"] = self.qsfp()
        spark.update(self.network())
        spark["infiniband"] = os.path.exists(DEV_INFINIBAND)
        spark["docker"], spark["images"] = self.docker()
        docker = self.module.get_bin_path("docker") if spark["docker"]["ok"] else None
        spark["containers"] = self.containers(docker) if docker else {}
        iptables = self.module.get_bin_path("iptables", opt_dirs=["/usr/sbin", "/sbin"])
        spark["tools"] = {"iptables": bool(iptables)}
        spark["firewall"] = self.firewall(iptables) if iptables else []
        ip6tables = self.module.get_bin_path("ip6tables", opt_dirs=["/usr/sbin", "/sbin"])
        spark["tools"]["ip6tables"] = bool(ip6tables)
        spark["firewall6"] = self.firewall(ip6tables) if ip6tables else []
        spark["hf_login_token"] = os.path.exists(os.path.join(spark["home"], ".cache", "huggingface", "token"))
        spark["paths"] = self.paths()
        spark["record"] = _records.load(self.module.params["record"])
        # The markers of the downloads the collection made, wherever they are (no container needed to find them).
        spark["downloads"] = {os.path.join(path, DOWNLOAD_MARKER): _head(os.path.join(path, DOWNLOAD_MARKER))
                              for path, entry in spark["record"].items()
                              if entry.get("kind") == "download" and os.path.exists(os.path.join(path, DOWNLOAD_MARKER))}
        spark["netplan"] = self.netplan()
        spark["sysctl"] = self.sysctl(self.module.params["interfaces"])
        caches = [os.path.join(spark["home"], ".cache", "huggingface")]
        caches += [c["mounts"][HF_MOUNT] for c in spark["containers"].values() if (c.get("mounts") or {}).get(HF_MOUNT)]
        spark["models"] = self.models(caches)
        return spark

    @staticmethod
    def sysctl(interfaces):
        """The collection's sysctl file (its digest) and the live ARP settings of the QSFP netdevs."""
        found = {"file": None, "values": {}}
        try:
            with open(SYSCTL_FILE, "rb") as handle:
                found["file"] = hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            pass
        for iface in interfaces:
            for name in ("arp_ignore", "arp_announce"):
                value = _read_text(os.path.join(PROC_SYS_IPV4_CONF, iface, name))
                if value:
                    found["values"]["net.ipv4.conf.%s.%s" % (iface, name)] = value.strip()
        return found

    @staticmethod
    def models(caches):
        """{repo id: heads} from config.json of each cached snapshot (hub/models--ORG--NAME/snapshots/REV/)."""
        found = {}
        for cache in caches:
            for path in sorted(glob.glob(os.path.join(cache, "hub", "models--*", "snapshots", "*", "config.json"))):
                repo = path.split(os.sep)[-4][len("models--"):].replace("--", "/", 1)
                try:
                    with open(path, encoding="utf-8") as handle:
                        config = json.load(handle)
                except (OSError, ValueError):
                    continue
                if not isinstance(config, dict):
                    continue
                # Multimodal checkpoints keep the language model's figures under text_config.
                text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
                found[repo] = {key: text.get(key, config.get(key)) for key in
                               ("num_attention_heads", "num_key_value_heads", "model_type")}
        return found


def main():
    module = AnsibleModule(
        argument_spec=dict(
            login_user=dict(type="str"),
            interfaces=dict(type="list", elements="str", default=list(net.QSFP_INTERFACES)),
            images=dict(type="list", elements="str"),
            docker=dict(type="bool", default=True),
            paths=dict(type="list", elements="path", default=[]),
            record=dict(type="path", default=_records.RECORD),
            hf_token=dict(type="str", no_log=True),
        ),
        supports_check_mode=True,
    )
    spark = SparkFacts(module).gather()
    module.exit_json(changed=False, ansible_facts={"spark": spark})


if __name__ == "__main__":
    main()
