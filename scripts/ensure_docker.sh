#!/usr/bin/env bash
# Make sure a Docker engine answers: install docker.io and debootstrap when missing (Debian 12,
# root) and start dockerd in the background when no daemon is running. Safe to run again.
set -euo pipefail

if docker info >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "ensure_docker: no Docker engine answers and I am not root; start Docker or run as root" >&2
  exit 1
fi
if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  echo "ensure_docker: installing docker.io and debootstrap"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
  echo "ensure_docker: starting dockerd (log: /var/log/dockerd.log)"
  nohup dockerd >/var/log/dockerd.log 2>&1 &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && exit 0
    sleep 1
  done
  echo "ensure_docker: dockerd did not answer within 60 s; see /var/log/dockerd.log" >&2
  tail -n 20 /var/log/dockerd.log >&2 || true
  exit 1
fi
