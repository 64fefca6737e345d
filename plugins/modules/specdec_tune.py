#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
module: specdec_tune
short_description: Choose max_draft_len from few measurements and write the tuning report
version_added: 0.4.0
description:
  - The controller side of C(playbooks/tune_draft_len.yml). From the baseline (the plain model) and the measurement at
    the largest candidate (M(dgx_spark.specdec.specdec_bench) with iteration statistics) it fits acceptance by draft
    position and the cost per drafted token, predicts tokens/s for every candidate, and returns the best predictions
    not measured yet (RV(to_confirm)). The playbook measures those; with O(write) the best measured setting is chosen
    and C(tune.json), C(report.md), C(tokens_per_s.png) and C(acceptance.png) are written under O(results_dir).
  - If speculative decoding beats no candidate, RV(chosen_max_draft_len) is null and the report says so.
  - With no measurement given, an earlier C(tune.json) whose O(inputs) are the same is reused (RV(reuse)), so a second
    run neither restarts the server nor measures again; O(force) measures anew.
  - Runs on the controller (C(delegate_to=localhost)); the plots need C(matplotlib) there.
author:
  - DGX Spark speculative-decoding collection maintainers (@dgx-spark)
extends_documentation_fragment:
  - dgx_spark.specdec.attributes
  - dgx_spark.specdec.attributes.ACTIONGROUP_SPECDEC
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details:
      - The diff shows C(tune.json) and C(report.md).
  idempotent:
    support: full
options:
  results_dir:
    description:
      - Directory on the controller for C(tune.json), C(report.md) and the plots. Created when missing.
    type: path
    required: true
  inputs:
    description:
      - What is tuned (profile, release, model, candidates, prompt set...); an earlier result is reused only for the same.
    type: dict
    required: true
  candidates:
    description:
      - The C(max_draft_len) values to choose from.
    type: list
    elements: int
    default: [1, 2, 3, 4, 8]
  baseline:
    description:
      - The plain model's measurement (M(dgx_spark.specdec.specdec_bench) result).
    type: dict
  measured:
    description:
      - The speculative settings measured so far, each C({max_draft_len, bench}) with the bench result.
    type: list
    elements: dict
    default: []
  confirm:
    description:
      - How many of the best predicted settings are confirmed by measurement.
    type: int
    default: 2
  write:
    description:
      - Choose from the measurements and write the report files.
    type: bool
    default: false
  force:
    description:
      - Do not reuse an earlier result.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Predict from the baseline and the largest candidate
  dgx_spark.specdec.specdec_tune:
    results_dir: "{{ playbook_dir }}/../build/tune"
    inputs: {profile: single_spark_eagle3}
    baseline: "{{ baseline_bench }}"
    measured: [{max_draft_len: 8, bench: "{{ bench_at_8 }}"}]
  delegate_to: localhost
  register: tune
"""

RETURN = r"""
reuse:
  description: An earlier C(tune.json) with the same inputs was found and nothing needs measuring.
  returned: always
  type: bool
predicted:
  description: Predicted tokens/s per candidate (keys are the draft lengths, as strings).
  returned: when a speculative measurement with a histogram was given
  type: dict
to_confirm:
  description: The draft lengths to measure next, best first.
  returned: always
  type: list
  elements: int
chosen_max_draft_len:
  description: The best measured draft length; null when speculative decoding loses to the baseline.
  returned: with write, or on reuse
  type: int
speedup:
  description: The chosen setting's tokens/s over the baseline's.
  returned: with write, or on reuse
  type: float
restarts:
  description: Server starts the tuning caused (the speculative settings measured; the baseline excluded).
  returned: with write, or on reuse
  type: int
files:
  description: The report files, written or current.
  returned: with write
  type: list
  elements: str
