"""At most so many log lines a minute of each message: a flood of bad input does not become a flood of logs.

A producer sending garbage at 10,000 messages a second made the collector log a dead-letter warning for each
(218 bytes for a message that is not protobuf, up to about 1.2 kB with a longer reason): 2 to 12 MB of log a
second, burying everything else and filling disks, while the same facts are counted in the metrics
(`agentwatch_messages_rejected_total{reason}`, …). `RepeatLimit` lets the first
`per_minute` records of each message through in each minute — a message is its logger, level and format string,
not its arguments, so "dead letter %s[%d]@%d: %s %s" is one message whatever the offsets — and holds back the
rest. The first record of a message let through after some were held back says how many.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

_Key = tuple[str, int, str]


@dataclass(slots=True)
class _Window:
    start: float
    passed: int = 0
    held: int = 0


class RepeatLimit(logging.Filter):
    """Lets at most `per_minute` records of each message through a minute (a handler's filter)."""

    def __init__(
        self,
        per_minute: int = 20,
        *,
        window_s: float = 60.0,
        max_messages: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._per_window = per_minute
        self._window_s = window_s
        self._max_messages = max_messages
        self._clock = clock
        self._windows: dict[_Key, _Window] = {}
        self._lock = threading.Lock()  # handlers filter before taking their own lock
        self.held = 0  # records held back in all

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether `record` is logged; the first one logged after some of its message were held says so."""
        key = (record.name, record.levelno, str(record.msg))
        now = self._clock()
        with self._lock:
            window = self._windows.get(key)
            if window is None or now - window.start >= self._window_s:
                held = window.held if window is not None else 0
                if window is None and len(self._windows) >= self._max_messages:
                    self._forget(now)
                window = self._windows[key] = _Window(now)
                if held:
                    # appended to the format string: the record's arguments still fill it
                    record.msg = (
                        f"{record.msg} [{held:,} more like this in the minute before were not logged]"
                    )
            if window.passed < self._per_window:
                window.passed += 1
                return True
            window.held += 1
            self.held += 1
            return False

    def _forget(self, now: float) -> None:
        """Room for another message: those whose minute is over go (a count they held is not said)."""
        over = [k for k, w in self._windows.items() if now - w.start >= self._window_s]
        for k in over or list(self._windows)[: len(self._windows) // 2 + 1]:
            del self._windows[k]
