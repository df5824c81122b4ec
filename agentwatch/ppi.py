"""Prediction-powered inference (PPI++) of a mean: a judge on many conversations, people on a blind few.

A judge's verdict f is cheap and wrong in its own direction; a person's label y is right and scarce. With y and f
on n labelled conversations (a blind random subsample: the review sample) and f alone on N others drawn the same
way, PPI++ (Angelopoulos, Duchi and Zrnic, 2023) estimates the mean of y as

    θ̂ = mean_n(y) + λ · (mean_N(f) − mean_n(f))

— the people's mean, corrected by how the judge's mean on everything differs from its mean on the labelled few.
Any λ gives an unbiased estimate; the variance `Var(y − λf)/n + λ² Var(f)/N` is smallest at
`λ* = Cov(y, f) / ((1 + n/N) Var(f))`, estimated from the data and clipped to [0, 1]: λ = 0 is people alone (a
useless judge costs nothing), λ = 1 is classic PPI. The interval is the normal one, with the t quantile on n − 1
degrees of freedom so that a few labels do not claim too much.

Everything is computed from sums (`PPIMoments`), so windows merge by addition and the live exporter keeps nine
numbers per series and window. Pure: no I/O, no clocks, no randomness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import betaincinv
from scipy.stats import t as student_t

__all__ = ["PPIEstimate", "PPIMoments", "power_interval", "ppi_mean"]


@dataclass(frozen=True, slots=True)
class PPIMoments:
    """Sums of labels y and predictions f: on the labelled conversations, and f alone on the unlabelled ones."""

    n: int = 0  # labelled conversations (y and f)
    sum_y: float = 0.0
    sum_f: float = 0.0
    sum_yy: float = 0.0
    sum_ff: float = 0.0
    sum_yf: float = 0.0
    big_n: int = 0  # unlabelled conversations (f only)
    sum_u: float = 0.0
    sum_uu: float = 0.0

    @classmethod
    def of(cls, y: ArrayLike, f: ArrayLike, f_unlabelled: ArrayLike) -> PPIMoments:
        """The sums of paired labels and predictions `y`, `f` and of the predictions `f_unlabelled`."""
        ya = np.asarray(y, dtype=np.float64).ravel()
        fa = np.asarray(f, dtype=np.float64).ravel()
        ua = np.asarray(f_unlabelled, dtype=np.float64).ravel()
        if ya.shape != fa.shape:
            raise ValueError(f"need one prediction per label, got {ya.size} labels and {fa.size} predictions")
        return cls(
            n=int(ya.size), sum_y=float(ya.sum()), sum_f=float(fa.sum()), sum_yy=float(ya @ ya),
            sum_ff=float(fa @ fa), sum_yf=float(ya @ fa), big_n=int(ua.size), sum_u=float(ua.sum()),
            sum_uu=float(ua @ ua),
        )

    def __add__(self, other: PPIMoments) -> PPIMoments:
        """The sums of both (disjoint) sets of conversations."""
        return PPIMoments(
            self.n + other.n, self.sum_y + other.sum_y, self.sum_f + other.sum_f, self.sum_yy + other.sum_yy,
            self.sum_ff + other.sum_ff, self.sum_yf + other.sum_yf, self.big_n + other.big_n,
            self.sum_u + other.sum_u, self.sum_uu + other.sum_uu,
        )

    def add(self, y: float | None, f: float) -> PPIMoments:
        """These sums with one more conversation: labelled when `y` is not None."""
        if y is None:
            return PPIMoments(self.n, self.sum_y, self.sum_f, self.sum_yy, self.sum_ff, self.sum_yf,
                              self.big_n + 1, self.sum_u + f, self.sum_uu + f * f)
        return PPIMoments(self.n + 1, self.sum_y + y, self.sum_f + f, self.sum_yy + y * y, self.sum_ff + f * f,
                          self.sum_yf + y * f, self.big_n, self.sum_u, self.sum_uu)


@dataclass(frozen=True, slots=True)
class PPIEstimate:
    """A prediction-powered mean with its interval, the tuning λ, and the judge-only mean beside it."""

    value: float
    lower: float
    upper: float
    se: float
    lam: float  # the PPI++ tuning parameter used, in [0, 1]
    labels: int  # n: conversations with a person's label (and a judge's verdict)
    predictions: int  # n + N: conversations with a judge's verdict
    judge_only: float  # mean of every prediction: what the judge alone would report


def _var(total: float, squares: float, count: int) -> float:
    """Sample variance (n − 1) from a sum and a sum of squares; 0 for fewer than two values."""
    if count < 2:
        return 0.0
    return max(0.0, (squares - total * total / count) / (count - 1))


def ppi_mean(
    m: PPIMoments,
    level: float = 0.95,
    *,
    lam: float | None = None,
    binary: bool = False,
    bounds: tuple[float, float] | None = (0.0, 1.0),
) -> PPIEstimate | None:
    """The PPI++ estimate of the mean of y and its `level` interval; None with fewer than two labels.

    `lam` fixes the tuning parameter (None: the variance-minimising λ, clipped to [0, 1]). With `binary` (labels
    and predictions are 0 or 1) the interval is the stratified posterior's (`binary_interval`), which holds its
    level with few labels where the normal interval does not. `bounds` clips the interval to the range of y (a
    rate: [0, 1]) and the value with it (unbiased inside the range; at its edges a corrected rate can step out of
    it).
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    n, big_n = m.n, m.big_n
    if n < 2:
        return None
    mean_y, mean_f = m.sum_y / n, m.sum_f / n
    mean_u = m.sum_u / big_n if big_n else mean_f
    if lam is None:
        lam = _optimal_lambda(m)
    value = mean_y + lam * (mean_u - mean_f)
    # Var(y − λf) on the labelled set, Var(f) on the unlabelled one.
    rect_var = _var(m.sum_y - lam * m.sum_f,
                    m.sum_yy - 2 * lam * m.sum_yf + lam * lam * m.sum_ff, n)
    variance = rect_var / n
    if big_n:
        variance += lam * lam * _var(m.sum_u, m.sum_uu, big_n) / big_n
    se = math.sqrt(variance)
    if binary:
        lower, upper = binary_interval(m, level)
    else:
        q = float(student_t.ppf(0.5 + level / 2.0, n - 1))
        lower, upper = value - q * se, value + q * se
    if bounds is not None:  # a rate outside [0, 1] is an artefact of the correction at the edges
        value = min(bounds[1], max(bounds[0], value))
        lower, upper = max(bounds[0], lower), min(bounds[1], upper)
    # The stratified posterior shrinks towards ½: with every label a success its upper bound is below 1, while
    # the estimate is 1. The interval is widened to hold the estimate (only ever more conservative).
    lower, upper = min(lower, value), max(upper, value)
    predictions = n + big_n
    judge_only = (m.sum_f + m.sum_u) / predictions
    return PPIEstimate(value, lower, upper, se, lam, n, predictions, judge_only)


