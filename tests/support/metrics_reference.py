"""Independent references the tests compare with: Beta quantiles by bisection on the CDF, exact Beta moments,
a /metrics scrape."""

from __future__ import annotations

import urllib.request
from fractions import Fraction
from math import factorial

from prometheus_client.parser import text_string_to_metric_families
from scipy.special import betainc


def beta_quantile_by_bisection(a: float, b: float, q: float) -> float:
    """Beta(a, b) quantile by bisection on the CDF (`scipy.special.betainc`), not by an inverse function."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if betainc(a, b, mid) < q else (lo, mid)
    return (lo + hi) / 2


def beta_bounds_by_bisection(
    x: float, n: float, level: float = 0.95, prior: float = 1.0
) -> tuple[float, float]:
    """Equal-tailed bounds of Beta(prior + x, prior + n - x), by bisection on its CDF."""
    tail = (1 - level) / 2
    a, b = prior + x, prior + n - x
    return beta_quantile_by_bisection(a, b, tail), beta_quantile_by_bisection(a, b, 1 - tail)


def exact_beta_moment(a: int, b: int, k: int) -> Fraction:
    """E[p^k] of p ~ Beta(a, b) for integers a, b >= 1: B(a + k, b) / B(a, b) from factorials."""

    def beta_fn(x: int, y: int) -> Fraction:
        return Fraction(factorial(x - 1) * factorial(y - 1), factorial(x + y - 1))

    return beta_fn(a + k, b) / beta_fn(a, b)


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """Every `agentwatch_*` sample of a /metrics endpoint on the loopback: (name, sorted labels) -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
        if s.name.startswith("agentwatch_")
    }
