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
latest (one entry per series). At most `max_series` series are remembered, in at most `max_bytes` of their names
(counted as `id_memory` counts ids: a series' agent, version and task come from span attributes, up to
`collector.max_attribute_bytes` characters each, so a bound in series alone let 100,000 series of long names hold
gigabytes); past either, those not seen in the current minute are forgotten first, then the oldest half.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from agentwatch.collector.id_memory import ENTRY_OVERHEAD, ENTRY_ROOM, id_bytes

# Bytes allowed per series when the byte bound is derived from `max_series`: names of a normal length (a series
# of three 20-character names counts 3 × 69 + 128 = 335) fill every entry; 64 K-character ones about one in 64.
SERIES_ROOM = 2 * ENTRY_ROOM

Series = tuple[str, str, str]


@dataclass(slots=True)
class _Minute:
    minute: int
    kept: int


class FailingLimit:
    """Whether a failing conversation's transcript is kept: the first `per_minute` of its series each minute."""

    def __init__(
        self,
        per_minute: int,
        max_series: int = 100_000,
        clock: Callable[[], float] = time.time,
        max_bytes: int | None = None,
    ) -> None:
        self._per_minute = per_minute
        self._max_series = max_series
        self.max_bytes = max_series * SERIES_ROOM if max_bytes is None else max_bytes
        self.nbytes = 0  # counted bytes of the series remembered
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
            size = _bytes(series)
            if len(self._series) >= self._max_series or self.nbytes + size > self.max_bytes:
                self._forget(int(now // 60), size)
            entry = self._series[series] = _Minute(minute, 0)
            self.nbytes += size
        elif minute > entry.minute:
            entry.minute, entry.kept = minute, 0
        if entry.kept < self._per_minute:
            entry.kept += 1
            return True
        self.skipped += 1
        return False

    def _forget(self, current: int, size: int) -> None:
        """Room for a new series of `size` bytes: those not seen in the current minute go first, then the oldest
        half until it fits (a series alone over `max_bytes` is kept alone)."""
        for s in [s for s, entry in self._series.items() if entry.minute < current]:
            self._drop(s)
        while self._series and (len(self._series) >= self._max_series or self.nbytes + size > self.max_bytes):
            for s in list(self._series)[: len(self._series) // 2 + 1]:
                self._drop(s)

    def _drop(self, series: Series) -> None:
        del self._series[series]
        self.nbytes -= _bytes(series)

    def __len__(self) -> int:
        return len(self._series)


def _bytes(series: Series) -> int:
    """Bytes a series is counted for: its names as stored, and an entry's overhead."""
    return sum(id_bytes(name) for name in series) + ENTRY_OVERHEAD
