"""Prediction-powered inference (PPI++) of a mean: a judge on many conversations, people on a blind few.

A judge's verdict f is cheap and wrong in its own direction; a person's label y is right and scarce. The
automated verdict f exists on a sample A of the conversations (the judge sample, or every conversation a
policy grades), and the label y on a blind random subsample L of A (the review sample: the shared hash puts it
inside the judge sample). PPI++ (Angelopoulos, Duchi and Zrnic, 2023) estimates the population mean of y as

    θ̂ = ȳ_L + λ · (f̄_A − f̄_L)

— the people's mean, corrected by how the judge's mean on everything differs from its mean on the labelled
few. Any λ gives an unbiased estimate. As a two-phase sample (L drawn from A), the variance is `Var(z̄_L) + λ²
Var(f̄_A) + 2λ Cov(z, f) / n_A` with z = y − λf, smallest at λ* = Cov(y, f) / Var(f) (the slope of y on f over
the labelled conversations), where the covariance term vanishes; λ is estimated, clipped to [0, 1]: λ = 0 is
people alone (a useless judge costs nothing), λ = 1 is classic PPI.

**Unequal inclusion probabilities.** The sums are kept per `Stratum`: conversations that shared their
probability of having a prediction (`predicted_p`: 1 under a policy, the judge rate under the judge sample)
and of being labelled (`labelled_p`: the review rate). Every mean above is then the Hájek (ratio) mean with
weights 1 / probability, and every variance its linearised form Σ w²(x − x̄)² / (Σw)² (× m/(m − 1)). With one
stratum (all weights equal) the formulas are the ordinary ones. The interval of a mean is the t interval on
(effective labels − 1) degrees of freedom.

**0/1 labels and verdicts** (`binary=True`). With a 0/1 prediction, PPI++ at its optimal λ is the
post-stratified mean θ = π·a + (1 − π)·b: π = P(f = 1) over every prediction, a = P(y = 1 | f = 1) and b = P(y
= 1 | f = 0) from the labelled conversations. Each gets its Beta posterior under the Jeffreys prior Beta(½,
½), on effective counts (Kish: (Σw)² / Σw² conversations, the weighted share of them successes; with equal
weights, the counts); θ's interval is that of the Beta with θ's posterior mean and variance (exact, the three
posteriors being independent). It holds its level with few labels where the normal interval does not:
simulated at 5 to 200 labels it covers 93–99%, where the normal interval falls to 76–88%
(`benchmarks/ppi.py`). It is O(1) per estimate, so the live exporter computes it for every series and window
of a scrape.

Everything is computed from sums (`PPIMoments`), so windows merge by addition. Pure: no I/O, no clocks, no
randomness.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import betaincinv, stdtrit

__all__ = [
    "PPIEstimate",
    "PPIMoments",
    "Stratum",
    "binary_interval",
    "kish",
    "power_interval",
    "ppi_mean",
    "predictions_mean",
    "stratified_beta_interval",
]

JEFFREYS = 0.5


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
            n=int(ya.size),
            sum_y=float(ya.sum()),
            sum_f=float(fa.sum()),
            sum_yy=float(ya @ ya),
            sum_ff=float(fa @ fa),
            sum_yf=float(ya @ fa),
            big_n=int(ua.size),
            sum_u=float(ua.sum()),
            sum_uu=float(ua @ ua),
        )

    def __add__(self, other: PPIMoments) -> PPIMoments:
        """The sums of both (disjoint) sets of conversations."""
        return PPIMoments(
            self.n + other.n,
            self.sum_y + other.sum_y,
            self.sum_f + other.sum_f,
            self.sum_yy + other.sum_yy,
            self.sum_ff + other.sum_ff,
            self.sum_yf + other.sum_yf,
            self.big_n + other.big_n,
            self.sum_u + other.sum_u,
            self.sum_uu + other.sum_uu,
        )

    def add(self, y: float | None, f: float) -> PPIMoments:
        """These sums with one more conversation: labelled when `y` is not None."""
        if y is None:
            return PPIMoments(
                self.n,
                self.sum_y,
                self.sum_f,
                self.sum_yy,
                self.sum_ff,
                self.sum_yf,
                self.big_n + 1,
                self.sum_u + f,
                self.sum_uu + f * f,
            )
        return PPIMoments(
            self.n + 1,
            self.sum_y + y,
            self.sum_f + f,
            self.sum_yy + y * y,
            self.sum_ff + f * f,
            self.sum_yf + y * f,
            self.big_n,
            self.sum_u,
            self.sum_uu,
        )


@dataclass(frozen=True, slots=True)
class Stratum:
    """The sums of the conversations that shared their inclusion probabilities."""

    moments: PPIMoments
    predicted_p: float = 1.0  # P(a conversation of the population has a prediction)
    labelled_p: float = 1.0  # P(it also has a label): at most predicted_p (the review sample is inside)


@dataclass(frozen=True, slots=True)
class PPIEstimate:
    """A prediction-powered mean with its interval, the tuning λ, and the judge-only mean beside it."""

    value: float
    lower: float
    upper: float
    se: float
    lam: float  # the PPI++ tuning parameter used, in [0, 1] (binary: the slope a − b of the post-strata)
    labels: int  # n: conversations with a person's label (and a judge's verdict)
    predictions: int  # n + N: conversations with a judge's verdict
    judge_only: float  # (weighted) mean of every prediction: what the judge alone would report


@dataclass(frozen=True, slots=True)
class _Weighted:
    """Hájek means and linearised variances of one set of strata."""

    labels: int
    predictions: int
    mean_y: float  # over L
    mean_fl: float  # f over L
    mean_fa: float  # f over A (labelled and unlabelled)
    var_fa: float  # variance of mean_fa
    ne_a: float  # Kish effective size of A
    cov_l: float  # weighted covariance of y and f over L
    var_l: float  # weighted variance of f over L
    ne_l: float  # Kish effective size of L


def kish(total: float, squares: float) -> float:
    """Kish's effective sample size (Σw)² / Σw² (0 for no weight)."""
    return total * total / squares if squares > 0.0 else 0.0


