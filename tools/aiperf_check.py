# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check a ``profile_export_aiperf.json`` (and its ``profile_export.jsonl``) the way a reader of AIPerf's exports would.

    tools/aiperf_check.py results/bench/profile_export_aiperf.json [--records results/bench/profile_export.jsonl]

Exit 0 when the files read as AIPerf's, 1 (with one message per problem) when not. What is checked, from AIPerf's
models and metrics (https://github.com/ai-dynamo/aiperf):

* every metric is an object ``{unit, avg, min, max, p1 ... p99, std}`` of JsonMetricResult
  (src/aiperf/common/models/export_models.py), numbers only, ordered min <= p1 <= ... <= p99 <= max, std >= 0;
* the metric tags this collection writes carry AIPerf's display units (src/aiperf/metrics/types/*.py with
  aiperf/common/enums/metric_enums.py): ``ms`` for the latencies, ``tokens/sec`` for throughput...;
* the run keys: ``request_count`` and ``request_throughput`` present; with ``input_config.endpoint.streaming``
  ``time_to_first_token`` and ``inter_token_latency`` too; ``start_time`` <= ``end_time`` (ISO 8601);
  ``error_summary`` items ``{error_details: {code, type, message}, count}``;
* the records (MetricRecordInfo, docs/tutorials/working-with-profile-exports.md): ``metadata`` with the required
  fields, ``metrics`` of ``{value, unit}`` in the same units, ``error`` null or ``{code, type, message}``; as many
  successful records as ``request_count`` and failed ones as ``error_request_count``.

