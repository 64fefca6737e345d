#!/usr/bin/env bash
# Throwaway two-node lab for the netplan_qsfp role (root, local images only, no registry).
#   lab.sh image            build $NQ_IMAGE when missing: debootstrap bookworm minbase with
#                           netplan.io, iproute2, python3 from the machine's Debian mirror (~2 min)
#   lab.sh up               start nq-spark-a / nq-spark-b (NET_ADMIN), install the apply helper,
#                           ibdev2netdev on node a only (node b exercises the operstate fallback)
#   lab.sh wire straight    QSFP "cable" on port 1 of both nodes (f1<->f1 Up, f0<->f0 Down)
#   lab.sh wire cross       port 1 of node a cabled to port 0 of node b (mismatched pair)
#   lab.sh wire none        no cable (every QSFP netdev down)
#   lab.sh down             remove the containers (their veths go with them)
# Image: $NQ_IMAGE, default local/netplan-qsfp-test:latest (see `image`). The containers only ever
# carry 192.168.x addresses on the QSFP veths; their eth0 (docker bridge) is the "management NIC".
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# The lab's simulated Spark image (make test builds it first); any image with python3 + netplan.io works.
IMAGE="${NQ_IMAGE:-local/spark-sim:latest}"
A=nq-spark-a
B=nq-spark-b
LABSIM="$REPO/molecule/resources/lab/images/spark-sim/files/usr/local"
QSFP=(enp1s0f0np0 enP2p1s0f0np0 enp1s0f1np1 enP2p1s0f1np1)

pid() { docker inspect -f '{{.State.Pid}}' "$1"; }
in_ns() { local p; p=$(pid "$1"); shift; nsenter -t "$p" -n "$@"; }

unwire() {
  local n i
  for n in "$A" "$B"; do
    for i in "${QSFP[@]}"; do in_ns "$n" ip link del "$i" 2>/dev/null || true; done
  done
}

link() {  # link IF_A IF_B UP|DOWN: veth between node a's IF_A and node b's IF_B
  ip link add nqtmpa netns "$(pid "$A")" type veth peer name nqtmpb netns "$(pid "$B")"
  in_ns "$A" ip link set nqtmpa name "$1"
  in_ns "$B" ip link set nqtmpb name "$2"
  if [[ $3 == UP ]]; then
    in_ns "$A" ip link set "$1" up
    in_ns "$B" ip link set "$2" up
  fi
}

case "${1:-}" in
  image)
    docker image inspect "$IMAGE" >/dev/null 2>&1 && exit 0
    if [[ $IMAGE == local/spark-sim:latest ]]; then
      exec "$REPO/molecule/resources/lab/lab" build
    fi
    root=$(mktemp -d /tmp/nq-rootfs.XXXXXX)
    trap 'rm -rf --one-file-system "$root"' EXIT
    mirror=${NQ_MIRROR:-$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -E '/debian/?$' | head -n1)}
    debootstrap --variant=minbase --include=netplan.io,iproute2,python3 bookworm "$root" \
      "${mirror:-http://deb.debian.org/debian}" >/tmp/nq-debootstrap.log 2>&1 \
      || { tail -n 20 /tmp/nq-debootstrap.log >&2; exit 1; }
    tar --numeric-owner -C "$root" -c . | docker import -c 'CMD ["sleep","infinity"]' - "$IMAGE" >/dev/null
    ;;
  up)
    for n in "$A" "$B"; do
      docker rm -f "$n" >/dev/null 2>&1 || true
      # SPARK_LAB_NODE_DIR: only read by local/spark-sim's entrypoint (NQ_IMAGE=local/spark-sim:latest).
      docker run -d --name "$n" --hostname "$n" --cap-add NET_ADMIN -e SPARK_LAB_NODE_DIR=/tmp/nq-node \
        "$IMAGE" sleep infinity >/dev/null
      # The lab's apply helper from the checkout (wrapper plus library), newer than any image.
      [[ -f $LABSIM/sbin/lab-networkd-apply ]] || { echo "missing $LABSIM/sbin/lab-networkd-apply" >&2; exit 1; }
      docker cp "$LABSIM/sbin/lab-networkd-apply" "$n:/usr/local/sbin/lab-networkd-apply"
      if [[ -d $LABSIM/lib/spark-lab ]]; then
        docker exec "$n" mkdir -p /usr/local/lib/spark-lab
        docker cp "$LABSIM/lib/spark-lab/." "$n:/usr/local/lib/spark-lab"
      fi
      docker exec "$n" sh -c 'chmod 0755 /usr/local/sbin/lab-networkd-apply; mkdir -p /etc/netplan;
        printf "network:\n  version: 2\n" > /etc/netplan/01-other.yaml; chmod 0600 /etc/netplan/01-other.yaml'
    done
    # Node b never has ibdev2netdev: it exercises the /sys/class/net/*/operstate fallback.
    docker exec "$B" rm -f /usr/local/bin/ibdev2netdev
    if [[ -f $LABSIM/bin/ibdev2netdev ]]; then
      docker cp "$LABSIM/bin/ibdev2netdev" "$A:/usr/local/bin/ibdev2netdev"
      docker exec "$A" chmod 0755 /usr/local/bin/ibdev2netdev
    fi
    ;;
  wire)
    unwire
    case "${2:-straight}" in
      straight)
        link enp1s0f1np1 enp1s0f1np1 UP; link enP2p1s0f1np1 enP2p1s0f1np1 UP
        link enp1s0f0np0 enp1s0f0np0 DOWN; link enP2p1s0f0np0 enP2p1s0f0np0 DOWN ;;
      cross)
        link enp1s0f1np1 enp1s0f0np0 UP; link enP2p1s0f1np1 enP2p1s0f0np0 UP
        link enp1s0f0np0 enp1s0f1np1 DOWN; link enP2p1s0f0np0 enP2p1s0f1np1 DOWN ;;
      none)
        link enp1s0f1np1 enp1s0f1np1 DOWN; link enP2p1s0f1np1 enP2p1s0f1np1 DOWN
        link enp1s0f0np0 enp1s0f0np0 DOWN; link enP2p1s0f0np0 enP2p1s0f0np0 DOWN ;;
      *) echo "wire straight|cross|none" >&2; exit 2 ;;
    esac
    sleep 1  # let the veth operstate settle
    ;;
  down)
    docker rm -f "$A" "$B" >/dev/null 2>&1 || true
    ;;
  *)
    sed -n '2,14p' "$0"; exit 2 ;;
esac
