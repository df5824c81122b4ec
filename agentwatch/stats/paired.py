"""pass^k of two versions compared on the units both attempted: a paired regression probability.

Two runs of one benchmark attempt the same task instances. Units differ far more from each other than two
versions differ on one unit, so comparing the two versions' populations of units as independent spends most of
the evidence on the units' spread. Pairing removes it:

- per shared unit u with at least k graded attempts on each side, d_u is the difference of the unbiased
  pass^k estimates C(c, k)/C(n, k) of the new and the baseline version (`agentwatch.stats.pass_k`);
- the estimand is the mean of p_new,u^k - p_base,u^k over the population of units the shared ones are a sample
  from (the same estimand as the unpaired comparison's difference of means), and E[d_u] is that difference;
- its posterior under the reference prior for a mean and a spread is Student's t with m - 1 degrees of freedom,
  centred on the mean of the d_u with scale s / sqrt(m) (s their standard deviation), so
  P(Δ < -margin) = T_{m-1}((-margin - mean) / (s / sqrt(m))).

The d_u are bounded, not normal: the t posterior is a large-sample one, used from `MIN_SHARED_UNITS` shared
units on. Its decision error at the margin was simulated at fixed true values (tests/unit/test_paired.py).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from scipy.special import stdtr  # Student's t CDF; scipy.stats is slow to import for every scoring run

from agentwatch.stats.pass_k import pass_pow_k_unbiased

__all__ = ["MIN_SHARED_UNITS", "PairedDifference", "paired_difference", "paired_regression_probability"]

MIN_SHARED_UNITS = 30  # below this the t posterior of bounded differences is not trusted; callers fall back

Key = TypeVar("Key")


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """The per-unit differences of pass^k on the shared units: how many, their mean and standard deviation."""

    units: int
    mean: float
    sd: float
    only_new: int
    only_base: int


def paired_difference(
    new: Mapping[Key, tuple[int, int]], base: Mapping[Key, tuple[int, int]], k: int
) -> PairedDifference | None:
    """Mean and spread of pass^k_new - pass^k_base over units with k graded attempts on both sides (None if none)."""
    new_k = {u for u, (n, _c) in new.items() if n >= k}
    base_k = {u for u, (n, _c) in base.items() if n >= k}
    shared = new_k & base_k
    if not shared:
        return None
    diffs = [pass_pow_k_unbiased(*new[u], k) - pass_pow_k_unbiased(*base[u], k) for u in shared]
    return PairedDifference(
        units=len(diffs),
        mean=statistics.fmean(diffs),
        sd=statistics.stdev(diffs) if len(diffs) > 1 else 0.0,
        only_new=len(new_k - shared),
        only_base=len(base_k - shared),
    )


def paired_regression_probability(diff: PairedDifference, margin: float) -> float:
    """P(mean pass^k difference < -margin) under the t posterior of the paired differences."""
    if not 0.0 <= margin < 1.0:
        raise ValueError(f"margin must be in [0, 1), got {margin!r}")
    if diff.units < 2:
        raise ValueError(f"a paired posterior needs two shared units or more, got {diff.units}")
    gap = -margin - diff.mean
    if diff.sd == 0.0:  # every unit moved by the same amount: the posterior is a point
        return 1.0 if gap > 0 else 0.0
    return float(stdtr(diff.units - 1, gap / (diff.sd / math.sqrt(diff.units))))
