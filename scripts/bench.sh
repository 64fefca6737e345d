#!/usr/bin/env bash
# `make bench`: a benchmark, not a timed test. On a fresh lab instance of its own (prefix bench-),
# run the two-Spark playbook twice and report the first converge, the no-op re-run (which must
# change nothing) and the tasks per host; the figures go to build/bench.json.
set -euo pipefail
cd "$(dirname "$0")/.."
export SPARK_LAB_PREFIX=${SPARK_LAB_PREFIX:-bench-}
export HF_TOKEN=${HF_TOKEN:-hf_BenchToken1234}
lab=molecule/resources/lab/lab
mkdir -p build

"$lab" down >/dev/null 2>&1 || true   # the first converge starts from nothing
"$lab" up
trap '"$lab" down >/dev/null 2>&1 || true' EXIT

run() {  # NAME: run the playbook, log to build/bench-NAME.log, print the seconds it took
  local start end
  start=$(date +%s.%N)
  if ! ansible-playbook -i inventories/lab playbooks/two_spark_eagle3.yml >"build/bench-$1.log" 2>&1; then
    echo "bench: the $1 run failed; see build/bench-$1.log" >&2
    tail -n 30 "build/bench-$1.log" >&2
    exit 1
  fi
  end=$(date +%s.%N)
  python3 -c "print(round($end - $start, 1))"
}

first=$(run first)
noop=$(run noop)
python3 - "$first" "$noop" <<'PY'
import json, re, sys
first, noop = float(sys.argv[1]), float(sys.argv[2])
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
}
with open("build/bench.json", "w", encoding="utf-8") as handle:
    json.dump(result, handle, indent=2)
    handle.write("\n")
print("first converge: %.1f s" % first)
print("no-op re-run:   %.1f s (%.0f%% of the first converge), changed=%d" % (noop, 100 * noop / first, result["noop_changed"]))
print("tasks per host (no-op): %s" % ", ".join("%s %d" % kv for kv in result["tasks_per_host"].items()))
print("written: build/bench.json")
PY
