"""The log filter that lets at most so many lines a minute of each message through."""

from __future__ import annotations

import logging
import threading

from agentwatch.log_repeats import RepeatLimit


class _Lines(logging.Handler):
    def __init__(self, limit: RepeatLimit) -> None:
        super().__init__()
        self.addFilter(limit)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _logger(name: str, handler: logging.Handler) -> logging.Logger:
    log = logging.getLogger(name)
    log.handlers[:] = [handler]
    log.propagate = False
    log.setLevel(logging.DEBUG)
    return log


def test_each_message_passes_so_many_times_a_minute_whatever_its_arguments() -> None:
    now = [0.0]
    limit = RepeatLimit(3, clock=lambda: now[0])
    lines = _Lines(limit)
    log = _logger("t.repeats", lines)
    for offset in range(10):
        log.warning("dead letter %s@%d: %s", "spans", offset, "invalid_protobuf")
        log.info("other message %d", offset)
    log.error("dead letter %s@%d: %s", "spans", 99, "same text, other level")
    assert lines.lines[:2] == ["dead letter spans@0: invalid_protobuf", "other message 0"]
    assert len(lines.lines) == 7 and lines.lines[-1].endswith("same text, other level")
    assert limit.held == 14
    now[0] = 60.0  # the next minute: the first line says how many were held back, its arguments filled in
    log.warning("dead letter %s@%d: %s", "spans", 10, "invalid_protobuf")
    log.warning("dead letter %s@%d: %s", "spans", 11, "invalid_protobuf")
    assert lines.lines[-2:] == [
        "dead letter spans@10: invalid_protobuf [7 more like this in the minute before were not logged]",
        "dead letter spans@11: invalid_protobuf",
    ]


def test_messages_past_the_bound_are_forgotten() -> None:
    now = [0.0]
    limit = RepeatLimit(1, max_messages=50, clock=lambda: now[0])
    log = _logger("t.many", _Lines(limit))
    for i in range(50):
        log.warning(f"message {i}")  # a format string of its own each (an f-string): each its own message
    assert len(limit._windows) == 50
    now[0] = 61.0
    log.warning("one more")
    assert len(limit._windows) == 1  # every minute over: all forgotten at once
    for i in range(500):  # within one minute: the oldest half goes each time the bound is reached
        log.warning(f"again {i}")
        assert len(limit._windows) <= 50


def test_threads_share_one_count() -> None:
    limit = RepeatLimit(100, clock=lambda: 0.0)
    lines = _Lines(limit)
    log = _logger("t.threads", lines)

    def flood() -> None:
        for i in range(1000):
            log.warning("flood %d", i)

    threads = [threading.Thread(target=flood) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(lines.lines) == 100 and limit.held == 3900
