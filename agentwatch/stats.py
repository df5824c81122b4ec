"""Estimators of reliability: pass@k and pass^k (unbiased and plug-in), Beta posteriors, bootstrap, regression.

Pure functions over counts and arrays: no I/O, no clocks, no global random state.

Conventions for the unbiased (hypergeometric) estimators with n trials and c successes:

- `pass_at_k_unbiased(n, c, k) = 1 - C(n-c, k) / C(n, k)` and `pass_pow_k_unbiased(n, c, k) = C(c, k) / C(n, k)`.
- They are only defined for 1 <= k <= n. For k > n (including n = 0) both return NaN: there is no unbiased
  estimate of a k-trial probability from fewer than k trials. Use the plug-in or the Bayesian forms instead,
  which are defined for every k. Aggregates over tasks (`task_mean`) skip tasks with n < k.
- They are computed as products of ratios in log space (`log1p`), so n = 10^6 and any k <= n are exact to
  floating-point rounding, without big binomial coefficients.

Bayesian mode: p ~ Beta(prior_alpha + c, prior_beta + n - c). pass@k = 1-(1-p)^k and pass^k = p^k are monotone in
p, so equal-tailed credible bounds are the transforms of the Beta quantiles, and posterior means are closed-form:
`E[p^k] = prod_{i<k} (a+i)/(a+b+i)`, `E[1-(1-p)^k] = 1 - prod_{i<k} (b+i)/(a+b+i)`. No sampling, no seed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import integrate
from scipy import stats as sps

__all__ = [
    "BetaPosterior",
    "bootstrap_mean_interval",
    "pass_at_k_plugin",
    "pass_at_k_unbiased",
    "pass_pow_k_plugin",
    "pass_pow_k_unbiased",
    "posterior",
    "regression_probability",
    "task_mean",
]

# Memory bound of one bootstrap chunk (number of int64 indices drawn at once).
_BOOTSTRAP_CHUNK_CELLS = 4_000_000
# Up to this many distinct values, the bootstrap draws multinomial counts instead of indices.
_BOOTSTRAP_DISTINCT_MAX = 64


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")


def _check_counts(n: int, c: int) -> None:
    if n < 0 or c < 0 or c > n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")


def _check_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p!r}")


def _log_ratio(n: int, m: int, k: int) -> float:
    """log(C(n-m, k) / C(n, k)) = sum_{i<k} log1p(-m / (n - i)), for n - m >= k."""
    i = np.arange(k, dtype=np.float64)
    return float(np.sum(np.log1p(-float(m) / (float(n) - i))))


def pass_at_k_unbiased(n: int, c: int, k: int) -> float:
    """Unbiased estimate of P(at least one of k trials succeeds): 1 - C(n-c,k)/C(n,k); NaN when k > n."""
    _check_k(k)
    _check_counts(n, c)
    if k > n:
        return math.nan
    if n - c < k:
        return 1.0
    if c == 0:
        return 0.0
    return -math.expm1(_log_ratio(n, c, k))


def pass_pow_k_unbiased(n: int, c: int, k: int) -> float:
    """Unbiased estimate of P(all k trials succeed): C(c,k)/C(n,k); NaN when k > n."""
    _check_k(k)
    _check_counts(n, c)
    if k > n:
        return math.nan
    if c < k:
        return 0.0
    if c == n:
        return 1.0
    return math.exp(_log_ratio(n, n - c, k))


def pass_at_k_plugin(p: float, k: int) -> float:
    """Plug-in pass@k: 1 - (1 - p)^k."""
    _check_k(k)
    _check_p(p)
    if p == 1.0:
        return 1.0
    return -math.expm1(k * math.log1p(-p))


def pass_pow_k_plugin(p: float, k: int) -> float:
    """Plug-in pass^k: p^k."""
    _check_k(k)
    _check_p(p)
    return p**k


@dataclass(frozen=True, slots=True)
class BetaPosterior:
    """A Beta(alpha, beta) distribution of a success probability p."""

    alpha: float
    beta: float

    def __post_init__(self) -> None:
        if not (self.alpha > 0 and self.beta > 0):
            raise ValueError(f"Beta parameters must be > 0, got alpha={self.alpha}, beta={self.beta}")

    @property
    def dist(self) -> sps.rv_continuous:
        """The frozen scipy distribution."""
        return sps.beta(self.alpha, self.beta)

    def mean(self) -> float:
        """Posterior mean of p."""
        return self.alpha / (self.alpha + self.beta)

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Equal-tailed credible interval of p."""
        _check_level(level)
        tail = (1.0 - level) / 2.0
        lo, hi = sps.beta.ppf([tail, 1.0 - tail], self.alpha, self.beta)
        return float(lo), float(hi)

    def pass_pow_k_mean(self, k: int) -> float:
        """Posterior mean of p^k (closed form)."""
        _check_k(k)
        i = np.arange(k, dtype=np.float64)
        return float(np.exp(np.sum(np.log1p(-self.beta / (self.alpha + self.beta + i)))))

    def pass_at_k_mean(self, k: int) -> float:
        """Posterior mean of 1 - (1-p)^k (closed form)."""
        _check_k(k)
        i = np.arange(k, dtype=np.float64)
        return float(-np.expm1(np.sum(np.log1p(-self.alpha / (self.alpha + self.beta + i)))))

    def pass_pow_k_interval(self, k: int, level: float = 0.95) -> tuple[float, float]:
        """Equal-tailed credible interval of p^k (transform of the Beta quantiles)."""
        _check_k(k)
        lo, hi = self.interval(level)
        return lo**k, hi**k

    def pass_at_k_interval(self, k: int, level: float = 0.95) -> tuple[float, float]:
        """Equal-tailed credible interval of 1 - (1-p)^k (transform of the Beta quantiles)."""
        _check_k(k)
        lo, hi = self.interval(level)
        return pass_at_k_plugin(lo, k), pass_at_k_plugin(hi, k)


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")