"""

import io
import json
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_tune as tune

try:
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot
    HAS_MATPLOTLIB = True
except ImportError:
    HAS_MATPLOTLIB = False


def _previous(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def analyse(params):
    """Predictions from the baseline and the largest measured setting with a histogram."""
    baseline = params["baseline"] or {}
    measured = {int(m["max_draft_len"]): m["bench"] for m in params["measured"]}
    out = {"predicted": {}, "to_confirm": [], "model": None, "acceptance": None}
    with_histogram = [d for d in sorted(measured) if measured[d].get("accepted_histogram")]
    if not baseline.get("tokens_per_s") or not with_histogram:
        return out, measured
    largest = with_histogram[-1]
    bench = measured[largest]
    stats = tune.acceptance(bench["accepted_histogram"])
    step, cost = tune.fit_cost(baseline["tokens_per_s"], bench["tokens_per_s"], largest, stats["mean_accepted"])
    predicted = tune.predict(params["candidates"], stats["survival"], step, cost)
    out.update(predicted={str(d): round(v, 3) for d, v in predicted.items()},
               to_confirm=tune.to_confirm(predicted, measured, params["confirm"]),
               model={"from_max_draft_len": largest, "target_step_ms": round(step, 4), "cost_per_draft_token_ms": round(cost, 4)},
               acceptance={"by_position": [round(a, 4) for a in stats["by_position"]],
                           "survival": [round(a, 4) for a in stats["survival"]]})
    return out, measured


def result_document(params, analysis, measured):
    baseline_tps = params["baseline"]["tokens_per_s"]
    chosen, chosen_tps, speedup = tune.choose({d: b["tokens_per_s"] for d, b in measured.items()}, baseline_tps)
    settings = []
    for length in sorted(measured):
        bench = measured[length]
        settings.append({"max_draft_len": length, "tokens_per_s": round(bench["tokens_per_s"], 3),
                         "predicted_tokens_per_s": analysis["predicted"].get(str(length)),
                         "ttft_ms": bench.get("ttft_ms"), "itl_ms": bench.get("itl_ms"),
                         "acceptance_rate": bench.get("acceptance_rate"),
                         "mean_acceptance_length": bench.get("mean_acceptance_length"),
                         "accepted_histogram": bench.get("accepted_histogram"),
                         # Measured from the cumulative per-position counters (token_position from 0).
                         "acceptance_per_position": bench.get("acceptance_per_position"),
                         "step_ms_mean": bench.get("step_ms_mean")})
    base = params["baseline"]
    return {
        "inputs": params["inputs"],
        "chosen_max_draft_len": chosen,
        "speculation_wins": chosen is not None,
        "chosen_tokens_per_s": round(chosen_tps, 3),
        "speedup": round(speedup, 4),
        "restarts": len(measured),
        "baseline_tokens_per_s": round(baseline_tps, 3),
        "baseline": {"tokens_per_s": round(baseline_tps, 3), "ttft_ms": base.get("ttft_ms"), "itl_ms": base.get("itl_ms"),
                     "step_ms_mean": base.get("step_ms_mean")},
        "candidates": sorted(params["candidates"]),
        "model": analysis["model"],
        "acceptance": analysis["acceptance"],
        "predicted": analysis["predicted"],
        "settings": settings,
    }


def _per_position_table(settings):
    """Measured acceptance at each draft position (1 = the first drafted token), one row per setting."""
    rows = [(s["max_draft_len"], {p["position"]: p["rate"] for p in s.get("acceptance_per_position") or []})
            for s in settings]
    rows = [(length, rates) for length, rates in rows if rates]
    if not rows:
        return []
    positions = sorted({p for dummy, rates in rows for p in rates})
    lines = ["", "Acceptance per draft position, measured (the server's per-position counters):", "",
             "| max_draft_len | " + " | ".join("pos %d" % (p + 1) for p in positions) + " |",
             "|---|" + "---|" * len(positions)]
    for length, rates in rows:
        cells = ["-" if rates.get(p) is None else "%.2f" % rates[p] for p in positions]
        lines.append("| %d | %s |" % (length, " | ".join(cells)))
    return lines


def report_markdown(doc):
    lines = ["# max_draft_len tuning", ""]
    inputs = doc["inputs"]
    # Unset inputs (a Triton profile names its Triton release, not a TensorRT-LLM one) are left out.
    shown = [(k, inputs[k]) for k in ("profile", "trtllm_version", "triton_release", "mode", "max_tokens", "concurrency")
             if inputs.get(k) not in (None, "", "None")]
    lines.append("Profile and settings: " + ", ".join("%s `%s`" % item for item in shown)
                 + "; candidates %s (everything tuned is in `tune.json`, `inputs`)." % doc["candidates"])
    lines.append("")
    if doc["speculation_wins"]:
        lines.append("**Chosen: `max_draft_len: %s`**, %.1f tokens/s, %.2fx the plain model (%.1f tokens/s)."
                     % (doc["chosen_max_draft_len"], doc["chosen_tokens_per_s"], doc["speedup"], doc["baseline_tokens_per_s"]))
    else:
        lines.append("**Speculative decoding loses here**: the best measured setting reaches %.1f tokens/s, %.2fx the "
                     "plain model's %.1f tokens/s. Serve without it, or try another draft model."
                     % (doc["chosen_tokens_per_s"], doc["speedup"], doc["baseline_tokens_per_s"]))
    lines += ["", "Server restarts for tuning: %d (the baseline excluded), of %d candidates."
              % (doc["restarts"], len(doc["candidates"])), ""]
    lines += ["| max_draft_len | tokens/s | predicted | acceptance rate | tokens per step | TTFT p50 ms | ITL p50 / p95 ms |",
              "|---|---|---|---|---|---|---|"]

    def fmt(value, pattern="%.2f"):
        return "-" if value is None else pattern % value

    base = doc["baseline"]
    lines.append("| none (baseline) | %s | - | - | 1 | %s | %s |" % (
        fmt(base["tokens_per_s"], "%.1f"), fmt((base.get("ttft_ms") or {}).get("p50"), "%.1f"),
        "%s / %s" % (fmt((base.get("itl_ms") or {}).get("p50"), "%.1f"), fmt((base.get("itl_ms") or {}).get("p95"), "%.1f"))))
    for s in doc["settings"]:
        lines.append("| %d | %s | %s | %s | %s | %s | %s |" % (
            s["max_draft_len"], fmt(s["tokens_per_s"], "%.1f"), fmt(s["predicted_tokens_per_s"], "%.1f"),
            fmt(s["acceptance_rate"]), fmt(s["mean_acceptance_length"]), fmt((s["ttft_ms"] or {}).get("p50"), "%.1f"),
            "%s / %s" % (fmt((s["itl_ms"] or {}).get("p50"), "%.1f"), fmt((s["itl_ms"] or {}).get("p95"), "%.1f"))))
    if doc["model"]:
        lines += ["", "Model fitted at max_draft_len %d: plain step %.2f ms, %.3f ms per drafted token; acceptance by "
                  "position %s." % (doc["model"]["from_max_draft_len"], doc["model"]["target_step_ms"],
                                    doc["model"]["cost_per_draft_token_ms"],
                                    ", ".join("%.2f" % a for a in doc["acceptance"]["by_position"]))]
    lines += _per_position_table(doc["settings"])
    lines += ["", "![tokens/s](tokens_per_s.png)", "", "![acceptance by draft position](acceptance.png)", ""]
    return "\n".join(lines)


def plots(doc):
    """{file name: PNG bytes}."""
    out = {}
    figure, axes = pyplot.subplots(figsize=(6.4, 4.0), dpi=100)
    predicted = sorted((int(d), v) for d, v in doc["predicted"].items())
    if predicted:
        axes.plot([d for d, v in predicted], [v for d, v in predicted], "o--", color="tab:gray", label="predicted")
    measured = [(s["max_draft_len"], s["tokens_per_s"]) for s in doc["settings"]]
    axes.plot([d for d, v in measured], [v for d, v in measured], "s", color="tab:blue", markersize=8, label="measured")
    axes.axhline(doc["baseline_tokens_per_s"], color="tab:red", linestyle=":", label="no speculative decoding")
    if doc["chosen_max_draft_len"] is not None:
        axes.axvline(doc["chosen_max_draft_len"], color="tab:green", alpha=0.4, label="chosen")
    axes.set_xlabel("max_draft_len")
    axes.set_ylabel("output tokens/s")
    axes.set_title("Throughput against draft length")
    axes.legend()
    out["tokens_per_s.png"] = _png(figure)
    figure, axes = pyplot.subplots(figsize=(6.4, 4.0), dpi=100)
    by_position = (doc["acceptance"] or {}).get("by_position") or []
    axes.bar(range(1, len(by_position) + 1), by_position, color="tab:blue")
    axes.set_ylim(0, 1)
    axes.set_xlabel("draft position k")
    axes.set_ylabel("P(token k accepted | 1..k-1 were)")
    axes.set_title("Acceptance by draft position")
    out["acceptance.png"] = _png(figure)
    return out


def _png(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    pyplot.close(figure)
    return buffer.getvalue()


def _write(module, path, data):
    current = None
    if os.path.exists(path):
        with open(path, "rb") as handle:
            current = handle.read()
    if current == data:
        return False
    if not module.check_mode:
        fd, tmp = tempfile.mkstemp(prefix=".specdec_tune.", dir=os.path.dirname(path))
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        module.atomic_move(tmp, path)
    return True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            results_dir=dict(type="path", required=True),
            inputs=dict(type="dict", required=True),
            candidates=dict(type="list", elements="int", default=[1, 2, 3, 4, 8]),
            baseline=dict(type="dict"),
            measured=dict(type="list", elements="dict", default=[]),
            confirm=dict(type="int", default=2),
            write=dict(type="bool", default=False),
            force=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not p["candidates"] or min(p["candidates"]) < 1:
        module.fail_json(msg="candidates: %s must be draft lengths >= 1" % p["candidates"])
    for item in p["measured"]:
        if not isinstance(item.get("max_draft_len"), int) or not isinstance(item.get("bench"), dict):
            module.fail_json(msg="measured: each item needs max_draft_len (int) and bench (a specdec_bench result), got %s"
                             % sorted(item))
    json_path = os.path.join(p["results_dir"], "tune.json")
    previous = _previous(json_path)
    if not p["measured"] and not p["force"] and previous and previous.get("inputs") == p["inputs"]:
        module.exit_json(changed=False, reuse=True, to_confirm=[], predicted=previous.get("predicted"),
                         chosen_max_draft_len=previous.get("chosen_max_draft_len"), speedup=previous.get("speedup"),
                         restarts=previous.get("restarts"), msg="reusing %s (same inputs)" % json_path)
    try:
        analysis, measured = analyse(p)
    except tune.TuneError as exc:
        module.fail_json(msg=str(exc))
    result = dict(changed=False, reuse=False, predicted=analysis["predicted"], to_confirm=analysis["to_confirm"])
    if not p["write"]:
        module.exit_json(**result)
    if not p["baseline"] or not measured:
        module.fail_json(msg="write: needs the baseline and at least one measured setting", **result)
    if not HAS_MATPLOTLIB:
        module.fail_json(msg=missing_required_lib("matplotlib"), **result)
    doc = result_document(p, analysis, measured)
    files = {"tune.json": (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8"),
             "report.md": report_markdown(doc).encode("utf-8")}
    files.update(plots(doc))
    if not os.path.isdir(p["results_dir"]) and not module.check_mode:
        os.makedirs(p["results_dir"], mode=0o755)
    changed = False
    for name, data in files.items():
        if os.path.isdir(p["results_dir"]):
            changed = _write(module, os.path.join(p["results_dir"], name), data) or changed
        else:
            changed = True
    result.update(changed=changed, chosen_max_draft_len=doc["chosen_max_draft_len"], speedup=doc["speedup"],
                  restarts=doc["restarts"], baseline_tokens_per_s=doc["baseline_tokens_per_s"],
                  files=[os.path.join(p["results_dir"], n) for n in sorted(files)])
    if module._diff and changed:
        result["diff"] = dict(before=json.dumps(previous, indent=2, sort_keys=True) + "\n" if previous else "",
                              after=files["tune.json"].decode("utf-8"), before_header=json_path, after_header=json_path)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
