"""The Bernoulli CUSUM: exact ARL against a rational solve, thresholds against an independent average over the
reference's posterior, the alarm episodes against a plain loop, simulation of the run length."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import sparse, stats
from scipy.sparse.linalg import spsolve

from agentwatch.exporters.alert_rules import MeanDrop, OddsRatio, PassDrop
from agentwatch.stats import cusum


def _arl_fraction(q: Fraction, up: int, down: int, h: int) -> Fraction:
    """E[steps to S >= h from 0] by Gaussian elimination over the rationals on the h-state chain."""
    a = [[Fraction(int(i == j)) for j in range(h)] + [Fraction(1)] for i in range(h)]
    for i in range(h):
        a[i][max(i + down, 0)] -= 1 - q
        if i + up < h:
            a[i][i + up] -= q
    for col in range(h):
        pivot = next(r for r in range(col, h) if a[r][col] != 0)
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(h):
            if r != col and a[r][col] != 0:
                f = a[r][col] / a[col][col]
                a[r] = [x - f * y for x, y in zip(a[r], a[col], strict=True)]
    return a[0][h] / a[0][0]


@pytest.mark.parametrize(
    ("q", "up", "down", "h"),
    [
        (Fraction(1, 5), 3, -1, 7),
        (Fraction(1, 10), 5, -2, 13),
        (Fraction(3, 10), 2, -3, 9),
        (Fraction(1, 50), 11, -1, 30),
        (Fraction(1, 4), 20, -1, 6),  # a bad observation alarms at once
    ],
)
def test_arl_equals_the_rational_solution_of_the_chain(q: Fraction, up: int, down: int, h: int) -> None:
    exact = _arl_fraction(q, up, down, h)
    assert cusum.arl(float(q), up, down, h) == pytest.approx(float(exact), rel=1e-11)


def _run_lengths(q: float, up: int, down: int, h: int, runs: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    s = np.zeros(runs, dtype=np.int64)
    length = np.zeros(runs, dtype=np.int64)
    alive = np.ones(runs, dtype=bool)
    while alive.any():
        x = np.where(rng.random(runs) < q, up, down)
        s = np.where(alive, np.maximum(0, s + x), s)
        length += alive
        alive &= s < h
    return length


def test_arl_of_a_larger_chain_agrees_with_simulation() -> None:
    up, down, h = 26, -1, 80  # q = 0.02: an ARL of about 2,100
    exact = cusum.arl(0.02, up, down, h)
    assert 1000 < exact < 10_000
    runs = _run_lengths(0.02, up, down, h, 3000, seed=7)
    # Run lengths are about geometric: the mean of 3000 has a relative standard error of about 1.8%.
    assert runs.mean() == pytest.approx(exact, rel=0.07)


@pytest.mark.parametrize(
    ("q0", "q1"), [(0.02, 0.06), (0.2, 0.287), (0.001, 0.011), (0.3, 0.5625), (0.6, 0.62)]
)
def test_increments_are_the_log_likelihood_ratios_in_the_fewest_units(q0: float, q1: float) -> None:
    scale, up, down = cusum.increments(q0, q1)
    bad, good = math.log(q1 / q0), math.log((1 - q1) / (1 - q0))
    assert down / scale == pytest.approx(good, rel=1e-12)  # exact
    assert up / scale == pytest.approx(bad, abs=0.5 / scale)  # rounded to the unit
    assert abs(up / -down - bad / -good) <= cusum.RATIO_TOLERANCE * bad / -good
    # No smaller number of units for a good observation keeps the ratio within the tolerance.
    assert all(
        abs(max(1, round(bad / -good * d)) / d - bad / -good) > cusum.RATIO_TOLERANCE * bad / -good
        for d in range(1, -down)
    )


def test_kl_and_the_information_bound() -> None:
    assert cusum.kl(0.06, 0.02) == pytest.approx(0.06 * math.log(3) + 0.94 * math.log(0.94 / 0.98))
    assert cusum.information_bound(1e6, 0.02, 0.06) == pytest.approx(math.log(1e6) / cusum.kl(0.06, 0.02))


def _sparse_arl(q: float, up: int, down: int, h: int) -> float:
    """The same chain by a sparse LU solve (SuperLU), independent of the banded LAPACK path."""
    i = np.arange(h)
    bad = i + up < h
    rows = np.concatenate([i, i, i[bad]])
    cols = np.concatenate([i, np.maximum(i + down, 0), (i + up)[bad]])
    vals = np.concatenate([np.ones(h), np.full(h, q - 1.0), np.full(int(bad.sum()), -q)])
    m = sparse.csc_matrix((vals, (rows, cols)), shape=(h, h))  # duplicates (row 0) are summed
    return float(spsolve(m, np.ones(h))[0])


def _averaged_pages(d: cusum.Design, h: int) -> float:
    """Expected false pages a month at threshold h, averaged over the reference's posterior by the trapezoid
    rule on a fine grid of its quantiles (z from -8 to 8), with sparse solves."""
    a, b = d.q0 * d.size, (1 - d.q0) * d.size
    z = np.linspace(-8, 8, 97)
    q = stats.beta.ppf(stats.norm.cdf(z), a, b)
    f = []
    for qi in q:
        run = _sparse_arl(float(qi), d.up, d.down, h)
        step = qi * d.up + (1 - qi) * d.down
        episode = h / -step if step < 0 else math.inf
        f.append(max(min(1.0, d.observations / run), d.observations / (run + episode)))
    return float(np.trapezoid(np.array(f) * stats.norm.pdf(z), z))


@pytest.mark.parametrize(
    ("q0", "size", "observations", "alternative"),
    [
        (0.2, 2000, 20_000, PassDrop(3, 0.15)),  # a small reference: the posterior matters
        (0.03, 4000, 60_000, OddsRatio(3.0, 0.01)),
        (0.25, 50_000, 100_000, MeanDrop(0.1)),  # a large one: close to the plug-in design
    ],
)
def test_threshold_is_the_smallest_within_the_share_averaged_over_the_posterior(
    q0, size, observations, alternative
) -> None:
    share = 0.01
    d = cusum.design(*cusum.on_grid(q0, size, observations, share), alternative)
    assert d.pages <= d.share
    # Independent average: within the quadrature's accuracy (5%) of the share at h, above it at h - 1.
    at_h, below = _averaged_pages(d, d.h), _averaged_pages(d, d.h - 1)
    assert at_h <= 1.05 * d.share
    assert below > 0.95 * d.share
    assert d.pages == pytest.approx(at_h, rel=0.05)
    # Treating the reference as known would have set a lower threshold: its estimation error costs something.
    plug_in = cusum.threshold(d.q0 * 1e12, (1 - d.q0) * 1e12, d.up, d.down, d.observations, d.share)[0]
    assert plug_in <= d.h


def test_the_expected_pages_of_a_plug_in_design_exceed_the_share_when_the_reference_is_small() -> None:
    """Why the threshold averages over the posterior: designed as if a 2,000-conversation reference were
    exact, the expected false pages are several times the share."""
    d = cusum.design(*cusum.on_grid(0.2, 2000, 50_000, 0.01), PassDrop(3, 0.15))
    plug_h, _ = cusum.threshold(d.q0 * 1e12, (1 - d.q0) * 1e12, d.up, d.down, d.observations, d.share)
    assert _averaged_pages(d, plug_h) > 2 * d.share


def test_pages_of_a_chain_without_negative_drift_is_one_page() -> None:
    scale, up, down = cusum.increments(0.1, 0.3)
    critical = -down / (up - down)
    assert cusum.pages(critical + 0.02, up, down, 50, 1e6) == 1.0
    run = cusum.arl(0.1, up, down, 50)
    step = 0.1 * up + 0.9 * down
    assert cusum.pages(0.1, up, down, 50, 1e6) == pytest.approx(1e6 / (run + 50 / -step))
    assert cusum.pages(0.1, up, down, 800, 10.0) == pytest.approx(10.0 / cusum.arl(0.1, up, down, 800))


def test_tuning_moves_to_a_higher_quantile_when_the_reference_is_too_uncertain() -> None:
    wide = cusum.tuning(0.03, 200, 0.001, OddsRatio(3.0, 0.01))
    narrow = cusum.tuning(0.03, 200_000, 0.001, OddsRatio(3.0, 0.01))
    a, b = 0.03 * 200, 0.97 * 200
    assert wide[0] > stats.beta.ppf(stats.norm.cdf(cusum.TUNE_Z), a, b) + 1e-6
    _scale, up, down = cusum.increments(*wide)
    assert stats.beta.sf(-down / (up - down), a, b) <= 0.001 / 4
    assert narrow[0] == pytest.approx(stats.beta.ppf(stats.norm.cdf(cusum.TUNE_Z), 6000, 194_000), rel=1e-9)


def test_grid_rounds_towards_more_conservative_designs() -> None:
    mean, size, observations, share = cusum.on_grid(0.0312, 2345.0, 12_345.0, 0.0123)
    assert 0.0312 <= mean < 0.0312 * 1.0101
    assert 2345.0 / 2**0.25 < size <= 2345.0
    assert 12_345.0 <= observations < 12_345.0 * 10**0.05 + 1e-6
    assert 0.0123 / 10**0.05 < share <= 0.0123


def _loop(n: np.ndarray, x: np.ndarray, up: int, down: int, h: int) -> tuple[int, bool]:
    s, alarm = 0, False
    for ni, xi in zip(n, x, strict=True):
        s = max(0, s + up * int(xi) + down * int(ni - xi))
        if s >= h:
            alarm = True
        elif s == 0:
            alarm = False
    return s, alarm


def test_statistic_and_alarm_episodes_match_a_plain_loop() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        minutes = int(rng.integers(1, 60))
        n = rng.poisson(3, size=(minutes, 3))
        x = rng.binomial(n, [0.1, 0.3, 0.5])
        up, down, h = np.array([5, 3, 2]), np.array([-1, -1, -2]), np.array([12, 9, 7])
        stat, alarm = cusum.statistic(n, x, up, down, h)
        for j in range(3):
            assert (int(stat[j]), bool(alarm[j])) == _loop(
                n[:, j], x[:, j], int(up[j]), int(down[j]), int(h[j])
            )


def test_an_alarm_stays_on_below_the_threshold_until_the_statistic_returns_to_zero() -> None:
    up, down, h = np.array([10]), np.array([-1]), np.array([20])
    bad = np.array([[0], [1], [1], [0]])
    n = np.array([[5], [1], [1], [3]])
    stat, alarm = cusum.statistic(n, bad, up, down, h)
    assert int(stat[0]) == 17 and bool(alarm[0])  # reached 20, now 17: still on
    quiet = np.vstack([n, [[30]]])
    stat, alarm = cusum.statistic(quiet, np.vstack([bad, [[0]]]), up, down, h)
    assert int(stat[0]) == 0 and not bool(alarm[0])