Keys AIPerf does not define are listed as notes (AIPerf's model allows extra keys), not as problems.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys

STAT_ORDER = ("min", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "max")
STAT_KEYS = ("avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std")
ADJUSTED = ("adj_p50", "adj_p90", "adj_p95", "adj_p99")
# tag: display unit, as AIPerf exports them.
UNITS = {
    "request_throughput": "requests/sec",
    "request_latency": "ms",
    "request_count": "requests",
    "time_to_first_token": "ms",
    "time_to_second_token": "ms",
    "inter_token_latency": "ms",
    "inter_chunk_latency": "ms",
    "output_token_throughput": "tokens/sec",
    "output_token_throughput_per_user": "tokens/sec/user",
    "output_sequence_length": "tokens",
    "input_sequence_length": "tokens",
    "good_request_count": "requests",
    "output_token_count": "tokens",
    "reasoning_token_count": "tokens",
    "total_output_tokens": "tokens",
    "total_reasoning_tokens": "tokens",
    "benchmark_duration": "sec",
    "total_isl": "tokens",
    "total_osl": "tokens",
    "error_request_count": "requests",
    "error_isl": "tokens",
    "total_error_isl": "tokens",
}
# JsonExportData's other fields.
RUN_KEYS = ("schema_version", "aiperf_version", "benchmark_id", "telemetry_data", "input_config", "run_info",
            "was_cancelled", "error_summary", "start_time", "end_time", "goodput", "min_request_timestamp",
            "max_response_timestamp")
METADATA_REQUIRED = {"session_num": int, "request_start_ns": int, "request_end_ns": int, "worker_id": str,
                     "record_processor_id": str, "benchmark_phase": str}
PHASES = ("warmup", "profiling")


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_metric(tag, item, problems):
    if not isinstance(item, dict):
        problems.append("%s: not an object" % tag)
        return
    if not isinstance(item.get("unit"), str):
        problems.append("%s: no unit" % tag)
    elif tag in UNITS and item["unit"] != UNITS[tag]:
        problems.append("%s: unit %r, AIPerf writes %r" % (tag, item["unit"], UNITS[tag]))
    for key in item:
        if key != "unit" and key not in STAT_KEYS + ADJUSTED:
            problems.append("%s: %r is not a statistic of AIPerf's JsonMetricResult" % (tag, key))
        elif key != "unit" and item[key] is not None and not _number(item[key]):
            problems.append("%s.%s: %r is not a number" % (tag, key, item[key]))
    if "avg" not in item:
        problems.append("%s: no avg" % tag)
    present = [item[k] for k in STAT_ORDER if _number(item.get(k))]
    if any(b < a for a, b in zip(present, present[1:])):
        problems.append("%s: statistics out of order (min <= p1 <= ... <= p99 <= max)" % tag)
    if _number(item.get("min")) and _number(item.get("max")) and _number(item.get("avg")) and \
            not item["min"] <= item["avg"] <= item["max"]:
        problems.append("%s: avg %s outside [min, max]" % (tag, item["avg"]))
    if _number(item.get("std")) and item["std"] < 0:
        problems.append("%s: negative std" % tag)


def _time(value, key, problems):
    try:
        return datetime.datetime.fromisoformat(value)
    except (TypeError, ValueError):
        problems.append("%s: %r is not an ISO 8601 time" % (key, value))
        return None


def check_summary(doc, problems, notes):
    if not isinstance(doc, dict):
        problems.append("the summary is not a JSON object")
        return
    for key, value in doc.items():
        if key in RUN_KEYS:
            continue
        if isinstance(value, dict) and "unit" in value:
            check_metric(key, value, problems)
            if key not in UNITS:
                notes.append("%s: a metric this check does not know (AIPerf has many)" % key)
        else:
            notes.append("%s: not an AIPerf field" % key)
    for key in ("request_count", "request_throughput"):
        if key not in doc:
            problems.append("%s: missing" % key)
    count = (doc.get("request_count") or {}).get("avg")
    if count is not None and (not _number(count) or count != int(count) or count < 0):
        problems.append("request_count: avg %r is not a count" % count)
    config = doc.get("input_config")
    if not isinstance(config, dict):
        problems.append("input_config: missing")
        config = {}
    endpoint = config.get("endpoint") or {}
    names = endpoint.get("model_names")
    if not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
        problems.append("input_config.endpoint.model_names: a list of model names expected, got %r" % (names,))
    if endpoint.get("streaming"):
        for key in ("time_to_first_token", "inter_token_latency"):
            if key not in doc:
                problems.append("%s: missing from a streaming run" % key)
    start = _time(doc.get("start_time"), "start_time", problems)
    end = _time(doc.get("end_time"), "end_time", problems)
    if start and end and end < start:
        problems.append("end_time is before start_time")
    for index, item in enumerate(doc.get("error_summary") or []):
        details = item.get("error_details") if isinstance(item, dict) else None
        if not isinstance(details, dict) or not isinstance(details.get("message"), str) or \
                not isinstance(item.get("count"), int):
            problems.append("error_summary[%d]: {error_details: {code, type, message}, count} expected" % index)


def check_records(lines, doc, problems):
    good = failed = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            problems.append("records line %d: not JSON (%s)" % (number, exc))
            continue
        meta = record.get("metadata") if isinstance(record, dict) else None
        if not isinstance(meta, dict):
            problems.append("records line %d: no metadata" % number)
            continue
        for key, kind in METADATA_REQUIRED.items():
            if not isinstance(meta.get(key), kind) or isinstance(meta.get(key), bool):
                problems.append("records line %d: metadata.%s missing or not %s" % (number, key, kind.__name__))
        if meta.get("benchmark_phase") not in PHASES:
            problems.append("records line %d: benchmark_phase %r" % (number, meta.get("benchmark_phase")))
        if isinstance(meta.get("request_start_ns"), int) and isinstance(meta.get("request_end_ns"), int) and \
                meta["request_end_ns"] < meta["request_start_ns"]:
            problems.append("records line %d: request_end_ns before request_start_ns" % number)
        metrics = record.get("metrics")
        if not isinstance(metrics, dict):
            problems.append("records line %d: metrics is not an object" % number)
            metrics = {}
        for tag, item in metrics.items():
            if not isinstance(item, dict) or set(item) != {"value", "unit"}:
                problems.append("records line %d: %s is not {value, unit}" % (number, tag))
            elif tag in UNITS and item["unit"] != UNITS[tag]:
                problems.append("records line %d: %s unit %r, AIPerf writes %r" % (number, tag, item["unit"], UNITS[tag]))
        error = record.get("error")
        if error is None:
            good += meta.get("benchmark_phase") == "profiling"
        elif isinstance(error, dict) and isinstance(error.get("message"), str):
            failed += 1
        else:
            problems.append("records line %d: error is neither null nor {code, type, message}" % number)
    if doc is not None:
        count = (doc.get("request_count") or {}).get("avg")
        errors = (doc.get("error_request_count") or {}).get("avg", 0)
        if count is not None and good != count:
            problems.append("records: %d successful profiling records, request_count says %s" % (good, count))
        if failed != errors:
            problems.append("records: %d failed records, error_request_count says %s" % (failed, errors))


def check(summary_path, records_path=None):
    """``(problems, notes)`` of the files."""
    problems, notes = [], []
    try:
        with open(summary_path, encoding="utf-8") as handle:
            doc = json.load(handle)
    except (OSError, ValueError) as exc:
        return ["%s: %s" % (summary_path, exc)], notes
    check_summary(doc, problems, notes)
    if records_path:
        try:
            with open(records_path, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except OSError as exc:
            problems.append("%s: %s" % (records_path, exc))
        else:
            check_records(lines, doc if isinstance(doc, dict) else None, problems)
    return problems, notes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("summary", help="profile_export_aiperf.json")
    parser.add_argument("--records", help="profile_export.jsonl of the same run")
    args = parser.parse_args(argv)
    problems, notes = check(args.summary, args.records)
    for note in notes:
        print("note: %s" % note)
    for problem in problems:
        print("problem: %s" % problem, file=sys.stderr)
    print("%s: %s" % (args.summary, "reads as AIPerf's export" if not problems else "%d problem(s)" % len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
