"""Prediction-powered inference: the estimate against a direct computation, and coverage at known truths."""

from __future__ import annotations

import math
from dataclasses import astuple

import numpy as np
import pytest

from agentwatch.stats.ppi import PPIMoments, Stratum, binary_interval, power_interval, ppi_mean


def _judged(
    rng: np.random.Generator, size: int, p: float, sensitivity: float, false_pass: float
) -> tuple[np.ndarray, np.ndarray]:
    """True outcomes y ~ Bernoulli(p) and a judge that passes `sensitivity` of successes, `false_pass` of failures."""
    y = rng.random(size) < p
    f = np.where(y, rng.random(size) < sensitivity, rng.random(size) < false_pass)
    return y.astype(float), f.astype(float)


def test_estimate_equals_the_two_phase_ppi_formulas_computed_directly() -> None:
    rng = np.random.default_rng(7)
    y = rng.random(80)
    f = np.clip(y + rng.normal(0.1, 0.2, 80), 0, 1)
    u = np.clip(rng.random(900) + 0.1, 0, 1)
    est = ppi_mean(PPIMoments.of(y, f, u), bounds=None)
    assert est is not None
    n = len(y)
    every = np.concatenate([f, u])  # the verdicts on every conversation, labelled ones included
    lam = min(1.0, max(0.0, np.cov(y, f, bias=True)[0, 1] / np.var(f)))  # the slope of y on f
    value = y.mean() + lam * (every.mean() - f.mean())
    z = y - lam * f
    cov_zf = np.cov(z, f, bias=True)[0, 1]
    se = math.sqrt(
        np.var(z, ddof=1) / n + lam**2 * np.var(every, ddof=1) / every.size + 2 * lam * cov_zf / every.size
    )
    assert est.lam == pytest.approx(lam, rel=1e-12)
    assert est.value == pytest.approx(value, rel=1e-12)
    assert est.se == pytest.approx(se, rel=1e-9)
    assert est.judge_only == pytest.approx(every.mean(), rel=1e-12)
    assert (est.labels, est.predictions) == (80, 980)


def test_weighted_strata_equal_the_hajek_formulas_over_single_conversations() -> None:
    """Three strata with their own judge and review rates: the estimate from the strata's sums equals the
    Hájek means and linearised variances computed conversation by conversation."""
    rng = np.random.default_rng(8)
    strata, ys, fs, vs, every, ws = [], [], [], [], [], []
    plan = ((400, 40, 1.0, 0.1), (300, 12, 0.25, 0.02), (900, 45, 0.5, 0.05))
    for size, n, judge_rate, review_rate in plan:
        y = (rng.random(size) < 0.6).astype(float)
        f = np.where(rng.random(size) < 0.8, y, 1 - y)
        strata.append(Stratum(PPIMoments.of(y[:n], f[:n], f[n:]), judge_rate, review_rate))
        ys.append(y[:n])
        fs.append(f[:n])
        vs.append(np.full(n, 1 / review_rate))
        every.append(f)
        ws.append(np.full(size, 1 / judge_rate))
    y, f, v = np.concatenate(ys), np.concatenate(fs), np.concatenate(vs)
    fa, w = np.concatenate(every), np.concatenate(ws)
    est = ppi_mean(strata, lam=0.7, bounds=None)
    assert est is not None
    mean_y, mean_f, mean_fa = (v @ y) / v.sum(), (v @ f) / v.sum(), (w @ fa) / w.sum()
    assert est.value == pytest.approx(mean_y + 0.7 * (mean_fa - mean_f), rel=1e-12)
    z = y - 0.7 * f
    var_z = np.sum(v**2 * (z - (v @ z) / v.sum()) ** 2) / v.sum() ** 2 * len(y) / (len(y) - 1)
    var_fa = np.sum(w**2 * (fa - mean_fa) ** 2) / w.sum() ** 2 * len(fa) / (len(fa) - 1)
    cov_zf = np.sum(v * (z - (v @ z) / v.sum()) * (f - mean_f)) / v.sum()
    ne_a = w.sum() ** 2 / np.sum(w**2)
    assert est.se == pytest.approx(math.sqrt(var_z + 0.49 * var_fa + 1.4 * cov_zf / ne_a), rel=1e-9)
    assert est.judge_only == pytest.approx(mean_fa, rel=1e-12)
    binary = ppi_mean(strata, binary=True, bounds=None)
    assert binary is not None
    a = np.sum(v * y * f) / np.sum(v * f)
    b = np.sum(v * y * (1 - f)) / np.sum(v * (1 - f))
    assert binary.value == pytest.approx(mean_fa * a + (1 - mean_fa) * b, rel=1e-12)


def test_lambda_zero_is_the_labels_alone_and_a_constant_judge_gets_lambda_zero() -> None:
    y = np.array([1, 0, 1, 1, 0, 1, 1, 1], dtype=float)
    f = np.array([1, 1, 1, 0, 0, 1, 1, 1], dtype=float)
    est = ppi_mean(PPIMoments.of(y, f, np.ones(50)), lam=0.0, bounds=None)
    assert est is not None and est.value == pytest.approx(6 / 8)
    assert est.se == pytest.approx(math.sqrt(np.var(y, ddof=1) / 8))
    constant = ppi_mean(PPIMoments.of(y, np.ones(8), np.ones(50)))
    assert constant is not None and constant.lam == 0.0 and constant.value == pytest.approx(6 / 8)


