"""Sliding windows and sketches: bucket expiry, exact subtraction, sketch accuracy, durations."""

from __future__ import annotations

import numpy as np
import pytest

from agentwatch.exporters.buckets import Bucket, Contribution, sketch_bin, sketch_quantile, sketch_value
from agentwatch.exporters.windows import SlidingWindow, parse_duration


def contribution(passed: bool, cost: float | None = None) -> Contribution:
    return Contribution(
        scored=True,
        passed=passed,
        outcome=0 if passed else 2,
        modes=("loop",) if not passed else (),
        tool_sums=(0.5, 1.0, 1.0, 0.0, 0.75, 1.0),
        tool_counts=(1, 1, 1, 0, 1, 1),
        cost_bin=None if cost is None else sketch_bin(cost),
        duration_bin=None,
        budgeted=cost is not None,
        over_budget=False,
        asr_bin=1000 if passed else 0,
        asr_credit=1.0 if passed else 0.0,
    )


def test_parse_duration() -> None:
    assert [parse_duration(w) for w in ("1h", "24h", "7d", "15m", "90s", "2w")] == [
        3600,
        86400,
        604800,
        900,
        90,
        1209600,
    ]
    for bad in ("", "1y", "-1h", "h", "0m"):
        with pytest.raises(ValueError, match="window"):
            parse_duration(bad)


def test_window_total_is_sum_of_live_buckets_and_returns_to_empty() -> None:
    w = SlidingWindow("1h", 3600, 60)
    t0 = 1_800_000_000.0
    for i in range(120):  # one event per minute for two hours
        w.add(t0 + 60 * i, contribution(i % 3 == 0, cost=0.01 * (i + 1)), now=t0 + 60 * i)
    # at the last event, the window holds minutes 60..119
    assert w.total.total == 60
    assert w.total.passed == sum(1 for i in range(60, 120) if i % 3 == 0)
    assert w.total.modes["loop"] == sum(1 for i in range(60, 120) if i % 3 != 0)
    assert sum(w.total.cost.values()) == 60
    w.advance(t0 + 60 * 119 + 3600)
    assert w.empty
    assert w.total == Bucket.window_total()


def test_event_outside_window_is_not_added() -> None:
    w = SlidingWindow("1h", 3600, 60)
    assert not w.add(1000.0, contribution(True), now=1000.0 + 7200)
    assert w.empty


def test_sketch_relative_accuracy() -> None:
    rng = np.random.default_rng(2)
    xs = rng.lognormal(0, 3, 5000)
    for x in xs[:500]:
        assert sketch_value(sketch_bin(float(x))) == pytest.approx(x, rel=0.01)
    bins: dict[int, int] = {}
    for x in xs:
        b = sketch_bin(float(x))
        bins[b] = bins.get(b, 0) + 1
    for q in (0.01, 0.5, 0.9, 0.99, 1.0):
        assert sketch_quantile(bins, q) == pytest.approx(np.quantile(xs, q, method="inverted_cdf"), rel=0.01)
    assert sketch_value(sketch_bin(0.0)) == 0.0
    assert sketch_quantile({}, 0.5) is None
