"""Cohen's κ and its bootstrap interval against independent computations."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from agentwatch.stats.agreement import confusion, kappa, kappa_interval, kappas


def test_kappa_equals_the_definition_in_exact_fractions_and_sklearn() -> None:
    m = np.array([[20, 5, 1], [3, 30, 2], [0, 4, 10]])
    n = Fraction(int(m.sum()))
    po = Fraction(int(np.trace(m))) / n
    pe = sum(Fraction(int(m[i].sum())) * Fraction(int(m[:, i].sum())) for i in range(3)) / (n * n)
    assert kappa(m) == pytest.approx(float((po - pe) / (1 - pe)), abs=1e-15)
    truth = np.repeat(np.arange(3), m.sum(axis=1))
    rated = np.concatenate([np.repeat(np.arange(3), row) for row in m])
    assert (confusion(truth.tolist(), rated.tolist(), 3) == m).all()
    assert kappa(m) == pytest.approx(cohen_kappa_score(truth, rated))


def test_kappa_is_nan_where_undefined_and_vectorises() -> None:
    assert math.isnan(kappa(np.zeros((2, 2))))
    assert math.isnan(kappa(np.array([[5, 0], [0, 0]])))  # chance agreement is 1
    stack = np.array([[[4, 1], [1, 4]], [[5, 0], [0, 5]], [[0, 0], [0, 0]]])
    got = kappas(stack)
    assert got[0] == pytest.approx(0.6) and got[1] == 1.0 and math.isnan(got[2])


def test_item_interval_matches_a_direct_resampling_of_the_items() -> None:
    rng = np.random.default_rng(4)
    truth = rng.integers(0, 3, 600)
    rated = np.where(rng.random(600) < 0.7, truth, rng.integers(0, 3, 600))
    lo, hi = kappa_interval(truth.tolist(), rated.tolist(), 3, resamples=4000, seed=1)
    direct = []
    for _ in range(4000):  # the textbook bootstrap, one index draw per resample
        idx = rng.integers(0, 600, 600)
        direct.append(cohen_kappa_score(truth[idx], rated[idx]))
    d_lo, d_hi = np.quantile(direct, [0.025, 0.975])
    assert lo == pytest.approx(d_lo, abs=0.01) and hi == pytest.approx(d_hi, abs=0.01)
    assert lo < kappa(confusion(truth.tolist(), rated.tolist(), 3)) < hi
    assert kappa_interval(truth.tolist(), rated.tolist(), 3, resamples=4000, seed=1) == (lo, hi)  # seeded


def test_groups_are_resampled_whole() -> None:
    # Ten groups; within a group the rater is either always right or always wrong: resampling groups sees that
    # variation, resampling items (600 of them) averages it away.
    rng = np.random.default_rng(8)
    truth = rng.integers(0, 2, 600)
    groups = np.repeat(np.arange(10), 60)
    right = np.isin(groups, [0, 1, 2, 3, 4, 5, 6])
    rated = np.where(right, truth, 1 - truth)
    g_lo, g_hi = kappa_interval(truth.tolist(), rated.tolist(), 2, groups.tolist(), seed=3)
    i_lo, i_hi = kappa_interval(truth.tolist(), rated.tolist(), 2, seed=3)
    assert (g_hi - g_lo) > 3 * (i_hi - i_lo)
    one_each = kappa_interval(truth.tolist(), rated.tolist(), 2, list(range(600)), resamples=4000, seed=5)
    assert one_each == pytest.approx(
        kappa_interval(truth.tolist(), rated.tolist(), 2, resamples=4000, seed=6), abs=0.02
    )
    assert all(math.isnan(x) for x in kappa_interval([], [], 2))
