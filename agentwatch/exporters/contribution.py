"""What one conversation score contributes to the exporter's sliding windows: `Contributions.of` turns a
`ConversationScore` into a `buckets.Contribution`, sharing the few distinct probabilities and correction points
among the remembered conversations (few: the sample rates they come from are bounded, `LabelCaps.rates`)."""

from __future__ import annotations

import math
from typing import TypeVar

from agentwatch.config import OutcomeCredits
from agentwatch.exporters.buckets import (
    ASR_RESOLUTION,
    CLASSES,
    EVIDENCE,
    OUTCOMES,
    TOOL_DIMENSIONS,
    Contribution,
    Unit,
    sketch_bin,
)
from agentwatch.exporters.labels import LabelCaps
from agentwatch.stats.corrected import correction_point
from agentwatch.stats.inclusion import automated_of, graded_probability, review_label
from agentwatch.wire.schema import ConversationScore

_T = TypeVar("_T")

# The largest cost (USD) or duration (s) of one conversation the windows and histograms take: far past any real
# one, and small enough that a sketch bin's value and a histogram's sum over any number of them stay finite.
MAX_MEASURE = 1e12
MEASURED_FIELDS: tuple[str, ...] = ("cost_usd", "duration_s")
_EVIDENCE_INDEX = {code: i for i, code in enumerate(EVIDENCE)}
_OUTCOME_INDEX = {name: i for i, name in enumerate(OUTCOMES)}


def measure(value: float | None) -> float | None:
    """A cost or duration as the windows and histograms take it: None unless from 0 to MAX_MEASURE."""
    if value is None or not 0.0 <= value <= MAX_MEASURE:  # NaN fails both comparisons
        return None
    return value


def ignored_measures(score: ConversationScore) -> tuple[str, ...]:
    """The fields of `score` among MEASURED_FIELDS that carry a value `measure` does not take."""
    return tuple(
        name
        for name, value in (("cost_usd", score.cost_usd), ("duration_s", score.duration_s))
        if value is not None and measure(value) is None
    )


class Contributions:
    """Turns scores into window contributions, folding judges and failure modes through the estimator's caps
    (called under the estimator's lock: the shared values are not guarded here)."""

    __slots__ = ("_caps", "_credits", "_shared")

    def __init__(self, caps: LabelCaps, credits: OutcomeCredits) -> None:
        self._caps = caps
        self._credits = credits
        self._shared: dict[object, object] = {}  # the few distinct correction points and probabilities

    def of(self, score: ConversationScore, t: float, unit: Unit | None) -> Contribution:
        """What `score` (event time `t`, in `unit`) adds to a window."""
        if (score.judge_rate is not None or score.review_rate is not None) and not self._caps.rates(
            score.judge_rate, score.review_rate, t
        ):  # past exporter.max_sample_rates: weighed as a score that records no rate
            score = score.model_copy(update={"judge_rate": None, "review_rate": None})
        sums = [0.0] * len(TOOL_DIMENSIONS)
        counts = [0] * len(TOOL_DIMENSIONS)
        for ts in score.turn_scores:
            tool = ts.tool
            if tool is None:
                continue
            values = (
                tool.selection,
                tool.parameters,
                tool.sequence,
                tool.utilization,
                tool.overall,
                tool.binary,
            )
            for i, v in enumerate(values):
                if v is not None and math.isfinite(float(v)):
                    sums[i] += float(v)
                    counts[i] += 1
        cost, duration = measure(score.cost_usd), measure(score.duration_s)
        # a credit counts only beside a verdict: a producer's record with none (passed null) that claims one
        # would otherwise move ASR with a conversation nothing graded
        credit = score.asr_credit if score.passed is not None else None
        if credit is not None and not math.isfinite(credit):
            credit = None
        if credit is not None:
            credit = min(1.0, max(0.0, credit))
        budget = score.budget_usd
        budgeted = cost is not None and budget is not None
        automated = automated_of(score)
        judge = agreement = None
        if automated is not None and "judge" in automated.graded_by and score.judge:
            judge = self._caps.judge(score.judge, t)
            label, verdict = review_label(score), score.judge_outcome
            if label is not None and verdict is not None and verdict.value != "unscored":
                agreement = _OUTCOME_INDEX[label.value] * CLASSES + _OUTCOME_INDEX[verdict.value]
        return Contribution(
            scored=score.passed is not None,
            passed=bool(score.passed),
            outcome=_OUTCOME_INDEX[score.outcome.value],
            modes=self._caps.modes(score.reasons, t) if score.reasons else (),
            tool_sums=tuple(sums) if any(counts) else (),
            tool_counts=tuple(counts) if any(counts) else (),
            cost_bin=sketch_bin(max(0.0, cost)) if cost is not None else None,
            duration_bin=sketch_bin(max(0.0, duration)) if duration is not None else None,
            budgeted=budgeted,
            over_budget=cost is not None and budget is not None and cost > budget,
            asr_bin=round(credit * ASR_RESOLUTION) if credit is not None else None,
            asr_credit=credit,
            evidence=(
                tuple(sorted({_EVIDENCE_INDEX[e] for e in score.evidence if e in _EVIDENCE_INDEX}))
                if score.evidence
                else ()
            ),
            judge_sampled=score.judge_sampled,
            review_sampled=score.review_sampled,
            label=_OUTCOME_INDEX[score.label.value] if score.label is not None else None,
            unit=unit,
            graded_p=self._one(graded_probability(score, automated)) if score.passed is not None else 1.0,
            correction=(
                self._one(correction_point(score, self._credits, automated))
                if automated is not None
                else None
            ),
            judge=judge,
            agreement=agreement,
        )

    def _one(self, value: _T) -> _T:
        """One shared object per distinct value: identities keep few distinct points and probabilities, and
        sharing them saves about 150 bytes per remembered conversation."""
        found = self._shared.get(value)
        if found is None:
            if len(self._shared) >= 100_000:
                return value
            self._shared[value] = found = value
        return found  # type: ignore[return-value]
