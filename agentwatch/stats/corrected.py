"""Estimates corrected by people's labels: what each conversation adds, and the figures read from the sums.

A conversation with an automated verdict (`automated`: expectations, a policy or the judge decided) is a
prediction f; one of them in the blind review sample with a person's label is also a label y
(`inclusion.review_label`). Its `CorrectionPoint` holds both, and the stratum of its inclusion probabilities
(P(prediction), P(label)). `CorrectionSums` adds points up per stratum — exact counts of the automated outcome
classes, the confusion of labels with them, and the sums of the ASR credits — so that windows merge and a
revised score (a label arriving) replaces its earlier point. The live exporter keeps them per window; the
offline report builds them from its scores; both read `correct(...)`, so their figures are the same.

What is corrected, each beside its judge-only figure (the automated verdicts alone, Hájek-weighted, with the
stats prior's Beta posterior on Kish's effective counts):
- the share of each outcome class, the success rate among them (passed = complete): binary PPI++ — the
  post-stratified mean, the stratified posterior's interval (`agentwatch.stats.ppi`);
- ASR (mean credit): PPI++ with its tuned λ and a t interval;
- p^k and 1 − (1 − p)^k under exchangeability: the transforms of the corrected success rate's value and bounds
  (monotone). pass^k over units (repeated attempts) is not corrected here: a unit's C(c,k)/C(n,k) needs a
  label on every attempt of the unit, and the review sample draws conversations, not units.

The population is the conversations with an automated verdict. Labels on flagged conversations (not in the
review sample) are not a random sample: they never enter a correction, and the prediction stays the automated
verdict for every conversation, labelled or not — replacing it by a flag's label only where the conversation
is unlabelled would bias the estimate by λ · P(flag) · E[y − f | flag], since flags gather where the judge was
wrong. A correction needs enough labels (`enough_labels`): below that, the figures are computed but the
estimates are not called corrected.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.special import stdtrit

from agentwatch.config import OutcomeCredits
from agentwatch.stats.beta import beta_interval, beta_power_means
from agentwatch.stats.inclusion import (
    NOT_GIVEN,
    automated_of,
    labelled_probability,
    predicted_probability,
    review_label,
)
from agentwatch.stats.pass_k import pass_at_k_plugin
from agentwatch.stats.ppi import PPIEstimate, PPIMoments, Stratum, ppi_mean, predictions_mean
from agentwatch.wire.schema import AutomatedVerdict, Outcome
from agentwatch.wire.score_view import ScoreView

__all__ = [
    "CLASSES",
    "MIN_ASR_LABELS",
    "MIN_LABELS",
    "CorrectedEstimates",
    "CorrectionPoint",
    "CorrectionSums",
    "CorrectedFigure",
    "correct",
    "correction_point",
    "enough_labels",
    "sums_of",
]

CLASSES: tuple[str, ...] = tuple(o.value for o in Outcome if o is not Outcome.UNSCORED)
_INDEX = {name: i for i, name in enumerate(CLASSES)}
_K = len(CLASSES)
COMPLETE = _INDEX["complete"]
# Layout of one stratum's sums: automated classes of the unlabelled conversations, the confusion of the
# labelled ones (label * 5 + automated class), ASR credits of the unlabelled (Σf, Σf²) and of the labelled
# (Σy, Σf, Σy², Σf², Σyf).
_PRED, _CONF, _U = 0, _K, _K + _K * _K
_L = _U + 2
_WIDTH = _L + 5
# The rule for calling an estimate corrected (coverage in docs/scoring.md, `python -m benchmarks.ppi`). Shares
# and the success rate: at least 30 labels, and labels where the graders passed and where they failed (a
# stratum without labels is its prior); the stratified posterior covers 92-99% from 10 labels on. ASR: at
# least 100 labels; its t interval covered 94-95% from 100 labels, 91-92% at 20 to 50 and 70% at 10.
MIN_LABELS = 30
MIN_STRATUM_LABELS = 1
MIN_ASR_LABELS = 100


@dataclass(frozen=True, slots=True)
class CorrectionPoint:
    """What one conversation adds: its stratum, its automated class and credit, and its label's, if any."""

    stratum: tuple[float, float]  # (P(prediction), P(label))
    predicted: int  # index into CLASSES
    credit: float
    label: int | None = None
    label_credit: float | None = None


def correction_point(
    score: ScoreView, credits: OutcomeCredits, automated: AutomatedVerdict | None = NOT_GIVEN
) -> CorrectionPoint | None:
    """The point of `score`, or None when no automated grader decided it (`automated`: `automated_of(score)`
    when the caller has it already)."""
    if automated is NOT_GIVEN:
        automated = automated_of(score)
    if automated is None or automated.outcome is Outcome.UNSCORED:
        return None
    p = predicted_probability(score, automated)
    stratum = (p, labelled_probability(score, p))
    label = review_label(score)
    if label is None:
        return CorrectionPoint(stratum, _INDEX[automated.outcome.value], automated.asr_credit)
    credit = max(0.0, float(getattr(credits, label.value)) - score.cost_penalty)
    return CorrectionPoint(
        stratum, _INDEX[automated.outcome.value], automated.asr_credit, _INDEX[label.value], credit
    )


