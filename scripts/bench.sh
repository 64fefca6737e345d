#!/usr/bin/env bash
# `make bench`: a benchmark, not a timed test. On a fresh lab instance of its own (prefix bench-),
# run the two-Spark playbook twice and report the first converge, the no-op re-run (which must
# change nothing) and the tasks per host. Then playbooks/fleet.yml on fleets of 2, 5 and 10 nodes, each
# on a fresh lab instance of its own (prefixes bench-f2-, bench-fleet-, bench-f10-): its first converge and
# its no-op re-run (which must report changed=0, else the bench fails), with the controller's CPU time of
# the no-op run (fleet_scaling). The 5-node fleet (2 pairs + 1 single) is the fleet the other figures are
# of: its no-op re-run also goes through ansible-runner in the EE (make ee first). Last, the draft-length
# tuner against a full sweep on held-out profiles. The figures go to build/bench.json.
# BENCH_ONLY=scaling runs the fleet scaling part alone (no pair, no EE, no tuner) and replaces only
# fleet_scaling in build/bench.json, keeping the other figures there.
set -euo pipefail
cd "$(dirname "$0")/.."
export SPARK_LAB_PREFIX=${SPARK_LAB_PREFIX:-bench-}
export HF_TOKEN=${HF_TOKEN:-hf_BenchToken1234}
only=${BENCH_ONLY:-}
[[ -z $only || $only == scaling ]] || { echo "bench: BENCH_ONLY is empty or 'scaling', not '$only'" >&2; exit 2; }
lab=molecule/resources/lab/lab
mkdir -p build

# Every lab instance the bench brings up starts from nothing and is torn down, also on failure.
labs=()
teardown() { local p; for p in "${labs[@]}"; do SPARK_LAB_PREFIX=$p "$lab" down >/dev/null 2>&1 || true; done; }
trap teardown EXIT
lab_up() {  # PREFIX [up options]: a fresh lab instance
  labs+=("$1")
  SPARK_LAB_PREFIX=$1 "$lab" down >/dev/null 2>&1 || true
  SPARK_LAB_PREFIX=$1 "$lab" up "${@:2}"
}
lab_down() { SPARK_LAB_PREFIX=$1 "$lab" down >/dev/null 2>&1; }

run() {  # NAME [INVENTORY PLAYBOOK]: run a playbook, log to build/bench-NAME.log; build/bench-NAME.time gets
         # "wall user sys" in seconds, user and sys of ansible-playbook and all its children (bash's time)
  local TIMEFORMAT='%3R %3U %3S'
  if ! { time ansible-playbook -i "${2:-inventories/lab}" "${3:-playbooks/two_spark_eagle3.yml}" \
           >"build/bench-$1.log" 2>&1; } 2>"build/bench-$1.time"; then
    echo "bench: the $1 run failed; see build/bench-$1.log" >&2
    tail -n 30 "build/bench-$1.log" >&2
    exit 1
  fi
}
wall() { awk '{ printf "%.1f\n", $1 }' "build/bench-$1.time"; }  # NAME: the run's wall seconds

if [[ -z $only ]]; then
  lab_up "$SPARK_LAB_PREFIX"
  run first
  run noop
  first=$(wall first)
  noop=$(wall noop)
  lab_down "$SPARK_LAB_PREFIX"
fi

# The fleets, each on an instance of its own, after the pair's lab is gone (same machine, same load).
fleet() {  # NAME PAIRS SINGLES: on lab instance bench-NAME-, playbooks/fleet.yml twice (logs build/bench-NAME-*.log)
  local name=$1 inv changed
  lab_up "bench-$name-" --pairs "$2" --singles "$3"
  inv=$(SPARK_LAB_PREFIX=bench-$name- "$lab" inventory)
  run "$name-first" "$inv" playbooks/fleet.yml
  run "$name-noop" "$inv" playbooks/fleet.yml
  changed=$(awk '/^[^ ]+ +: ok=[0-9]/ { for (i = 1; i <= NF; i++) if (sub(/^changed=/, "", $i)) n += $i } END { print n + 0 }' \
    "build/bench-$name-noop.log")
  if [[ $changed != 0 ]]; then
    echo "bench: the no-op re-run of playbooks/fleet.yml on $(($2 * 2 + $3)) nodes reported changed=$changed;" \
      "see build/bench-$name-noop.log" >&2
    exit 1
  fi
  if [[ $name == fleet && -z $only ]]; then  # the 5-node fleet's no-op re-run through ansible-runner in the EE
    python scripts/fleet_runner.py run "$inv" "$(dirname "$inv")/ssh/id_ed25519" --job bench-ee --json \
      >build/bench-ee.json
  fi
  lab_down "bench-$name-"
}
scaling_start=$SECONDS
fleet f2 1 0      # 2 nodes: 1 pair
fleet fleet 2 1   # 5 nodes: 2 pairs + 1 single
fleet f10 4 2     # 10 nodes: 4 pairs + 2 singles
scaling_s=$((SECONDS - scaling_start))

