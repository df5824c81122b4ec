"""Spend cap of the judge: dollars over any sliding hour and any sliding 24 hours, with an injected clock.

`check()` before a call says whether the cap leaves room; `record(cost)` after it adds what the call cost. Calls
already in flight when the cap is reached still complete, so spend can pass the cap by at most the cost of
`concurrency` calls. Thread-safe.

Spends of the same second are one entry, timed by the latest of them: at most 86,400 entries a day however many
calls are paid (an entry a call held 112 MB at a million calls a day), and a spend leaves a window no earlier
than it would alone.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

HOUR_S = 3600.0
DAY_S = 86_400.0


class SpendCap:
    """Hourly and daily caps in USD (None: no cap)."""

    def __init__(
        self,
        hourly_usd: float | None = None,
        daily_usd: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.hourly_usd = hourly_usd
        self.daily_usd = daily_usd
        self._clock = clock
        self._lock = threading.Lock()
        # (time of the latest, usd, whole second), oldest first, within a day
        self._spends: deque[tuple[float, float, int]] = deque()
        self._hour = 0.0
        self._day = 0.0
        self._hour_start = 0  # index into _spends of the first entry within the last hour
        self.total_usd = 0.0

    @property
    def enabled(self) -> bool:
        """Whether any cap is set."""
        return self.hourly_usd is not None or self.daily_usd is not None

    def _expire(self, now: float) -> None:
        spends = self._spends
        # hour first: an entry older than a day is older than an hour and leaves the hour before the day
        while self._hour_start < len(spends) and spends[self._hour_start][0] <= now - HOUR_S:
            self._hour -= spends[self._hour_start][1]
            self._hour_start += 1
        while spends and spends[0][0] <= now - DAY_S:
            _, usd, _ = spends.popleft()
            self._day -= usd
            self._hour_start -= 1
        if not spends:
            self._hour = self._day = 0.0  # no float drift left behind

    def spent(self) -> tuple[float, float]:
        """(USD over the last hour, USD over the last 24 hours)."""
        with self._lock:
            self._expire(self._clock())
            return max(self._hour, 0.0), max(self._day, 0.0)

    def check(self) -> str | None:
        """None when a call may go ahead; else which cap is reached (the failure detail)."""
        if not self.enabled:
            return None
        hour, day = self.spent()
        if self.hourly_usd is not None and hour >= self.hourly_usd:
            return f"hourly cap ${self.hourly_usd:.4g} reached (${hour:.4g} in the last hour)"
        if self.daily_usd is not None and day >= self.daily_usd:
            return f"daily cap ${self.daily_usd:.4g} reached (${day:.4g} in the last 24 hours)"
        return None

    def record(self, usd: float | None) -> None:
        """Add the cost of a finished call."""
        if not usd or usd <= 0:
            return
        with self._lock:
            now = self._clock()
            self._expire(now)
            spends = self._spends
            second = math.floor(now)
            if spends and spends[-1][2] == second and self._hour_start < len(spends):
                # the same second: one entry, leaving with the latest of its spends
                spends[-1] = (max(now, spends[-1][0]), spends[-1][1] + usd, second)
            else:
                spends.append((now, usd, second))
            self._hour += usd
            self._day += usd
            self.total_usd += usd
