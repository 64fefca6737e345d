#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: specdec_plan
short_description: Compute and validate the plan of a cluster of DGX Sparks before anything changes
version_added: 0.2.0
author:
  - DGX Spark speculative-decoding collection maintainers (@dgx-spark)
description:
  - Runs on the controller (an action plugin) and changes nothing. For the cluster the host belongs to, it computes
    from the inventory, the playbook's profile and the C(spark) facts of every node (M(dgx_spark.specdec.spark_facts))
    everything the roles apply, and sets this host's part as the fact C(specdec_plan).
  - B(Clusters.) A cluster is the set of Sparks that serve one endpoint. A host's cluster is its C(specdec_cluster)
    variable (default C(sparks)); its head is C(specdec_cluster_head), set once (usually as a variable of the cluster's
    group), else the cluster's one host in group C(spark_head), else its only host. The rank order is the head, then the
    other members in inventory order; netplan pairing, the hostfile, SSH trust, mpirun and the server all use it. With a
    one-Spark profile (C(container_mode=single)) every host serves alone. In a fleet (C(playbooks/fleet.yml)) each
    cluster names its profile with C(specdec_profile_name); nodes of one cluster that name different profiles are
    refused.
  - B(What it reads.) The public variables of the roles, where the inventory sets them, else the profile's value, else
    the default documented in each role's README - C(specdec_serve_*) (release, method, models, draft directory,
    C(max_draft_len), options and extra options, trtllm-serve flags and extra arguments, mpirun exports, validation
    request), C(trtllm_container_*) (mode, name, image, repository, tag, pull, GPUs, network and IPC mode, published
    ports, memlock and stack, restart policy, environment, CUDA environment, devices, host directories, SSH port,
    C(install_sshd), C(mpi_firewall), QSFP interfaces and addresses, C(nccl_ib_hca), C(hf_token_source)),
    C(netplan_qsfp_*) (plan, preset, addresses, interfaces, MTU (default 9000), source routing and its table base,
    C(allow_disruptive), management address, file) and C(openmpi_hostfile_address), C(openmpi_hostfile_slots).
  - B(What a real Spark needs.) C(specdec_serve_memory_check) (C(fail), C(warn), C(skip)),
    C(specdec_serve_memory_headroom_gib) (8), C(specdec_serve_weights_gib) (the weights before they are downloaded),
    C(specdec_serve_drop_caches) (true), C(specdec_serve_memory_guard) (false), C(specdec_serve_memory_guard_below_gib)
    (8) and C(specdec_serve_memory_guard_timeout) (3600) become each node's C(serve.memory) for
    M(dgx_spark.specdec.spark_memory); C(specdec_serve_tiktoken_encodings) (profile C(tiktoken_encodings), the gpt-oss
    profiles), C(specdec_serve_tiktoken_base_url) and C(specdec_serve_tiktoken_sha256) the encodings fetched once and
    mounted (C(TIKTOKEN_ENCODINGS_BASE)); C(specdec_serve_allowed_clients) (IPv4 addresses or networks) the endpoint's
    iptables allow-list (C(container.firewall)).
  - B(What it checks), each failure naming the field, the host, the value and what is accepted - formats of every value that
    reaches a command, a path or a file name (model and draft ids, paths, container names, image references, interface
    names, addresses, ports, environment names); the QSFP port pair on every node, the address plan on and across the
    nodes and the management path; the options file for the TensorRT-LLM release (M(dgx_spark.specdec.trtllm_options));
    C(tp_size) against the nodes; the image against C(trtllm_container_pull) and the release it reports; the MTU of
    both ends of each QSFP link after this run; that iptables exists where an allow-list is set. It warns when an image
    tag now names another image than the one the container was created from, and when C(NCCL_IB_HCA) cannot be
    derived from C(ibdev2netdev).
  - B(What it computes) - per node the netplan document and QSFP addresses, the OpenMPI hostfile (head first), the
    container (name, image, mounts, environment, devices, GPU request, restart policy, command), the sshd and ssh client
    configuration, the downloads, the options file and the trtllm-serve (and mpirun) command line, and the endpoint to
    validate.
  - Deprecated variables C(trtllm_container_cluster_hosts), C(openmpi_hostfile_hosts), C(specdec_serve_cluster_hosts) and
    C(netplan_qsfp_nodes) still work when they name the cluster's nodes head first (with a deprecation warning); they fail
    when they differ.