if [[ -z $only ]]; then
python3 - "$first" "$noop" "$(wall fleet-first)" "$(wall fleet-noop)" <<'PY'
import json, re, sys
first, noop, fleet_first, fleet_noop = (float(a) for a in sys.argv[1:5])
with open("build/bench-ee.json", encoding="utf-8") as handle:
    ee = json.load(handle)
if ee["rc"] != 0:
    sys.exit("bench: the EE run failed; see %s" % ee["stdout"])
recap = {}
with open("build/bench-noop.log", encoding="utf-8") as handle:
    for line in handle:
        m = re.match(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+).*skipped=(\d+)", line)
        if m:
            recap[m.group(1)] = {"ok": int(m.group(2)), "changed": int(m.group(3)), "skipped": int(m.group(4))}
result = {
    "first_converge_s": first,
    "noop_s": noop,
    "noop_ratio": round(noop / first, 2),
    "noop_changed": sum(r["changed"] for r in recap.values()),
    "tasks_per_host": {h: r["ok"] for h, r in recap.items()},
    "skipped_per_host": {h: r["skipped"] for h, r in recap.items()},
    "pair_converge_s": first,
    "fleet_converge_s": fleet_first,
    "fleet_to_pair_ratio": round(fleet_first / first, 2),
    "fleet_noop_s": fleet_noop,
    # The same no-op fleet run through ansible-runner inside the EE image (what AWX does).
    "ee_run_s": ee["seconds"],
    "ee_run_changed": sum(ee["changed"].values()),
    "fleet_shape": "2 pairs + 1 single",
}
with open("build/bench.json", "w", encoding="utf-8") as handle:
    json.dump(result, handle, indent=2)
    handle.write("\n")
print("first converge: %.1f s" % first)
print("no-op re-run:   %.1f s (%.0f%% of the first converge), changed=%d" % (noop, 100 * noop / first, result["noop_changed"]))
print("tasks per host (no-op): %s" % ", ".join("%s %d" % kv for kv in result["tasks_per_host"].items()))
print("fleet (2 pairs + 1 single) first converge: %.1f s = %.2fx one pair's %.1f s"
      % (fleet_first, fleet_first / first, first))
print("fleet no-op re-run: %.1f s with ansible-playbook, %.1f s through ansible-runner in the EE (changed=%d)"
      % (fleet_noop, ee["seconds"], result["ee_run_changed"]))
PY
fi

# fleet_scaling, added to build/bench.json (with BENCH_ONLY=scaling, to the figures already there).
python3 - "$scaling_s" 2:f2 5:fleet 10:f10 <<'PY'
import json, os, sys

def times(name):  # wall, user, sys of a run (bash's time)
    with open("build/bench-%s.time" % name, encoding="utf-8") as handle:
        return [float(x) for x in handle.read().split()]

scaling = []
for point in sys.argv[2:]:
    nodes, name = point.split(":")
    first, noop = times(name + "-first"), times(name + "-noop")
    scaling.append({"nodes": int(nodes), "first_s": round(first[0], 1), "noop_s": round(noop[0], 1),
                    "controller_cpu_s": round(noop[1] + noop[2], 1)})
result = {}
if os.path.exists("build/bench.json"):
    with open("build/bench.json", encoding="utf-8") as handle:
        result = json.load(handle)
result["fleet_scaling"] = scaling
with open("build/bench.json", "w", encoding="utf-8") as handle:
    json.dump(result, handle, indent=2)
    handle.write("\n")
for row in scaling:
    print("fleet of %2d nodes: first converge %5.1f s, no-op re-run %5.1f s (changed=0), controller CPU %5.1f s"
          % (row["nodes"], row["first_s"], row["noop_s"], row["controller_cpu_s"]))
noop = {row["nodes"]: row["noop_s"] for row in scaling}
print("fleet no-op, 10 nodes / 5 nodes: %.2f (goal: at most 1.3)" % (noop[10] / noop[5]))
print("fleet scaling part: %s s" % sys.argv[1])
print("written: build/bench.json")
PY

[[ -z $only ]] || exit 0
# The draft-length tuner against a full sweep, on three held-out acceptance and cost profiles
# (tests/tune/tune_lab.py, a lab instance of its own): restarts used and the choice's share of the best.
python tests/tune/tune_lab.py long-draft short-draft loses >build/bench-tune.json
python3 - <<'PY'
import json
with open("build/bench.json", encoding="utf-8") as handle:
    result = json.load(handle)
with open("build/bench-tune.json", encoding="utf-8") as handle:
    result["tune"] = json.load(handle)
with open("build/bench.json", "w", encoding="utf-8") as handle:
    json.dump(result, handle, indent=2)
    handle.write("\n")
for row in result["tune"]:
    print("tune %-11s: %d restart(s) (a full sweep: %d), chose %s (the sweep: %s), %.1f%% of the sweep's best; "
          "%.0f s against %.0f s" % (row["profile"], row["tuner_restarts"], row["sweep_restarts"], row["tuner_choice"],
                                     row["sweep_choice"], 100 * row["share_of_best"], row["tuner_seconds"],
                                     row["sweep_seconds"]))
PY
