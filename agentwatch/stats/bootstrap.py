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

`units_credit_interval` resamples the histogram of the units' mean credits (each distinct mean and its units), as
the exporter keeps them: with the same seed the report's bounds are the dashboard's.

ASR over units (`units_widened`) holds at least the interval the units' mean credits would have from their
attempts alone: every attempt's credit drawn from the pooled credits (variance σ²), a unit of a attempts has a
mean credit of variance σ²/a, and the units' means a variance s₀² = σ² times the mean over units of 1/a. That
interval is the design-effect Jeffreys Beta of pass^k's nonparametric interval (`agentwatch.stats.units`) at the
variance s₀²; skewed as a binomial count is, it reaches as far below a value near 1 as a few failures among many
attempts need. Where every unit succeeds with 0.98, unit means bunched at 1 with a few below read too narrow:
50 units of 1 to 8 attempts covered 88.1%, now 98.0%, and of 4 attempts 92.0%, now 96.3%. Unlike the Beta of the
credits above it allows for credits that vary less than successes do: at 0.02, 10 units of 2 attempts read 0.216
wide (the bootstrap 0.207) and cover 94.4% (the command above, 2026-11-30).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr, stdtrit

from agentwatch.stats.beta import beta_interval
from agentwatch.stats.checks import check_level
from agentwatch.stats.units_bounds import design_effect_beta

__all__ = [
    "CreditSums",
    "bootstrap_counts_interval",
    "bootstrap_mean_interval",
    "bootstrap_units_interval",
    "units_credit_interval",
    "units_widened",
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


@dataclass(frozen=True, slots=True)
class CreditSums:
    """Credited conversations: how many, the sum of their credits and the sum of their squares."""

    n: float
    total: float
    squares: float

    @classmethod
    def of(cls, credits: ArrayLike) -> CreditSums:
        """The sums of these credits."""
        x = np.asarray(credits, dtype=np.float64).ravel()
        return cls(float(x.size), float(x.sum()), float(x @ x))

    def variance(self) -> float:
        """The credits' variance about their mean (0 without credits; rounding never makes it negative)."""
        if self.n <= 0:
            return 0.0
        mean = self.total / self.n
        return max(0.0, self.squares / self.n - mean * mean)


def units_widened(
    value: float,
    bounds: tuple[float, float],
    units: int,
    inverse_attempts: float,
    sums: CreditSums,
    prior: tuple[float, float],
    level: float,
) -> tuple[float, float]:
    """The bounds of a bootstrap of ASR over `units` (value `value`) widened to hold the interval of their mean
    credits from their attempts alone, at the variance s₀² = the credits' variance times `inverse_attempts` (the
    mean over the units of 1/attempts), then `flat_widened`. NaN bounds (one unit) stay NaN."""
    lower, upper = bounds
    if math.isnan(lower):
        return lower, upper
    floor = sums.variance() * inverse_attempts
    if floor > 0.0:
        # units alike would vary this much from their attempts alone, whatever this sample of them shows
        tail = (1.0 - level) / 2.0
        _a, _b, lo, hi = design_effect_beta(np.array(value), np.array(float(units)), np.array(floor), tail)
        lower, upper = min(lower, float(lo)), max(upper, float(hi))
    return flat_widened(lower, upper, sums.total, sums.n, prior, level)


def units_credit_interval(
    unit_means: ArrayLike,
    attempts: ArrayLike,
    sums: CreditSums,
    prior: tuple[float, float],
    level: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """ASR over units: `bootstrap_units_interval` of the units' mean credits (unit i of `attempts[i]` credited
    attempts), `units_widened` with the sums of the conversations' credits."""
    means = np.asarray(unit_means, dtype=np.float64).ravel()
    a = np.asarray(attempts, dtype=np.float64).ravel()
    if a.size != means.size or (a < 1).any():
        raise ValueError("need one count of attempts, at least 1, for each unit mean")
    # the distinct means and their units, in ascending order, as the exporter keeps them: the same seed then draws
    # the same resamples offline and live, and the report's bounds are the dashboard's
    distinct, units = np.unique(means, return_counts=True)
    value, lo, hi = bootstrap_units_interval(distinct, level, resamples, seed, counts=units)
    inverse = float(np.mean(1.0 / a)) if a.size else 0.0
    return value, *units_widened(value, (lo, hi), means.size, inverse, sums, prior, level)


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
