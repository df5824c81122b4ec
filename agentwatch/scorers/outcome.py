"""Outcome class of a conversation (Agent Success Rate) and its credit.

Precedence: a label wins; then unscored (a judge failed, or nothing to grade); abandoned (a turn error or
timeout, no final answer on the last turn, a tool loop); hallucinated; complete (every turn passed);
partial_correct (mean tool overall >= `partial_tool_min` or no tool grading, and mean answer score >=
`partial_answer_min` or no answer grading, and no forbidden tool called); else partial_incorrect.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentwatch.config import OutcomeCredits
from agentwatch.wire.schema import Outcome

_TOL = 1e-9


@dataclass(slots=True)
class OutcomeFacts:
    """What the graders found, aggregated over the turns of one conversation."""

    passed: bool | None = None
    judge_failed: bool = False
    abandoned: bool = False
    hallucinated: bool = False
    forbidden: bool = False
    tool_overall: float | None = None  # mean over turns with tool grading
    answer_score: float | None = None  # mean over turns with answer grading


def decide_outcome(
    facts: OutcomeFacts, label: Outcome | None, partial_tool_min: float, partial_answer_min: float
) -> Outcome:
    """The outcome class, by the precedence above."""
    if label is not None:
        return label
    if facts.judge_failed or facts.passed is None:
        return Outcome.UNSCORED
    if facts.abandoned:
        return Outcome.ABANDONED
    if facts.hallucinated:
        return Outcome.HALLUCINATED
    if facts.passed:
        return Outcome.COMPLETE
    if facts.forbidden or (facts.tool_overall is None and facts.answer_score is None):
        return Outcome.PARTIAL_INCORRECT
    tool_ok = facts.tool_overall is None or facts.tool_overall >= partial_tool_min - _TOL
    answer_ok = facts.answer_score is None or facts.answer_score >= partial_answer_min - _TOL
    return Outcome.PARTIAL_CORRECT if tool_ok and answer_ok else Outcome.PARTIAL_INCORRECT


def outcome_credit(outcome: Outcome, credits: OutcomeCredits) -> float | None:
    """ASR credit of an outcome class; None for unscored."""
    if outcome is Outcome.UNSCORED:
        return None
    return float(getattr(credits, outcome.value))  # the credit field is named for the outcome's value


def asr_credit(outcome: Outcome, penalty: float, credits: OutcomeCredits) -> float | None:
    """max(0, credit(outcome) − penalty); None for unscored."""
    credit = outcome_credit(outcome, credits)
    return None if credit is None else max(0.0, credit - penalty)
