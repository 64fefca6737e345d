# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Choosing ``max_draft_len`` with few server restarts: the model behind the draft-length tuner.

On a Spark every setting is a server restart with a model load of minutes, so the tuner measures the plain
model (the baseline) and one speculative setting, the largest candidate ``d0``, and predicts the rest:

* Acceptance. At batch size 1 each iteration accepts ``j`` of the ``d0`` draft tokens (0..d0); their
  histogram gives ``S_k = P(J >= k)``. Drafting ``d <= d0`` tokens accepts ``min(J, d)`` (the first ``d``
  draft tokens are the same), so one iteration yields ``1 + sum(S_1..S_d)`` tokens.
* Cost. One iteration with draft length ``d`` takes ``T + d * c`` ms: ``T`` is the plain model's step (the
  baseline's time per token at concurrency 1), ``c`` the draft and verification cost per drafted token,
  from the measured iteration time at ``d0``.
* Predicted tokens/s at ``d`` = ``1000 * (1 + sum(S_1..S_d)) / (T + d * c)``.

The best one or two predictions not yet measured are then confirmed by measurement, and the best measured
setting wins; if none beats the baseline, speculative decoding loses and the result says so. Pure Python:
used by the tuning module on the controller and by the unit tests.
"""

from __future__ import annotations


class TuneError(ValueError):
    pass


def acceptance(histogram):
    """From an accepted-length histogram ``[n_0, n_1, ..., n_d0]`` (iterations that accepted j draft tokens):

    ``survival`` S_k = P(J >= k) for k = 1..d0, ``by_position`` a_k = P(token k accepted | tokens 1..k-1 were)
    and ``mean_accepted`` E[J].
    """
    counts = [float(n) for n in histogram]
    total = sum(counts)
    if len(counts) < 2 or total <= 0 or min(counts) < 0:
        raise TuneError("the accepted-length histogram needs at least two bins and some iterations: %r" % (histogram,))
    survival = []
    for k in range(1, len(counts)):
        survival.append(sum(counts[k:]) / total)
    by_position = []
    previous = 1.0
    for value in survival:
        by_position.append(value / previous if previous > 0 else 0.0)
        previous = value
    return {"survival": survival, "by_position": by_position, "mean_accepted": sum(survival)}


def fit_cost(baseline_tokens_per_s, measured_tokens_per_s, draft_len, mean_accepted):
    """(T, c) in ms: the plain step from the baseline, the cost per drafted token from the measurement at draft_len."""
    if baseline_tokens_per_s <= 0 or measured_tokens_per_s <= 0 or draft_len < 1:
        raise TuneError("tokens/s must be > 0 and the draft length >= 1")
    step = 1000.0 / baseline_tokens_per_s
    iteration = 1000.0 * (1.0 + mean_accepted) / measured_tokens_per_s
    return step, max(0.0, (iteration - step) / draft_len)


def predict(candidates, survival, step_ms, cost_ms):
    """Predicted tokens/s for each candidate draft length (none above the measured one: its acceptance is unknown)."""
    out = {}
    for length in sorted(set(candidates)):
        if length < 1 or length > len(survival):
            continue
        out[length] = 1000.0 * (1.0 + sum(survival[:length])) / (step_ms + length * cost_ms)
    return out


def to_confirm(predicted, measured, confirm=2):
    """The best ``confirm`` predicted draft lengths that have not been measured yet, best first."""
    ranked = sorted(predicted, key=lambda d: (-predicted[d], d))
    return [d for d in ranked[:confirm] if d not in measured]


def choose(measured, baseline_tokens_per_s):
    """(chosen draft length or None when speculation loses, its tokens/s, speedup over the baseline)."""
    if not measured:
        raise TuneError("nothing was measured")
    best = max(measured, key=lambda d: (measured[d], -d))
    speedup = measured[best] / baseline_tokens_per_s
    if speedup <= 1.0:
        return None, measured[best], speedup
    return best, measured[best], speedup
