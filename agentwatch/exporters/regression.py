"""Regression probability of each version against its baseline, per agent, task and window.

Baseline of version V of (agent, task): among the other versions of the same agent and task first seen (earliest
event time) before V was first seen, the most recently started one that has at least `min_conversations` scored
conversations in the same window. When both windows repeat attempts (method `tasks`), the probability is over
the two versions' populations of units (`agentwatch.stats.units.regression_probability` of the distributions
their intervals come from, independent; memoised on the two unit histograms), else
`agentwatch.stats.beta.regression_probability` of the two pooled Beta posteriors (numerical integration, exact; on
Kish's effective counts when a window was sampled at different rates), memoised on the counts, so an unchanged
pair costs nothing. The gauge's `method` label says which.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from agentwatch.exporters.memo import memo
from agentwatch.exporters.summary import Regression, SeriesEstimate
from agentwatch.stats import units
from agentwatch.stats.beta import BetaPosterior, regression_probability


@dataclass(slots=True, frozen=True)
class RegressionParams:
    """Settings of the regression gauge."""

    ks: tuple[int, ...] = (3,)
    margin: float = 0.05
    min_conversations: int = 30
    prior_alpha: float = 1.0
    prior_beta: float = 1.0


@lru_cache(maxsize=65_536)
def _probability(a_new: float, b_new: float, a_base: float, b_base: float, k: int, margin: float) -> float:
    return regression_probability(BetaPosterior(a_new, b_new), BetaPosterior(a_base, b_base), k, margin)


def probability(
    new: tuple[float, float],
    base: tuple[float, float],
    k: int,
    margin: float,
    prior: tuple[float, float] = (1.0, 1.0),
) -> float:
    """P(pass^k_new < pass^k_base − margin) for (n, c) counts (or Kish's effective counts) under a Beta prior
    (memoised)."""
    (n1, c1), (n0, c0) = new, base
    a, b = prior
    return _probability(a + c1, b + n1 - c1, a + c0, b + n0 - c0, k, margin)


@memo(16_384)
def over_units(
    new: tuple[tuple[int, int, int], ...], base: tuple[tuple[int, int, int], ...], k: int, margin: float
) -> float | None:
    """P(pass^k_new < pass^k_base − margin) over two unit histograms; None without a unit of k attempts."""
    dists = [units.UnitsPosterior(units.UnitCounts(h)).distribution(k, "pow") for h in (new, base)]
    if dists[0] is None or dists[1] is None:
        return None
    return units.regression_probability(dists[0], dists[1], margin)


def _regression(new: SeriesEstimate, base: SeriesEstimate, k: int, p: RegressionParams) -> Regression | None:
    if new.method == "tasks" and base.method == "tasks":
        prob = over_units(new.unit_pairs, base.unit_pairs, k, p.margin)
        return None if prob is None else Regression(k, base.version, prob, "tasks")
    pooled = probability(new.counts, base.counts, k, p.margin, (p.prior_alpha, p.prior_beta))
    return Regression(k, base.version, pooled, "exchangeable")


def attach_regressions(
    estimates: Iterable[SeriesEstimate], first_seen: dict[tuple[str, str, str], float], p: RegressionParams
) -> None:
    """Set `.regression` of every estimate (replacing what was there) from the other estimates of its window."""
    groups: dict[tuple[str, str, str], list[SeriesEstimate]] = {}
    for e in estimates:
        e.regression = []
        if e.scored > 0:
            groups.setdefault((e.agent, e.task, e.window), []).append(e)
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(key=lambda e: (first_seen.get(e.series, 0.0), e.version))
        for i, new in enumerate(members):
            base = next(
                (m for m in reversed(members[:i]) if m.scored >= p.min_conversations),
                None,
            )
            if base is None:
                continue
            new.regression = [r for k in p.ks if (r := _regression(new, base, k, p)) is not None]
