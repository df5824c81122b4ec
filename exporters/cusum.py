"""Bernoulli CUSUM: the one sequential test behind every quality alert, with a designed false-alarm rate.

Why: a rule evaluated every minute, forever, asks its question again at every evaluation, so a fixed cut-off
on a rate or an interval bound pages on series that did not change. A CUSUM is built for repeated looks: its
in-control average run length (ARL0, observations between false alarms) is a design input.

Every rule watches one kind of *bad* observation in one population of conversations (a failed graded
conversation, an error among all conversations, ...): in control it happens with probability q0 (the
reference), the test is tuned for q1 > q0. One observation adds its log-likelihood ratio, ln(q1/q0) when bad
(> 0) and ln((1-q1)/(1-q0)) when good (< 0), rounded to integers in units of 1/scale nat; S = max(0, S + x);
the alarm goes on at S >= h. The scale is the finest (100 per nat) unless both increments are large, in which
case it is coarser so that the smaller one spans about `STEPS` units; the detector *is* the rounded one, so
the ARLs below are exact for it.

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
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.linalg import lapack
from scipy.special import betaincc, betaincinv, ndtr

MAX_SCALE = 100  # finest resolution of the increments: 0.01 nat
STEPS = 8  # the smaller increment spans about this many units when MAX_SCALE allows it
NODES = 5  # Gauss–Hermite nodes of the average over the reference's posterior
MAX_SHIFT = 6.0
TUNE_Z = 1.0  # the increments assume the reference's posterior quantile at this z (pessimistic), or higher
MAX_TUNE_Z = 8.0
MAX_H_NATS = 1000.0  # a threshold search stops here (only a reference of a few observations gets near)
Q_MIN, Q_MAX = 1e-4, 0.99
_MEAN_STEP = math.log(1.01)  # grids of the design cache (rounded towards more conservative designs)
_SIZE_STEP = math.log(2.0) / 4
_ARL_STEP = math.log(10.0) / 10
_Z, _W = hermegauss(NODES)
_W = _W / _W.sum()


@dataclass(slots=True, frozen=True)
class Design:
    """One CUSUM: what it assumes and is tuned for, its integer increments and threshold, what it was designed for."""

    q0: float  # the reference: posterior mean of the in-control probability of a bad observation (on its grid)
    qd: float  # the in-control probability the increments assume: the reference's posterior quantile at z = 1
    q1: float  # the probability it is tuned to detect (the rule's alternative to qd)
    scale: int  # units per nat
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


def increments(q0: float, q1: float) -> tuple[int, int, int]:
    """(scale, up, down): the log-likelihood ratios of a bad and a good observation in units of 1/scale nat."""
    up_nats = math.log(q1 / q0)
    down_nats = math.log((1.0 - q1) / (1.0 - q0))
    scale = min(MAX_SCALE, max(1, math.ceil(STEPS / -down_nats)))
    return scale, max(1, round(up_nats * scale)), min(-1, round(down_nats * scale))


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


def threshold(a: float, b: float, up: int, down: int, observations: float, share: float,
              cap: int = 100_000) -> tuple[int, float]:
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


def _search(q: np.ndarray, w: np.ndarray, up: int, down: int, observations: float, target: float,
            h: int, cap: int) -> tuple[int, float]:
    """Smallest h <= cap with ln expected_pages <= target (else cap), from a first guess (secant on ln pages,
    else bisection)."""
    seen: dict[int, float] = {}
    h = min(h, cap)
    lo, hi = 0, 0  # lo fails (0: nothing below it); hi passes (0: none found yet)
    for _ in range(200):
        v = seen[h] = math.log(max(expected_pages(q, w, up, down, h, observations), 1e-300))
        if v <= target:
            hi = h if hi == 0 else min(hi, h)
        else:
            lo = max(lo, h)
        if hi and hi - lo <= 1:
            return hi, math.exp(seen[hi])
        near = sorted(seen, key=lambda k: abs(seen[k] - target))[:2]
        slope = (seen[near[0]] - seen[near[1]]) / (near[0] - near[1]) if len(near) == 2 else -1.0 / up
        nxt = h + (math.ceil if v > target else math.floor)((v - target) / -slope) if slope < 0 else 2 * h
        h = min(max(nxt, lo + 1), hi - 1 if hi else max(nxt, lo + 1), cap)
        if h in seen:  # no progress by interpolation: bisect the bracket (or double without one)
            h = (lo + hi) // 2 if hi else min(2 * max(lo, 1), cap)
        if h in seen:  # the cap fails too: the target is out of reach
            return h, math.exp(seen[h])
    raise ArithmeticError("threshold search did not converge")  # pragma: no cover


def on_grid(mean: float, size: float, observations: float, share: float) -> tuple[float, float, float, float]:
    """Cache keys that only make a design more conservative: the reference's mean rounded up (1% steps, within
    [Q_MIN, Q_MAX]), its size a + b rounded down (2^(1/4) steps), observations a month rounded up and the share
    rounded down (10^(1/10) steps)."""
    m = math.exp(math.ceil(math.log(min(Q_MAX, max(Q_MIN, mean))) / _MEAN_STEP - 1e-9) * _MEAN_STEP)
    s = math.exp(math.floor(math.log(max(size, 2.0)) / _SIZE_STEP + 1e-9) * _SIZE_STEP)
    o = math.exp(math.ceil(math.log(max(observations, 1.0)) / _ARL_STEP - 1e-9) * _ARL_STEP)
    f = math.exp(math.floor(math.log(share) / _ARL_STEP + 1e-9) * _ARL_STEP)
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


@lru_cache(maxsize=16384)
def design(mean: float, size: float, observations: float, share: float, alternative: Alternative) -> Design:
    """The CUSUM for a reference with posterior Beta(mean size, (1 - mean) size): increments tuned for qd -> q1
    (`tuning`), threshold the smallest whose expected false pages a month, averaged over that posterior, are at
    most `share` (memoised: call it with `on_grid` values)."""
    qd, q1 = tuning(mean, size, share, alternative)
    scale, up, down = increments(qd, q1)
    h, expected = threshold(mean * size, (1.0 - mean) * size, up, down, observations, share,
                            math.ceil(MAX_H_NATS * scale))
    return Design(mean, qd, q1, scale, up, down, h, observations, share, expected, size)


def statistic(n: np.ndarray, x: np.ndarray, up: np.ndarray, down: np.ndarray,
              h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
