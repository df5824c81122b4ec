"""Validity: how often agentwatch's verdicts agree with real outcomes, on conversations whose outcome is
known.

Grading is blind: the outcome labels are taken off the conversations before they are scored (a label would
decide the verdict), then the verdicts (`passed`) are compared with the labels (`complete` = success).
Reported: the confusion matrix, agreement, Cohen's κ with a bootstrap interval over tasks (conversations of
one task are correlated, so tasks are resampled, not conversations), the reason codes behind each kind of
disagreement, and how often the hallucination check fires on conversations that really succeeded (its
false-alarm rate, an upper bound: a successful conversation may still state something made up).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentwatch.config import Settings
from agentwatch.stats import agreement as agreement_stats
from agentwatch.stats.beta import beta_interval
from agentwatch.wire.schema import Conversation, ConversationScore, Expectation, Outcome


def blind(conversations: Sequence[Conversation]) -> tuple[list[Conversation], list[bool]]:
    """The conversations without their outcome labels, and the truth each label gave (complete = success)."""
    truth = [c.outcome is Outcome.COMPLETE for c in conversations]
    return [c.model_copy(update={"outcome": None}) for c in conversations], truth


def expectation_from_actions(actions: Sequence[dict[str, Any]], outputs: Sequence[str]) -> Expectation:
    """A conversation-level expectation holding ground-truth actions as they are (every action, plain argument
    values, default matching) and the required outputs: what a user gets without writing any rule."""
    return Expectation.model_validate(
        {
            "tools": [{"name": a["name"], "arguments": a.get("arguments") or {}} for a in actions],
            "outputs": list(outputs),
        }
    )


def grade(conversations: Sequence[Conversation], settings: Settings | None = None) -> list[ConversationScore]:
    """Score every conversation (blind: their labels must already be off)."""
    from agentwatch.scorers import ConversationScorer

    scorer = ConversationScorer(settings or Settings())
    return [scorer.score(c) for c in conversations]


@dataclass(slots=True)
class Agreement:
    """Verdicts against the truth: counts, agreement, κ and what the disagreements were about."""

    true_pass: int = 0  # verdict pass, really succeeded
    false_pass: int = 0  # verdict pass, really failed
    false_fail: int = 0  # verdict fail, really succeeded
    true_fail: int = 0
    unscored: int = 0  # no verdict (left out of the agreement)
    kappa: float = math.nan
    kappa_interval: tuple[float, float] = (math.nan, math.nan)
    false_fail_reasons: Counter[str] = field(default_factory=Counter)  # reason codes, once per conversation
    true_fail_reasons: Counter[str] = field(default_factory=Counter)
    false_pass_tasks: Counter[str] = field(default_factory=Counter)
    disagreements: list[tuple[str, str, list[str]]] = field(default_factory=list)  # (id, kind, reasons)
    hallucination_on_success: int = 0
    hallucination_on_failure: int = 0

    @property
    def n(self) -> int:
        """Conversations with a verdict."""
        return self.true_pass + self.false_pass + self.false_fail + self.true_fail

    @property
    def agreement(self) -> float:
        """Share of verdicts equal to the truth."""
        return (self.true_pass + self.true_fail) / self.n if self.n else math.nan

    @property
    def successes(self) -> int:
        """Conversations that really succeeded (with a verdict)."""
        return self.true_pass + self.false_fail

    def false_alarm_interval(self, level: float = 0.95) -> tuple[float, float]:
        """Equal-tailed interval of the hallucination false-alarm rate: Beta(1 + flagged, 1 + the others)."""
        flagged = self.hallucination_on_success
        return beta_interval(1 + flagged, 1 + self.successes - flagged, level)


def kappa(true_pass: int, false_pass: int, false_fail: int, true_fail: int) -> float:
    """Cohen's κ of a 2×2 table of verdicts against the truth; NaN when chance agreement is 1 or nothing is rated."""
    return agreement_stats.kappa(np.array([[true_pass, false_fail], [false_pass, true_fail]]))


def agreement(
    scores: Sequence[ConversationScore],
    truth: Sequence[bool],
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Agreement:
    """Compare verdicts with the truth (see the module docstring)."""
    out = Agreement()
    real_fail: list[int] = []  # class 0: passed / really succeeded, 1: failed
    verdict_fail: list[int] = []
    groups: list[str] = []
    for score, real in zip(scores, truth, strict=True):
        if score.passed is None:
            out.unscored += 1
            continue
        codes = sorted({r.split(":", 1)[0] for r in score.reasons})
        hallucinated = "hallucination" in score.evidence
        if real:
            out.hallucination_on_success += hallucinated
        else:
            out.hallucination_on_failure += hallucinated
        if score.passed and real:
            out.true_pass += 1
        elif score.passed:
            out.false_pass += 1
            out.false_pass_tasks[score.task] += 1
            out.disagreements.append((score.conversation_id, "passed, really failed", codes))
        elif real:
            out.false_fail += 1
            out.false_fail_reasons.update(codes)
            out.disagreements.append((score.conversation_id, "failed, really succeeded", codes))
        else:
            out.true_fail += 1
            out.true_fail_reasons.update(codes)
        real_fail.append(0 if real else 1)
        verdict_fail.append(0 if score.passed else 1)
        groups.append(score.task)
    out.kappa = kappa(out.true_pass, out.false_pass, out.false_fail, out.true_fail)
    if groups:  # tasks resampled whole: a task's conversations are not independent
        out.kappa_interval = agreement_stats.kappa_interval(
            real_fail, verdict_fail, 2, groups, level=level, resamples=resamples, seed=seed
        )
    return out
