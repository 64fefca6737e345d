#!/usr/bin/env bash
# Entrypoint of the TensorRT-LLM containers of dgx_spark.specdec (replaces the curl | bash of NVIDIA's
# trtllm-mn-entrypoint.sh). Docker runs it as the container's command and restarts the container when
# the server exits, so the server comes back after a crash or a reboot without Ansible.
#
#   entrypoint.sh [--install-missing] [--sshd CONFIG] [--firewall PORTS IFACES] [--peer ADDRESS]...
#                 [--expect PATH=SHA256]... [--exists PATH]... [--daemon NAME] [-- COMMAND...]
#   entrypoint.sh --rank -- COMMAND...
#
# --install-missing  install openssh-server and iptables on the first start when the image lacks them
# --sshd        start sshd with CONFIG (keys and configuration are mounted read-only from the host);
#               without a COMMAND, sshd is the container's process (a worker of the cluster)
# --firewall    accept TCP to PORTS (first:last, Open MPI's pinned listeners) only on loopback and on the
#               comma-separated IFACES (the QSFP ones): Open MPI 4.1 binds them to every interface
# --expect      wait until PATH has this SHA-256: the container is recreated when the planned options
#               or hostfile change, and the server starts only once Ansible wrote the new ones
# --exists      wait until PATH exists (the markers of completed model downloads)
# --peer        wait until the peer's sshd takes the cluster key and the peer has every --exists PATH
# --daemon      COMMAND starts a process called NAME in the background and returns (Triton's
#               launch_triton_server.py does): stay while NAME runs, exit when it stops (Docker then
#               restarts the container), and stop it when the container is stopped
# COMMAND       exec'd once everything is there: trtllm-serve, or mpirun on the head
# --rank        how mpirun starts each rank: sshd sessions do not inherit the container's environment, so take
#               this node's NCCL_/UCX_ settings from the container's first process, and this node's RoCE v2 GID
#               index of the NCCL_IB_HCA devices (it differs between nodes and may change after a reboot: never
#               pinned), then exec COMMAND
set -euo pipefail

install_missing=0 sshd_config="" fw_ports="" fw_ifaces="" daemon="" rank=0 peers=() expects=() exists=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rank) rank=1; shift ;;
    --install-missing) install_missing=1; shift ;;
    --firewall) fw_ports=$2; fw_ifaces=$3; shift 3 ;;
    --sshd) sshd_config=$2; shift 2 ;;
    --peer) peers+=("$2"); shift 2 ;;
    --expect) expects+=("$2"); shift 2 ;;
    --exists) exists+=("$2"); shift 2 ;;
    --daemon) daemon=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "entrypoint: unknown argument $1" >&2; exit 2 ;;
  esac
done

log() { echo "[dgx-spark entrypoint] $*"; }

gid_index() {  # the RoCE v2 GID index (IPv4-mapped GID) shared by every device of NCCL_IB_HCA, if there is one
  local hca dir path n found="" index
  for hca in ${NCCL_IB_HCA//,/ }; do
    hca=${hca#=}; hca=${hca%%:*}
    dir=${DGX_SPARK_SYSFS:-/sys}/class/infiniband/$hca/ports/1
    [ -d "$dir/gids" ] || return 1
    index=""
    for path in "$dir"/gid_attrs/types/*; do
      n=${path##*/}
      [ "$(cat "$path" 2>/dev/null)" = "RoCE v2" ] || continue
      case "$(cat "$dir/gids/$n" 2>/dev/null)" in
        0000:0000:0000:0000:0000:ffff:*) if [ -z "$index" ] || [ "$n" -lt "$index" ]; then index=$n; fi ;;
      esac
    done
    [ -n "$index" ] || return 1
    [ -z "$found" ] || [ "$found" = "$index" ] || return 1
    found=$index
  done
  [ -n "$found" ] && echo "$found"
}

node_env() {  # NAME=VALUE\0... on stdin: export the NCCL_/UCX_ names not set already
  local pair name
  while IFS= read -r -d '' pair; do
    case "$pair" in
      NCCL_*=* | UCX_*=*)
        name=${pair%%=*}
        # shellcheck disable=SC2163  # exports the NAME=VALUE the container started with
        [ -n "${!name+x}" ] || export "$pair"
        ;;
    esac
  done
}

