"""A judge's verdict weighed with the rules: the class it grants, and the class of a judged conversation."""

from __future__ import annotations

from typing import Any

from agentwatch.judge.verdict import JudgeVerdict
from agentwatch.scorers.outcome import OutcomeFacts
from agentwatch.scorers.turn import fmt
from agentwatch.wire.schema import Outcome


def apply_verdict(
    verdict: JudgeVerdict, sc: Any, answer_min: float, answers: list[float], reasons: list[str]
) -> Outcome | None:
    """Record a judge verdict: the outcome class it grants, or None when the judge failed (its reason code, e.g.
    `judge_timeout`, leads the reasons). COMPLETE needs a score at the answer threshold; a lower score turns it
    into partial_correct or partial_incorrect (by `partial_answer_min`)."""
    threshold = sc.answer_threshold
    if not verdict.ok:
        reasons.insert(0, verdict.reason)
        return None
    if verdict.score is None or verdict.outcome is None:  # validate_verdict: a verdict that grades has both
        raise ValueError(f"judge verdict without a score or class: {verdict!r}")
    score = float(verdict.score)
    answers.append(score)
    outcome = verdict.outcome
    why = f": {verdict.explanation}" if verdict.explanation else ""
    if outcome is Outcome.COMPLETE and score < answer_min:
        partial_ok = score >= sc.partial_answer_min - 1e-9
        outcome = Outcome.PARTIAL_CORRECT if partial_ok else Outcome.PARTIAL_INCORRECT
        reasons.append(f"judge: score {fmt(score)} below threshold {fmt(threshold)}{why}")
    elif outcome is not Outcome.COMPLETE:
        reasons.append(f"judge: outcome {outcome.value}, score {fmt(score)}{why}")
    return outcome


def judged_outcome(
    rules: Outcome, judged: Outcome | None, facts: OutcomeFacts, rules_failed: bool
) -> Outcome:
    """Outcome of a judged conversation. Failure evidence found by the rules (abandoned: error, loop, no answer;
    hallucinated) wins over the judge. Otherwise the judge's class, except that when another grader failed the
    conversation (tools, policy, reference answer) a judge's `complete` becomes the rules' partial class and a
    judge's partial class is the worse of the two."""
    if facts.abandoned or facts.hallucinated or judged is None:
        return rules
    if not rules_failed or judged in (Outcome.ABANDONED, Outcome.HALLUCINATED):
        return judged
    if judged is Outcome.COMPLETE:
        return rules
    return Outcome.PARTIAL_INCORRECT if Outcome.PARTIAL_INCORRECT in (rules, judged) else judged