extends_documentation_fragment:
  - dgx_spark.specdec.attributes
  - dgx_spark.specdec.attributes.ACTIONGROUP_SPECDEC
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  idempotent:
    support: full
  action:
    support: full
    description: Runs on the controller; reads the inventory and the nodes' facts, never the nodes themselves.
options:
  profile:
    description:
      - The profile of the NVIDIA playbook the playbook reproduces (its C(specdec_profile)), for example C(trtllm_version),
        C(container_mode) (C(single) or C(multinode)), C(method), C(model), C(draft_model), C(draft_dir),
        C(max_draft_len), C(options), C(tp_size), C(host), C(port), C(api), C(prompt), C(max_tokens).
      - Inventory variables win over the profile.
      - Required with O(scope=serve).
    type: dict
  scope:
    description:
      - V(serve) plans everything a serving playbook applies. V(network) plans only the QSFP link of each cluster of two
        or more Sparks (netplan documents and addresses), for M(dgx_spark.specdec.netplan_qsfp) alone; the C(container),
        C(hostfile) and C(serve) parts are null.
    type: str
    choices: [serve, network]
    default: serve
  group:
    description: The inventory group of all Sparks, whose order is the inventory order of the cluster members.
    type: str
    default: sparks
notes:
  - Run M(dgx_spark.specdec.spark_facts) on every node of the cluster first, in the same play.
  - The Hugging Face token never reaches the plan. The containers name its file with C(HF_TOKEN_PATH); the
    trtllm_container role writes the file where a token is set.
"""

EXAMPLES = r"""
---
- name: Pre-flight - read the nodes and compute the plan (changes nothing)
  hosts: sparks
  gather_facts: false
  become: true
  vars_files:
    - vars/two_spark_eagle3.yml
  tasks:
    - name: Read each node's state in one call
      dgx_spark.specdec.spark_facts:
        images: ["nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6"]

    - name: Compute and validate the cluster's plan
      dgx_spark.specdec.specdec_plan:
        profile: "{{ specdec_profile }}"
"""

RETURN = r"""
cluster:
  description: The cluster this host belongs to.
  returned: success
  type: str
  sample: sparks
nodes:
  description: The cluster's nodes in rank order, head first.
  returned: success
  type: list
  elements: str
  sample: [spark-a, spark-b]
errors:
  description: One message per failed rule (field, host, value, what is accepted).
  returned: failure
  type: list
  elements: str
  sample:
    - specdec_serve_model on spark-a (cluster sparks) - "nvidia//Qwen" is not a Hugging Face model id (owner/name) or an absolute path
      inside the container
ansible_facts:
  description: Facts set on the host.
  returned: success
  type: dict
  contains:
    specdec_plan:
      description:
        - This host's part of the plan - C(cluster), C(nodes), C(head), C(rank), C(is_head), C(multinode),
          C(trtllm_version), C(netplan) (file, content, addresses; null on one Spark), C(container) (directories, files,
          SSH, the Docker settings and command), C(hostfile) (null on one Spark) and C(serve) (downloads, options file,
          argv, endpoint on the head).
      type: dict
      returned: success
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec=dict(profile=dict(type="dict"), group=dict(type="str", default="sparks"),
                           scope=dict(type="str", default="serve", choices=["serve", "network"])),
        required_if=[("scope", "serve", ["profile"])],
        supports_check_mode=True,
    )
    module.fail_json(msg="dgx_spark.specdec.specdec_plan runs on the controller as an action plugin; this module file "
                         "only documents it")


if __name__ == "__main__":
    main()
