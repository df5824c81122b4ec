"""Bernoulli CUSUM: the one sequential test behind every quality alert, with a designed false-alarm rate.

Why: a rule evaluated every minute, forever, asks its question again at every evaluation, so a fixed cut-off
on a rate or an interval bound pages on series that did not change. A CUSUM is built for repeated looks: its
in-control average run length (ARL0, observations between false alarms) is a design input.

Every rule watches one kind of *bad* observation in one population of conversations (a failed graded
conversation, an error among all conversations, ...): in control it happens with probability q0 (the
reference), the test is tuned for q1 > q0. One observation adds its log-likelihood ratio, ln(q1/q0) when bad
(> 0) and ln((1-q1)/(1-q0)) when good (< 0), as integers in units of 1/scale nat (`increments`: the good
observation's exactly, the bad one's rounded, their ratio within 2%); S = max(0, S + x); the alarm goes on at
S >= h. The detector *is* the rounded one, so the ARLs below are exact for it.

ARL: with integer increments the statistic is a Markov chain on 0 .. h-1 (Brook and Evans 1972); the expected
number of observations to reach h from 0 solves (I - Q) L = 1, a banded system (`arl`).

The reference is estimated, not known. Plugging its estimate in as if known makes the false-alarm rate a
random variable whose mean is far above the design (1/ARL grows about exponentially as the true q0 moves up).
The threshold is therefore chosen on the *posterior-averaged* false-alarm rate: with the reference's posterior
Beta(a, b) for q0, h is the smallest integer with E[1 / ARL(q0; h)] <= 1 / ARL0 (`threshold`). The average
is a Gauss–Hermite sum over z with q0 = F^-1(Phi(z)) (F the Beta CDF), its nodes shifted towards the tail that
dominates the integrand (importance shift by the slope of ln 1/ARL in z); every ARL in it is exact.

Alarms are episodes: the alarm goes on when S reaches h and stays on until S returns to 0 (`statistic`). A
new alarm must climb from 0 again, so alarms (pages) are at most one per run from 0 to h: at most one per
ARL0 observations on average. A rule that compared S with h alone would flap: after S first crosses h it
hovers there and re-crosses many times.

Information bound: a test with false-alarm rate 1/ARL0 needs about ln(ARL0) / KL(q1 || q0) observations after
the change (Lorden 1971), which `information_bound` returns.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.linalg import lapack
from scipy.special import betaincc, betaincinv, ndtr

MAX_STEPS = 64  # at most this many units for a good observation's increment
RATIO_TOLERANCE = 0.02  # the rounded increments' ratio is within 2% of the log-likelihood ratios'
NODES = 5  # Gauss–Hermite nodes of the average over the reference's posterior
MAX_SHIFT = 6.0
TUNE_Z = 1.0  # the increments assume the reference's posterior quantile at this z (pessimistic), or higher
MAX_TUNE_Z = 8.0
MAX_H_NATS = 1000.0  # a threshold search stops here (only a reference of a few observations gets near)
Q_MIN, Q_MAX = 1e-4, 0.99
_MEAN_STEP = math.log(1.01)  # grids of the design cache (rounded towards more conservative designs)
_SIZE_STEP = math.log(2.0) / 4
_RATE_STEP = math.log(10.0) / 20
_Z, _W = hermegauss(NODES)
_W = _W / _W.sum()


@dataclass(slots=True, frozen=True)
class Design:
    """One CUSUM: what it assumes and is tuned for, its integer increments and threshold, what it was designed for."""

    q0: float  # the reference: posterior mean of the in-control probability of a bad observation (on its grid)
    qd: float  # the in-control probability the increments assume: the reference's posterior quantile at z = 1
    q1: float  # the probability it is tuned to detect (the rule's alternative to qd)
    scale: float  # units per nat
    up: int  # increment of a bad observation (> 0)
    down: int  # increment of a good observation (< 0)
    h: int  # the alarm goes on at S >= h
    observations: float  # the series' observations a month (its traffic in the rule's population)
    share: float  # false pages a month allowed to this series and rule
    pages: float  # expected false pages a month, averaged over the reference's posterior (<= share)
    size: float  # a + b of the reference's posterior Beta(a, b), a = q0 * size

    @property
    def threshold(self) -> float:
        """h in nats."""
        return self.h / self.scale

    @property
    def arl0(self) -> float:
        """The in-control run length the share asks for: observations a month / false pages a month."""
        return self.observations / self.share


def kl(q1: float, q0: float) -> float:
    """KL(Bernoulli(q1) || Bernoulli(q0)) in nats."""
    return q1 * math.log(q1 / q0) + (1.0 - q1) * math.log((1.0 - q1) / (1.0 - q0))


def information_bound(arl0: float, q0: float, q1: float) -> float:
    """ln(ARL0) / KL(q1 || q0): observations after a change to q1 that any test with this ARL0 needs (about)."""
    return math.log(arl0) / kl(q1, q0)


def increments(q0: float, q1: float) -> tuple[float, int, int]:
    """(scale, up, down): the log-likelihood ratios of a bad and a good observation in units of 1/scale nat.

    The good observation's ratio is exactly -d units, d the smallest integer (at most MAX_STEPS) for which the
    bad one's ratio, rounded to an integer u, is within RATIO_TOLERANCE of the exact ratio of the two: the
    test depends on that ratio (and h), and the fewest units make the chain small and its ARL fast to solve.
    """
    up_nats = math.log(q1 / q0)
    down_nats = math.log((1.0 - q1) / (1.0 - q0))
    ratio = up_nats / -down_nats
    d, u = 1, max(1, round(ratio))
    for d in range(1, MAX_STEPS + 1):
        u = max(1, round(ratio * d))
        if abs(u / d - ratio) <= RATIO_TOLERANCE * ratio:
            break
    return d / -down_nats, u, -d


def arl(q: float, up: int, down: int, h: int) -> float:
    """Exact expected observations until S >= h from S = 0, bad-observation probability q (h-state chain)."""
    if h <= 0:
        return 1.0
    if q <= 0.0:
        return math.inf
    d = -down
    kl_, ku = min(d, h - 1), (up if up < h else 0)
    r0 = kl_ + ku
    ab = np.zeros((2 * kl_ + ku + 1, h), order="F")  # LAPACK band storage: ab[r0 + i - j, j] = A[i, j]
    ab[r0, :] = 1.0
    i = np.arange(h)
    j = np.maximum(i + down, 0)
    ab[r0 + i - j, j] -= 1.0 - q  # a good observation: down, reflected at 0 (row 0: on the diagonal)
    if up < h:
        k = np.arange(h - up)
        ab[r0 - up, k + up] -= q  # a bad one: up, absorbed at h and above
    _lu, _piv, x, info = lapack.dgbsv(kl_, ku, ab, np.ones(h), overwrite_ab=1, overwrite_b=1)
    if info != 0:  # pragma: no cover - I - Q of a substochastic chain that reaches h is non-singular
        raise ArithmeticError(f"ARL system is singular (q={q}, up={up}, down={down}, h={h})")
    return float(x[0])


def _mean_step(q: float | np.ndarray, up: int, down: int) -> float | np.ndarray:
    """Expected increment of one observation (units) at bad-observation probability q."""
    return q * up + (1.0 - q) * down


def pages(q: float, up: int, down: int, h: int, observations: float) -> float:
    """Expected false pages a month at bad-observation probability q, for `observations` a month.

    A page starts an alarm episode; the next needs a climb from 0 (mean ARL(q)) after the episode ends, which
    takes at least h / |mean step| observations (Wald) and never ends on average when the mean step is not
    negative. Pages a month: the long-run rate observations / (ARL + episode), or, for the first episode,
    min(1, observations / ARL); the larger of the two.
    """
    run = arl(q, up, down, h)
    step = float(_mean_step(q, up, down))
    episode = h / -step if step < 0 else math.inf
    return max(min(1.0, observations / run), observations / (run + episode))


def posterior_nodes(a: float, b: float, shift: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes q and weights w with sum w f(q) ≈ E f(q0), q0 ~ Beta(a, b): Gauss–Hermite nodes in z, shifted by
    `shift` (importance weights e^(-shift z - shift²/2)), mapped through q0 = F^-1(Phi(z))."""
    z = _Z + shift
    q = np.clip(betaincinv(a, b, ndtr(z)), 1e-12, 1.0)
    return q, _W * np.exp(-shift * _Z - shift * shift / 2)


