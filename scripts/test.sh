#!/usr/bin/env bash
# `make test`: every test, in order of speed. Each stage runs even if an earlier one failed, so one
# run shows everything that is broken; the exit status is non-zero when any stage failed.
# Run a subset with STAGES="unit lint" scripts/test.sh.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

STAGES=${STAGES:-"unit lint sanity lab netplan molecule-single molecule-triton molecule-two molecule-fabrics monitoring tune ee fleet"}
mkdir -p build/test-logs
passed=0
failed=0
failures=()

stage_cmd() {
  case "$1" in
    unit) python -m pytest tests/unit -q -p no:cacheprovider ;;
    # antsibull-docs: the plugins' and roles' documentation as the docsite would render it (markup, references).
    # ansible-lint with a HOME of its own: it would resolve dgx_spark.specdec from ~/.ansible/collections (an installed
    # older release) before the checkout.
    lint) python tools/gen_docs.py --check && yamllint -s . && HOME=$PWD/build/lint-home ansible-lint \
      && antsibull-changelog lint \
      && antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml \
      && antsibull-docs lint-collection-docs --plugin-docs . ;;
    sanity) tests/sanity/run-sanity.sh ;;
    lab) python -m pytest tests/lab -q -p no:cacheprovider ;;
    netplan) tests/netplan_qsfp/run.sh ;;
    molecule-single) molecule test -s single_spark ;;
    molecule-triton) molecule test -s single_spark_triton ;;
    molecule-two) molecule test -s two_spark ;;
    # One lab for both (ring_three leaves it up, switch_four takes it down); down here too when one failed.
    molecule-fabrics) { molecule test -s ring_three && molecule test -s switch_four; } \
      || { SPARK_LAB_PREFIX=molf- molecule/resources/lab/lab down >/dev/null 2>&1; false; } ;;
    # promtool's checks and unit tests of the rules, the dashboard's queries, then a served fleet under Prometheus.
    monitoring) python -m pytest tests/monitoring -q -p no:cacheprovider \
      || { SPARK_LAB_PREFIX=mon- molecule/resources/lab/lab down >/dev/null 2>&1; false; } ;;
    ee) scripts/ee.sh ;;
    tune) python -m pytest tests/tune -q -p no:cacheprovider ;;
    fleet) python -m pytest tests/fleet -q -p no:cacheprovider ;;
    *) echo "unknown stage $1" >&2; return 2 ;;
  esac
}

for stage in $STAGES; do
  echo "=== $stage"
  start=$(date +%s)
  stage_cmd "$stage" 2>&1 | tee "build/test-logs/$stage.log"
  rc=${PIPESTATUS[0]}
  secs=$(( $(date +%s) - start ))
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1)); echo "=== $stage passed in ${secs}s"
  else
    failed=$((failed + 1)); failures+=("$stage"); echo "=== $stage FAILED (rc=$rc) in ${secs}s; log: build/test-logs/$stage.log"
  fi
done

[ "$failed" -eq 0 ] || echo "failed stages: ${failures[*]}"
echo "stages: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
