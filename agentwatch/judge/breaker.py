"""Circuit breaker for the judge: after `failures` consecutive failed calls it opens, and calls fail at once
(`judge_unavailable`) instead of each waiting out timeouts and retries; after `reset_s` one trial call goes through
(half-open) and its result closes or re-opens it. Injected clock; thread-safe."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class CircuitBreaker:
    """closed → open (after `failures` consecutive failures) → half-open (after `reset_s`, one trial) → ..."""

    def __init__(
        self, failures: int = 5, reset_s: float = 30.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.failures = failures
        self.reset_s = reset_s
        self._clock = clock
        self._lock = threading.Lock()
        self._consecutive = 0
        self._opened_at: float | None = None
        self._trial = False
        self._last = (
            ""  # the failure code of the last failed call, named while open (the cause stays visible)
        )
        self.opened = 0  # times it opened

    @property
    def state(self) -> str:
        """ "closed", "open" or "half_open"."""
        with self._lock:
            if self._opened_at is None:
                return "closed"
            return "half_open" if self._trial or self._clock() - self._opened_at >= self.reset_s else "open"

    def allow(self) -> str | None:
        """None when a call may go ahead (take the trial slot when half-open); else why not."""
        with self._lock:
            if self._opened_at is None:
                return None
            waited = self._clock() - self._opened_at
            if waited >= self.reset_s and not self._trial:
                self._trial = True
                return None
            left = max(self.reset_s - waited, 0.0)
            last = f" (the last {self._last})" if self._last else ""
            return f"circuit open after {self._consecutive} consecutive failures{last}" + (
                f"; next trial in {left:.0f} s" if left > 0 else "; a trial call is in flight"
            )

    def success(self) -> None:
        """A call reached the judge and got an answer."""
        with self._lock:
            self._consecutive = 0
            self._opened_at = None
            self._trial = False

    def failure(self, code: str = "") -> None:
        """A call failed (timeout, connection error, 429/5xx after the retries); `code` says how."""
        with self._lock:
            self._consecutive += 1
            self._last = code
            if self._trial or (self._opened_at is None and self._consecutive >= self.failures):
                if self._opened_at is None:
                    self.opened += 1
                self._opened_at = self._clock()
            self._trial = False
