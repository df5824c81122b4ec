"""How likely each conversation was to be graded, judged and labelled: the weights of the estimates.

A conversation enters the samples by `sample_point(id) < rate` (`scorers.sampling`), at the rates recorded on
its score (`judge_rate`, `review_rate`). Its inclusion probabilities are therefore known, and an estimate over
conversations sampled at different rates weighs each by 1 / probability (Hájek), which keeps it unbiased for
the whole traffic when the rate changes within a window (`sampling.target_judged_per_hour`) or when
conversations graded by a policy (all of them) are mixed with conversations graded by the judge sample (some
of them).

- P(automated verdict): 1 when a grader that applies to every conversation decided (expectations, a
  judge_score in the transcript, a task policy), else the judge rate.
- P(labelled): the review rate, at most P(automated verdict): the review sample is inside the judge sample.
- P(graded): P(automated verdict) for an automatically graded conversation; the review rate for one graded by
  a review-sample label alone; 1 otherwise (a label in a transcript file).

A rate a score does not carry (written before rates were recorded) counts as 1: such scores weigh equally.
Pure: reads scores, nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentwatch.wire.schema import (
    EVERY_CONVERSATION_GRADERS,
    AutomatedVerdict,
    Outcome,
    OutcomeSource,
)
from agentwatch.wire.score_view import ScoreView

__all__ = [
    "NOT_GIVEN",
    "automated_of",
    "effective_counts",
    "graded_by_probability",
    "graded_probability",
    "labelled_probability",
    "predicted_probability",
    "review_label",
]


def automated_of(score: ScoreView) -> AutomatedVerdict | None:
    """The automated verdict of `score`; for a score written before it was recorded, its own verdict when no
    label set it."""
    if score.automated is not None:
        return score.automated
    if score.passed is None or score.outcome_source is OutcomeSource.LABEL or "label" in score.graded_by:
        return None
    if score.asr_credit is None or not score.graded_by:
        return None
    return AutomatedVerdict(
        graded_by=list(score.graded_by),
        outcome=score.outcome,
        passed=score.passed,
        asr_credit=score.asr_credit,
    )


def predicted_probability(score: ScoreView, automated: AutomatedVerdict) -> float:
    """P(the conversation gets an automated verdict)."""
    if any(g in EVERY_CONVERSATION_GRADERS for g in automated.graded_by):
        return 1.0
    return _rate(score.judge_rate)


def labelled_probability(score: ScoreView, predicted: float) -> float:
    """P(the conversation is in the review sample, given `predicted` = P(automated verdict))."""
    return min(predicted, _rate(score.review_rate))


NOT_GIVEN: Any = object()  # an argument not given
SAMPLE_POINT_STEP = 2.0**-64  # `scorers.sampling.sample_point` is a 64-bit integer / 2^64


def graded_probability(score: ScoreView, automated: AutomatedVerdict | None = NOT_GIVEN) -> float:
    """P(the conversation is in the graded sample), for the Hájek success rate (`automated`: `automated_of(score)`
    when the caller has it already)."""
    if automated is NOT_GIVEN:
        automated = automated_of(score)
    if automated is not None:
        return predicted_probability(score, automated)
    if score.review_sampled and "label" in score.graded_by:
        return _rate(score.review_rate)
    return 1.0


def review_label(score: ScoreView) -> Outcome | None:
    """A person's label on the blind review sample (the y of a correction); None elsewhere. Labels on flagged
    conversations are not a random sample and never correct the judge."""
    label = score.label
    if label is None or label is Outcome.UNSCORED or not score.review_sampled:
        return None
    return label


def _rate(rate: float | None) -> float:
    """A recorded rate as a probability (unknown: 1; a zero rate samples nothing, so it cannot occur). Sample
    points are multiples of 2^-64, so any positive rate below that samples the point 0 alone: its probability
    is 2^-64 (a rate such as 1e-300 would weigh a conversation past what a float can sum)."""
    return 1.0 if rate is None or rate <= 0.0 else max(rate, SAMPLE_POINT_STEP)


def effective_counts(by_probability: dict[float, tuple[int, int]]) -> tuple[float, float] | None:
    """Kish's effective (n, c) of graded conversations sampled at different probabilities, {p: (n, c)}:
    n_eff = (Σw)² / Σw², c_eff = n_eff · Σw·passed / Σw with w = 1 / p. None when every one had the same
    probability (the counts themselves are then the estimate)."""
    if len(by_probability) < 2:
        return None
    w = w2 = wc = 0.0
    for p, (n, c) in by_probability.items():
        weight = 1.0 / p
        w += weight * n
        w2 += weight * weight * n
        wc += weight * c
    if w <= 0.0:
        return None
    n_eff = w * w / w2
    return n_eff, n_eff * wc / w


def graded_by_probability(scores: Iterable[ScoreView]) -> dict[float, tuple[int, int]]:
    """{P(graded): (graded, passed)} of the graded conversations among `scores`."""
    out: dict[float, list[int]] = {}
    for s in scores:
        if s.passed is None:
            continue
        nc = out.setdefault(graded_probability(s), [0, 0])
        nc[0] += 1
        nc[1] += bool(s.passed)
    return {p: (n, c) for p, (n, c) in out.items()}
