"""The automated verdicts beside the labels that decided the same conversations.

Where a label decides a conversation (a benchmark run's rewards imported as outcomes, a person's label in the
graded sample), the report's figures are the labels'; the verdict the policies, expectations or judge gave is kept
beside it (`ConversationScore.automated`) and never changed by it. This compares the two over every conversation
that has both: the share they agree on, Cohen's κ with a bootstrap interval that resamples tasks whole (a task's
conversations are not independent), and the conversations they disagree on. Disagreement is where the labels or
the graders are wrong — a benchmark whose reward checked less than its task asked (docs/scoring.md, validity),
or a rule that fails real successes — and it is read here, not averaged away into the figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agentwatch.stats import agreement
from agentwatch.wire.score_view import ScoreView

_RESAMPLES = 1000


class LabelAgreement(BaseModel):
    """The automated verdicts against the labels that decided the same conversations."""

    model_config = ConfigDict(extra="forbid")

    conversations: int = Field(
        description="Conversations a label decided that also carry an automated verdict (the comparison's n)."
    )
    agree: int = Field(description="Those where the label and the automated verdict agree, pass or fail.")
    graders_failed: int = Field(description="The label passed, the automated graders failed.")
    graders_passed: int = Field(description="The label failed, the automated graders passed.")
    kappa: float | None = Field(
        description="Cohen's κ of the two; null where it is undefined (one of them gives a single answer)."
    )
    kappa_lower: float | None = Field(description="Bootstrap bound at stats.level, tasks resampled whole.")
    kappa_upper: float | None = Field(description="Bootstrap bound at stats.level, tasks resampled whole.")
    graders_failed_examples: list[str] = Field(
        default_factory=list,
        description="Ids of the first conversations the label passed and the graders failed.",
    )
    graders_passed_examples: list[str] = Field(
        default_factory=list,
        description="Ids of the first conversations the label failed and the graders passed.",
    )


def _finite(x: float) -> float | None:
    return None if math.isnan(x) else x


def label_agreement(scores: Sequence[ScoreView], level: float, examples: int) -> LabelAgreement | None:
    """The automated verdicts of `scores` against the labels that decided them; None where no conversation has
    both. `examples`: ids listed per kind of disagreement."""
    pairs = [
        (s, s.automated.passed)
        for s in scores
        if s.passed is not None and "label" in s.graded_by and s.automated is not None
    ]
    if not pairs:
        return None
    labelled = [0 if s.passed else 1 for s, _ in pairs]  # class 0: pass
    rated = [0 if auto else 1 for _, auto in pairs]
    failed = [s.conversation_id for s, auto in pairs if s.passed and not auto]
    passed = [s.conversation_id for s, auto in pairs if not s.passed and auto]
    m = agreement.confusion(labelled, rated, 2)
    lower, upper = agreement.kappa_interval(
        labelled, rated, 2, [s.task for s, _ in pairs], level=level, resamples=_RESAMPLES
    )
    return LabelAgreement(
        conversations=len(pairs),
        agree=int(np.trace(m)),
        graders_failed=len(failed),
        graders_passed=len(passed),
        kappa=_finite(agreement.kappa(m)),
        kappa_lower=_finite(lower),
        kappa_upper=_finite(upper),
        graders_failed_examples=failed[:examples],
        graders_passed_examples=passed[:examples],
    )
