"""Bernoulli CUSUM drift detector: a change detector whose false-alarm rate is bounded by construction.

Why: the posterior regression probability answers "is the new version worse?" once. An alert rule asks that
question every minute, forever, so a fixed posterior cut-off (0.95 for 15 minutes) pages on series that did
not change at all (several per cent of series-days). A CUSUM is built for repeated looks: its in-control
average run length (ARL0, observations between false alarms) is a design input.

The test, per series, on the graded conversations' pass/fail:

- in-control success probability p0 (the reference, see `Estimator.drift`), out-of-control p1: the success
  probability whose pass^k is `drop` lower, p1 = (p0^k - drop)^(1/k) (when p0^k - drop < p0^k / 4, the
  alternative is p0^k / 4);
- log-likelihood-ratio increment of one conversation: ln(p1/p0) on a pass (negative), ln((1-p1)/(1-p0)) on a
  fail (positive), rounded to integers in units of 1/SCALE (the detector *is* the rounded one, so the ARL
  below is exact for it);
- S = max(0, S + increment); alarm while S >= h.

The threshold h for a target ARL0 is found exactly, not by an asymptotic formula: with integer increments the
statistic is a Markov chain on 0 .. H-1 (Brook and Evans 1972); the expected number of observations to reach
H from 0 solves (I - Q) L = 1. `threshold` takes the smallest H whose ARL at p0 is at least ARL0 (bisection;
the ARL grows with H). Information bound: a sequential test with false-alarm rate 1/ARL0 needs about
ln(ARL0) / KL(p1 || p0) observations after the change (Lorden 1971), which `information_bound` returns.

In the exporter the statistic is evaluated over per-minute counts: a minute's n graded conversations with c
passes add c*down + (n-c)*up (the exact binomial log-likelihood ratio), and S is the largest sum over the
minute-aligned suffixes of the drift window (`window_statistic`). Compared with the observation-by-observation
CUSUM this only drops candidate start points (within a minute, and before the window), so it is never larger:
its false alarms are a subset of those of the CUSUM whose ARL0 is computed, while a real drop, whose
evidence accumulates over hundreds of conversations, loses at most a minute. It is a pure function of the
counts per minute in the window: the order in which scores (and revisions) arrive does not matter, and a
replay of the scores topic rebuilds the same statistic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.sparse import csr_matrix, identity
from scipy.sparse.linalg import spsolve

SCALE = 100  # increments are integers in units of 1/SCALE (resolution 0.01 nat)
P0_STEP = 1e-3  # p0 is rounded to this step (so thresholds are cached per rounded p0)


@dataclass(slots=True, frozen=True)
class DriftParams:
    """Settings of the drift detector."""

    arl0: float = 1_000_000.0  # in-control average run length, in graded conversations
    drop: float = 0.15  # pass^k drop the test is tuned for
    k: int = 3
    window_s: float = 86_400.0  # the suffixes of S start within this window (per-minute buckets)
    min_reference: int = 2000  # graded conversations the reference needs


@dataclass(slots=True, frozen=True)
class Design:
    """One CUSUM design: success probabilities, integer increments, threshold (all in 1/SCALE units)."""

    p0: float
    p1: float
    up: int  # increment of a failed conversation (> 0)
    down: int  # increment of a passed conversation (< 0)
    h: int  # alarm while S >= h

    @property
    def threshold(self) -> float:
        """h in nats."""
        return self.h / SCALE


@dataclass(slots=True, frozen=True)
class Drift:
    """The detector's state of one series at one instant."""

    statistic: float  # S in nats
    threshold: float  # h in nats
    p0: float  # reference success probability
    p1: float  # alternative it is tuned for
    reference_version: str  # the version whose posterior gave p0 (the series' own version or its baseline)

    @property
    def alarm(self) -> bool:
        """S >= h."""
        return self.statistic >= self.threshold


def alternative(p0: float, k: int, drop: float) -> float:
    """p1 with p1^k = p0^k - drop (at least p0^k / 4)."""
    target: float = max(p0**k - drop, p0**k / 4.0)
    return math.pow(target, 1.0 / k)


def llr(p0: float, p1: float) -> tuple[float, float]:
    """Exact log-likelihood ratios ln f1/f0 of (a failed, a passed) conversation."""
    return math.log((1.0 - p1) / (1.0 - p0)), math.log(p1 / p0)


