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
  - Runs on the controller (C(delegate_to=localhost)). Under AWX or ansible-runner the controller is the execution
    environment (EE) image, not the machine that launched the job; the plots need C(matplotlib) there. The collection's
    C(meta/ee-requirements.txt) lists it, so an EE built with this collection (C(make ee)) has it.
  - With O(check_dependencies) (the playbook's first step, before any server restart) the module reports which
    Python libraries are present on the controller, whether the plots will be drawn and where the results go; with
    O(plots) true and C(matplotlib) missing it fails with a message that names the library, where it is needed and how
    to add it or skip the plots. An earlier result with the same inputs is looked up in the same step.
  - With O(record) the measurements so far are written to C(measurements.json) (O(results_dir)), after each
    measurement, so an interrupted run keeps what it measured.
  - With O(write), C(tune.json) and C(report.md) are written first and the plots last. A plot that cannot be drawn (the
    library missing or broken, a drawing error) is a warning, not a failure; the report then says the plots were not
    drawn and why, and RV(plots) is false.
  - In an AWX job, keep O(results_dir) out of the job's private data directory (C(/runner), with the project in it),
    which is discarded after the job; point it at a persistent path, for instance a volume mounted into the EE. The
    module warns when it is in there.
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
      - Directory on the controller for C(tune.json), C(report.md), C(measurements.json) and the plots. Created when
        missing (also its parents); RV(results_dir) is its absolute path. A relative path is relative to the
        controller's working directory.
      - C(playbooks/tune_draft_len.yml) sets it from C(specdec_tune_results_dir), by default
        C({{ playbook_dir }}/../tune-results/{{ inventory_hostname }}) (the project's C(tune-results/), git-ignored).
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
  plots:
    description:
      - Draw C(tokens_per_s.png) and C(acceptance.png) with C(matplotlib).
      - With O(check_dependencies), true fails when C(matplotlib) cannot be imported on the controller; false skips the
        plots (C(tune.json) and C(report.md) are written all the same). The playbook sets it from
        C(specdec_tune_plots) (default true).
    type: bool
    default: true
    version_added: 0.12.0
  check_dependencies:
    description:
      - Only check the controller's Python libraries (RV(libraries)), say what the run will do (RV(msg)) and look for an
        earlier result with the same O(inputs) (RV(reuse)). Changes nothing. Fails when O(plots) is true and
        C(matplotlib) is missing, unless an earlier result is reused.
    type: bool
    default: false
    version_added: 0.12.0
  record:
    description:
      - Write O(baseline) and O(measured), as far as they go, to C(measurements.json) under O(results_dir) and return.
        Nothing is chosen or predicted.
    type: bool
    default: false
    version_added: 0.12.0
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

- name: Before any restart, check that the plots can be drawn here (the controller, or the EE under AWX)
  dgx_spark.specdec.specdec_tune:
    results_dir: /srv/tune-results/spark-a
    inputs: {profile: single_spark_eagle3}
    check_dependencies: true
    plots: true
  delegate_to: localhost
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
chosen_tokens_per_s:
  description: The chosen (best measured) setting's tokens/s.
  returned: with write, or on reuse
  version_added: 0.12.0
  type: float
baseline_tokens_per_s:
  description: The plain model's tokens/s.
  returned: with write, or on reuse
  version_added: 0.12.0
  type: float
files:
  description: The report files, written or current.
  returned: with write
  type: list
  elements: str
results_dir:
  description: The absolute path of O(results_dir).
  returned: always
  version_added: 0.12.0
  type: str
plots:
  description:
    - With O(check_dependencies), whether the plots will be drawn; with O(write), whether they were; on reuse, whether
      the earlier run drew them.
  returned: with check_dependencies, write, or on reuse
  version_added: 0.12.0
  type: bool
plots_reason:
  description: Why the plots are not (or were not) drawn; null when they are.
  returned: with check_dependencies or write
  version_added: 0.12.0
  type: str
msg:
  description:
    - With O(check_dependencies), what the run will do (the Python, the libraries, the settings to measure, where the
      results go), or which earlier result is reused; the failure message names what is missing and how to go on.
  returned: with check_dependencies, or on reuse
  type: str
  version_added: 0.12.0
libraries:
  description:
    - The controller's Python libraries the module can use, each with C(present), C(version), C(needed_for) and the
      import C(error) when missing; C(python) is the interpreter that ran the module, C(where) says whether that is an
      execution environment.
  returned: with check_dependencies
  version_added: 0.12.0
  type: dict
  sample:
    matplotlib: {present: true, version: 3.9.2, needed_for: the plots, error: null}
    python: /usr/bin/python3
    where: the execution environment (EE) image (ansible-runner / AWX)
"""

import io
import json
import os
import sys
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_tune as tune

# matplotlib is imported when a plot is drawn (or checked for), never at load: a missing or broken installation must
# not stop the measurements from being recorded and the report from being written.
_PYPLOT = []


def import_pyplot():
    """matplotlib's pyplot with the Agg backend; raises whatever the import raises."""
    if not _PYPLOT:
        import matplotlib  # pylint: disable=import-outside-toplevel
        matplotlib.use("Agg")
        from matplotlib import pyplot  # pylint: disable=import-outside-toplevel
        _PYPLOT.append((pyplot, getattr(matplotlib, "__version__", None)))
    return _PYPLOT[0]


def where():
    """A phrase for the place the module runs: an execution environment under ansible-runner / AWX, or the controller."""
    runner = any(os.environ.get(k) for k in ("AWX_ISOLATED_DATA_DIR", "JOB_ID", "AWX_HOST"))
    container = os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv")
    if runner and container:
        return "the execution environment (EE) image (ansible-runner / AWX)"
    return "the controller"


def libraries():
    """{matplotlib: {present, version, needed_for, error}, python, where}."""
    try:
        dummy, version = import_pyplot()
        mpl = {"present": True, "version": version, "needed_for": "the plots", "error": None}
    except Exception as exc:  # pylint: disable=broad-except
        mpl = {"present": False, "version": None, "needed_for": "the plots", "error": "%s: %s" % (type(exc).__name__, exc)}
    return {"matplotlib": mpl, "python": sys.executable, "where": where()}


def missing_message(libs):
    """What is missing, where, and the two ways on."""
    in_ee = libs["where"] != "the controller"
    how = ("rebuild the EE with this collection (matplotlib is in its meta/ee-requirements.txt: `make ee`, or "
           "ansible-builder with a definition that installs dgx_spark.specdec) and select that image in the job "
           "template" if in_ee else
           "install it into that Python (%s -m pip install matplotlib), or point localhost's ansible_python_interpreter "
           "at a Python that has it; under AWX / ansible-runner, use an EE built with this collection (`make ee`)"
           % libs["python"])
    return ("matplotlib is missing on %s (Python %s; %s): the tuner draws its plots there. Stopped before any server "
            "restart or measurement. Either %s, or run without plots: -e specdec_tune_plots=false (tune.json and "
            "report.md are written all the same)."
            % (libs["where"], libs["python"], libs["matplotlib"]["error"], how))


def discarded_warning(results_dir):
    """A warning when the results would land in the job's private data directory (AWX discards it), else None."""
    isolated = os.environ.get("AWX_ISOLATED_DATA_DIR")
    private = os.path.dirname(os.path.dirname(isolated.rstrip("/"))) if isolated else None
    for root in filter(None, (private, "/runner")):
        if results_dir == root or results_dir.startswith(root.rstrip("/") + "/"):
            return ("results_dir %s is inside the job's private data directory (%s), which AWX discards after the job: "
                    "set specdec_tune_results_dir to a persistent path (a job template survey question; a volume "
                    "mounted into the EE). The headline figures are also in the job's artifacts "
                    "(set_stats dgx_spark_specdec_tune)." % (results_dir, root))
    return None


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
    plots_state = doc.get("plots") or {"drawn": True}
    if plots_state.get("drawn"):
        lines += ["", "![tokens/s](tokens_per_s.png)", "", "![acceptance by draft position](acceptance.png)", ""]
    else:
        lines += ["", "Plots were not drawn: %s. The figures above and `tune.json` are complete without them."
                  % plots_state.get("reason"), ""]
    return "\n".join(lines)


PLOT_FILES = ("acceptance.png", "tokens_per_s.png")


def plots(doc):
    """{file name: PNG bytes}."""
    pyplot = import_pyplot()[0]
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
    out["tokens_per_s.png"] = _png(pyplot, figure)
    figure, axes = pyplot.subplots(figsize=(6.4, 4.0), dpi=100)
    by_position = (doc["acceptance"] or {}).get("by_position") or []
    axes.bar(range(1, len(by_position) + 1), by_position, color="tab:blue")
    axes.set_ylim(0, 1)
    axes.set_xlabel("draft position k")
    axes.set_ylabel("P(token k accepted | 1..k-1 were)")
    axes.set_title("Acceptance by draft position")
    out["acceptance.png"] = _png(pyplot, figure)
    return out


def _png(pyplot, figure):
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


def _write_files(module, results_dir, files):
    """Write {name: bytes} under results_dir (created with its parents); True when something changed."""
    if not os.path.isdir(results_dir):
        if not module.check_mode:
            os.makedirs(results_dir, mode=0o755)
        else:
            return True
    changed = False
    for name, data in files.items():
        changed = _write(module, os.path.join(results_dir, name), data) or changed
    return changed


def _json_bytes(value):
    return (json.dumps(value, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _summary(doc):
    return dict(chosen_max_draft_len=doc.get("chosen_max_draft_len"), speedup=doc.get("speedup"),
                restarts=doc.get("restarts"), chosen_tokens_per_s=doc.get("chosen_tokens_per_s"),
                baseline_tokens_per_s=doc.get("baseline_tokens_per_s"),
                plots=bool((doc.get("plots") or {"drawn": True}).get("drawn")))


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
            plots=dict(type="bool", default=True),
            check_dependencies=dict(type="bool", default=False),
            record=dict(type="bool", default=False),
        ),
        mutually_exclusive=[("check_dependencies", "record", "write")],
        supports_check_mode=True,
    )
    p = module.params
    results_dir = os.path.abspath(p["results_dir"])
    if not p["candidates"] or min(p["candidates"]) < 1:
        module.fail_json(msg="candidates: %s must be draft lengths >= 1" % p["candidates"], results_dir=results_dir)
    for item in p["measured"]:
        if not isinstance(item.get("max_draft_len"), int) or not isinstance(item.get("bench"), dict):
            module.fail_json(msg="measured: each item needs max_draft_len (int) and bench (a specdec_bench result), got %s"
                             % sorted(item), results_dir=results_dir)
    warning = discarded_warning(results_dir)
    if warning:
        module.warn(warning)
    json_path = os.path.join(results_dir, "tune.json")
    previous = _previous(json_path)

    if p["record"]:
        # The measurements so far, so that an interrupted run keeps them.
        record = {"inputs": p["inputs"], "complete": False, "baseline": p["baseline"], "measured": p["measured"]}
        changed = _write_files(module, results_dir, {"measurements.json": _json_bytes(record)})
        module.exit_json(changed=changed, reuse=False, to_confirm=[], results_dir=results_dir,
                         files=[os.path.join(results_dir, "measurements.json")])

    reusable = not p["measured"] and not p["force"] and previous and previous.get("inputs") == p["inputs"]

    if p["check_dependencies"]:
        libs = libraries()
        plots_wanted = p["plots"]
        draw = plots_wanted and libs["matplotlib"]["present"]
        reason = (None if draw else "specdec_tune_plots is false" if not plots_wanted else
                  "matplotlib is missing on %s (%s)" % (libs["where"], libs["matplotlib"]["error"]))
        result = dict(changed=False, reuse=bool(reusable), to_confirm=[], results_dir=results_dir, libraries=libs,
                      plots=draw, plots_reason=reason)
        if reusable:
            result.update(_summary(previous), predicted=previous.get("predicted"))
            result["msg"] = ("Reusing %s (same inputs): no restart, no measurement (specdec_tune_force=true measures "
                             "again)." % json_path)
            module.exit_json(**result)
        if plots_wanted and not libs["matplotlib"]["present"]:
            module.fail_json(msg=missing_message(libs), **result)
        result["msg"] = ("Python %s on %s: matplotlib %s. The run measures the plain model and the candidates %s, "
                         "restarting the server for each setting, and writes tune.json, report.md%s to %s "
                         "(measurements.json after each measurement)."
                         % (libs["python"], libs["where"],
                            libs["matplotlib"]["version"] if libs["matplotlib"]["present"] else "missing",
                            sorted(p["candidates"]),
                            " and the plots" if draw else " (no plots: %s)" % reason, results_dir))
        module.exit_json(**result)

    if reusable:
        module.exit_json(changed=False, reuse=True, to_confirm=[], predicted=previous.get("predicted"),
                         results_dir=results_dir, msg="reusing %s (same inputs)" % json_path, **_summary(previous))
    try:
        analysis, measured = analyse(p)
    except tune.TuneError as exc:
        module.fail_json(msg=str(exc), results_dir=results_dir)
    result = dict(changed=False, reuse=False, predicted=analysis["predicted"], to_confirm=analysis["to_confirm"],
                  results_dir=results_dir)
    if not p["write"]:
        module.exit_json(**result)
    if not p["baseline"] or not measured:
        module.fail_json(msg="write: needs the baseline and at least one measured setting", **result)

    # 1. The measurements, the choice and the report: they never depend on the plotting library.
    doc = result_document(p, analysis, measured)
    if p["plots"]:
        doc["plots"] = {"drawn": True, "reason": None, "files": list(PLOT_FILES)}
    else:
        doc["plots"] = {"drawn": False, "reason": "specdec_tune_plots is false", "files": []}
    record = {"inputs": p["inputs"], "complete": True, "baseline": p["baseline"], "measured": p["measured"]}
    files = {"measurements.json": _json_bytes(record), "tune.json": _json_bytes(doc),
             "report.md": report_markdown(doc).encode("utf-8")}
    changed = _write_files(module, results_dir, files)

    # 2. The plots, last. Whatever goes wrong there is a warning and a line in the report, not a failure.
    if p["plots"]:
        try:
            pictures = plots(doc)
        except Exception as exc:  # pylint: disable=broad-except
            reason = "%s: %s (Python %s on %s)" % (type(exc).__name__, exc, sys.executable, where())
            module.warn("The plots were not drawn (%s); tune.json and report.md in %s are complete. Install matplotlib "
                        "there, or run with -e specdec_tune_plots=false." % (reason, results_dir))
            doc["plots"] = {"drawn": False, "reason": reason, "files": []}
            files.update({"tune.json": _json_bytes(doc), "report.md": report_markdown(doc).encode("utf-8")})
            changed = _write_files(module, results_dir, {k: files[k] for k in ("tune.json", "report.md")}) or changed
        else:
            files.update(pictures)
            changed = _write_files(module, results_dir, pictures) or changed

    result.update(changed=changed, files=[os.path.join(results_dir, n) for n in sorted(files)],
                  plots_reason=doc["plots"]["reason"], **_summary(doc))
    if module._diff and changed:
        result["diff"] = dict(before=json.dumps(previous, indent=2, sort_keys=True) + "\n" if previous else "",
                              after=files["tune.json"].decode("utf-8"), before_header=json_path, after_header=json_path)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
