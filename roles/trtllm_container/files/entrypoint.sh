#!/usr/bin/env bash
# Entrypoint of the TensorRT-LLM containers of dgx_spark.specdec (replaces the curl | bash of NVIDIA's
# trtllm-mn-entrypoint.sh). Docker runs it as the container's command and restarts the container when
# the server exits, so the server comes back after a crash or a reboot without Ansible.
#
#   entrypoint.sh [--install-missing] [--firewall SPEC] [--sshd CONFIG] [--peer ADDRESS]...
#                 [--expect PATH=SHA256]... [--exists PATH]... [--approval PATH=SHA256] [--daemon NAME]
#                 [--health URL --liveness SECONDS] [-- COMMAND...]
#   entrypoint.sh --rank -- COMMAND...
#   entrypoint.sh --clean-ranks
#
# --install-missing  install openssh-server and iptables on the first start when the image lacks them
# --firewall    apply SPEC (the endpoint's allow-list, Open MPI's ports; firewall.py next to it) before sshd or the
#               server starts, and keep it: a watcher restores it within 2 s after a flush or a firewall reload.
#               The container does not start what it guards when the rules cannot be applied (fail closed).
# --sshd        start sshd with CONFIG (keys and configuration are mounted read-only from the host);
#               without a COMMAND, sshd is the container's process (a worker of the cluster)
# --expect      wait until PATH has this SHA-256: the container is recreated when the planned options
#               or hostfile change, and the server starts only once Ansible wrote the new ones
# --exists      wait until PATH exists (the markers of completed model downloads)
# --approval    wait until PATH has this SHA-256 here and on every --peer: each node's memory check passed for
#               this server (written by Ansible after the check; it stays, so a reboot does not wait for Ansible)
# --peer        wait until the peer's sshd takes the cluster key and the peer has every --exists PATH
# --daemon      COMMAND starts a process called NAME in the background and returns (Triton's
#               launch_triton_server.py does): stay while NAME runs, exit when it stops (Docker then
#               restarts the container), and stop it when the container is stopped
# --health      once URL answered (the server was ready), a server that stops answering it for --liveness SECONDS
#               (a hang, a stopped process) is killed: the container exits and Docker starts it again
# --peer        before COMMAND, also end the ranks a lost head left on the peer (--clean-ranks there)
# COMMAND       run once everything is there: trtllm-serve, or mpirun on the head
# --rank        how mpirun starts each rank: sshd sessions do not inherit the container's environment, so take
#               this node's NCCL_/UCX_ settings from the container's first process, and this node's RoCE v2 GID
#               index of the NCCL_IB_HCA devices (it differs between nodes and may change after a reboot: never
#               pinned), then exec COMMAND (its process ID is kept in /run/dgx-spark-ranks for --clean-ranks)
# --clean-ranks end the ranks of an earlier mpirun still running in this container (their ssh sessions)
set -euo pipefail

install_missing=0 sshd_config="" fw_spec="" daemon="" rank=0 clean=0 health="" liveness=0 approval=""
peers=() expects=() exists=()
RANKS_DIR=${DGX_SPARK_RANKS_DIR:-/run/dgx-spark-ranks}
HEALTH_EVERY=${DGX_SPARK_HEALTH_EVERY:-10}  # seconds between health checks (tests shorten it)
while [ $# -gt 0 ]; do
  case "$1" in
    --rank) rank=1; shift ;;
    --clean-ranks) clean=1; shift ;;
    --install-missing) install_missing=1; shift ;;
    --firewall) fw_spec=$2; shift 2 ;;
    --health) health=$2; shift 2 ;;
    --liveness) liveness=$2; shift 2 ;;
    --sshd) sshd_config=$2; shift 2 ;;
    --peer) peers+=("$2"); shift 2 ;;
    --expect) expects+=("$2"); shift 2 ;;
    --approval) approval=$2; expects+=("$2"); shift 2 ;;
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
  { mkdir -p "$RANKS_DIR" && : >"$RANKS_DIR/$$"; } 2>/dev/null || true  # exec keeps this process ID
  exec "$@"
fi

if [ "$clean" = 1 ]; then
  # Each rank runs in the ssh session mpirun opened: end the whole session (its daemon and the rank's children).
  for file in "$RANKS_DIR"/*; do
    [ -e "$file" ] || continue
    pid=${file##*/}
    if kill -0 "$pid" 2>/dev/null; then
      sid=$(ps -o sid= -p "$pid" | tr -d ' ')
      log "ending rank $pid of an earlier mpirun (session $sid)"
      pkill -TERM -s "$sid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      pkill -KILL -s "$sid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$file"
  done
  exit 0
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