def test_too_few_labels_give_no_estimate_and_moments_merge_by_addition() -> None:
    assert ppi_mean(PPIMoments.of([1.0], [1.0], [0.0, 1.0])) is None
    rng = np.random.default_rng(3)
    y, f = _judged(rng, 300, 0.6, 0.9, 0.3)
    whole = PPIMoments.of(y[:40], f[:40], f[40:])
    parts = PPIMoments.of(y[:15], f[:15], f[40:100]) + PPIMoments.of(y[15:40], f[15:40], f[100:])
    assert astuple(parts) == pytest.approx(astuple(whole))
    one_by_one = PPIMoments()
    for yi, fi in zip(y[:40], f[:40], strict=True):
        one_by_one = one_by_one.add(float(yi), float(fi))
    for fi in f[40:]:
        one_by_one = one_by_one.add(None, float(fi))
    assert ppi_mean(one_by_one) == ppi_mean(whole)


def test_binary_interval_agrees_with_monte_carlo_of_the_same_posterior() -> None:
    """The moment-matched Beta of θ = π·a + (1 − π)·b against 2,000,000 draws of the three posteriors."""
    # 2x2 labelled counts (y, f): 11 -> 30, 10 -> 3, 01 -> 9, 00 -> 8; unlabelled f: 700 ones, 250 zeros.
    y = np.array([1] * 30 + [1] * 3 + [0] * 9 + [0] * 8, dtype=float)
    f = np.array([1] * 30 + [0] * 3 + [1] * 9 + [0] * 8, dtype=float)
    u = np.array([1] * 700 + [0] * 250, dtype=float)
    lo, hi = binary_interval(PPIMoments.of(y, f, u), 0.95)
    rng = np.random.default_rng(11)
    a = rng.beta(0.5 + 30, 0.5 + 9, 2_000_000)
    b = rng.beta(0.5 + 3, 0.5 + 8, 2_000_000)
    pi = rng.beta(0.5 + 739, 0.5 + 261, 2_000_000)
    mc_lo, mc_hi = np.quantile(pi * a + (1 - pi) * b, [0.025, 0.975])
    assert lo == pytest.approx(mc_lo, abs=0.003) and hi == pytest.approx(mc_hi, abs=0.003)


def test_power_interval_transforms_each_bound() -> None:
    est = ppi_mean(PPIMoments.of([1, 1, 0, 1], [1, 1, 0, 1], [1] * 20 + [0] * 5))
    assert est is not None
    value, lower, upper = power_interval(est, 3)
    assert (value, lower, upper) == pytest.approx((est.value**3, est.lower**3, est.upper**3))


# Judge error profiles: (true success rate, share of successes the judge passes, share of failures it passes).
PROFILES = [(0.70, 0.95, 0.45), (0.90, 0.99, 0.70), (0.30, 0.60, 0.10), (0.50, 0.80, 0.20)]


@pytest.mark.parametrize(("size", "label_rate"), [(2000, 0.10), (2000, 0.02), (300, 0.10)])
@pytest.mark.parametrize(("p", "sensitivity", "false_pass"), PROFILES)
def test_corrected_interval_covers_the_truth_at_its_level(
    size: int, label_rate: float, p: float, sensitivity: float, false_pass: float
) -> None:
    rng = np.random.default_rng(round(size * label_rate * 1000 + p * 100))
    n = round(size * label_rate)
    reps, covered, judge_covered, width = 300, 0, 0, 0.0
    for _ in range(reps):
        y, f = _judged(rng, size, p, sensitivity, false_pass)
        est = ppi_mean(PPIMoments.of(y[:n], f[:n], f[n:]), binary=True)
        assert est is not None
        covered += est.lower <= p <= est.upper
        width += est.upper - est.lower
        jlo, jhi = _beta_interval_of(f)
        judge_covered += jlo <= p <= jhi
    # 300 repetitions: 0.95 +- 2.2 standard errors is [0.921, 0.979].
    assert 0.92 <= covered / reps <= 0.98, (covered / reps, width / reps)
    if abs(sensitivity * p + false_pass * (1 - p) - p) > 0.05:  # a judge biased by more than 5 points
        assert judge_covered / reps < 0.05


def _beta_interval_of(f: np.ndarray) -> tuple[float, float]:
    """The judge-only interval the report used to give: a Beta(1, 1) posterior of the judge's pass rate."""
    from scipy.stats import beta

    c, n = float(f.sum()), f.size
    return float(beta.ppf(0.025, 1 + c, 1 + n - c)), float(beta.ppf(0.975, 1 + c, 1 + n - c))


def test_continuous_credits_cover_with_enough_labels() -> None:
    """ASR-like credits (0, 0.4, 1) with a judge that over-credits: the t interval covers with 200 labels."""
    rng = np.random.default_rng(5)
    levels = np.array([0.0, 0.4, 1.0])
    truth_p = np.array([0.25, 0.15, 0.60])
    truth = float(levels @ truth_p)
    covered, reps, n, size = 0, 400, 200, 2000
    for _ in range(reps):
        y = levels[rng.choice(3, size=size, p=truth_p)]
        f = np.where(rng.random(size) < 0.3, np.minimum(1.0, y + 0.4), y)  # 30% credited one class higher
        est = ppi_mean(PPIMoments.of(y[:n], f[:n], f[n:]))
        assert est is not None
        covered += est.lower <= truth <= est.upper
    assert 0.925 <= covered / reps <= 0.975