def expected_pages(q: np.ndarray, w: np.ndarray, up: int, down: int, h: int, observations: float) -> float:
    """sum w pages(q): false pages a month averaged over the nodes of a posterior."""
    return float(sum(wi * pages(float(qi), up, down, h, observations) for qi, wi in zip(q, w, strict=True)))


def _theta(q: np.ndarray, up: int, down: int) -> np.ndarray:
    """Positive root θ (per unit) of q e^(θ up) + (1 - q) e^(θ down) = 1, per q; 0 where the mean step >= 0."""
    lo = np.zeros_like(q)
    hi = np.full_like(q, 1.0 / up)
    for _ in range(40):  # widen until every root is bracketed (θ < 40 / up covers every useful case)
        short = q * np.exp(hi * up) + (1.0 - q) * np.exp(hi * down) < 1.0
        if not short.any():
            break
        hi = np.where(short, 2 * hi, hi)
    for _ in range(50):
        mid = (lo + hi) / 2
        below = q * np.exp(mid * up) + (1.0 - q) * np.exp(mid * down) < 1.0
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return np.where(_mean_step(q, up, down) < 0, (lo + hi) / 2, 0.0)


_SHIFTS = np.arange(-1.0, MAX_SHIFT + 1e-9, 0.25)


def _shift(a: float, b: float, up: int, down: int, h: int, observations: float) -> float:
    """Where the integrand pages(q(z)) φ(z) peaks, from ARL ≈ e^(θ h) (cheap): the quadrature's centre."""
    q = np.clip(betaincinv(a, b, ndtr(_SHIFTS)), 1e-12, 1.0)
    run = np.exp(np.minimum(_theta(q, up, down) * h, 700.0)) + h
    step = _mean_step(q, up, down)
    episode = np.where(step < 0, h / np.maximum(-step, 1e-300), np.inf)
    f = np.maximum(np.minimum(1.0, observations / run), observations / (run + episode))
    return float(_SHIFTS[np.argmax(np.log(np.maximum(f, 1e-300)) - _SHIFTS**2 / 2)])