def _weighted(strata: Sequence[Stratum]) -> _Weighted:
    labels = predictions = 0
    va = va2 = sfa = 0.0  # Σw over A, Σw², Σw·f
    vl = vl2 = sy = sfl = 0.0  # Σv over L, Σv², Σv·y, Σv·f
    for s in strata:
        m, w, v = s.moments, 1.0 / s.predicted_p, 1.0 / s.labelled_p
        na = m.n + m.big_n
        labels += m.n
        predictions += na
        va += w * na
        va2 += w * w * na
        sfa += w * (m.sum_f + m.sum_u)
        vl += v * m.n
        vl2 += v * v * m.n
        sy += v * m.sum_y
        sfl += v * m.sum_f
    mean_fa = sfa / va if va else 0.0
    mean_y = sy / vl if vl else 0.0
    mean_fl = sfl / vl if vl else 0.0
    ssa = cov = var = 0.0  # Σw²(f − f̄_A)², Σv(y − ȳ)(f − f̄_L), Σv(f − f̄_L)²
    for s in strata:
        m, w, v = s.moments, 1.0 / s.predicted_p, 1.0 / s.labelled_p
        na, fa, ffa = m.n + m.big_n, m.sum_f + m.sum_u, m.sum_ff + m.sum_uu
        ssa += w * w * (ffa - 2.0 * mean_fa * fa + mean_fa * mean_fa * na)
        cov += v * (m.sum_yf - mean_y * m.sum_f - mean_fl * m.sum_y + mean_y * mean_fl * m.n)
        var += v * (m.sum_ff - 2.0 * mean_fl * m.sum_f + mean_fl * mean_fl * m.n)
    var_fa = max(0.0, ssa) / (va * va) * predictions / (predictions - 1) if predictions > 1 else 0.0
    return _Weighted(
        labels,
        predictions,
        mean_y,
        mean_fl,
        mean_fa,
        var_fa,
        kish(va, va2),
        cov / vl if vl else 0.0,
        max(0.0, var / vl) if vl else 0.0,
        kish(vl, vl2),
    )


