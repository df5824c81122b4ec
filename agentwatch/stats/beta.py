"""Beta posteriors of a success probability: credible intervals, posterior means of p^k, regression.

Bayesian mode: p ~ Beta(prior_alpha + c, prior_beta + n - c). pass@k = 1-(1-p)^k and pass^k = p^k are monotone in
p, so equal-tailed credible bounds are the transforms of the Beta quantiles, and posterior means are closed-form:
`E[p^k] = prod_{i<k} (a+i)/(a+b+i)`, `E[1-(1-p)^k] = 1 - prod_{i<k} (b+i)/(a+b+i)`. No sampling, no seed.

One implementation serves one posterior and many: `beta_interval`, `beta_power_means` and the plug-in
transforms broadcast over numpy arrays (a scalar is the 0-d case), so the exporter computes every series of a
snapshot in one call and `BetaPosterior` is the scalar view of the same functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import betaincinv

from agentwatch.stats.checks import check_counts, check_k, check_level, scalar_or_array
from agentwatch.stats.pass_k import pass_at_k_plugin, pass_pow_k_plugin

__all__ = ["BetaPosterior", "beta_interval", "beta_power_means", "posterior", "regression_probability"]


def beta_interval(a: ArrayLike, b: ArrayLike, level: float) -> tuple[Any, Any]:
    """Equal-tailed credible bounds of Beta(a, b), element-wise over broadcast a and b."""
    check_level(level)
    tail = (1.0 - level) / 2.0
    fa, fb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return scalar_or_array(betaincinv(fa, fb, tail)), scalar_or_array(betaincinv(fa, fb, 1.0 - tail))


def beta_power_means(a: ArrayLike, b: ArrayLike, kmax: int) -> tuple[np.ndarray, np.ndarray]:
    """E[p^k] and E[(1-p)^k] of p ~ Beta(a, b) for k = 1..kmax: two arrays, row k-1 for k, then a's shape."""
    check_k(kmax)
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    steps = np.arange(kmax, dtype=np.float64).reshape(kmax, *([1] * a.ndim))
    total = a + b + steps
    return np.cumprod((a + steps) / total, axis=0), np.cumprod((b + steps) / total, axis=0)


@dataclass(frozen=True, slots=True)
class BetaPosterior:
    """A Beta(alpha, beta) distribution of a success probability p."""

    alpha: float
    beta: float

    def __post_init__(self) -> None:
        if not (self.alpha > 0 and self.beta > 0):
            raise ValueError(f"Beta parameters must be > 0, got alpha={self.alpha}, beta={self.beta}")

    @property
    def dist(self) -> Any:
        """The frozen scipy distribution (`scipy.stats.beta(alpha, beta)`)."""
        from scipy import (
            stats,
        )  # imported here: slow to import, and the command line must not pay it at start

        return stats.beta(self.alpha, self.beta)

    def mean(self) -> float:
        """Posterior mean of p."""
        return self.alpha / (self.alpha + self.beta)

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Equal-tailed credible interval of p."""
        return beta_interval(self.alpha, self.beta, level)

    def pass_pow_k_mean(self, k: int) -> float:
        """Posterior mean of p^k (closed form)."""
        return float(beta_power_means(self.alpha, self.beta, k)[0][k - 1])

    def pass_at_k_mean(self, k: int) -> float:
        """Posterior mean of 1 - (1-p)^k (closed form)."""
        return float(1.0 - beta_power_means(self.alpha, self.beta, k)[1][k - 1])

    def pass_pow_k_interval(self, k: int, level: float = 0.95) -> tuple[float, float]:
        """Equal-tailed credible interval of p^k (transform of the Beta quantiles)."""
        lo, hi = self.interval(level)
        return pass_pow_k_plugin(lo, k), pass_pow_k_plugin(hi, k)

    def pass_at_k_interval(self, k: int, level: float = 0.95) -> tuple[float, float]:
        """Equal-tailed credible interval of 1 - (1-p)^k (transform of the Beta quantiles)."""
        lo, hi = self.interval(level)
        return pass_at_k_plugin(lo, k), pass_at_k_plugin(hi, k)


def posterior(n: int, c: int, prior_alpha: float = 1.0, prior_beta: float = 1.0) -> BetaPosterior:
    """Beta posterior of p after c successes in n trials: Beta(prior_alpha + c, prior_beta + n - c)."""
    check_counts(n, c)
    return BetaPosterior(prior_alpha + c, prior_beta + n - c)


def regression_probability(new: BetaPosterior, base: BetaPosterior, k: int, margin: float) -> float:
    """P(p_new^k < p_base^k - margin) for independent Beta posteriors, by numerical integration."""
    check_k(k)
    if not 0.0 <= margin < 1.0:
        raise ValueError(f"margin must be in [0, 1), got {margin!r}")
    # imported here: scipy.stats and scipy.integrate are slow to import, and only a regression test needs them
    from scipy import integrate
    from scipy import stats as sps

    # P = ∫ f_base(x) · F_new((x^k - margin)^(1/k)) dx over x^k > margin.
    # Integrate only where the base density has mass (quad would otherwise step over a narrow peak).
    mass = sps.beta.ppf(np.array([1e-14, 1.0 - 1e-14]), base.alpha, base.beta)
    lo = max(float(mass[0]), margin ** (1.0 / k))
    hi = float(mass[1])
    if hi <= lo:
        return 0.0

    def integrand(x: float) -> float:
        threshold = (x**k - margin) ** (1.0 / k) if x**k > margin else 0.0
        return float(sps.beta.pdf(x, base.alpha, base.beta) * sps.beta.cdf(threshold, new.alpha, new.beta))

    m_new = float(sps.beta.median(new.alpha, new.beta))
    points = [
        p
        for p in (float(sps.beta.median(base.alpha, base.beta)), (m_new**k + margin) ** (1.0 / k))
        if lo < p < hi
    ]
    value, _err = integrate.quad(
        integrand, lo, hi, points=points or None, limit=200, epsabs=1e-12, epsrel=1e-10
    )
    return float(min(1.0, max(0.0, value)))
