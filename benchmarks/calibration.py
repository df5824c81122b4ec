"""A machine-speed yardstick printed beside benchmark figures, so runs on busy or slower machines can be told apart."""

from __future__ import annotations

import time

QUIET_US = 9.5  # what the quiet development machine measures


def calibration_us() -> float:
    """CPU µs of `sum(range(1000))` (best of 5 × 200): about 9.5 on the quiet development machine."""
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for _ in range(200):
            sum(range(1000))
        best = min(best, (time.process_time() - start) / 200 * 1e6)
    return best


def calibration_line(before: float) -> str:
    """One line reporting the yardstick measured before the run and now, after it."""
    mean = (before + calibration_us()) / 2
    return (
        f"calibration: sum(range(1000)) took {mean:.1f} µs of CPU before and after (≈ {QUIET_US} on a quiet "
        "machine; higher means the machine was busy or slower)"
    )