@dataclass(slots=True)
class CorrectionSums:
    """Sums per stratum of inclusion probabilities; points added (sign 1) or taken back (sign −1)."""

    strata: dict[tuple[float, float], list[float]] = field(default_factory=dict)

    def add(self, point: CorrectionPoint, sign: int = 1) -> None:
        """Count one conversation's point (sign 1) or take it back (sign −1)."""
        row = self.strata.get(point.stratum)
        if row is None:
            row = self.strata[point.stratum] = [0.0] * _WIDTH
        f = point.credit
        if point.label is None:
            row[_PRED + point.predicted] += sign
            row[_U] += sign * f
            row[_U + 1] += sign * f * f
        else:
            y = point.label_credit or 0.0
            row[_CONF + point.label * _K + point.predicted] += sign
            row[_L] += sign * y
            row[_L + 1] += sign * f
            row[_L + 2] += sign * y * y
            row[_L + 3] += sign * f * f
            row[_L + 4] += sign * y * f
        if sign < 0 and not any(row[:_U]):
            del self.strata[point.stratum]  # no conversation left: drop it, float residue and all

    def merge(self, other: CorrectionSums, sign: int = 1) -> None:
        """Add (sign 1) or remove (sign −1) everything `other` holds."""
        for key, theirs in other.strata.items():
            row = self.strata.get(key)
            if row is None:
                row = self.strata[key] = [0.0] * _WIDTH
            for i, x in enumerate(theirs):
                row[i] += sign * x
            if not any(row[:_U]):
                del self.strata[key]

    def __bool__(self) -> bool:
        return bool(self.strata)

    @property
    def labels(self) -> int:
        """Labelled conversations."""
        return round(sum(sum(row[_CONF:_U]) for row in self.strata.values()))

    @property
    def predictions(self) -> int:
        """Conversations with an automated verdict (labelled ones included)."""
        return round(sum(sum(row[:_U]) for row in self.strata.values()))


def sums_of(scores: Iterable[ScoreView], credits: OutcomeCredits) -> CorrectionSums:
    """The correction sums of a set of scores (one per conversation)."""
    sums = CorrectionSums()
    for s in scores:
        point = correction_point(s, credits)
        if point is not None:
            sums.add(point)
    return sums


@dataclass(frozen=True, slots=True)
class CorrectedFigure:
    """A corrected estimate with its interval, and the judge-only estimate with its interval."""

    value: float
    lower: float
    upper: float
    judge_only: float
    judge_only_lower: float
    judge_only_upper: float


@dataclass(slots=True)
class CorrectedEstimates:
    """The corrected estimates of one set of conversations."""

    labels: int  # labelled conversations of the review sample with an automated verdict
    predictions: int  # conversations with an automated verdict
    enough: bool  # `enough_labels`: the success rate, shares and p^k may be called corrected
    success: CorrectedFigure | None
    lam: float  # PPI++'s λ of the success rate (a − b of the post-stratification)
    outcome_share: dict[str, CorrectedFigure] = field(default_factory=dict)
    asr: CorrectedFigure | None = None
    pass_pow_k: dict[int, CorrectedFigure] = field(default_factory=dict)  # p^k under exchangeability
    pass_at_k: dict[int, CorrectedFigure] = field(default_factory=dict)  # 1 − (1 − p)^k under exchangeability
    labels_judge_passed: int = 0  # labelled conversations the automated graders passed / failed
    labels_judge_failed: int = 0
    asr_enough: bool = False  # at least MIN_ASR_LABELS: ASR may be called corrected


def _class_strata(sums: CorrectionSums, c: int) -> list[Stratum]:
    """Strata of the binary y = 1[label is class c], f = 1[automated class is c]."""
    out = []
    for (pp, pl), row in sums.strata.items():
        conf = row[_CONF:_U]
        n = sum(conf)
        f = sum(conf[lab * _K + c] for lab in range(_K))  # automated class c
        y = sum(conf[c * _K : c * _K + _K])  # labelled class c
        yf = conf[c * _K + c]
        big_n = sum(row[_PRED:_CONF])
        u = row[_PRED + c]
        out.append(Stratum(PPIMoments(round(n), y, f, y, f, yf, round(big_n), u, u), pp, pl))
    return out


