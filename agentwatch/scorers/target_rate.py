"""A judge rate per series that aims at a number of judged conversations per hour, whatever the traffic.

With `sampling.target_judged_per_hour: T`, each series (agent, version, task) gets its own judge rate, so the
judge's spend grows with the number of series, not with traffic. Time is cut into periods of
`sampling.target_interval_s` (by the conversation's end time, so a replay decides the same way). The rate of a
period is decided once, when its first conversation asks, from the series' traffic in the periods before it —
an exponentially weighted mean of conversations per period (weight `SMOOTHING` on the latest) — scaled from
this process's share of the traffic to the whole:

    rate = T / (traffic per period / share × periods per hour), clipped to [floor, ceiling]

and rounded to the nearest power of 2^(−1/4), so that a window holds few distinct rates (each a stratum of the
weighted estimates). The ceiling is the configured judge rate; the floor is the review rate (the review sample
stays inside the judge sample) or `sampling.min_judge_rate`, whichever is higher. A series never seen judges
at the ceiling until its first period closes. The rate is recorded on each score (`judge_rate`), and the
estimates weigh each graded conversation by 1 / rate (`agentwatch.stats.inclusion`).

The decision still is `sample_point(id) < rate`: outcome-blind, and the sample at a lower rate inside the
sample at a higher one. Pure: no clock but the times it is given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

SMOOTHING = 0.5  # weight of the latest closed period in the traffic estimate
STEPS_PER_HALVING = 4  # rates are powers of 2^(-1/4): 1, 0.84, 0.71, 0.59, 0.5, ...
MAX_SERIES = 100_000  # series whose traffic is tracked (the oldest is forgotten beyond)
_KEEP_PERIODS = 8  # decided rates remembered per series (conversations of a period that ended a while ago)


def grid_rate(rate: float) -> float:
    """`rate` rounded (in log scale) to the nearest power of 2^(−1/4); rates at or above 1 are 1."""
    if rate >= 1.0:
        return 1.0
    steps = round(-math.log2(rate) * STEPS_PER_HALVING)
    return float(2.0 ** (-steps / STEPS_PER_HALVING))


@dataclass(slots=True)
class _Series:
    period: int
    count: int = 0  # conversations seen in `period`
    traffic: float | None = None  # smoothed conversations per closed period
    rates: dict[int, float] = field(default_factory=dict)  # period -> the rate decided for it


class TargetRates:
    """Per-series judge rates aiming at a number of judged conversations per hour."""

    def __init__(self, period_s: float = 60.0) -> None:
        if period_s <= 0:
            raise ValueError(f"period_s must be > 0, got {period_s!r}")
        self.period_s = float(period_s)
        self.share = 1.0  # this process's share of every series' traffic (collector instances split it)
        self._series: dict[tuple[str, str, str], _Series] = {}
        self._latest = -math.inf

    def rate(
        self,
        series: tuple[str, str, str],
        t: float | None,
        target_per_hour: float,
        ceiling: float,
        floor: float,
    ) -> float:
        """The judge rate for a conversation of `series` that ended at `t` (None: the latest time seen);
        counts the conversation in the series' traffic. Call once per conversation."""
        if t is None or not math.isfinite(t):
            t = self._latest if math.isfinite(self._latest) else 0.0
        self._latest = max(self._latest, t)
        period = math.floor(t / self.period_s)
        s = self._series.get(series)
        if s is None:
            if len(self._series) >= MAX_SERIES:
                del self._series[next(iter(self._series))]
            s = self._series[series] = _Series(period)
        if period > s.period:
            self._close(s, period)
        rate = s.rates.get(period)
        if rate is None:
            if period < s.period:  # a conversation of a period long gone: the current period's rate
                rate = self._decide(s, s.period, target_per_hour, ceiling, floor)
            else:
                rate = self._decide(s, period, target_per_hour, ceiling, floor)
        s.count += 1
        return rate

    def current(self) -> dict[tuple[str, str, str], float]:
        """The rate of each series' latest period."""
        return {key: s.rates[s.period] for key, s in self._series.items() if s.period in s.rates}

    def _close(self, s: _Series, period: int) -> None:
        """Fold the periods from `s.period` up to `period` (exclusive) into the traffic estimate."""
        gap = period - s.period
        s.traffic = s.count if s.traffic is None else SMOOTHING * s.count + (1 - SMOOTHING) * s.traffic
        s.traffic *= (1 - SMOOTHING) ** (gap - 1)  # the periods without a conversation
        s.period, s.count = period, 0
        for old in [p for p in s.rates if p <= period - _KEEP_PERIODS]:
            del s.rates[old]

    def _decide(self, s: _Series, period: int, target: float, ceiling: float, floor: float) -> float:
        low = min(ceiling, floor)
        if s.traffic is None or s.traffic <= 0.0:  # nothing seen yet: the configured rate
            rate = ceiling
        else:
            per_hour = s.traffic / max(self.share, 1e-9) * 3600.0 / self.period_s
            rate = min(ceiling, max(low, grid_rate(target / per_hour)))
        s.rates[period] = rate
        return rate
