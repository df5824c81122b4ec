"""The limit on failing conversations' transcripts: per series, per minute of end time, memory bounded (in series
and in bytes of their names, measured with tracemalloc once the test dropped its own references)."""

from __future__ import annotations

from datetime import UTC, datetime

from agentwatch.collector.failing_limit import FailingLimit
from tests.support.memory import kept_by

NOW = 1_795_000_000.0 - 1_795_000_000.0 % 60 + 30  # half past a minute
A = ("shop", "1.0", "refunds")
B = ("shop", "1.0", "orders")


def test_the_first_of_each_series_in_each_minute_are_kept() -> None:
    limit = FailingLimit(3, clock=lambda: NOW)
    assert [limit.keep(A, NOW - 20) for _ in range(5)] == [True, True, True, False, False]
    assert [limit.keep(B, NOW - 20) for _ in range(4)] == [True, True, True, False]  # its own count
    assert (
        limit.keep(A, NOW + 20) is False
    )  # ahead of the clock: counted in the current minute, which is full
    assert limit.keep(A, NOW - 40) is False  # the minute before: counted in the series' latest
    assert limit.skipped == 5


def test_a_new_minute_of_end_times_starts_a_new_count() -> None:
    clock = [NOW]
    limit = FailingLimit(2, clock=lambda: clock[0])
    ended = [NOW - 60, NOW - 60, NOW - 60, NOW, NOW, NOW]
    assert [limit.keep(A, t) for t in ended] == [True, True, False, True, True, False]
    clock[0] = NOW + 3600
    # a replay of an hour-old outage: two a minute of its end times, as live traffic would have had
    kept = [limit.keep(A, NOW + 60 * m + s) for m in range(1, 11) for s in (1, 2, 3)]
    assert sum(kept) == 20 and kept[:3] == [True, True, False]
    assert limit.keep(A, None) is True  # no end time: now, a new minute


def test_a_clock_far_ahead_does_not_hold_a_series_minute() -> None:
    clock = [NOW]
    limit = FailingLimit(1, clock=lambda: clock[0])
    assert limit.keep(A, datetime(9999, 1, 1, tzinfo=UTC).timestamp()) is True
    clock[0] = NOW + 60
    assert limit.keep(A, NOW + 60) is True  # the next minute is a new one: the year 9999 was never its minute


def test_series_past_the_bound_are_forgotten_oldest_first() -> None:
    clock = [NOW]
    limit = FailingLimit(1, max_series=100, clock=lambda: clock[0])
    for i in range(100):
        assert limit.keep(("a", "v", str(i)), NOW)
    assert len(limit) == 100
    clock[0] = NOW + 60  # a new minute: every series seen is stale, and goes when a new one needs room
    assert limit.keep(("a", "v", "new"), NOW + 60) and len(limit) == 1
    for i in range(250):  # all in the current minute: the oldest half goes each time the bound is reached
        limit.keep(("b", "v", str(i)), NOW + 60)
        assert len(limit) <= 100


def test_series_of_long_names_are_remembered_within_the_byte_bound() -> None:
    """1,000 series of 60,000-character agent names (a span attribute's length) in one minute: 60 MB remembered
    by count (1,000), at most its bytes (1,000 × 1,024) by bytes; the newest keeps its count."""
    limit = FailingLimit(1, max_series=1000, clock=lambda: NOW)

    def feed() -> None:
        for i in range(1000):
            assert limit.keep((f"{i:08d}" + "x" * 60_000, "v", "t"), NOW)

    assert kept_by(feed) < 2 * 1024 * 1024
    assert limit.nbytes <= limit.max_bytes and 0 < len(limit) < 100
    assert limit.keep((f"{999:08d}" + "x" * 60_000, "v", "t"), NOW) is False  # its minute's one is spent


def test_series_of_normal_names_fill_the_series_bound() -> None:
    limit = FailingLimit(1, max_series=1000, clock=lambda: NOW)
    for i in range(1000):
        assert limit.keep((f"agent-{i}", "2026.11.30-rc1", f"retail_task_{i}"), NOW)
    assert len(limit) == 1000 and limit.nbytes <= limit.max_bytes
    assert limit.keep(("agent-0", "2026.11.30-rc1", "retail_task_0"), NOW) is False  # still remembered