def _credit_strata(sums: CorrectionSums) -> list[Stratum]:
    out = []
    for (pp, pl), row in sums.strata.items():
        n, big_n = round(sum(row[_CONF:_U])), round(sum(row[_PRED:_CONF]))
        y, f, yy, ff, yf = row[_L : _L + 5]
        out.append(Stratum(PPIMoments(n, y, f, yy, ff, yf, big_n, row[_U], row[_U + 1]), pp, pl))
    return out


def _judge_beta(strata: Sequence[Stratum], prior: tuple[float, float]) -> tuple[float, float]:
    """The judge-only Beta posterior Beta(α + ne·p̂, β + ne·(1 − p̂)): p̂ the Hájek share of the automated
    verdicts, ne Kish's effective count (with equal weights: Beta(α + c, β + n − c))."""
    share, _var, ne = predictions_mean(strata)
    return prior[0] + ne * share, prior[1] + ne * (1 - share)


def _judge_share(
    strata: Sequence[Stratum], prior: tuple[float, float], level: float
) -> tuple[float, float, float]:
    """(posterior mean, lower, upper) of the judge-only share."""
    a, b = _judge_beta(strata, prior)
    lo, hi = beta_interval(np.array([a]), np.array([b]), level)
    return a / (a + b), float(lo[0]), float(hi[0])


def _judge_mean(strata: Sequence[Stratum], level: float) -> tuple[float, float, float]:
    """Hájek mean of the automated credits with a t interval (linearised variance, Kish's degrees)."""
    mean, var, ne = predictions_mean(strata)
    half = float(stdtrit(max(1.0, ne - 1.0), 0.5 + level / 2.0)) * math.sqrt(var)  # Student t quantile
    return mean, max(0.0, mean - half), min(1.0, mean + half)


def _figure(est: PPIEstimate, judge: tuple[float, float, float]) -> CorrectedFigure:
    return CorrectedFigure(est.value, est.lower, est.upper, *judge)


def enough_labels(labels: int, judge_passed: int, judge_failed: int) -> bool:
    """Whether a correction rests on enough labels to be called corrected (see MIN_LABELS)."""
    return labels >= MIN_LABELS and min(judge_passed, judge_failed) >= MIN_STRATUM_LABELS


def correct(
    sums: CorrectionSums,
    level: float = 0.95,
    prior: tuple[float, float] = (1.0, 1.0),
    ks: Sequence[int] = (),
) -> CorrectedEstimates | None:
    """The corrected estimates of `sums` beside the judge-only ones; None with fewer than two labels."""
    if sums.labels < 2:
        return None
    success_strata = _class_strata(sums, COMPLETE)
    success = ppi_mean(success_strata, level, binary=True)
    if success is None:
        return None
    judge = _judge_share(success_strata, prior, level)
    passed = round(sum(s.moments.sum_f for s in success_strata))
    out = CorrectedEstimates(
        labels=success.labels,
        predictions=success.predictions,
        enough=False,
        success=_figure(success, judge),
        lam=success.lam,
        labels_judge_passed=passed,
        labels_judge_failed=success.labels - passed,
    )
    out.enough = enough_labels(out.labels, out.labels_judge_passed, out.labels_judge_failed)
    out.asr_enough = out.enough and out.labels >= MIN_ASR_LABELS
    for c, name in enumerate(CLASSES):
        strata = success_strata if c == COMPLETE else _class_strata(sums, c)
        est = ppi_mean(strata, level, binary=True)
        if est is not None:
            out.outcome_share[name] = _figure(est, _judge_share(strata, prior, level))
    credit_strata = _credit_strata(sums)
    asr = ppi_mean(credit_strata, level)
    if asr is not None:
        out.asr = _figure(asr, _judge_mean(credit_strata, level))
    if ks:
        _powers(out, success, prior, level, ks, success_strata)
    return out


def _powers(
    out: CorrectedEstimates,
    success: PPIEstimate,
    prior: tuple[float, float],
    level: float,
    ks: Sequence[int],
    strata: Sequence[Stratum],
) -> None:
    """p^k and 1 − (1 − p)^k: transforms of the corrected rate, beside the judge-only Beta posterior's."""
    a, b = _judge_beta(strata, prior)
    lo, hi = (float(x[0]) for x in beta_interval(np.array([a]), np.array([b]), level))
    pow_means, fail_means = beta_power_means(np.array([a]), np.array([b]), max(ks))
    v, vlo, vhi = (min(1.0, max(0.0, x)) for x in (success.value, success.lower, success.upper))
    for k in ks:
        out.pass_pow_k[k] = CorrectedFigure(v**k, vlo**k, vhi**k, float(pow_means[k - 1, 0]), lo**k, hi**k)
        at = [float(pass_at_k_plugin(x, k)) for x in (v, vlo, vhi, lo, hi)]
        out.pass_at_k[k] = CorrectedFigure(
            at[0], at[1], at[2], float(1.0 - fail_means[k - 1, 0]), at[3], at[4]
        )
