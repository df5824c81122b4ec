"""Percentile-bootstrap intervals of a mean: seeded, vectorised, memory-bounded; no global random state.

`bootstrap_units_interval` resamples *units* (a task, or a task instance, attempted several times) instead
of conversations: attempts at one unit succeed or fail together more often than independent draws, and the
estimand is the mean over the population of units the observed ones stand for — the resampling pass^k's
interval is about (`agentwatch.stats.units`). Few units make a percentile interval too narrow (it ignores the
variance of the variance estimate), so its tail probability is expanded as in Hesterberg (2015): the normal
quantile of the tail is replaced by sqrt(m / (m − 1)) times Student's t quantile with m − 1 degrees of freedom.

Values that do not vary give a bootstrap nothing to resample: 30 conversations all credited 1 resample to 1 every
time, and the interval read [1, 1] beside a success rate of [0.888, 0.999]. There (`flat_widened`) the interval is
the Beta posterior of the credits taken as successes and failures, the success rate's when they are 0 or 1
(a credit in [0, 1] with mean p varies at most as a success with probability p does). Where the values vary, the
bootstrap's interval stands: widened to that Beta everywhere, ASR over 10 units of 2 attempts each succeeding
with 0.02 (a third of the failures credited 0.4) read 1.5 times as wide (0.315 against 0.207) and covered 99.8%
instead of 93.7% (`python -m benchmarks.coverage --equal --asr --reps 1000`, 2026-11-30, run once with the
widening applied everywhere for the comparison).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr, stdtrit

from agentwatch.stats.beta import beta_interval
from agentwatch.stats.checks import check_level

__all__ = [
    "bootstrap_counts_interval",
    "bootstrap_mean_interval",
    "bootstrap_units_interval",
    "units_credit_interval",
    "flat_widened",
]

# Memory bound of one bootstrap chunk (number of int64 indices drawn at once).
_BOOTSTRAP_CHUNK_CELLS = 4_000_000
# Up to this many distinct values, the bootstrap draws multinomial counts instead of indices.
_BOOTSTRAP_DISTINCT_MAX = 64
# A multinomial count per distinct value costs several index draws (numpy draws it as a chain of binomials), so
# counts pay only where many units share a mean.
_MULTINOMIAL_PER_DRAW = 5


def bootstrap_mean_interval(
    values: ArrayLike, level: float = 0.95, resamples: int = 1000, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of `values` and its percentile-bootstrap interval: (value, lower, upper); NaNs when empty."""
    _check_bootstrap(level, resamples)
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        return math.nan, math.nan, math.nan
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite")
    uniq, freq = np.unique(x, return_counts=True)
    if uniq.size <= _BOOTSTRAP_DISTINCT_MAX:
        lo, hi = bootstrap_counts_interval(uniq, freq, level, resamples, seed)
    else:
        means = _resampled_means(x, np.random.default_rng(seed), resamples)
        lo, hi = _percentile_interval(means, level)
    return float(x.mean()), lo, hi


def bootstrap_units_interval(
    unit_means: ArrayLike,
    level: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
    counts: ArrayLike | None = None,
) -> tuple[float, float, float]:
    """The mean over units of each unit's mean, and its expanded percentile-bootstrap interval over units:
    (value, lower, upper). Units are resampled with replacement, each keeping all its attempts; with one unit
    the bounds are NaN (one unit says nothing about how units differ); NaNs when empty. `counts`, when given,
    says how many units have each of the (distinct) `unit_means`."""
    _check_bootstrap(level, resamples)
    x = np.asarray(unit_means, dtype=np.float64).ravel()
    w = None if counts is None else np.asarray(counts, dtype=np.float64).ravel()
    if w is not None and (w.size != x.size or (w < 0).any() or not np.all(w == np.floor(w))):
        raise ValueError("need a non-negative whole count for each unit mean")
    if x.size == 0 or (w is not None and w.sum() == 0):
        return math.nan, math.nan, math.nan
    if not np.all(np.isfinite(x)):
        raise ValueError("unit means must be finite")
    m = x.size if w is None else int(w.sum())
    value = float(x.mean()) if w is None else float(x @ w / m)
    if m == 1:
        return value, math.nan, math.nan
    tail = (1.0 - level) / 2.0
    wider = math.sqrt(m / (m - 1)) * float(stdtrit(m - 1, 1.0 - tail))
    if w is not None and x.size * _MULTINOMIAL_PER_DRAW >= m:
        # Few units share a mean: drawing unit indices is cheaper than multinomial counts over the means.
        x, w = np.repeat(x, w.astype(np.int64)), None
    rng = np.random.default_rng(seed)
    means = _resampled_means(x, rng, resamples) if w is None else _multinomial_means(x, w, rng, resamples)
    lo, hi = np.quantile(means, [float(ndtr(-wider)), float(ndtr(wider))])
    return value, float(min(lo, value)), float(max(hi, value))


