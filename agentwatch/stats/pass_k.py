"""pass@k and pass^k of one task from n trials with c successes: unbiased and plug-in; the mean over tasks.

Conventions for the unbiased (hypergeometric) estimators with n trials and c successes:

- `pass_at_k_unbiased(n, c, k) = 1 - C(n-c, k) / C(n, k)` and `pass_pow_k_unbiased(n, c, k) = C(c, k) / C(n, k)`.
- They are only defined for 1 <= k <= n. For k > n (including n = 0) both return NaN: there is no unbiased
  estimate of a k-trial probability from fewer than k trials. Use the plug-in or the Bayesian forms
  (`agentwatch.stats.beta`) instead, which are defined for every k. Aggregates over tasks (`task_mean`) skip
  tasks with n < k.
- They are computed as products of ratios in log space (`log1p`), so n = 10^6 and any k <= n are exact to
  floating-point rounding, without big binomial coefficients.

The plug-in transforms broadcast over numpy arrays (a scalar is the 0-d case). Pure functions: no I/O, no
clocks, no randomness.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from agentwatch.stats.checks import check_counts, check_k, check_p, scalar_or_array

__all__ = ["pass_at_k_plugin", "pass_at_k_unbiased", "pass_pow_k_plugin", "pass_pow_k_unbiased", "task_mean"]


def _log_ratio(n: int, m: int, k: int) -> float:
    """log(C(n-m, k) / C(n, k)) = sum_{i<k} log1p(-m / (n - i)), for n - m >= k."""
    i = np.arange(k, dtype=np.float64)
    return float(np.sum(np.log1p(-float(m) / (float(n) - i))))


def pass_at_k_unbiased(n: int, c: int, k: int) -> float:
    """Unbiased estimate of P(at least one of k trials succeeds): 1 - C(n-c,k)/C(n,k); NaN when k > n."""
    check_k(k)
    check_counts(n, c)
    if k > n:
        return math.nan
    if n - c < k:
        return 1.0
    if c == 0:
        return 0.0
    return -math.expm1(_log_ratio(n, c, k))


def pass_pow_k_unbiased(n: int, c: int, k: int) -> float:
    """Unbiased estimate of P(all k trials succeed): C(c,k)/C(n,k); NaN when k > n."""
    check_k(k)
    check_counts(n, c)
    if k > n:
        return math.nan
    if c < k:
        return 0.0
    if c == n:
        return 1.0
    return math.exp(_log_ratio(n, n - c, k))


def pass_at_k_plugin(p: ArrayLike, k: int) -> Any:
    """Plug-in pass@k, 1 - (1 - p)^k, element-wise: a float for a scalar p, an array for an array."""
    check_k(k)
    p = check_p(p)
    with np.errstate(divide="ignore"):  # p = 1 gives log1p(-1) = -inf, whose transform is exactly 1
        return scalar_or_array(-np.expm1(k * np.log1p(-p)))


def pass_pow_k_plugin(p: ArrayLike, k: int) -> Any:
    """Plug-in pass^k, p^k, element-wise: a float for a scalar p, an array for an array."""
    check_k(k)
    return scalar_or_array(check_p(p) ** k)


def task_mean(per_task: Mapping[str, tuple[int, int]], k: int, kind: Literal["at", "pow"]) -> float | None:
    """τ-bench style aggregate: mean over tasks with n >= k of the per-task unbiased estimate; None if none."""
    check_k(k)
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