def threshold(
    a: float, b: float, up: int, down: int, observations: float, share: float, cap: int = 100_000
) -> tuple[int, float]:
    """The smallest h (at most `cap`) whose expected false pages a month, averaged over q0 ~ Beta(a, b), are at
    most `share`; returns (h, those pages)."""
    if observations <= share:
        return 1, 0.0
    target = math.log(share)
    t0 = float(_theta(np.array([betaincinv(a, b, 0.5)]), up, down)[0])
    h = max(1, round(math.log(observations / share) / t0)) if t0 > 0 else 4 * up
    for _phase in range(4):  # the quadrature is centred where the integrand peaks at the h found so far
        shift = _shift(a, b, up, down, h, observations)
        q, w = posterior_nodes(a, b, shift)
        h, value = _search(q, w, up, down, observations, target, h, cap)
        if abs(_shift(a, b, up, down, h, observations) - shift) <= 0.5:
            break
    return h, value


def _search(
    q: np.ndarray, w: np.ndarray, up: int, down: int, observations: float, target: float, h: int, cap: int
) -> tuple[int, float]:
    """Smallest h <= cap with ln expected_pages <= target (else cap), from a first guess: bracket by
    extrapolation, then interpolation in ln pages, bisecting whenever one side of the bracket moves twice."""

    def value(x: int) -> float:
        return math.log(max(expected_pages(q, w, up, down, x, observations), 1e-300))

    h = min(max(h, 1), cap)
    v = value(h)
    lo, flo = 0, math.log(max(observations, 1.0))  # h = 0: every observation alarms
    hi, fhi = (h, v) if v <= target else (0, 0.0)
    slope = -1.0 / up  # d ln pages / dh until two failing points give a better one
    if not hi:
        lo, flo = h, v
    while not hi:  # no passing h yet: extrapolate upwards (at most four times further)
        if lo >= cap:
            return cap, math.exp(flo)
        x = min(cap, max(lo + 1, min(4 * lo, lo + math.ceil(1.1 * (flo - target) / -slope))))
        vx = value(x)
        if vx <= target:
            hi, fhi = x, vx
        else:
            slope = min((vx - flo) / (x - lo), -1e-12)
            lo, flo = x, vx
    while lo == 0 and hi > 1:  # a passing h but no failing one: probe below
        x = max(1, hi - max(1, hi // 8))
        vx = value(x)
        if vx <= target:
            hi, fhi = x, vx
        else:
            lo, flo = x, vx
    moved = ""
    while hi - lo > 1:
        guess = (
            lo + (flo - target) / (flo - fhi) * (hi - lo) if moved[-2:] not in ("ll", "hh") else (lo + hi) / 2
        )
        x = min(max(round(guess), lo + 1), hi - 1)
        vx = value(x)
        if vx <= target:
            hi, fhi, moved = x, vx, moved + "h"
        else:
            lo, flo, moved = x, vx, moved + "l"
    return hi, math.exp(fhi)


def on_grid(mean: float, size: float, observations: float, share: float) -> tuple[float, float, float, float]:
    """Cache keys that only make a design more conservative: the reference's mean rounded up (1% steps, within
    [Q_MIN, Q_MAX]), its size a + b rounded down (2^(1/4) steps), observations a month rounded up and the share
    rounded down (10^(1/20) steps)."""
    m = math.exp(math.ceil(math.log(min(Q_MAX, max(Q_MIN, mean))) / _MEAN_STEP - 1e-9) * _MEAN_STEP)
    s = math.exp(math.floor(math.log(max(size, 2.0)) / _SIZE_STEP + 1e-9) * _SIZE_STEP)
    o = math.exp(math.ceil(math.log(max(observations, 1.0)) / _RATE_STEP - 1e-9) * _RATE_STEP)
    f = math.exp(math.floor(math.log(share) / _RATE_STEP + 1e-9) * _RATE_STEP)
    return min(Q_MAX, m), s, o, f


class Alternative(Protocol):
    """The bad-observation probability a rule is tuned to detect, given the in-control one (hashable)."""

    def __call__(self, q0: float) -> float: ...


def tuning(mean: float, size: float, share: float, alternative: Alternative) -> tuple[float, float]:
    """(qd, q1): the in-control probability the increments assume and the one they are tuned to detect.

    qd is the reference's posterior quantile at z = TUNE_Z, or at a higher z (steps of 0.25) while the
    posterior keeps more than a quarter of the share above the critical probability at which the increments'
    mean is no longer negative: an in-control rate there would page about once a month whatever the threshold.
    """
    a, b = mean * size, (1.0 - mean) * size
    z = TUNE_Z
    while True:
        qd = min(Q_MAX, max(mean, float(betaincinv(a, b, ndtr(z)))))
        q1 = min(0.999, max(alternative(qd), qd * 1.0001))
        _scale, up, down = increments(qd, q1)
        critical = -down / (up - down)
        if z >= MAX_TUNE_Z or qd >= Q_MAX or float(betaincc(a, b, critical)) <= share / 4:
            return qd, q1
        z += 0.25


_DESIGNS: OrderedDict[tuple[float, float, float, float, Alternative], Design] = OrderedDict()
_DESIGNS_KEPT = 16384
_designs_lock = threading.Lock()


def design(mean: float, size: float, observations: float, share: float, alternative: Alternative) -> Design:
    """The CUSUM for a reference with posterior Beta(mean size, (1 - mean) size): increments tuned for qd -> q1
    (`tuning`), threshold the smallest whose expected false pages a month, averaged over that posterior, are at
    most `share` (memoised, the last 16,384 kept: call it with `on_grid` values)."""
    key = (mean, size, observations, share, alternative)
    found = cached_design(*key)
    if found is not None:
        return found
    qd, q1 = tuning(mean, size, share, alternative)
    scale, up, down = increments(qd, q1)
    h, expected = threshold(
        mean * size, (1.0 - mean) * size, up, down, observations, share, math.ceil(MAX_H_NATS * scale)
    )
    made = Design(mean, qd, q1, scale, up, down, h, observations, share, expected, size)
    with _designs_lock:
        _DESIGNS[key] = made
        while len(_DESIGNS) > _DESIGNS_KEPT:
            _DESIGNS.popitem(last=False)
    return made


def cached_design(
    mean: float, size: float, observations: float, share: float, alternative: Alternative
) -> Design | None:
    """The memoised design of these arguments, or None when it has not been made (or was dropped)."""
    key = (mean, size, observations, share, alternative)
    with _designs_lock:
        found = _DESIGNS.get(key)
        if found is not None:
            _DESIGNS.move_to_end(key)
        return found


def clear_designs() -> None:
    """Forget every memoised design (benchmarks measure the cost of making them)."""
    with _designs_lock:
        _DESIGNS.clear()


def statistic(
    n: np.ndarray, x: np.ndarray, up: np.ndarray, down: np.ndarray, h: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """S at the last minute and whether the alarm is on, per column of per-minute counts (minutes × tests):
    n observations, x of them bad, oldest minute first, S = 0 before the first. The alarm is on when S has
    reached h since it was last 0."""
    v = up * x.astype(np.int64) + down * (n.astype(np.int64) - x)
    p = np.cumsum(v, axis=0)
    s = p - np.minimum(np.minimum.accumulate(p, axis=0), 0)
    zero = s == 0
    minutes = s.shape[0]
    last_zero = np.where(zero.any(axis=0), minutes - 1 - np.argmax(zero[::-1], axis=0), -1)
    since = np.arange(minutes)[:, None] > last_zero[None, :]
    peak = np.where(since, s, 0).max(axis=0)
    return s[-1], peak >= h
