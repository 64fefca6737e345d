#!/usr/bin/env bash
# End-to-end test of playbooks/qsfp_link.yml (spark_facts -> specdec_plan scope=network -> netplan_qsfp check
# -> netplan_qsfp) on two throwaway containers (see lab.sh); converge.yml imports that playbook.
# Run from anywhere as root: tests/netplan_qsfp/run.sh [--keep]. Logs: $NQ_LOGDIR (/tmp/netplan_qsfp-test).
# The checks are eval strings that expand later, on purpose: single quotes keep them literal.
# shellcheck disable=SC2016
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
LOGDIR="${NQ_LOGDIR:-/tmp/netplan_qsfp-test}"
KEEP=0; [[ ${1:-} == --keep ]] && KEEP=1
A=nq-spark-a; B=nq-spark-b
mkdir -p "$LOGDIR"
cd "$REPO" || exit 1
export ANSIBLE_CONFIG="$REPO/ansible.cfg" ANSIBLE_COLLECTIONS_PATH="$REPO/.collections" ANSIBLE_FORCE_COLOR=0
PASS=0; FAIL=0; N=0

ok()   { PASS=$((PASS + 1)); printf 'PASS  %s\n' "$*"; }
bad()  { FAIL=$((FAIL + 1)); printf 'FAIL  %s\n' "$*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

# play NAME [ansible-playbook args...]: sets RC, LOG, SECS, CHANGED (sum over hosts).
# Runs converge.yml, or $PLAYBOOK (a file in this directory) when set: PLAYBOOK=preflight.yml play NAME ...
play() {
  local name=$1; shift
  N=$((N + 1)); LOG="$LOGDIR/$(printf '%02d' "$N")-$name.log"
  local start; start=$(date +%s.%N)
  "$REPO/.venv/bin/ansible-playbook" -i "$HERE/inventory.yml" "$HERE/${PLAYBOOK:-converge.yml}" "$@" >"$LOG" 2>&1
  RC=$?
  SECS=$(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)")
  CHANGED=$(grep -Eo 'changed=[0-9]+' "$LOG" | cut -d= -f2 | paste -sd+ | bc)
  printf '      [%s] rc=%s changed=%s %ss (%s)\n' "$name" "$RC" "${CHANGED:-?}" "$SECS" "$LOG"
}
has() { grep -qF -- "$1" "$LOG"; }
# refused MSG...: the run failed in the plan (pre-flight, before the role writes anything) with every MSG.
refused() {
  [ "$RC" -ne 0 ] && has "problem(s) found before anything changed" && ! has "Write the QSFP netplan file" || return 1
  local m; for m in "$@"; do has "$m" || return 1; done
}
sha() { docker exec "$1" sh -c "sha1sum $2 2>/dev/null | cut -c1-40 || echo absent"; }
addrs() { docker exec "$1" sh -c 'for i in enp1s0f1np1 enP2p1s0f1np1; do ip -o -4 addr show dev $i | awk "{print \$2, \$4}"; done' | paste -sd' '; }

"$HERE/lab.sh" image || { echo "image build failed"; exit 1; }
"$HERE/lab.sh" down
"$HERE/lab.sh" up || { echo "lab up failed"; exit 1; }
"$HERE/lab.sh" wire straight || { echo "wiring failed"; exit 1; }
OTHER_A=$(sha $A /etc/netplan/01-other.yaml)

echo "== 0. check mode on fresh nodes"
play fresh-check --check
check "check mode on fresh nodes reports changes, writes nothing" eval '[ "$RC" -eq 0 -a "$CHANGED" -gt 0 -a "$(sha $A /etc/netplan/40-cx7.yaml)" = "" ]'

echo "== 1. first run (default preset: the two-Spark playbook's address plan, port 1 cabled; node a: ibdev2netdev, node b: operstate fallback)"
play first-run
T1=$SECS
check "first run succeeds and changes" test "$RC" -eq 0 -a "$CHANGED" -gt 0
check "exported facts (a)" has "msg: up=['enp1s0f1np1', 'enP2p1s0f1np1'] addresses=['192.168.200.12', '192.168.200.14']"
check "exported facts (b)" has "msg: up=['enp1s0f1np1', 'enP2p1s0f1np1'] addresses=['192.168.200.13', '192.168.200.15']"

echo "== 2. second run"
play second-run
T2=$SECS
check "second run succeeds with changed=0" test "$RC" -eq 0 -a "$CHANGED" -eq 0

echo "== 3. state on the nodes"
check "40-cx7.yaml is 600 root:root" test "$(docker exec $A stat -c '%a %U:%G' /etc/netplan/40-cx7.yaml)" = "600 root:root"
docker exec $A cat /etc/netplan/40-cx7.yaml | sed 's/^/      | /'
GEN=$(docker exec $A sh -c 'ls /run/systemd/network/')
echo "      /run/systemd/network on a: ${GEN//$'\n'/ }"
check "generated networkd files exist" test -n "$(echo "$GEN" | grep -E '^10-netplan-enp1s0f1np1.network$')" -a -n "$(echo "$GEN" | grep -E '^10-netplan-enP2p1s0f1np1.network$')"
check "addresses on a" test "$(addrs $A)" = "enp1s0f1np1 192.168.200.12/24 enP2p1s0f1np1 192.168.200.14/24"
check "addresses on b" test "$(addrs $B)" = "enp1s0f1np1 192.168.200.13/24 enP2p1s0f1np1 192.168.200.15/24"
check "MTU 9000" test "$(docker exec $B cat /sys/class/net/enP2p1s0f1np1/mtu)" = 9000
check "source routing: replies from .14 leave by enP2p1s0f1np1" \
  test -n "$(docker exec $A ip route get 192.168.200.13 from 192.168.200.14 | grep 'dev enP2p1s0f1np1')"
check "source routing: replies from .12 leave by enp1s0f1np1" \
  test -n "$(docker exec $A ip route get 192.168.200.15 from 192.168.200.12 | grep 'dev enp1s0f1np1 ')"
check "policy rules present" test "$(docker exec $A ip rule | grep -cE 'from 192.168.200.1[24] lookup 10[12]')" -eq 2
check "other netplan file untouched" test "$(sha $A /etc/netplan/01-other.yaml)" = "$OTHER_A"
check "management eth0 untouched" test -n "$(docker exec $A ip -o -4 addr show dev eth0 | grep ' 172\.17\.')"
check "no run directory left behind" test -z "$(docker exec $A sh -c 'ls -d /var/lib/netplan_qsfp/run-* 2>/dev/null')"
PLAYBOOK_SHA_A=$(sha $A /etc/netplan/40-cx7.yaml); PLAYBOOK_SHA_B=$(sha $B /etc/netplan/40-cx7.yaml)

echo "== 4. check mode with another preset and plan; the read-only pre-flight alone"
play check-mode --check --diff -e netplan_qsfp_preset=two_subnets
check "check mode reports the change" eval '[ "$RC" -eq 0 -a "$CHANGED" -gt 0 ] && has "+        - 192.168.100.10/24"'
check "check mode wrote nothing" test "$(sha $A /etc/netplan/40-cx7.yaml)" = "$PLAYBOOK_SHA_A" -a "$(addrs $A)" = "enp1s0f1np1 192.168.200.12/24 enP2p1s0f1np1 192.168.200.14/24"
play check-link-local --check --diff -e netplan_qsfp_plan=link_local
check "link_local plan renders link-local: [ipv4]" eval '[ "$RC" -eq 0 ] && has "+      link-local: [ipv4]"'
PLAYBOOK=preflight.yml play preflight-only
check "pre-flight alone (spark_facts, specdec_plan, tasks_from: check) passes read-only" eval '[ "$RC" -eq 0 -a "$CHANGED" -eq 0 ] &&
  has "Check the planned netplan file with netplan generate" && ! has "Write the QSFP netplan file"'
check "pre-flight wrote nothing" test "$(sha $A /etc/netplan/40-cx7.yaml)" = "$PLAYBOOK_SHA_A" -a "$(sha $B /etc/netplan/40-cx7.yaml)" = "$PLAYBOOK_SHA_B"

echo "== 5. invalid plans fail before anything is written"
play bad-address -e '{"netplan_qsfp_addresses": {"enp1s0f1np1": "192.168.200.300/24"}}'
check "bad CIDR fails naming the variable, host and value" refused \
  "netplan_qsfp_addresses on nq-spark-a (enp1s0f1np1): '192.168.200.300/24' is not an IPv4 address with a prefix length"
play bad-key -e '{"netplan_qsfp_addresses": {"eth0": "192.168.50.1/24"}}'
check "non-QSFP key fails" refused "netplan_qsfp_addresses on nq-spark-b: 'eth0' is not a QSFP netdev"
play duplicate -e '{"netplan_qsfp_addresses": {"enp1s0f1np1": "192.168.200.20/24"}}'
check "same address on both nodes fails" refused "netplan_qsfp_addresses on nq-spark-a, netplan_qsfp_addresses on nq-spark-b: \
192.168.200.20 is planned more than once (nq-spark-a enp1s0f1np1, nq-spark-b enp1s0f1np1)"
play subnets -e '{"netplan_qsfp_addresses": "{{ {\"enp1s0f1np1\": \"192.168.200.20/24\"} if inventory_hostname == \"nq-spark-a\" else {\"enp1s0f1np1\": \"192.168.201.21/24\"} }}"}'
check "ends of a link in different subnets fail" refused "netplan_qsfp_addresses on nq-spark-a, netplan_qsfp_addresses on nq-spark-b: \
the ends of link enp1s0f1np1 are in different subnets (nq-spark-a 192.168.200.20/24, nq-spark-b 192.168.201.21/24)"
play not-up -e '{"netplan_qsfp_addresses": {"enp1s0f0np0": "192.168.202.1/24"}}'
check "address on a Down netdev fails" refused \
  "netplan_qsfp_addresses on nq-spark-a: 'enp1s0f0np0' is not Up (Up: enp1s0f1np1, enP2p1s0f1np1, from ibdev2netdev)" \
  "netplan_qsfp_addresses on nq-spark-b: 'enp1s0f0np0' is not Up (Up: enp1s0f1np1, enP2p1s0f1np1, from /sys/class/net/*/operstate)"
# 192.168.200.12 is node a's address on enp1s0f1np1 since the first run: the plan reconfigures the netdev that
# carries it (node a) and puts it inside a planned subnet (both nodes).
play disruptive -e netplan_qsfp_management_address=192.168.200.12
check "plan touching the management path is refused" refused \
  "netplan_qsfp_preset=seed on nq-spark-a: enp1s0f1np1 carries the management address 192.168.200.12; configuring it could cut the node off from the controller (set netplan_qsfp_allow_disruptive: true to override)" \
  "netplan_qsfp_preset=seed on nq-spark-b: the management address 192.168.200.12 lies in the planned subnet 192.168.200.0/24 (192.168.200.13/24 on enp1s0f1np1) (set netplan_qsfp_allow_disruptive: true to override)"
play disruptive-allowed -e netplan_qsfp_management_address=192.168.200.12 -e netplan_qsfp_allow_disruptive=true
check "netplan_qsfp_allow_disruptive=true lets it through (changed=0)" \
  eval '[ "$RC" -eq 0 -a "$CHANGED" -eq 0 ] && ! has "netplan_qsfp_allow_disruptive: true to override"'
check "nothing written by the failed runs" test "$(sha $A /etc/netplan/40-cx7.yaml)" = "$PLAYBOOK_SHA_A" -a "$(sha $B /etc/netplan/40-cx7.yaml)" = "$PLAYBOOK_SHA_B"

echo "== 6. rollback"
play apply-fails -e netplan_qsfp_preset=two_subnets -e netplan_qsfp_apply_command=/bin/false
check "failed apply is rolled back at once" eval '[ "$RC" -ne 0 ] && has '\''Rollback: restored the previous /etc/netplan/40-cx7.yaml'\'''
check "file and addresses back to the playbook's address plan" test "$(sha $A /etc/netplan/40-cx7.yaml)" = "$PLAYBOOK_SHA_A" -a "$(addrs $A)" = "enp1s0f1np1 192.168.200.12/24 enP2p1s0f1np1 192.168.200.14/24"
play watchdog -e netplan_qsfp_preset=two_subnets -e netplan_qsfp_confirm_timeout=3 \
  -e '{"netplan_qsfp_apply_command": "sh -c \"sleep 6; exec /usr/local/sbin/lab-networkd-apply\""}'
check "unconfirmed apply is rolled back by the node-side watchdog" eval '[ "$RC" -ne 0 ] && has '\''watchdog already restored the previous configuration'\'''
check "file and addresses back to the playbook's address plan" test "$(sha $B /etc/netplan/40-cx7.yaml)" = "$PLAYBOOK_SHA_B" -a "$(addrs $B)" = "enp1s0f1np1 192.168.200.13/24 enP2p1s0f1np1 192.168.200.15/24"

echo "== 7. plan change and back"
play two-subnets -e netplan_qsfp_preset=two_subnets
check "switch to two_subnets" test "$RC" -eq 0 -a "$CHANGED" -gt 0 -a "$(addrs $A)" = "enp1s0f1np1 192.168.100.10/24 enP2p1s0f1np1 192.168.101.10/24"
check "no source routing for two subnets" test "$(docker exec $A ip rule | grep -c 'lookup 10[12]')" -eq 0
play back-to-playbook-plan
check "back to the playbook's address plan" test "$RC" -eq 0 -a "$CHANGED" -gt 0 -a "$(addrs $B)" = "enp1s0f1np1 192.168.200.13/24 enP2p1s0f1np1 192.168.200.15/24"
play playbook-plan-again
check "playbook's address plan again: changed=0" test "$RC" -eq 0 -a "$CHANGED" -eq 0

echo "== 8. cabling faults"
"$HERE/lab.sh" wire cross
play mismatch
check "mismatched port pair fails naming each node's Up ports" refused "The nodes do not see the same QSFP ports Up" \
  "nq-spark-a: enp1s0f1np1, enP2p1s0f1np1 (port 1, from ibdev2netdev); nq-spark-b: enp1s0f0np0, enP2p1s0f0np0 (port 0, from /sys/class/net/*/operstate)"
check "mismatch failed before writing" test "$(sha $A /etc/netplan/40-cx7.yaml)" = "$PLAYBOOK_SHA_A" -a "$(sha $B /etc/netplan/40-cx7.yaml)" = "$PLAYBOOK_SHA_B"
"$HERE/lab.sh" wire none
play unplugged
check "no Up port fails with 'cable unplugged?'" refused \
  "nq-spark-a: no QSFP port is Up (from ibdev2netdev); nq-spark-b: no QSFP port is Up (from /sys/class/net/*/operstate): cable unplugged?"
check "unplugged failed before writing" test "$(sha $A /etc/netplan/40-cx7.yaml)" = "$PLAYBOOK_SHA_A" -a "$(sha $B /etc/netplan/40-cx7.yaml)" = "$PLAYBOOK_SHA_B"

if [[ $KEEP == 0 ]]; then "$HERE/lab.sh" down; fi
echo
echo "first run ${T1}s, second run ${T2}s; $PASS passed, $FAIL failed"
[[ $FAIL -eq 0 ]]