def flat_widened(
    lower: float, upper: float, credits: float, n: float, prior: tuple[float, float], level: float
) -> tuple[float, float]:
    """A bootstrap interval of mean credit, unless it has no width (the values did not vary): then widened to
    hold the equal-tailed interval of Beta(α + credits, β + n − credits), `credits` the sum of the `n` credits
    in [0, 1] and `prior` (α, β). NaN bounds (no interval) stay NaN."""
    if lower != upper or math.isnan(lower) or n <= 0:
        return lower, upper
    alpha, beta = prior
    lo, hi = beta_interval(alpha + credits, beta + n - credits, level)
    return min(lower, float(lo)), max(upper, float(hi))


def units_credit_interval(
    unit_means: ArrayLike,
    credits: float,
    n: int,
    prior: tuple[float, float],
    level: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """ASR over units: `bootstrap_units_interval` of the units' mean credits, and where every unit has the same
    mean (nothing to resample but that value) the interval `flat_widened` gives with the sum of the `n`
    conversations' credits."""
    value, lo, hi = bootstrap_units_interval(unit_means, level, resamples, seed)
    return value, *flat_widened(lo, hi, credits, n, prior, level)


def expanded_tail(m: int, level: float) -> float:
    """The tail probability the expanded percentile interval of `m` units reads at each end (below
    (1 - level) / 2, approaching it as m grows)."""
    check_level(level)
    if m < 2:
        raise ValueError("the expanded tail needs at least two units")
    tail = (1.0 - level) / 2.0
    return float(ndtr(-math.sqrt(m / (m - 1)) * float(stdtrit(m - 1, 1.0 - tail))))


def bootstrap_counts_interval(
    values: ArrayLike, counts: ArrayLike, level: float = 0.95, resamples: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """Percentile-bootstrap interval of the mean of a multiset given as distinct values and their counts."""
    _check_bootstrap(level, resamples)
    v = np.asarray(values, dtype=np.float64).ravel()
    w = np.asarray(counts, dtype=np.float64).ravel()
    if v.size == 0 or v.size != w.size or (w < 0).any() or not np.isfinite(v).all():
        raise ValueError("need as many non-negative counts as finite values, and at least one value")
    if v.size == 1:
        return float(v[0]), float(v[0])
    return _percentile_interval(_multinomial_means(v, w, np.random.default_rng(seed), resamples), level)


def _check_bootstrap(level: float, resamples: int) -> None:
    check_level(level)
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")


def _percentile_interval(means: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [tail, 1.0 - tail])
    return float(lo), float(hi)


def _resampled_means(x: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Means of `resamples` resamples of x with replacement, drawn in memory-bounded chunks."""
    n = x.size
    means = np.empty(resamples, dtype=np.float64)
    chunk = max(1, _BOOTSTRAP_CHUNK_CELLS // n)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = x[idx].mean(axis=1)
    return means


def _multinomial_means(v: np.ndarray, w: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Means of `resamples` resamples with replacement of the multiset (values `v`, counts `w`), drawn as
    multinomial counts over the distinct values (a cost independent of the multiset's size) in memory-bounded
    chunks."""
    n = int(w.sum())
    p = w / n
    means = np.empty(resamples, dtype=np.float64)
    chunk = max(1, _BOOTSTRAP_CHUNK_CELLS // v.size)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        means[start:stop] = rng.multinomial(n, p, size=stop - start) @ v / n
    return means
