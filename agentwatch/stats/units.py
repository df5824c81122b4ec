"""pass^k and pass@k over units that differ: τ-bench's estimator, with an interval that holds when they do.

A *unit* is what repeated attempts are attempts at (a task instance, or a task). Unit u has its own success
probability p_u; its pass^k is p_u^k and its pass@k 1 - (1 - p_u)^k. Pure functions over counts: no I/O, no
clocks, no randomness.

- **Counts.** A group of units is a histogram of its distinct (n, c) pairs — n graded attempts, c passed — and
  how many units have each (`UnitCounts`): every cost here grows with the distinct pairs, not with the units.
- **Value** (τ-bench's estimator, kept exact): per unit the unbiased C(c, k)/C(n, k) (pass^k) or
  1 - C(n-c, k)/C(n, k) (pass@k), averaged over the m units with n >= k; None when no unit has k attempts.
- **Estimand** of the interval: the mean of p^k (or of 1 - (1-p)^k) over the population of units the observed
  ones are a sample from — the same units again would be a narrower question; a benchmark's tasks and a
  replayed sample of requests both stand for more like them.
- **Interval**, equal-tailed at `level`:
  - from `SMALL_UNITS` units having k attempts on: the nonparametric interval — Jeffreys' Beta(½ + m·v̄·d,
    ½ + m·(1-v̄)·d) around the value v̄ (holding Clopper-Pearson's where at most two effective successes or
    failures are seen: Jeffreys' alone covered 87.7% at worst, exactly, for 50 to 800 pass-or-fail units, now
    92.2%),
    with the design effect d = v̄(1 - v̄)/s² ≥ 1 measured on the units' values (s² their variance, and at least
    s₀², the variance the Beta-binomial law gives them: success probabilities Beta-distributed around the
    group's pooled rate with the intra-unit correlation the units' dispersion measures, every unit at the pooled
    rate where they look alike): it needs no model of how units differ, while a Beta model that does not fit
    biases the hierarchical interval as the units grow (docs/scoring.md has the figures). Where units are
    alike, the values at a k near the most attempts are mostly 0 with a rare 1, and a sample without a 1
    measured a small s² around a value too low (a 95% interval covered 72.7%); s₀² does not depend on which
    units passed every attempt. Where units differ, a value's variance lies in rare units near 1 that a sample
    may lack (pass@6 of 200 units from Beta(5, 1) covered 61% with every unit at the pooled rate as the
    floor): the measured dispersion puts them back.
  - with fewer: the hierarchical Beta-binomial posterior (`agentwatch.stats.units_grid`), which pools the units
    through the Beta model — small samples need it (a percentile bootstrap over 10 units covers 70–92%) —
    widened to a hull that depends on whether the units look alike (Pearson's dispersion X² of their passes
    around the pooled rate, over units - 1 degrees of freedom, not significant at `ALIKE_TEST_LEVEL`):
    - alike: the hull holds the interval every unit at one p would give, Jeffreys' Beta of the pooled passes,
      its bounds raised to the k-th power (pass@k: 1 - (1 - p)^k). The hierarchical prior expects units to
      differ (ρ uniform), so where they do not its interval sat above p^k (a 95% interval covered 75–90%);
    - differ, `HULL_UNITS` or more units in all: the hull holds the nonparametric interval. A Beta that does
      not fit units that differ is fitted confidently, and its interval at a high k is wrong: pass@8 of
      two-point units (p = 0.2 or 0.9) covered 81.7% at 49 units of 8 attempts, 90.7% at 20, and 59.1% at
      200 units of 1 to 8 attempts, about 25 of them with 8; with the hull, 98.5%, 97.9% and 96.1%
      (`benchmarks.coverage_hull`). The price is width where a Beta does fit: a median 6% at 20–49 units of
      8 attempts, more where few units have k attempts (the nonparametric interval of those few) or the value
      is near 1 (pass@8 of Beta(5, 1) units, every unit passing once: Clopper-Pearson's bound, as from 50
      units on). Below `HULL_UNITS` the hierarchical interval is wide and covered 92.5% or more in every
      configuration measured, where the hull would have widened it by up to 60% with unequal attempts.
  A hull never covers less than the hierarchical interval.
- Units with fewer than k attempts inform the hierarchical model but not the value at k, and so not the
  nonparametric interval. Unequal numbers of attempts need nothing else: each unit's likelihood uses its own
  n.
- A value outside its interval (every unit passed every attempt: value 1, a posterior bound just below 1)
  widens the interval to include it, and `widened` says so.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import betaincinv

from agentwatch.stats.pass_k import pass_at_k_unbiased, pass_pow_k_unbiased
from agentwatch.stats.units_bounds import (
    ALIKE_TEST_LEVEL,
    AlikeBounds,
    alike_bounds,
    at_one_rate,
    design_effect_beta,
    dispersion,
)
from agentwatch.stats.units_grid import GridPosterior, Kind, fit_batch

__all__ = [
    "ALIKE_TEST_LEVEL",
    "HULL_UNITS",
    "HullKind",
    "SMALL_UNITS",
    "Distribution",
    "IntervalKind",
    "Kind",
    "TaskEstimate",
    "UnitCounts",
    "UnitsPosterior",
    "alike_bounds",
    "design_effect_beta",
    "intervals_batch",
    "regression_probability",
    "unbiased_mean",
]

IntervalKind = Literal["hierarchical", "nonparametric"]
HullKind = Literal["alike", "nonparametric"]
SMALL_UNITS = 50  # below this many units with k attempts the hierarchical interval, from it the nonparametric
_BETA_POINTS = 1025  # quantiles describing a nonparametric (Beta) distribution for regression probabilities
_CHUNK = 64  # groups fitted at once in a batch (memory: about 3 MB a group)
HULL_UNITS = 20  # from this many units that differ, the hierarchical interval holds the nonparametric one


@dataclass(frozen=True, slots=True)
class UnitCounts:
    """Graded attempts of a group of units: `pairs` holds (n, c, units) for each distinct (n, c), sorted."""

    pairs: tuple[tuple[int, int, int], ...]

    @classmethod
    def from_units(cls, units: Iterable[tuple[int, int]]) -> UnitCounts:
        """From one (n, c) per unit; units with n = 0 are left out."""
        return cls.from_histogram(Counter((int(n), int(c)) for n, c in units))

    @classmethod
    def from_pairs(cls, pairs: Iterable[Sequence[int]]) -> UnitCounts:
        """From [n, c, units] triples (the report's `units.pairs`)."""
        return cls.from_histogram({(int(n), int(c)): int(m) for n, c, m in pairs})

    @classmethod
    def from_histogram(cls, histogram: Mapping[tuple[int, int], int]) -> UnitCounts:
        """From {(n, c): number of units}; zero entries and n = 0 are left out."""
        pairs = []
        for (n, c), m in sorted(histogram.items()):
            if n < 0 or c < 0 or c > n or m < 0:
                raise ValueError(f"need 0 <= c <= n and units >= 0, got n={n}, c={c}, units={m}")
            if n > 0 and m > 0:
                pairs.append((n, c, m))
        return cls(tuple(pairs))

    @property
    def units(self) -> int:
        """Units with at least one graded attempt."""
        return sum(m for _, _, m in self.pairs)

    @property
    def max_attempts(self) -> int:
        """The most graded attempts at one unit (0 when empty)."""
        return max((n for n, _, _ in self.pairs), default=0)

    @property
    def repeated(self) -> bool:
        """Whether some unit has two or more graded attempts: pass^k of the same unit is then identified."""
        return self.max_attempts >= 2

    def units_with(self, k: int) -> int:
        """Units with at least k graded attempts."""
        return sum(m for n, _, m in self.pairs if n >= k)


def _unit_values(n: np.ndarray, c: np.ndarray, k: int, kind: Kind) -> np.ndarray:
    """Each pair's unbiased value at k (NaN where n < k)."""
    fn = pass_pow_k_unbiased if kind == "pow" else pass_at_k_unbiased
    return np.array([fn(int(a), int(b), k) for a, b in zip(n, c, strict=True)], dtype=np.float64)


def unbiased_mean(counts: UnitCounts, k: int, kind: Kind) -> float | None:
    """τ-bench's estimator: mean over units with n >= k of C(c,k)/C(n,k) (pow) or 1 - C(n-c,k)/C(n,k) (at)."""
    fn = pass_pow_k_unbiased if kind == "pow" else pass_at_k_unbiased
    parts = [(m, m * fn(n, c, k)) for n, c, m in counts.pairs if n >= k]
    total = sum(m for m, _ in parts)
    return math.fsum(v for _, v in parts) / total if total else None


def _attempts_variance(n: np.ndarray, c: np.ndarray, m: np.ndarray, k: int, kind: Kind) -> np.ndarray:
    """Per group (row of m): the mean over its units with n >= k of the variance of their value at k if the units'
    success probabilities were Beta-distributed around the group's pooled rate (passed over graded attempts, of
    every unit) with the intra-unit correlation their dispersion measures (0: every unit at the pooled rate): s₀²."""
    attempts = m @ n
    rate = np.where(attempts > 0, (m @ c) / np.maximum(attempts, 1), 0.0)
    # Units that differ put the value's variance in rare units near 1 (pass^6 of 8 attempts: 1/28 at 6 passes,
    # 1 at 8) that a sample of a few hundred units mostly lacks: with every unit at the pooled rate, 95% intervals
    # covered 61-77% (pass@6 of 200 units from Beta(5, 1), pass^6 from Beta(2, 8)).
    x2, units = dispersion(n, c, m, rate)
    extra = m @ (n - 1.0)  # what the units' dispersion can tell ρ from: their attempts beyond the first
    rho = np.where(extra > 0, np.clip((x2 - (units - 1.0)) / np.maximum(extra, 1.0), 0.0, 1.0), 0.0)
    # pass@k's value is 1 - C(n - c, k)/C(n, k): the failures' C(·, k)/C(n, k), at the failure rate
    counted = rate if kind == "pow" else 1.0 - rate
    # E[q^j] of q ~ Beta with mean `counted` and intra-unit correlation ρ: Π_{l<j} (α + l)/(α + β + l)
    moments = [np.ones_like(counted), counted]
    for step in range(1, 2 * k):
        moments.append(moments[-1] * (counted * (1.0 - rho) + step * rho) / (1.0 - rho + step * rho))
    total = np.zeros(m.shape[0])
    for size in np.unique(n[n >= k]):
        variance = _second_moment(int(size), k, moments) - moments[k] ** 2
        total += m[:, n == size].sum(axis=1) * np.maximum(variance, 0.0)
    with_k = m[:, n >= k].sum(axis=1)
    return np.where(with_k > 0, total / np.maximum(with_k, 1.0), 0.0)


def _second_moment(n: int, k: int, moments: Sequence[np.ndarray]) -> np.ndarray:
    """E[(C(x, k)/C(n, k))²] for x ~ Binomial(n, q) with q of moments E[q^j] = moments[j], in O(k):
    C(x, k)² = Σ_i C(2k-i, k)·C(k, i)·C(x, 2k-i) and E[C(x, j)] = C(n, j)·E[q^j]."""
    whole = math.comb(n, k) ** 2
    out = np.zeros_like(moments[0])
    for i in range(k + 1):
        j = 2 * k - i
        out += math.comb(j, k) * math.comb(k, i) * math.comb(n, j) / whole * moments[j]
    return out


@dataclass(frozen=True, slots=True)
class IntervalBatch:
    """Values and intervals of many groups at one k (NaN where no unit has k attempts)."""

    value: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    hierarchical: np.ndarray  # bool: the interval is the hierarchical posterior's


def intervals_batch(
    ns: Iterable[int],
    cs: Iterable[int],
    units: np.ndarray,
    ks: Iterable[int],
    level: float,
    at_ks: Iterable[int] | None = None,
    small_units: float = SMALL_UNITS,
    hull: bool = True,
) -> dict[tuple[Kind, int], IntervalBatch]:
    """Value and interval of pass^k for every k in `ks` and of pass@k for every k in `at_ks` (default: `ks`)
    of many groups sharing their distinct pairs.

    `units[i, j]`: units of group i with the pair (ns[j], cs[j]). The one-group case is `UnitsPosterior`; the
    coverage simulations use this directly. Each group's hierarchical posterior is fitted once for all k.
    `small_units`: below this many units with k attempts the interval is the hierarchical one (the coverage
    benchmark sets 0 or infinity to measure either interval alone); `hull`: where the units differ, the
    hierarchical interval is widened to hold the nonparametric one (False: the benchmarks measure it without).
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    n = np.asarray(list(ns), dtype=np.int64)
    c = np.asarray(list(cs), dtype=np.int64)
    m = np.atleast_2d(np.asarray(units, dtype=np.float64))
    ks = sorted(set(ks))
    wanted: list[tuple[Kind, int]] = [("pow", k) for k in ks]
    wanted += [("at", k) for k in sorted(set(ks if at_ks is None else at_ks))]
    tail = (1.0 - level) / 2.0
    out: dict[tuple[Kind, int], IntervalBatch] = {}
    small = np.zeros(m.shape[0], dtype=bool)
    for kind, k in wanted:
        m_k = m[:, n >= k].sum(axis=1)
        hierarchical = (m_k > 0) & (m_k < small_units)
        small |= hierarchical
        v = np.nan_to_num(_unit_values(n, c, k, kind))
        with np.errstate(invalid="ignore", divide="ignore"):
            weights = np.where(n >= k, m, 0.0)
            value = (weights @ v) / m_k
            s2 = (weights @ v**2 - m_k * value**2) / (m_k - 1)
        s2 = np.maximum(np.where(m_k > 1, s2, 0.0), _attempts_variance(n, c, m, k, kind))
        _a, _b, lower, upper = design_effect_beta(np.nan_to_num(value), m_k, s2, tail)
        out[(kind, k)] = IntervalBatch(value, lower, upper, hierarchical)
    rows = np.flatnonzero(small)
    alike = alike_bounds(n, c, m[rows], tail)
    many = m[:, n > 0].sum(axis=1) >= HULL_UNITS
    for start in range(0, rows.size, _CHUNK):
        chunk = rows[start : start + _CHUNK]
        grid = fit_batch(n, c, m[chunk])
        for (kind, k), batch in out.items():
            use = batch.hierarchical[chunk]
            if use.any():
                lower, upper = _quantiles(grid, k, kind, (tail, 1.0 - tail))
                same = alike.alike[start : start + _CHUNK]
                alike_lower, alike_upper = alike.at(k, kind)
                lower = np.where(same, np.minimum(lower, alike_lower[start : start + _CHUNK]), lower)
                upper = np.where(same, np.maximum(upper, alike_upper[start : start + _CHUNK]), upper)
                # the batch holds every group's nonparametric bounds so far: the hull keeps them where enough
                # units differ for a Beta that does not fit them to be fitted confidently
                wide = many[chunk] & ~same if hull else np.zeros_like(same)
                lower = np.where(wide, np.minimum(lower, batch.lower[chunk]), lower)
                upper = np.where(wide, np.maximum(upper, batch.upper[chunk]), upper)
                batch.lower[chunk[use]] = lower[use]
                batch.upper[chunk[use]] = upper[use]
    for batch in out.values():
        empty = np.isnan(batch.value)
        batch.lower[empty] = np.nan
        batch.upper[empty] = np.nan
        np.minimum(batch.lower, batch.value, out=batch.lower, where=~empty)
        np.maximum(batch.upper, batch.value, out=batch.upper, where=~empty)
    return out


def _quantiles(grid: GridPosterior, k: int, kind: Kind, probs: Iterable[float]) -> list[np.ndarray]:
    """Quantiles of the estimand per group, by inverting its piecewise linear CDF: one array per prob."""
    points, cdf = grid.cdf_points(k, kind)
    q = np.asarray(list(probs), dtype=np.float64)
    curves = np.array([_quantile_curve(p, c, q) for p, c in zip(points, cdf, strict=True)])
    return list(curves.T)


def _quantile_curve(points: np.ndarray, cdf: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Quantiles at `probs` of one piecewise linear CDF through (points, cdf)."""
    j = np.clip(np.searchsorted(cdf, probs, side="left"), 1, points.size - 1)  # cdf[j-1] < q <= cdf[j]
    f0, f1 = cdf[j - 1], cdf[j]
    t = np.where(f1 > f0, (probs - f0) / np.where(f1 > f0, f1 - f0, 1.0), 0.0)
    curve: np.ndarray = np.clip(points[j - 1] + t * (points[j] - points[j - 1]), 0.0, 1.0)
    return curve


@dataclass(frozen=True, slots=True)
class TaskEstimate:
    """The value over units and its interval at one k; all None when no unit has k attempts."""

    value: float | None
    lower: float | None
    upper: float | None
    units: int  # units with at least k attempts: those the value averages
    interval: IntervalKind | None
    widened: bool = False  # the interval was widened to include the value
    # the hierarchical interval was widened to hold another: the pooled rate's (the units look alike) or the
    # nonparametric one (they differ); None where the other lay inside it, or the interval is not hierarchical
    holds: HullKind | None = None


@dataclass(frozen=True, slots=True)
class Distribution:
    """The distribution of an estimand: a piecewise linear CDF through (points, cdf)."""

    points: np.ndarray
    cdf: np.ndarray


class UnitsPosterior:
    """Estimates and distributions of one group of units; the hierarchical grid is fitted on first use."""

    __slots__ = ("_grid", "counts")

    def __init__(self, counts: UnitCounts) -> None:
        if not counts.pairs:
            raise ValueError("no unit has a graded attempt")
        self.counts = counts
        self._grid: GridPosterior | None = None

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n, c, m = zip(*self.counts.pairs, strict=True)
        return np.array(n), np.array(c), np.array([m], dtype=np.float64)

    @property
    def grid(self) -> GridPosterior:
        """The hierarchical posterior (fitted once)."""
        if self._grid is None:
            self._grid = fit_batch(*self._arrays())
        return self._grid

    def estimates(self, ks: Iterable[int], level: float) -> dict[Kind, dict[int, TaskEstimate]]:
        """pass^k ("pow") and pass@k ("at") for each k: value, interval at `level`, which interval."""
        if not 0.0 < level < 1.0:
            raise ValueError(f"level must be in (0, 1), got {level!r}")
        tail = (1.0 - level) / 2.0
        out: dict[Kind, dict[int, TaskEstimate]] = {"pow": {}, "at": {}}
        alike = alike_bounds(*self._arrays(), tail)
        for k in sorted(set(ks)):
            units = self.counts.units_with(k)
            for kind in ("pow", "at"):
                value = unbiased_mean(self.counts, k, kind)
                if value is None:
                    out[kind][k] = TaskEstimate(None, None, None, 0, None)
                    continue
                holds: HullKind | None = None
                if units < SMALL_UNITS:
                    lo, hi = (float(q[0]) for q in _quantiles(self.grid, k, kind, (tail, 1.0 - tail)))
                    other = self._other(k, kind, tail, alike)
                    if other is not None and (other[1] < lo or other[2] > hi):
                        holds, lo, hi = other[0], min(lo, other[1]), max(hi, other[2])
                    interval: IntervalKind = "hierarchical"
                else:
                    _a, _b, lo_a, hi_a = self._beta(k, kind, tail)
                    lo, hi, interval = float(lo_a), float(hi_a), "nonparametric"
                widened = value < lo or value > hi
                out[kind][k] = TaskEstimate(
                    value, min(lo, value), max(hi, value), units, interval, widened, holds
                )
        return out

    def _other(
        self, k: int, kind: Kind, tail: float, alike: AlikeBounds
    ) -> tuple[HullKind, float, float] | None:
        """The interval the hierarchical one is widened to hold, and which (`_holds`); None where none is."""
        holds = self._holds(bool(alike.alike[0]))
        if holds == "alike":
            lower, upper = alike.at(k, kind)
            return holds, float(lower[0]), float(upper[0])
        if holds == "nonparametric":
            _a, _b, lo, hi = self._beta(k, kind, tail)
            return holds, float(lo), float(hi)
        return None

    def _holds(self, alike: bool) -> HullKind | None:
        """What the hierarchical interval is widened to hold: the pooled rate's interval where the units look
        alike, the nonparametric one where `HULL_UNITS` or more differ, nothing where fewer differ."""
        if alike:
            return "alike"
        return "nonparametric" if self.counts.units >= HULL_UNITS else None

    def _beta(self, k: int, kind: Kind, tail: float) -> tuple[np.ndarray, ...]:
        """The nonparametric interval's Beta parameters and bounds at k."""
        n, c, m = self._arrays()
        v = np.nan_to_num(_unit_values(n, c, k, kind))
        weights = np.where(n >= k, m[0], 0.0)
        m_k = weights.sum()
        value = float(weights @ v) / m_k
        s2 = float(weights @ (v - value) ** 2) / (m_k - 1) if m_k > 1 else 0.0
        s2 = max(s2, float(_attempts_variance(n, c, m, k, kind)[0]))
        return design_effect_beta(np.array(value), np.array(m_k), np.array(s2), tail)

    def distribution(self, k: int, kind: Kind) -> Distribution | None:
        """The distribution the interval at k comes from (None when no unit has k attempts); below `SMALL_UNITS`
        units with k attempts, widened as the interval is: each quantile the hull of the hierarchical one and the
        other interval's (the pooled rate's where the units look alike, the nonparametric one where `HULL_UNITS`
        or more differ)."""
        units = self.counts.units_with(k)
        if units == 0:
            return None
        probs = np.linspace(0.0, 1.0, _BETA_POINTS)
        if units >= SMALL_UNITS:
            a, b, _lo, _hi = self._beta(k, kind, 0.025)
            return Distribution(np.asarray(betaincinv(a, b, probs), dtype=np.float64), probs)
        points, cdf = self.grid.cdf_points(k, kind)
        n, c, m = self._arrays()
        holds = self._holds(bool(alike_bounds(n, c, m, 0.025).alike[0]))
        if holds is None:
            return Distribution(points[0], cdf[0])
        if holds == "alike":
            passed, attempts = float(m[0] @ c), float(m[0] @ n)
            rate = np.asarray(betaincinv(0.5 + passed, 0.5 + attempts - passed, probs), dtype=np.float64)
            other = at_one_rate(rate, k, kind)
        else:
            a, b, _lo, _hi = self._beta(k, kind, 0.025)
            other = np.asarray(betaincinv(a, b, probs), dtype=np.float64)
        hierarchical = _quantile_curve(points[0], cdf[0], probs)
        # below the median the lower quantile, above it the higher: at every level, the hull of both intervals
        hull = np.where(probs < 0.5, np.minimum(hierarchical, other), np.maximum(hierarchical, other))
        return Distribution(np.asarray(hull, dtype=np.float64), probs)


def regression_probability(new: Distribution, base: Distribution, margin: float) -> float:
    """P(X_new < X_base - margin) for independent X_new, X_base with these distributions."""
    if not 0.0 <= margin < 1.0:
        raise ValueError(f"margin must be in [0, 1), got {margin!r}")
    mass = np.diff(base.cdf)
    mids = (base.points[:-1] + base.points[1:]) / 2
    below = np.interp(mids - margin, new.points, new.cdf, left=0.0, right=1.0)
    return float(min(1.0, max(0.0, np.sum(mass * below) / np.sum(mass))))
