"""The intervals over units that need no model of how units differ, which `agentwatch.stats.units` uses alone or
in a hull with the hierarchical one: the nonparametric interval (Jeffreys' Beta around the units' mean value with
the design effect, holding Clopper-Pearson's bounds at up to two successes or failures) and, where the units
look alike, the pooled rate's.

Pure functions over arrays, one group per row; the reasons and the figures are in `agentwatch.stats.units`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import betaincinv, chdtrc

from agentwatch.stats.units_grid import Kind

__all__ = [
    "ALIKE_TEST_LEVEL",
    "AlikeBounds",
    "alike_bounds",
    "at_one_rate",
    "design_effect_beta",
    "dispersion",
]

ALIKE_TEST_LEVEL = 0.05  # units whose dispersion test does not reject at this level look alike
# effective successes (or failures) up to which Clopper-Pearson's bounds hold, with room for rounding
# (1 - 199/200 times 200 is 1.0000000000000009)
_FEW = 2.0 + 1e-9
_TINY = 1e-300  # a Beta parameter of 0 as betaincinv takes it (the np.where beside it discards the result)


def dispersion(
    n: np.ndarray, c: np.ndarray, m: np.ndarray, rate: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per group (row of m): Pearson's X² of its units' passes around its pooled `rate` (0 where every attempt
    passed, or none did), and its units."""
    spread = rate * (1.0 - rate)
    with np.errstate(divide="ignore", invalid="ignore"):
        cells = (c[None, :] - n[None, :] * rate[:, None]) ** 2 / (n[None, :] * spread[:, None])
        x2 = np.where((m > 0) & (spread[:, None] > 0), m * cells, 0.0).sum(axis=1)
    return x2, m[:, n > 0].sum(axis=1)


def design_effect_beta(
    value: np.ndarray, m: np.ndarray, s2: np.ndarray, tail: float
) -> tuple[np.ndarray, ...]:
    """Jeffreys Beta parameters of a mean `value` of m values in [0, 1] of variance s2, with the design effect,
    and its equal-tailed bounds, Clopper-Pearson's where at most two effective successes or failures (element-wise)."""
    spread = value * (1.0 - value)
    with np.errstate(divide="ignore", invalid="ignore"):
        effect = np.where((s2 > 0) & (spread > 0), spread / s2, 1.0)
    n_eff = m * np.maximum(effect, 1.0)  # a [0, 1] variable varies at most like a Bernoulli one
    a = 0.5 + value * n_eff
    b = 0.5 + (1.0 - value) * n_eff
    lower = np.where(value <= 0.0, 0.0, betaincinv(a, b, tail))
    upper = np.where(value >= 1.0, 1.0, betaincinv(a, b, 1.0 - tail))
    # Jeffreys' interval misses near 0 and 1: no success in n reads an upper bound too low, one success a lower
    # bound too high (exactly, coverage down to 87.7% at n = 50-800, near 2.5 expected successes), and its upper
    # bound at one or two successes is low too (90.8%, near 4.5 expected: two-point units at 54-55 units of 8
    # attempts covered 90.6-91.5% at pass@8 and pass^8). Where at most two effective successes, or failures, are
    # seen, the interval holds Clopper-Pearson's: the Beta(x, n - x + 1) and Beta(x + 1, n - x) quantiles of x
    # effective successes in n.
    successes, failures = value * n_eff, (1.0 - value) * n_eff
    few = (n_eff <= 0.0) | (np.minimum(successes, failures) <= _FEW)
    with np.errstate(divide="ignore", invalid="ignore"):
        cp_lower = np.where(
            successes > 0.0, betaincinv(np.maximum(successes, _TINY), failures + 1.0, tail), 0.0
        )
        cp_upper = np.where(
            failures > 0.0, betaincinv(successes + 1.0, np.maximum(failures, _TINY), 1.0 - tail), 1.0
        )
    lower = np.where(few, np.minimum(lower, cp_lower), lower)
    upper = np.where(few, np.maximum(upper, cp_upper), upper)
    return a, b, lower, upper


@dataclass(frozen=True, slots=True)
class AlikeBounds:
    """Per group: whether its units look alike, and the Jeffreys interval of the pooled success rate."""

    alike: np.ndarray  # bool
    lower: np.ndarray
    upper: np.ndarray

    def at(self, k: int, kind: Kind) -> tuple[np.ndarray, np.ndarray]:
        """The interval of pass^k (or pass@k) if every unit succeeded at the pooled rate."""
        return at_one_rate(self.lower, k, kind), at_one_rate(self.upper, k, kind)


def at_one_rate(rate: np.ndarray, k: int, kind: Kind) -> np.ndarray:
    """pass^k (or pass@k) of a unit succeeding at `rate`: rate^k (1 - (1 - rate)^k), increasing in rate."""
    value: np.ndarray = rate**k if kind == "pow" else 1.0 - (1.0 - rate) ** k
    return value


def alike_bounds(n: np.ndarray, c: np.ndarray, m: np.ndarray, tail: float) -> AlikeBounds:
    """Per group (row of m): the dispersion test of its units and the pooled rate's equal-tailed Jeffreys bounds."""
    attempts, passed = m @ n, m @ c
    rate = np.where(attempts > 0, passed / np.maximum(attempts, 1), 0.0)
    spread = rate * (1.0 - rate)
    x2, units = dispersion(n, c, m, rate)
    # every attempt passed, or none did: the units cannot look any more alike
    p_value = np.where(spread > 0, chdtrc(np.maximum(units - 1.0, 1.0), x2), 1.0)
    a, b = 0.5 + passed, 0.5 + attempts - passed
    lower = np.where(passed > 0, betaincinv(a, b, tail), 0.0)
    upper = np.where(passed < attempts, betaincinv(a, b, 1.0 - tail), 1.0)
    return AlikeBounds((p_value > ALIKE_TEST_LEVEL) & (units > 1), lower, upper)