def posterior(n: int, c: int, prior_alpha: float = 1.0, prior_beta: float = 1.0) -> BetaPosterior:
    """Beta posterior of p after c successes in n trials: Beta(prior_alpha + c, prior_beta + n - c)."""
    _check_counts(n, c)
    return BetaPosterior(prior_alpha + c, prior_beta + n - c)


def task_mean(per_task: Mapping[str, tuple[int, int]], k: int, kind: Literal["at", "pow"]) -> float | None:
    """τ-bench style aggregate: mean over tasks with n >= k of the per-task unbiased estimate; None if none."""
    _check_k(k)
    if kind == "at":
        fn = pass_at_k_unbiased
    elif kind == "pow":
        fn = pass_pow_k_unbiased
    else:
        raise ValueError(f"kind must be 'at' or 'pow', got {kind!r}")
    values = [fn(n, c, k) for n, c in per_task.values() if n >= k]
    if not values:
        return None
    return math.fsum(values) / len(values)


def bootstrap_mean_interval(
    values: np.ndarray, level: float = 0.95, resamples: int = 1000, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of `values` and its percentile-bootstrap interval: (value, lower, upper); NaNs when empty."""
    _check_level(level)
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    x = np.asarray(values, dtype=np.float64).ravel()
    n = x.size
    if n == 0:
        return math.nan, math.nan, math.nan
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite")
    rng = np.random.default_rng(seed)
    uniq, freq = np.unique(x, return_counts=True)
    if uniq.size <= _BOOTSTRAP_DISTINCT_MAX:
        # Few distinct values (ASR credits): resampling n values with replacement is the same distribution as
        # multinomial counts over the distinct values, at a cost independent of n.
        counts = rng.multinomial(n, freq / n, size=resamples)
        means = counts @ uniq / n
    else:
        means = _resampled_means(x, rng, resamples)
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [tail, 1.0 - tail])
    return float(x.mean()), float(lo), float(hi)


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


def regression_probability(new: BetaPosterior, base: BetaPosterior, k: int, margin: float) -> float:
    """P(p_new^k < p_base^k - margin) for independent Beta posteriors, by numerical integration."""
    _check_k(k)
    if not 0.0 <= margin < 1.0:
        raise ValueError(f"margin must be in [0, 1), got {margin!r}")
    # P = ∫ f_base(x) · F_new((x^k - margin)^(1/k)) dx over x^k > margin.
    # Integrate only where the base density has mass (quad would otherwise step over a narrow peak).
    lo_mass, hi_mass = sps.beta.ppf([1e-14, 1.0 - 1e-14], base.alpha, base.beta)
    lo = max(float(lo_mass), margin ** (1.0 / k))
    hi = float(hi_mass)
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