def _optimal_lambda(m: PPIMoments) -> float:
    """λ* = Cov(y, f) / ((1 + n/N) Var(f)), with Var(f) over every prediction; clipped to [0, 1]."""
    n, big_n = m.n, m.big_n
    if big_n == 0:
        return 0.0  # nothing unlabelled to borrow from
    total = n + big_n
    var_f = _var(m.sum_f + m.sum_u, m.sum_ff + m.sum_uu, total)
    if var_f <= 0.0:
        return 0.0  # a constant judge carries no information
    cov = (m.sum_yf - m.sum_y * m.sum_f / n) / (n - 1)
    return min(1.0, max(0.0, cov / ((1.0 + n / big_n) * var_f)))


def binary_interval(
    m: PPIMoments, level: float = 0.95, prior: float = 0.5, grid: int = 128
) -> tuple[float, float]:
    """Equal-tailed interval of θ = π·a + (1 − π)·b for 0/1 labels and predictions: the stratified posterior.

    With a 0/1 prediction, PPI++ at its optimal λ is the post-stratified mean: π = P(f = 1) over every prediction,
    a = P(y = 1 | f = 1) and b = P(y = 1 | f = 0) from the labelled conversations. Each gets its Beta posterior
    under the Jeffreys prior Beta(½, ½); θ's quantiles are read off a deterministic grid of the three posteriors'
    quantiles (`grid` points for a and b, `grid // 16` for π, which many more predictions pin down): no sampling,
    no seed, the same for the same counts.
    """
    n11 = m.sum_yf
    n10, n01 = m.sum_y - n11, m.sum_f - n11
    n00 = m.n - n11 - n10 - n01
    f1 = m.sum_f + m.sum_u
    f0 = m.n + m.big_n - f1
    u = (np.arange(grid) + 0.5) / grid
    v = (np.arange(max(4, grid // 16)) + 0.5) / max(4, grid // 16)
    a = betaincinv(prior + n11, prior + n01, u)
    b = betaincinv(prior + n10, prior + n00, u)
    pi = betaincinv(prior + f1, prior + f0, v)
    theta = pi[:, None, None] * a[None, :, None] + (1.0 - pi)[:, None, None] * b[None, None, :]
    tail = (1.0 - level) / 2.0
    lower, upper = np.quantile(theta, [tail, 1.0 - tail])
    return float(lower), float(upper)


def power_interval(estimate: PPIEstimate, k: int) -> tuple[float, float, float]:
    """(value, lower, upper) of p^k from a corrected rate p: p ↦ p^k is monotone on [0, 1], so each transforms."""
    value, lower, upper = (min(1.0, max(0.0, x)) for x in (estimate.value, estimate.lower, estimate.upper))
    return value**k, lower**k, upper**k
