#!/usr/bin/env bash
# `make bench`: a benchmark, not a timed test. On a fresh lab instance of its own (prefix bench-),
# run the two-Spark playbook twice and report the first converge, the no-op re-run (which must
# change nothing) and the tasks per host. Then, on a fresh fleet (2 pairs + 1 single, prefix
# bench-fleet-), playbooks/fleet.yml: its first converge, and its no-op re-run both directly and
# through ansible-runner in the EE (make ee first). Last, the draft-length tuner against a full sweep on
# held-out profiles. The figures go to build/bench.json.
set -euo pipefail
cd "$(dirname "$0")/.."
export SPARK_LAB_PREFIX=${SPARK_LAB_PREFIX:-bench-}
export HF_TOKEN=${HF_TOKEN:-hf_BenchToken1234}
lab=molecule/resources/lab/lab
mkdir -p build

"$lab" down >/dev/null 2>&1 || true   # the first converge starts from nothing
"$lab" up
trap '"$lab" down >/dev/null 2>&1 || true' EXIT

run() {  # NAME [INVENTORY PLAYBOOK]: run a playbook, log to build/bench-NAME.log, print the seconds it took
  local start end
  start=$(date +%s.%N)
  if ! ansible-playbook -i "${2:-inventories/lab}" "${3:-playbooks/two_spark_eagle3.yml}" >"build/bench-$1.log" 2>&1; then
    echo "bench: the $1 run failed; see build/bench-$1.log" >&2
    tail -n 30 "build/bench-$1.log" >&2
    exit 1
  fi
  end=$(date +%s.%N)
  python3 -c "print(round($end - $start, 1))"
}

first=$(run first)
noop=$(run noop)
"$lab" down >/dev/null 2>&1

# The fleet, on an instance of its own, after the pair's lab is gone (same machine, same load).
fleet_lab() { SPARK_LAB_PREFIX=bench-fleet- "$lab" "$@"; }
fleet_lab down >/dev/null 2>&1 || true
fleet_lab up --pairs 2 --singles 1
trap '"$lab" down >/dev/null 2>&1 || true; fleet_lab down >/dev/null 2>&1 || true' EXIT
fleet_inv=$(fleet_lab inventory)
fleet_first=$(run fleet-first "$fleet_inv" playbooks/fleet.yml)
fleet_noop=$(run fleet-noop "$fleet_inv" playbooks/fleet.yml)
python scripts/fleet_runner.py run "$fleet_inv" "$(dirname "$fleet_inv")/ssh/id_ed25519" --job bench-ee --json \
  >build/bench-ee.json
python3 - "$first" "$noop" "$fleet_first" "$fleet_noop" <<'PY'
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
print("written: build/bench.json")
PY

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
