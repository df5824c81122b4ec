"""Judge–human agreement per judge id and window: the confusion of the judge's verdicts with the labels of the
blind review sample, and Cohen's kappa with its bootstrap interval.

Each series' window counts, per judge id, the conversations the judge graded and the (label, verdict) cells of
those that also carry a review-sample label (`buckets.Bucket.judges`; the verdict is the class the judge
returned, `judge_outcome`, before failure evidence or another grader changed the conversation's outcome). Here
the real series (not `task="*"`, which would count them twice) are summed per judge and window. The interval
is `agentwatch.stats.agreement.counts_interval` (seeded with `stats.seed`, memoised on the cells). Flagged
conversations' labels are not a random sample and never enter: kappa is the judge's agreement on the traffic
it grades.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from agentwatch.exporters.buckets import CLASSES, JUDGED
from agentwatch.stats.agreement import counts_interval, kappa


@dataclass(frozen=True, slots=True)
class JudgeAgreement:
    """Agreement of one judge with the review-sample labels over one window."""

    judge: str
    window: str
    judged: int  # conversations the judge graded
    cells: tuple[int, ...]  # label * CLASSES + verdict -> conversations
    kappa: float  # NaN when undefined (no labels, or a single class on both sides)
    lower: float
    upper: float

    @property
    def labels(self) -> int:
        """Labelled conversations the kappa rests on."""
        return sum(self.cells)


@lru_cache(maxsize=4096)
def _kappa(cells: tuple[int, ...], level: float, resamples: int, seed: int) -> tuple[float, float, float]:
    m = np.array(cells, dtype=np.int64).reshape(CLASSES, CLASSES)
    lo, hi = counts_interval(m, level, resamples, seed)
    return kappa(m), lo, hi


def agreements(
    rows: Iterable[tuple[str, str, list[int]]], level: float = 0.95, resamples: int = 1000, seed: int = 0
) -> list[JudgeAgreement]:
    """Per (judge, window): the sum of the rows given as (window, judge, row of `Bucket.judges`), one per real
    series."""
    totals: dict[tuple[str, str], list[int]] = {}
    for window, judge, row in rows:
        acc = totals.setdefault((judge, window), [0] * (JUDGED + 1))
        for i, x in enumerate(row):
            acc[i] += x
    out = []
    for (judge, window), row in sorted(totals.items()):
        cells = tuple(row[:JUDGED])
        kappa = lo = hi = math.nan
        if sum(cells) > 0:
            kappa, lo, hi = _kappa(cells, level, resamples, seed)
        out.append(JudgeAgreement(judge, window, row[JUDGED], cells, kappa, lo, hi))
    return out
