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
        or more Sparks (netplan documents and addresses), for P(dgx_spark.specdec.netplan_qsfp#role) alone; the C(container),
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
  - The variables it reads follow (the input catalogue, C(plugins/module_utils/_inputs.py)). Scope C(cluster) - the
    same on every node of a cluster, else the run stops naming each host and value; C(node) - read on each node.
  # BEGIN generated by tools/gen_docs.py: inputs
  - >-
    C(specdec_cluster) (str, node scope, default sparks (one-Spark profiles: each host alone)) - The cluster this
    Spark belongs to: the Sparks that serve one endpoint. Set it on the cluster's group.
  - >-
    C(specdec_cluster_head) (str, cluster scope, default required) - The cluster's head (rank 0, netplan's node 1,
    the first hostfile line); default the cluster's one host in group spark_head, else its only host.
  - >-
    C(specdec_profile_name) (str, cluster scope, default required) - The profile a cluster serves (a file of
    playbooks/vars/); a playbook that reproduces one NVIDIA playbook sets its own, the fleet reads it per cluster.
  - >-
    C(specdec_topology) (str, cluster scope, default direct) - How the cluster's Sparks are cabled: direct (two
    Sparks, one QSFP cable), switch (2 to 8 Sparks, each cabled on the same port to one switch) or ring (three
    Sparks, each one's port 0 to the next one's port 1). Set it on the cluster's group.
  - >-
    C(specdec_strict_inputs) (bool, cluster scope, default false) - Fail instead of warn when a variable with one of
    the collection's prefixes is not one the collection knows (a misspelling); for CI and AWX.
  - >-
    C(specdec_serve_frontend) (str, cluster scope, profile key C(frontend), default trtllm-serve) - The server:
    trtllm-serve, or Triton Inference Server's LLM API backend (one Spark).
  - >-
    C(specdec_serve_trtllm_version) (str, cluster scope, profile key C(trtllm_version), default required) - The
    TensorRT-LLM release of the image; selects the option table and the image tag. Required, except with Triton (the
    release its Triton release ships).
  - >-
    C(specdec_serve_triton_release) (str, cluster scope, profile key C(triton_release), default required) - Triton
    release YY.MM (frontend triton); its TensorRT-LLM comes from Triton's compatibility matrix.
  - >-
    C(specdec_serve_triton_config) (dict, cluster scope, profile key C(triton_config), default {}) - Triton model
    settings (max_batch_size 0, decoupled, cancellation_check_period_ms).
  - >-
    C(specdec_serve_triton_grpc_port) (int, cluster scope, profile key C(triton_grpc_port), default 8001) - Triton's
    gRPC port, unlike the HTTP and metrics ports.
  - >-
    C(specdec_serve_triton_metrics_port) (int, cluster scope, profile key C(triton_metrics_port), default 8002) -
    Triton's metrics port, unlike the HTTP and gRPC ports.
  - >-
    C(specdec_serve_method) (str, cluster scope, profile key C(method), default none) - The speculative-decoding
    method.
  - >-
    C(specdec_serve_model) (str, cluster scope, profile key C(model), default required) - The target model: a
    Hugging Face id, downloaded into the HF cache, or a path inside the container.
  - >-
    C(specdec_serve_draft_model) (str, cluster scope, profile key C(draft_model), default required) - The draft
    model (eagle3, draft_target): a Hugging Face id, downloaded into specdec_serve_draft_dir, or a path inside the
    container.
  - >-
    C(specdec_serve_draft_dir) (str, cluster scope, profile key C(draft_dir), default required) - Where the draft is
    downloaded, a directory under /models (e.g. /models/NAME/); it becomes speculative_model_dir.
  - >-
    C(specdec_serve_model_revision) (str, cluster scope, default null (left out)) - The target model's revision on
    Hugging Face (a branch, tag or commit); downloaded at it and given to the server as the revision option. Null:
    the default branch.
  - >-
    C(specdec_serve_draft_revision) (str, cluster scope, default null (left out)) - The draft model's revision on
    Hugging Face (a branch, tag or commit). Null: the default branch.
  - >-
    C(specdec_serve_max_draft_len) (int, cluster scope, profile key C(max_draft_len), default required) - Tokens the
    draft proposes per step. Required unless the method is none.
  - >-
    C(specdec_serve_options) (dict, cluster scope, profile key C(options), default {}) - Extra LLM API options (the
    extra-llm-api-config.yml); when set, replaces the profile's.
  - >-
    C(specdec_serve_extra_options) (dict, cluster scope, default {}) - A mapping deep-merged over
    specdec_serve_options.
  - >-
    C(specdec_serve_tp_size) (int, cluster scope, profile key C(tp_size), default 1; on a cluster the number of
    nodes / pp_size) - Tensor-parallel size: 1 on one Spark; on a cluster tp_size x pp_size is the number of nodes,
    and tp_size divides the model's attention heads.
  - >-
    C(specdec_serve_ep_size) (int, cluster scope, profile key C(ep_size), default null (left out)) - Expert-parallel
    size (--ep_size, MoE models; divides the tensor-parallel size); null leaves it out.
  - >-
    C(specdec_serve_pp_size) (int, cluster scope, profile key C(pp_size), default 1) - Pipeline-parallel size
    (--pp_size): tp_size x pp_size is the number of nodes; 1 with speculative decoding (TensorRT-LLM does not
    combine them).
  - >-
    C(specdec_serve_attention_heads) (int, cluster scope, profile key C(attention_heads), default null (left out)) -
    The target model's attention heads (num_attention_heads of its config.json), which the tensor-parallel size must
    divide; the downloaded config.json wins once it is on the node.
  - >-
    C(specdec_serve_kv_heads) (int, cluster scope, profile key C(kv_heads), default null (left out)) - The target
    model's key-value heads (num_key_value_heads); the tensor-parallel size must divide them or be a multiple of
    them.
  - >-
    C(specdec_serve_max_batch_size) (int, cluster scope, profile key C(max_batch_size), default null (left out)) -
    --max_batch_size; null leaves it out.
  - >-
    C(specdec_serve_max_num_tokens) (int, cluster scope, profile key C(max_num_tokens), default null (left out)) -
    --max_num_tokens; null leaves it out.
  - >-
    C(specdec_serve_kv_cache_free_gpu_memory_fraction) (float, cluster scope, profile key
    C(kv_cache_free_gpu_memory_fraction), default null (left out)) - --kv_cache_free_gpu_memory_fraction; null
    leaves it out.
  - >-
    C(specdec_serve_trust_remote_code) (bool, cluster scope, profile key C(trust_remote_code), default false) -
    --trust_remote_code.
  - >-
    C(specdec_serve_host) (str, cluster scope, profile key C(host), default 0.0.0.0) - The address the server
    listens on.
  - >-
    C(specdec_serve_port) (int, cluster scope, profile key C(port), default 8000) - The server's (HTTP) port.
  - >-
    C(specdec_serve_metrics) (bool, cluster scope, default true) - Serve Prometheus metrics (trtllm-serve's
    /prometheus/metrics with iteration stats; on releases without the speculative-decoding metrics, the collection's
    exporter next to the server).
  - >-
    C(specdec_serve_metrics_port) (int, cluster scope, default 9464) - Port of the collection's metrics exporter
    (releases without native speculative-decoding metrics), on the head, at specdec_serve_host.
  - >-
    C(specdec_serve_extra_args) (list, cluster scope, default []) - Arguments appended to the trtllm-serve command
    line; flags the plan sets (host, port, parallel sizes, the options file, the backend, the model) are refused
    here.
  - >-
    C(specdec_serve_mpi_export) (list, cluster scope, default ["CPATH", "TRITON_PTXAS_PATH", "HF_HOME"]) -
    Environment variables mpirun passes on with -x (a cluster; HF_TOKEN_PATH is added).
  - >-
    C(specdec_serve_validate_api) (str, cluster scope, profile key C(api), default completions; triton with Triton)
    - The API the endpoint validation calls (triton with the Triton frontend).
  - >-
    C(specdec_serve_validate_prompt) (str, cluster scope, profile key C(prompt), default Explain the benefits of
    speculative decoding:) - The validation request's prompt.
  - >-
    C(specdec_serve_validate_max_tokens) (int, cluster scope, profile key C(max_tokens), default 64) - The
    validation request's max_tokens.
  - >-
    C(specdec_serve_validate_requests) (int, cluster scope, default 1) - Validation requests sent.
  - >-
    C(specdec_serve_allowed_clients) (list, cluster scope, profile key C(allowed_clients), default []) - IPv4 or
    IPv6 addresses or networks admitted to the serving ports (chain DGX-SPECDEC of iptables and ip6tables, applied
    by the container before the server listens and kept by it after a reboot, a restart or a flush); empty: no
    rules, and rules of an earlier list are removed.
  - >-
    C(specdec_serve_liveness_timeout) (int, cluster scope, default 120) - Once the server answered its health check,
    seconds without an answer (a hang, a stopped process) after which the container ends it and Docker starts it
    again (checked every 10 s with a 5 s timeout, so the restart begins within this many seconds plus 15); 0: never.
  - >-
    C(specdec_serve_memory_check) (str, node scope, default fail) - What a model that cannot fit in memory does, in
    the pre-flight and right before the server starts.
  - >-
    C(specdec_serve_memory_headroom_gib) (float, node scope, default 8) - Memory the server needs beyond the weights
    (GiB).
  - >-
    C(specdec_serve_weights_gib) (float, node scope, profile key C(weights_gib), default null (left out)) - The
    weights' size before they are downloaded (afterwards they are measured on disk).
  - >-
    C(specdec_serve_drop_caches) (bool, node scope, default true) - Drop the page cache right before the server
    starts (NVIDIA's advice for unified memory).
  - >-
    C(specdec_serve_memory_guard) (bool, node scope, default false) - A background guard drops the page cache while
    MemAvailable is low, until the server is ready.
  - >-
    C(specdec_serve_memory_guard_below_gib) (float, node scope, default 8) - The guard drops the page cache below
    this MemAvailable (GiB).
  - >-
    C(specdec_serve_memory_guard_timeout) (int, node scope, default 3600) - Seconds the guard runs at most.
  - >-
    C(specdec_serve_tiktoken_encodings) (bool, cluster scope, profile key C(tiktoken_encodings), default false) -
    Fetch o200k_base and cl100k_base once with their SHA-256 and set TIKTOKEN_ENCODINGS_BASE (gpt-oss).
  - >-
    C(specdec_serve_tiktoken_base_url) (str, cluster scope, default
    https://openaipublic.blob.core.windows.net/encodings) - An http(s) URL of the directory holding <name>.tiktoken.
  - >-
    C(specdec_serve_tiktoken_sha256) (raw, cluster scope, default OpenAI's published SHA-256 of both) - A mapping of
    encoding name to its SHA-256.
  - >-
    C(trtllm_container_mode) (str, cluster scope, profile key C(container_mode), default single) - single (one
    Spark) or multinode (mpirun across the cluster); the profiles set it.
  - >-
    C(trtllm_container_name) (str, node scope, default trtllm-specdec; trtllm-multinode on a cluster; triton-specdec
    with Triton) - The container's name.
  - >-
    C(trtllm_container_image) (str, cluster scope, default required) - The image; when set, replaces repository and
    tag.
  - >-
    C(trtllm_container_image_repository) (str, cluster scope, default nvcr.io/nvidia/tensorrt-llm/release) - The
    TensorRT-LLM release repository.
  - >-
    C(trtllm_container_image_tag) (str, cluster scope, profile key C(image_tag), default the release; with Triton
    <release>-trtllm-python-py3) - The image tag; a profile may name its guide's own (spark-single-gpu-dev).
  - >-
    C(trtllm_container_triton_repository) (str, cluster scope, default nvcr.io/nvidia/tritonserver) - The repository
    of the Triton image (frontend triton).
  - >-
    C(trtllm_container_pull) (bool, node scope, default true) - Pull the image when missing; with false it must be
    on the node.
  - >-
    C(trtllm_container_gpus) (str, node scope, default auto) - auto: all GPUs when Docker lists the nvidia runtime.
  - >-
    C(trtllm_container_network_mode) (str, node scope, profile key C(network_mode), default host) - The container's
    network.
  - >-
    C(trtllm_container_published_ports) (list, node scope, profile key C(published_ports), default []) - Published
    ports, with a network of the container's own.
  - >-
    C(trtllm_container_ipc_mode) (str, node scope, default host) - The container's IPC mode.
  - >-
    C(trtllm_container_memlock) (int, node scope, default -1) - The memlock ulimit: -1 (unlimited) or bytes > 0.
  - >-
    C(trtllm_container_stack) (int, node scope, default 67108864) - The stack ulimit (bytes).
  - >-
    C(trtllm_container_restart_policy) (str, node scope, default unless-stopped) - Docker supervises the server; no
    is refused.
  - >-
    C(trtllm_container_env) (dict, cluster scope, profile key C(container_env), default {}) - Environment of the
    container.
  - >-
    C(trtllm_container_cuda_env) (dict, cluster scope, default {"CPATH": "/usr/local/cuda/include",
    "TRITON_PTXAS_PATH": "/usr/local/cuda/bin/ptxas"}) - CUDA environment on a cluster.
  - >-
    C(trtllm_container_devices) (list, node scope, default []) - Devices of the container (/dev/infiniband is added
    on a cluster).
  - >-
    C(trtllm_container_hf_cache_dir) (str, node scope, default <home>/.cache/huggingface) - The Hugging Face cache
    on the node (mounted at /root/.cache/huggingface).
  - >-
    C(trtllm_container_models_dir) (str, node scope, default <home>/models) - The models directory on the node
    (mounted at /models).
  - >-
    C(trtllm_container_config_dir) (str, node scope, default <home>/.dgx-spark) - The configuration directory on the
    node (mounted read-only at /etc/dgx-spark).
  - >-
    C(trtllm_container_install_sshd) (bool, cluster scope, default true) - On a cluster, install openssh-server and
    iptables in the container if the image lacks them.
  - >-
    C(trtllm_container_mpi_firewall) (bool, cluster scope, default true) - Close Open MPI's pinned ports
    (50100-50132) to every interface but loopback and, on a cluster, the QSFP ones (one Spark's server and Triton
    start Open MPI too: their listeners are pinned there and bound to loopback where Open MPI allows it).
  - >-
    C(trtllm_container_ssh_port) (int, cluster scope, default 2233) - The containers' sshd port on a cluster.
  - >-
    C(trtllm_container_nccl_ib_hca) (list, node scope, default the RoCE devices of the Up QSFP netdevs
    (ibdev2netdev)) - RDMA devices joined into NCCL_IB_HCA on a cluster.
  - >-
    C(trtllm_container_hf_token_source) (str, node scope, profile key C(hf_token_source), default file) - file (a
    root-only file in the configuration directory) or login (~/.cache/huggingface/token, where huggingface-cli login
    stores it; never removed).
  - >-
    C(trtllm_container_qsfp_interfaces) (list, node scope, default the node's Up QSFP netdevs) - QSFP netdevs for
    UCX, NCCL and Open MPI on a cluster.
  - >-
    C(trtllm_container_qsfp_addresses) (list, node scope, default the node's planned QSFP addresses) - The node's
    QSFP addresses (where sshd listens on a cluster).
  - >-
    C(netplan_qsfp_plan) (str, cluster scope, default addresses) - addresses (static), link_local, or dhcp (a
    switch's DHCP server).
  - >-
    C(netplan_qsfp_subnets) (list, cluster scope, default NVIDIA's: 192.168.100.0/24 and 192.168.101.0/24 on a
    switch, 192.168.0.0/24 to 192.168.5.0/24 on a ring) - The subnets of a switch (one per netdev of the cabled
    port: node N gets host N) or a ring (one per twin of each cable, cables numbered by node pair: the lower node
    .1, the higher .2).
  - >-
    C(netplan_qsfp_preset) (str, cluster scope, default seed) - The address preset for a node of a direct pair whose
    netplan_qsfp_addresses is empty.
  - >-
    C(netplan_qsfp_addresses) (raw, node scope, default {}) - This node's addresses: a mapping of QSFP netdev to
    A.B.C.D/N; replaces the preset.
  - >-
    C(netplan_qsfp_interfaces) (list, cluster scope, default ["enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1",
    "enP2p1s0f1np1"]) - The QSFP netdevs considered or written.
  - >-
    C(netplan_qsfp_mtu) (int, cluster scope, default 9000) - MTU of the QSFP netdevs (NCCL over RoCE needs 9000 on
    both ends); null leaves it alone.
  - >-
    C(netplan_qsfp_source_routing) (bool, cluster scope, default true) - A routing table per QSFP netdev.
  - >-
    C(netplan_qsfp_routing_table_base) (int, cluster scope, default 101) - The first routing table (one per netdev;
    253-255 avoided).
  - >-
    C(netplan_qsfp_allow_disruptive) (bool, cluster scope, default false) - Allow a plan that may cut the management
    path.
  - >-
    C(netplan_qsfp_management_address) (str, node scope, default ansible_host when it is an address, else the
    default route's) - The address the controller reaches the node at.
  - >-
    C(netplan_qsfp_file) (str, cluster scope, default /etc/netplan/40-cx7.yaml) - The netplan file written.
  - >-
    C(openmpi_hostfile_address) (str, node scope, default the node's first QSFP address) - This node's hostfile
    address, one of its QSFP addresses (mpirun hangs when the hostfile IPs differ from the interface IPs).
  - >-
    C(openmpi_hostfile_slots) (int, node scope, default 1) - Slots of this node in the hostfile.
  # END generated: inputs
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
