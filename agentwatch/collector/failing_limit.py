"""At most so many failing conversations' transcripts a minute per series: an incident does not flood review.

When an agent breaks, every one of its conversations fails, and each failing transcript went to the transcripts
topic and into the review store: at 1,000 conversations a second, a thousand records of up to
`collector.max_transcript_bytes` each, every second, for as long as the incident lasts — when the failing list is
read, a few of them per minute are what a reader opens. `FailingLimit` keeps the first `per_minute` of each
series (agent, version, task) in each minute of the conversations' end times. The alerts' figures are not
affected: they are the exporter's, over all traffic.

End time, not arrival: a replay after an outage keeps as many per minute of the outage as live traffic would
have. An end time ahead of the clock counts in the current minute (a host whose clock is ahead cannot hold a
series' minute open); a conversation that ended in an earlier minute than its series' latest counts in the
latest (one entry per series). At most `max_series` series are remembered; past that, those not seen in the
current minute are forgotten first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

Series = tuple[str, str, str]


@dataclass(slots=True)
class _Minute:
    minute: int
    kept: int


class FailingLimit:
    """Whether a failing conversation's transcript is kept: the first `per_minute` of its series each minute."""

    def __init__(
        self, per_minute: int, max_series: int = 100_000, clock: Callable[[], float] = time.time
    ) -> None:
        self._per_minute = per_minute
        self._max_series = max_series
        self._clock = clock
        self._series: dict[Series, _Minute] = {}
        self.skipped = 0  # transcripts not kept

    def keep(self, series: Series, ended_at: float | None) -> bool:
        """Count one failing conversation of `series` that ended at `ended_at` (Unix seconds; None: now);
        whether its transcript is kept."""
        now = self._clock()
        minute = int(min(now, ended_at if ended_at is not None else now) // 60)
        entry = self._series.get(series)
        if entry is None:
            if len(self._series) >= self._max_series:
                self._forget(int(now // 60))
            entry = self._series[series] = _Minute(minute, 0)
        elif minute > entry.minute:
            entry.minute, entry.kept = minute, 0
        if entry.kept < self._per_minute:
            entry.kept += 1
            return True
        self.skipped += 1
        return False

    def _forget(self, current: int) -> None:
        """Room for a new series: those not seen in the current minute go first, then the oldest half."""
        stale = [s for s, entry in self._series.items() if entry.minute < current]
        for s in stale:
            del self._series[s]
        if len(self._series) >= self._max_series:
            for s in list(self._series)[: len(self._series) // 2 + 1]:
                del self._series[s]

    def __len__(self) -> int:
        return len(self._series)