def predictions_mean(m: PPIMoments | Sequence[Stratum]) -> tuple[float, float, float]:
    """(Hájek mean of every prediction, labelled or not; its linearised variance; Kish's effective number of
    predictions): what the judge alone says."""
    w = _weighted([Stratum(m)] if isinstance(m, PPIMoments) else m)
    return w.mean_fa, w.var_fa, w.ne_a


def _rectified_variance(strata: Sequence[Stratum], w: _Weighted, lam: float) -> float:
    """Variance of z̄_L, z = y − λf: Σv²(z − z̄)² / (Σv)² × n/(n − 1)."""
    zbar = w.mean_y - lam * w.mean_fl
    ss = vl = 0.0
    for s in strata:
        m, v = s.moments, 1.0 / s.labelled_p
        zz = m.sum_yy - 2.0 * lam * m.sum_yf + lam * lam * m.sum_ff
        z = m.sum_y - lam * m.sum_f
        ss += v * v * (zz - 2.0 * zbar * z + zbar * zbar * m.n)
        vl += v * m.n
    n = w.labels
    return max(0.0, ss) / (vl * vl) * n / (n - 1)


def ppi_mean(
    m: PPIMoments | Sequence[Stratum],
    level: float = 0.95,
    *,
    lam: float | None = None,
    binary: bool = False,
    bounds: tuple[float, float] | None = (0.0, 1.0),
) -> PPIEstimate | None:
    """The PPI++ estimate of the mean of y and its `level` interval; None with fewer than two labels.

    `m`: the sums of one stratum (all inclusion probabilities equal), or of several (`Stratum`). `lam` fixes
    the tuning parameter (None: the variance-minimising λ, clipped to [0, 1]). With `binary` (labels and
    predictions are 0 or 1) the value is the post-stratified mean and the interval the stratified posterior's
    (`stratified_beta_interval`). `bounds` clips the interval to the range of y (a rate: [0, 1]) and the value
    with it (unbiased inside the range; at its edges a corrected rate can step out of it).
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    strata = [Stratum(m)] if isinstance(m, PPIMoments) else list(m)
    w = _weighted(strata)
    if w.labels < 2:
        return None
    unlabelled = w.predictions > w.labels
    if lam is None:
        lam = min(1.0, max(0.0, w.cov_l / w.var_l)) if unlabelled and w.var_l > 0.0 else 0.0
    value = w.mean_y + lam * (w.mean_fa - w.mean_fl)
    cov_zf = w.cov_l - lam * w.var_l
    variance = _rectified_variance(strata, w, lam) + lam * lam * w.var_fa
    if w.ne_a > 0.0:
        variance += 2.0 * lam * cov_zf / w.ne_a
    se = math.sqrt(max(0.0, variance))
    if binary:
        value, lower, upper, lam = _post_stratified(strata, w, level)
    else:
        q = float(stdtrit(max(1.0, w.ne_l - 1.0), 0.5 + level / 2.0))  # Student t quantile
        lower, upper = value - q * se, value + q * se
    if bounds is not None:  # a rate outside [0, 1] is an artefact of the correction at the edges
        value = min(bounds[1], max(bounds[0], value))
        lower, upper = max(bounds[0], lower), min(bounds[1], upper)
    # The stratified posterior shrinks towards ½: with every label a success its upper bound is below 1, while
    # the estimate is 1. The interval is widened to hold the estimate (only ever more conservative).
    lower, upper = min(lower, value), max(upper, value)
    return PPIEstimate(value, lower, upper, se, lam, w.labels, w.predictions, w.mean_fa)


def _strata_counts(strata: Sequence[Stratum]) -> tuple[float, float, float, float, float, float]:
    """Effective (Kish) counts of the stratified posterior: labelled (y, f) = (1,1), (1,0), (0,1), (0,0), and
    the predictions f = 1 and f = 0."""
    v1 = v1sq = y1 = v0 = v0sq = y0 = a = a2 = fa = 0.0
    for s in strata:
        m, w, v = s.moments, 1.0 / s.predicted_p, 1.0 / s.labelled_p
        v1 += v * m.sum_f  # labelled with f = 1
        v1sq += v * v * m.sum_f
        y1 += v * m.sum_yf
        v0 += v * (m.n - m.sum_f)
        v0sq += v * v * (m.n - m.sum_f)
        y0 += v * (m.sum_y - m.sum_yf)
        na = m.n + m.big_n
        a += w * na
        a2 += w * w * na
        fa += w * (m.sum_f + m.sum_u)
    ne1, ne0, nea = kish(v1, v1sq), kish(v0, v0sq), kish(a, a2)
    share1 = y1 / v1 if v1 else 0.0
    share0 = y0 / v0 if v0 else 0.0
    pi = fa / a if a else 0.0
    return ne1 * share1, ne1 * (1 - share1), ne0 * share0, ne0 * (1 - share0), nea * pi, nea * (1 - pi)


def _post_stratified(
    strata: Sequence[Stratum], w: _Weighted, level: float
) -> tuple[float, float, float, float]:
    """(value, lower, upper, a − b) of the post-stratified mean π·a + (1 − π)·b."""
    n11, n01, n10, n00, f1, f0 = _strata_counts(strata)
    a = n11 / (n11 + n01) if n11 + n01 > 0 else JEFFREYS  # a stratum without labels: its prior mean
    b = n10 / (n10 + n00) if n10 + n00 > 0 else JEFFREYS
    pi = w.mean_fa
    lower, upper = stratified_beta_interval(n11, n10, n01, n00, f1, f0, level)
    return pi * a + (1 - pi) * b, float(lower), float(upper), a - b


def stratified_beta_interval(
    n11: ArrayLike,
    n10: ArrayLike,
    n01: ArrayLike,
    n00: ArrayLike,
    f1: ArrayLike,
    f0: ArrayLike,
    level: float = 0.95,
    prior: float = JEFFREYS,
) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed interval of θ = π·a + (1 − π)·b under independent Beta posteriors (element-wise).

    n11: labelled with y = 1, f = 1; n10: y = 1, f = 0; n01: y = 0, f = 1; n00: y = 0, f = 0 (counts, or
    effective counts); f1, f0: predictions of each value. a ~ Beta(prior + n11, prior + n01), b ~ Beta(prior +
    n10, prior + n00), π ~ Beta(prior + f1, prior + f0). θ's posterior mean and variance are exact; the
    interval is the equal-tailed one of the Beta distribution with that mean and variance.
    """

    def moments(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mean = x / (x + y)
        return mean, mean * (1 - mean) / (x + y + 1)

    ma, va = moments(prior + np.asarray(n11, float), prior + np.asarray(n01, float))
    mb, vb = moments(prior + np.asarray(n10, float), prior + np.asarray(n00, float))
    mp, vp = moments(prior + np.asarray(f1, float), prior + np.asarray(f0, float))
    mean = mp * ma + (1 - mp) * mb
    p2, q2 = vp + mp * mp, vp + (1 - mp) ** 2  # E[π²], E[(1 − π)²]
    second = p2 * (va + ma * ma) + 2 * (mp - p2) * ma * mb + q2 * (vb + mb * mb)
    var = np.maximum(second - mean * mean, 1e-300)
    k = np.maximum(mean * (1 - mean) / var - 1.0, 1e-9)  # α + β of the matching Beta
    tail = (1.0 - level) / 2.0
    return betaincinv(mean * k, (1 - mean) * k, tail), betaincinv(mean * k, (1 - mean) * k, 1.0 - tail)


def binary_interval(m: PPIMoments, level: float = 0.95) -> tuple[float, float]:
    """The stratified posterior's interval of 0/1 labels and predictions of one stratum (counts)."""
    n11 = m.sum_yf
    n10, n01 = m.sum_y - n11, m.sum_f - n11
    n00 = m.n - n11 - n10 - n01
    f1 = m.sum_f + m.sum_u
    lower, upper = stratified_beta_interval(n11, n10, n01, n00, f1, m.n + m.big_n - f1, level)
    return float(lower), float(upper)


def power_interval(estimate: PPIEstimate, k: int) -> tuple[float, float, float]:
    """(value, lower, upper) of p^k from a corrected rate p: p ↦ p^k is monotone on [0, 1], so each transforms."""
    value, lower, upper = (min(1.0, max(0.0, x)) for x in (estimate.value, estimate.lower, estimate.upper))
    return value**k, lower**k, upper**k
