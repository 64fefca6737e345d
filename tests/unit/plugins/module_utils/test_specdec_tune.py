# -*- coding: utf-8 -*-
# Copyright (c) 2026, DGX Spark speculative-decoding collection maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The draft-length tuner's model against simulated speculative decoding: few restarts, near the best."""

from __future__ import annotations

import random

import pytest

from ansible_collections.dgx_spark.specdec.plugins.module_utils import _specdec_tune as tune

# NVIDIA's DGX Spark speculative-decoding playbook, Next Steps: "Experiment with different `max_draft_len` values
# (1, 2, 3, 4, 8)" (https://github.com/NVIDIA/dgx-spark-playbooks/tree/main/nvidia/speculative-decoding).
SEED_CANDIDATES = (1, 2, 3, 4, 8)

# Acceptance by position and costs the tuner was not written against (ms): an EAGLE-3-like draft, a weak
# draft-target pair, a draft so good the longest wins, a costly draft where speculation loses, a flat one.
PROFILES = {
    "eagle-like": {"acceptance": [0.85, 0.8, 0.72, 0.6, 0.5, 0.4, 0.3, 0.2], "T": 40.0, "D": 1.5, "V": 2.0},
    "weak-draft": {"acceptance": [0.6, 0.45, 0.3, 0.2], "T": 55.0, "D": 6.0, "V": 2.5},
    "strong-draft": {"acceptance": [0.97, 0.96, 0.95, 0.95, 0.94, 0.93, 0.92, 0.9], "T": 30.0, "D": 0.8, "V": 0.9},
    "loses": {"acceptance": [0.3, 0.1], "T": 20.0, "D": 12.0, "V": 6.0},
    "flat": {"acceptance": [0.7] * 8, "T": 25.0, "D": 2.0, "V": 1.0},
}


def expected_tokens(profile, length):
    tokens, survive = 1.0, 1.0
    for k in range(length):
        survive *= profile["acceptance"][k] if k < len(profile["acceptance"]) else 0.0
        tokens += survive
    return tokens


def true_tps(profile, length):
    return 1000.0 * expected_tokens(profile, length) / (profile["T"] + length * (profile["D"] + profile["V"]))


def run_at(profile, length, rng, iterations=400):
    """Serve `iterations` decoding steps at draft length `length`: (accepted-length histogram, tokens/s)."""
    histogram = [0] * (length + 1)
    tokens = 0
    for dummy in range(iterations):
        accepted = 0
        while accepted < length and rng.random() < (profile["acceptance"][accepted]
                                                    if accepted < len(profile["acceptance"]) else 0.0):
            accepted += 1
        histogram[accepted] += 1
        tokens += 1 + accepted
    elapsed_ms = iterations * (profile["T"] + length * (profile["D"] + profile["V"]))
    return histogram, 1000.0 * tokens / elapsed_ms


def tuner(profile, candidates, seed):
    """The tuner's procedure: baseline, the largest candidate, predictions, up to two confirmations."""
    rng = random.Random(seed)
    baseline = 1000.0 / profile["T"]
    largest = max(candidates)
    histogram, measured_tps = run_at(profile, largest, rng)
    measured = {largest: measured_tps}
    stats = tune.acceptance(histogram)
    step, cost = tune.fit_cost(baseline, measured_tps, largest, stats["mean_accepted"])
    predicted = tune.predict(candidates, stats["survival"], step, cost)
    for length in tune.to_confirm(predicted, measured):
        measured[length] = run_at(profile, length, rng)[1]
    chosen, chosen_tps, speedup = tune.choose(measured, baseline)
    return chosen, len(measured), speedup, predicted


@pytest.mark.parametrize("candidates", [SEED_CANDIDATES, tuple(range(1, 9))])
@pytest.mark.parametrize("name", sorted(PROFILES))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_few_restarts_and_at_least_95_percent_of_a_full_sweep(name, candidates, seed):
    profile = PROFILES[name]
    chosen, restarts, speedup, dummy = tuner(profile, candidates, seed)
    assert restarts <= 3  # the largest candidate and at most two confirmations; the baseline is not counted
    sweep = {d: true_tps(profile, d) for d in candidates}
    best = max(sweep.values())
    baseline = 1000.0 / profile["T"]
    if best <= baseline:
        assert chosen is None and speedup <= 1.0  # speculation loses: the tuner says so
    else:
        assert chosen is not None and sweep[chosen] >= 0.95 * best, (name, chosen, sweep)


def test_predictions_match_the_model_when_measurements_are_exact():
    profile = PROFILES["eagle-like"]
    survival, prob = [], 1.0
    for value in profile["acceptance"]:
        prob *= value
        survival.append(prob)
    predicted = tune.predict(range(1, 9), survival, profile["T"], profile["D"] + profile["V"])
    for length, value in predicted.items():
        assert value == pytest.approx(true_tps(profile, length))


def test_acceptance_from_a_histogram():
    stats = tune.acceptance([10, 30, 60])  # 100 iterations at draft length 2
    assert stats["survival"] == pytest.approx([0.9, 0.6])
    assert stats["by_position"] == pytest.approx([0.9, 0.6 / 0.9])
    assert stats["mean_accepted"] == pytest.approx(1.5)


def test_fit_cost_recovers_the_step_and_the_draft_cost():
    # T = 40 ms, c = 3.5 ms per drafted token, d0 = 4, 2 accepted on average: 3 tokens in 54 ms.
    step, cost = tune.fit_cost(25.0, 3000.0 / 54.0, 4, 2.0)
    assert step == pytest.approx(40.0) and cost == pytest.approx(3.5)


def test_nothing_is_predicted_beyond_the_measured_length():
    assert sorted(tune.predict([1, 2, 8], [0.8, 0.6], 40.0, 3.0)) == [1, 2]


@pytest.mark.parametrize("histogram", [[], [5], [0, 0], [3, -1]])
def test_bad_histograms_are_refused(histogram):
    with pytest.raises(tune.TuneError):
        tune.acceptance(histogram)


def test_choose_prefers_the_shorter_draft_on_a_tie_and_reports_the_speedup():
    assert tune.choose({2: 50.0, 4: 50.0}, 25.0) == (2, 50.0, 2.0)
    assert tune.choose({4: 20.0}, 25.0) == (None, 20.0, 0.8)
