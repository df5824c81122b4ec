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

One implementation serves one posterior and many: `beta_interval`, `beta_power_means` and the plug-in
transforms broadcast over numpy arrays (a scalar is the 0-d case), so the exporter computes every series of a
snapshot in one call and `BetaPosterior` is the scalar view of the same functions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate
from scipy import stats as sps
from scipy.special import betaincinv

__all__ = [
    "BetaPosterior",
    "beta_interval",
    "beta_power_means",
    "bootstrap_counts_interval",
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


def _check_p(p: ArrayLike) -> np.ndarray:
    arr = np.asarray(p, dtype=np.float64)
    if not np.all((arr >= 0.0) & (arr <= 1.0)):
        raise ValueError(f"p must be in [0, 1], got {p!r}")
    return arr


def _scalar_or_array(x: np.ndarray) -> Any:
    """A 0-d result as a Python float, any other as the array."""
    return float(x) if np.ndim(x) == 0 else x


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


def pass_at_k_plugin(p: ArrayLike, k: int) -> Any:
    """Plug-in pass@k, 1 - (1 - p)^k, element-wise: a float for a scalar p, an array for an array."""
    _check_k(k)
    p = _check_p(p)
    with np.errstate(divide="ignore"):  # p = 1 gives log1p(-1) = -inf, whose transform is exactly 1
        return _scalar_or_array(-np.expm1(k * np.log1p(-p)))


def pass_pow_k_plugin(p: ArrayLike, k: int) -> Any:
    """Plug-in pass^k, p^k, element-wise: a float for a scalar p, an array for an array."""
    _check_k(k)
    return _scalar_or_array(_check_p(p) ** k)


def beta_interval(a: ArrayLike, b: ArrayLike, level: float) -> tuple[Any, Any]:
    """Equal-tailed credible bounds of Beta(a, b), element-wise over broadcast a and b."""
    _check_level(level)
    tail = (1.0 - level) / 2.0
    fa, fb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return _scalar_or_array(betaincinv(fa, fb, tail)), _scalar_or_array(betaincinv(fa, fb, 1.0 - tail))


def beta_power_means(a: ArrayLike, b: ArrayLike, kmax: int) -> tuple[np.ndarray, np.ndarray]:
    """E[p^k] and E[(1-p)^k] of p ~ Beta(a, b) for k = 1..kmax: two arrays, row k-1 for k, then a's shape."""
    _check_k(kmax)
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
        return sps.beta(self.alpha, self.beta)

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
    # Resampling n values with replacement is the same distribution as multinomial counts over the distinct
    # values, at a cost independent of n.
    n = int(w.sum())
    means = np.random.default_rng(seed).multinomial(n, w / n, size=resamples) @ v / n
    return _percentile_interval(means, level)


def _check_bootstrap(level: float, resamples: int) -> None:
    _check_level(level)
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


def regression_probability(new: BetaPosterior, base: BetaPosterior, k: int, margin: float) -> float:
    """P(p_new^k < p_base^k - margin) for independent Beta posteriors, by numerical integration."""
    _check_k(k)
    if not 0.0 <= margin < 1.0:
        raise ValueError(f"margin must be in [0, 1), got {margin!r}")
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
