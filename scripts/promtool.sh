#!/usr/bin/env bash
# Print the path of a promtool binary; `promtool.sh check` also validates the monitoring rules and runs
# their unit tests.
#
# promtool on PATH wins. Otherwise Debian's `prometheus` package (Debian 12: 2.42, the version the rules
# and tests target) is fetched with `apt-get download` and unpacked with `dpkg-deb -x` into
# ${SPARK_LAB_CACHE:-/var/cache/spark-lab}/promtool/: no service is installed and nothing is apt-installed.
# The unpacked binary is reused on the next run.
#
# Exit status: 0 success, 1 check/test failure, 2 usage, 3 promtool cannot be obtained (no apt, no network).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${SPARK_LAB_CACHE:-/var/cache/spark-lab}/promtool"
EXTRACTED="$CACHE/root/usr/bin/promtool"
RULES="$ROOT/roles/specdec_monitoring/files/rules/trtllm_specdec.rules.yml"
TESTS_DIR="$ROOT/tests/monitoring/promtool"

download() {
  # apt-get download writes into the current directory; a stale package list (404) gets one refresh
  # when we are root, since that is what an operator would do by hand.
  (cd "$1" && apt-get download prometheus >&2) && return 0
  if [ "$(id -u)" -eq 0 ]; then
    echo "promtool.sh: apt-get download failed; refreshing the package lists once" >&2
    apt-get update -qq >&2 || return 1
    (cd "$1" && apt-get download prometheus >&2) && return 0
  fi
  return 1
}

find_promtool() {
  if command -v promtool >/dev/null 2>&1; then
    command -v promtool
    return 0
  fi
  if [ -x "$EXTRACTED" ]; then
    echo "$EXTRACTED"
    return 0
  fi
  if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
    echo "promtool.sh: no promtool on PATH and no apt-get/dpkg-deb to fetch Debian's prometheus package" >&2
    return 3
  fi
  mkdir -p "$CACHE"
  local tmp
  tmp="$(mktemp -d "$CACHE/download.XXXXXX")"
  if ! download "$tmp"; then
    rm -rf "$tmp"
    echo "promtool.sh: apt-get download prometheus failed (network or apt sources?)" >&2
    return 3
  fi
  local deb
  for deb in "$tmp"/prometheus_*.deb; do
    dpkg-deb -x "$deb" "$tmp/root"
  done
  if [ ! -x "$tmp/root/usr/bin/promtool" ]; then
    rm -rf "$tmp"
    echo "promtool.sh: the prometheus package holds no usr/bin/promtool" >&2
    return 3
  fi
  # Swap the finished tree in last, so that an interrupted run never leaves a half-extracted binary.
  rm -rf "$CACHE/root"
  mv "$tmp/root" "$CACHE/root"
  rm -rf "$tmp"
  echo "$EXTRACTED"
}

check() {
  local promtool=$1 status=0 test_file found=0
  "$promtool" --version >&2 || true
  "$promtool" check rules "$RULES" || status=1
  # rule_files in the tests are relative to the test file, so run from anywhere.
  for test_file in "$TESTS_DIR"/*.test.yml; do
    [ -e "$test_file" ] || continue
    found=1
    echo "promtool test rules $test_file" >&2
    "$promtool" test rules "$test_file" || status=1
  done
  if [ "$found" -eq 0 ]; then
    echo "promtool.sh: no unit tests in $TESTS_DIR" >&2
    status=1
  fi
  return "$status"
}

case "${1:-}" in
  "")
    find_promtool
    ;;
  check)
    promtool_bin="$(find_promtool)" || exit $?
    check "$promtool_bin"
    ;;
  *)
    echo "usage: $0 [check]" >&2
    exit 2
    ;;
esac