if [ -n "$fw_spec" ]; then
  need iptables iptables
  program="$(dirname "$fw_spec")/firewall.py"
  waited=0
  until [ -f "$fw_spec" ] && [ -f "$program" ]; do
    [ $((waited % 30)) -eq 0 ] && log "waiting for $fw_spec"
    sleep 2
    waited=$((waited + 2))
  done
  python3 "$program" apply "$fw_spec" || { log "the firewall is not in force: not starting" >&2; exit 1; }
  python3 -u "$program" watch "$fw_spec" 2 &
  watcher=$!
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
    check="for p in ${exists[*]:-}; do test -e \$p || exit 1; done"
    [ -z "$approval" ] || check+="; [ \"\$(sha256sum ${approval%=*} 2>/dev/null | cut -d' ' -f1)\" = ${approval##*=} ]"
    ssh -F /etc/dgx-spark/ssh/config -o ConnectTimeout=5 "$item" "$check" </dev/null >/dev/null 2>&1 \
      || { echo "peer $item (sshd with the cluster key, models downloaded, memory checked)"; return; }
  done
}

waited=0
while what=$(missing) && [ -n "$what" ]; do
  [ $((waited % 30)) -eq 0 ] && log "waiting for $what"
  sleep 2
  waited=$((waited + 2))
done
for item in "${peers[@]}"; do
  # A head that lost power left its ranks on the workers: they hold memory until ended.
  ssh -F /etc/dgx-spark/ssh/config -o ConnectTimeout=5 "$item" /bin/bash /etc/dgx-spark/entrypoint.sh --clean-ranks \
    </dev/null || log "could not end earlier ranks on $item" >&2
done
log "starting: $*"
if [ -z "$daemon" ] && [ -z "$health" ] && [ -z "${watcher:-}" ]; then
  exec "$@"
fi

# Supervise: the server (or the daemon the launcher leaves), the firewall's watcher and, once ready, the server's
# answers. Any of them failing ends the container, which Docker starts again (the firewall first).
server="" stopping=0
# shellcheck disable=SC2317,SC2329  # invoked by the trap below
stop() {
  stopping=1
  log "stopping"
  if [ -n "$daemon" ]; then pkill -TERM -x "$daemon" || true; fi
  if [ -n "$server" ]; then kill -TERM "$server" 2>/dev/null || true; fi
  for _ in $(seq 1 50); do
    if { [ -z "$daemon" ] || ! pgrep -x "$daemon" >/dev/null; } && { [ -z "$server" ] || ! kill -0 "$server" 2>/dev/null; }; then
      exit 0
    fi
    sleep 0.2
  done
  if [ -n "$daemon" ]; then pkill -KILL -x "$daemon" || true; fi
  if [ -n "$server" ]; then kill -KILL "$server" 2>/dev/null || true; fi
  exit 0
}
trap stop TERM INT

answers() {  # the server answers its health URL within 5 s
  python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' "$health" >/dev/null 2>&1
}

"$@" &
server=$!
if [ -n "$daemon" ]; then
  wait "$server" || true  # the launcher returns once its server runs in the background
  server=""
  for _ in $(seq 1 30); do pgrep -x "$daemon" >/dev/null && break; sleep 1; done
fi
ready=0 last_ok=0 next_check=0
while true; do
  sleep 2 &
  wait $! || true
  [ "$stopping" = 0 ] || continue
  if [ -n "$server" ] && ! kill -0 "$server" 2>/dev/null; then
    wait "$server" && code=0 || code=$?
    log "the server exited ($code)" >&2
    exit $((code == 0 ? 1 : code))
  fi
  if [ -n "$daemon" ] && ! pgrep -x "$daemon" >/dev/null; then
    log "$daemon stopped" >&2
    exit 1
  fi
  if [ -n "${watcher:-}" ] && ! kill -0 "$watcher" 2>/dev/null; then
    log "the firewall watcher stopped: ending the server (fail closed)" >&2
    stop
  fi
  if [ -z "$health" ] || [ "$liveness" -le 0 ] || [ "$SECONDS" -lt "$next_check" ]; then
    continue
  fi
  next_check=$((SECONDS + HEALTH_EVERY))
  if answers; then
    [ "$ready" = 1 ] || log "ready: $health answers; restarted when it stops answering for ${liveness} s"
    ready=1 last_ok=$SECONDS
  elif [ "$ready" = 1 ] && [ $((SECONDS - last_ok)) -ge "$liveness" ]; then
    # Silent since the last answer (wall clock): a hang or a stopped process. Docker starts the container again.
    log "$health has not answered for $((SECONDS - last_ok)) s after the server was ready: restarting it" >&2
    if [ -n "$daemon" ]; then pkill -KILL -x "$daemon" || true; fi
    if [ -n "$server" ]; then pkill -KILL -P "$server" 2>/dev/null || true; kill -KILL "$server" 2>/dev/null || true; fi
    exit 1
  fi
done