if [ "$rank" = 1 ]; then
  node_env </proc/1/environ 2>/dev/null || log "cannot read the container's environment (/proc/1/environ)" >&2
  if [ -z "${NCCL_IB_GID_INDEX:-}" ] && index=$(gid_index); then
    export NCCL_IB_GID_INDEX=$index
  fi
  exec "$@"
fi

need() {  # COMMAND PACKAGE: install PACKAGE on the first start of a container whose image lacks COMMAND
  command -v "$1" >/dev/null 2>&1 && return
  if [ "$install_missing" = 1 ]; then
    log "installing $2 (the image has no $1)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
  else
    log "$1 is missing in this image (trtllm_container_install_sshd is false)" >&2
    exit 1
  fi
}

close_mpi_ports() {  # in the node's network namespace (host network on a Spark): idempotent, at every start
  local cmd iface
  for cmd in iptables ip6tables; do
    command -v "$cmd" >/dev/null 2>&1 || continue
    "$cmd" -N DGX_SPARK_MPI 2>/dev/null || "$cmd" -F DGX_SPARK_MPI
    "$cmd" -A DGX_SPARK_MPI -i lo -j RETURN
    for iface in ${fw_ifaces//,/ }; do "$cmd" -A DGX_SPARK_MPI -i "$iface" -j RETURN; done
    "$cmd" -A DGX_SPARK_MPI -j DROP
    "$cmd" -C INPUT -p tcp --dport "$fw_ports" -j DGX_SPARK_MPI 2>/dev/null \
      || "$cmd" -I INPUT -p tcp --dport "$fw_ports" -j DGX_SPARK_MPI
  done
  log "MPI ports $fw_ports accept connections only on lo and $fw_ifaces"
}

if [ -n "$fw_ports" ]; then
  need iptables iptables
  close_mpi_ports
fi

if [ -n "$sshd_config" ]; then
  [ -x /usr/sbin/sshd ] || need /usr/sbin/sshd openssh-server
  mkdir -p /run/sshd
  ln -sfn /etc/dgx-spark/openmpi-hostfile /etc/openmpi-hostfile
  if [ $# -eq 0 ]; then
    log "sshd for mpirun ($sshd_config)"
    exec /usr/sbin/sshd -D -e -f "$sshd_config"
  fi
  /usr/sbin/sshd -e -f "$sshd_config"
fi
[ $# -gt 0 ] || { log "nothing to run" >&2; exit 2; }

missing() {
  local item path want
  for item in "${expects[@]}"; do
    path=${item%=*} want=${item##*=}
    if [ ! -f "$path" ] || [ "$(sha256sum "$path" | cut -d' ' -f1)" != "$want" ]; then
      echo "$path (planned content)"
      return
    fi
  done
  for path in "${exists[@]}"; do
    [ -e "$path" ] || { echo "$path"; return; }
  done
  for item in "${peers[@]}"; do
    # shellcheck disable=SC2029  # the paths are meant to be tested on the peer
    ssh -F /etc/dgx-spark/ssh/config -o ConnectTimeout=5 "$item" "for p in ${exists[*]:-}; do test -e \$p || exit 1; done" \
      </dev/null >/dev/null 2>&1 || { echo "peer $item (sshd with the cluster key, models downloaded)"; return; }
  done
}

waited=0
while what=$(missing) && [ -n "$what" ]; do
  [ $((waited % 30)) -eq 0 ] && log "waiting for $what"
  sleep 2
  waited=$((waited + 2))
done
log "starting: $*"
[ -n "$daemon" ] || exec "$@"

# The launcher returns once its server runs in the background: watch the server by name.
# shellcheck disable=SC2317,SC2329  # invoked by the trap below
stop_daemon() {
  log "stopping $daemon"
  pkill -TERM -x "$daemon" || true
  for _ in $(seq 1 50); do pgrep -x "$daemon" >/dev/null || exit 0; sleep 0.2; done
  pkill -KILL -x "$daemon" || true
  exit 0
}
trap stop_daemon TERM INT
"$@"
for _ in $(seq 1 30); do pgrep -x "$daemon" >/dev/null && break; sleep 1; done
while pgrep -x "$daemon" >/dev/null; do
  sleep 5 &
  wait $! || true
done
log "$daemon stopped" >&2
exit 1
