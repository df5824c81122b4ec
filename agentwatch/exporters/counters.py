"""The exporter's counters since start: per real series (outcomes, failure modes, cost and duration
histograms) and the estimator's health, copied under its lock for the exposition."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from agentwatch.exporters.buckets import OUTCOMES, Contribution
from agentwatch.exporters.contribution import measure
from agentwatch.wire.schema import ConversationScore

COST_BUCKETS: tuple[float, ...] = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
DURATION_BUCKETS: tuple[float, ...] = (0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)


@dataclass(slots=True)
class Histogram:
    """A cumulative Prometheus histogram: counts per upper bound (+Inf last), sum and count."""

    bounds: tuple[float, ...]
    counts: list[int]
    total: float = 0.0
    count: int = 0

    @classmethod
    def with_bounds(cls, bounds: tuple[float, ...]) -> Histogram:
        """An empty histogram with these finite upper bounds."""
        return cls(bounds, [0] * (len(bounds) + 1))

    def observe(self, x: float) -> None:
        """Count one value."""
        self.counts[bisect_left(self.bounds, x)] += 1  # the first bound >= x; past the last: +Inf
        self.total += x
        self.count += 1


@dataclass(slots=True)
class SeriesCounters:
    """Counters since start of one real series (no aggregate)."""

    outcomes: dict[str, int] = field(default_factory=dict)
    modes: dict[str, int] = field(default_factory=dict)
    cost: Histogram = field(default_factory=lambda: Histogram.with_bounds(COST_BUCKETS))
    duration: Histogram = field(default_factory=lambda: Histogram.with_bounds(DURATION_BUCKETS))
    revision: int = 0  # changes whenever a counter does

    def copy(self) -> SeriesCounters:
        """An independent copy."""
        return SeriesCounters(
            dict(self.outcomes),
            dict(self.modes),
            Histogram(self.cost.bounds, list(self.cost.counts), self.cost.total, self.cost.count),
            Histogram(
                self.duration.bounds, list(self.duration.counts), self.duration.total, self.duration.count
            ),
            self.revision,
        )

    def count(self, score: ConversationScore, contribution: Contribution) -> None:
        """Count one conversation at its first arrival."""
        self.revision += 1
        outcome = OUTCOMES[contribution.outcome]
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        for m in contribution.modes:
            self.modes[m] = self.modes.get(m, 0) + 1
        cost, duration = measure(score.cost_usd), measure(score.duration_s)
        if cost is not None:
            self.cost.observe(max(0.0, cost))
        if duration is not None:
            self.duration.observe(max(0.0, duration))


@dataclass(slots=True)
class EstimatorCounters:
    """Estimator health and per-series counters, copied under the lock."""

    consumed: int
    rejected: dict[str, int]
    clamped: int
    folded: dict[str, int]
    last_score_timestamp: float | None
    series: dict[tuple[str, str, str], SeriesCounters]
    revisions: int = 0
    units_folded: int = 0
    ignored: dict[str, int] = field(
        default_factory=dict
    )  # field -> values not taken (`contribution.measure`)
    forgotten: int = 0  # conversations forgotten past exporter.max_conversations
