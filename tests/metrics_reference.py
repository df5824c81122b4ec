"""Independent references the tests compare with: Beta bounds by bisection on the CDF, a /metrics scrape."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families
from scipy import stats as sps


def beta_bounds_by_bisection(x: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Equal-tailed bounds of Beta(1 + x, 1 + n - x) found by bisection on its CDF (not by an inverse)."""
    dist = sps.beta(1 + x, 1 + n - x)

    def solve(q: float) -> float:
        lo, hi = 0.0, 1.0
        for _ in range(80):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if dist.cdf(mid) < q else (lo, mid)
        return (lo + hi) / 2

    tail = (1 - level) / 2
    return solve(tail), solve(1 - tail)


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
