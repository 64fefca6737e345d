#!/usr/bin/env bash
# `make demo`: bring up the simulated two-Spark lab and run the main playbook on it, exactly as on
# two real Sparks (only inventories/lab differs), then run it again to show nothing changes.
set -euo pipefail
cd "$(dirname "$0")/.."

mkdir -p build
molecule/resources/lab/lab up

# NVIDIA's playbook's options plus iteration stats, so the validation can report the draft acceptance rate.
STATS='{"specdec_serve_extra_options": {"enable_iter_perf_stats": true}}'

echo "=== ansible-playbook -i inventories/lab playbooks/two_spark_eagle3.yml -e '$STATS'"
start=$(date +%s)
ansible-playbook -i inventories/lab playbooks/two_spark_eagle3.yml -e "$STATS"
echo "=== first run: $(( $(date +%s) - start ))s"

echo "=== second run (must change nothing)"
start=$(date +%s)
ansible-playbook -i inventories/lab playbooks/two_spark_eagle3.yml -e "$STATS" | tee build/demo-rerun.log | tail -n 8
echo "=== second run: $(( $(date +%s) - start ))s"
if grep -Eq 'changed=[1-9]' build/demo-rerun.log; then
  echo "demo: the second run changed something" >&2
  exit 1
fi

cat <<'MSG'

The lab keeps serving: the OpenAI endpoint of the head node answers inside spark-a, e.g.
  docker exec spark-a curl -s http://127.0.0.1:8355/v1/models
Tear down:
  ansible-playbook -i inventories/lab playbooks/teardown.yml   # the serving containers only
  make lab-down                                                 # the whole lab
MSG