def kl(p1: float, p0: float) -> float:
    """KL(Bernoulli(p1) || Bernoulli(p0)) in nats."""
    return p1 * math.log(p1 / p0) + (1.0 - p1) * math.log((1.0 - p1) / (1.0 - p0))


def information_bound(arl0: float, p0: float, p1: float) -> float:
    """ln(ARL0) / KL(p1 || p0): observations after a change to p1 that any test with this ARL0 needs (about)."""
    return math.log(arl0) / kl(p1, p0)


def arl(p: float, up: int, down: int, h: int) -> float:
    """Exact expected observations until S >= h from S = 0, pass probability p (Markov chain, h states)."""
    if h <= 0:
        return 1.0
    i = np.arange(h)
    ok = np.maximum(i + down, 0)
    bad = i + up
    rows = np.concatenate([i, i[bad < h]])
    cols = np.concatenate([ok, bad[bad < h]])
    vals = np.concatenate([np.full(h, p), np.full(int((bad < h).sum()), 1.0 - p)])
    q = csr_matrix((vals, (rows, cols)), shape=(h, h))
    lengths = spsolve((identity(h, format="csr") - q).tocsc(), np.ones(h))
    return float(lengths[0])


def threshold(p0: float, up: int, down: int, arl0: float) -> int:
    """The smallest integer h (1/SCALE units) whose ARL at p0 is at least arl0."""
    lo, hi = 0, max(up, 1)
    while arl(p0, up, down, hi) < arl0:
        lo, hi = hi, hi * 2
        if hi > 10_000_000:
            raise ValueError("ARL0 out of reach")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if arl(p0, up, down, mid) >= arl0:
            hi = mid
        else:
            lo = mid
    return hi


@lru_cache(maxsize=4096)
def _design(p0q: int, k: int, drop: float, arl0: float) -> Design:
    p0 = p0q * P0_STEP
    p1 = alternative(p0, k, drop)
    fail, ok = llr(p0, p1)
    up, down = max(1, round(fail * SCALE)), min(-1, round(ok * SCALE))
    return Design(p0, p1, up, down, threshold(p0, up, down, arl0))


def design(p0: float, params: DriftParams) -> Design:
    """The CUSUM for reference p0 (rounded to P0_STEP, within [0.01, 0.99]), memoised."""
    p0q = round(min(0.99, max(0.01, p0)) / P0_STEP)
    return _design(p0q, params.k, params.drop, params.arl0)


def window_statistic(n: np.ndarray, c: np.ndarray, d: Design) -> int:
    """max(0, largest suffix sum) of the per-bucket log-likelihood ratios, buckets in time order (1/SCALE)."""
    if len(n) == 0:
        return 0
    x = d.up * (n.astype(np.int64) - c) + d.down * c.astype(np.int64)
    p = np.cumsum(x)
    return int(p[-1] - min(0, int(p.min())))


class MinuteCounts:
    """Graded and passed conversations per minute of event time over the last `minutes` minutes (a ring)."""

    __slots__ = ("c", "minute", "minutes", "n")

    def __init__(self, minutes: int) -> None:
        self.minutes = minutes
        self.minute = np.full(minutes, -1, dtype=np.int64)
        self.n = np.zeros(minutes, dtype=np.int32)
        self.c = np.zeros(minutes, dtype=np.int32)

    def add(self, t: float, dn: int, dc: int, now: float) -> None:
        """Add dn graded, dc passed conversations at event time t (ignored once t's minute left the window)."""
        m, now_m = int(t // 60), int(now // 60)
        if m <= now_m - self.minutes:
            return
        i = m % self.minutes
        if self.minute[i] != m:
            if self.minute[i] > m or dn < 0:  # a newer minute holds the slot, or nothing to take back
                return
            self.minute[i], self.n[i], self.c[i] = m, 0, 0
        self.n[i] += dn
        self.c[i] += dc

    def ordered(self, now: float) -> tuple[np.ndarray, np.ndarray]:
        """(n, c) per minute, oldest first, of the minutes in the window ending at `now`."""
        now_m = int(now // 60)
        ms = np.arange(now_m - self.minutes + 1, now_m + 1)
        idx = ms % self.minutes
        valid = self.minute[idx] == ms
        return np.where(valid, self.n[idx], 0), np.where(valid, self.c[idx], 0)
