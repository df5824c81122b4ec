"""The records a conversation's score passes between its phases (graders chosen, findings, cost, the judge's
weight, the decision), the decision of its verdict, outcome class and their source (rules, the judge or a
label), and the score record built from them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from agentwatch.config import OutcomeCredits, ScoringConfig
from agentwatch.config.policies import TaskPolicy
from agentwatch.judge.verdict import JudgeVerdict
from agentwatch.scorers.cost import CostResult
from agentwatch.scorers.grounding import Evidence
from agentwatch.scorers.judged import judged_outcome
from agentwatch.scorers.outcome import OutcomeFacts, asr_credit, decide_outcome
from agentwatch.scorers.relabel import label_grades
from agentwatch.scorers.sampling import SampleDecision
from agentwatch.wire.schema import (
    EVIDENCE,
    ArgumentDifference,
    Conversation,
    ConversationScore,
    Expectation,
    Outcome,
    OutcomeSource,
)

# When an outcome label on a conversation grades it:
# - "review_sample" (live traffic): on the review sample, or where another grader already applies; elsewhere
#   feedback is not a blind sample and the label only feeds label metrics;
# - "truth" (transcript files, `agentwatch score`): a label a person put in a file is the conversation's
#   truth;
# - "ignore" (`agentwatch score --no-labels`): labels are recorded on the score and never grade, so that the
#   verdicts of expectations, policies and the judge can be compared with them.
LabelRule = Literal["review_sample", "truth", "ignore"]


@dataclass(slots=True)
class Graders:
    """The graders that decide a conversation's success, chosen before its outcome is looked at."""

    graded_by: list[str]
    expected: Expectation | None  # the conversation's own expectation, when it says something
    policy: TaskPolicy | None  # the task policy that matched
    verdict: JudgeVerdict | None  # the judge's verdict, when the conversation is in the judge sample
    failing: frozenset[str]  # the detectors whose finding fails the conversation


@dataclass(slots=True)
class Findings:
    """What the graders found so far: evidence, reasons, scores, and whether any grader failed."""

    evidence: Evidence = field(default_factory=Evidence)
    facts: OutcomeFacts = field(default_factory=OutcomeFacts)
    codes: set[str] = field(default_factory=set)  # failure evidence codes
    turn_scores: list[dict[str, Any]] = field(default_factory=list)  # TurnScore fields
    reasons: list[str] = field(default_factory=list)
    differences: list[ArgumentDifference] = field(default_factory=list)  # where expected calls were missed
    answers: list[float] = field(default_factory=list)
    tools: list[float] = field(default_factory=list)
    duration_ms: float | None = None
    failed: bool = False


@dataclass(slots=True)
class Cost:
    """The cost of a conversation, its budget ceiling and the ASR cost penalty."""

    result: CostResult
    ceiling: float | None
    penalty: float

    @property
    def cost_usd(self) -> float | None:
        """The known total cost (None if nothing is known)."""
        return self.result.cost_usd


@dataclass(slots=True)
class Judged:
    """The class a judge's verdict grants (None: no verdict, or a failed one) and whether the rules had failed
    the conversation before the judge was weighed."""

    rules_failed: bool
    outcome: Outcome | None = None


@dataclass(slots=True)
class Decision:
    """The verdict and outcome class of a conversation, their source, and the automated verdict a label
    replaced."""

    passed: bool | None
    outcome: Outcome
    source: OutcomeSource
    label: Outcome | None
    before_label: dict[str, Any] | None


def decide(
    conv: Conversation,
    graders: Graders,
    sample: SampleDecision,
    found: Findings,
    judged: Judged,
    penalty: float,
    labels: LabelRule,
    sc: ScoringConfig,
) -> Decision:
    """Verdict, outcome class and its source: rules, the judge, or a label that grades."""
    verdict, graded_by, facts, reasons = graders.verdict, graders.graded_by, found.facts, found.reasons
    judge_failed = verdict is not None and not verdict.ok
    used_judge = verdict is not None and verdict.ok
    label = conv.outcome
    label_decides = label is not None and (
        labels == "truth" or (labels == "review_sample" and label_grades(sample.review, graded_by))
    )
    if label_decides:
        graded_by.append("label")
    # a verdict only for the graded sample; failure evidence fails it but never puts a conversation in it
    graded = bool(graded_by)
    passed: bool | None = None if judge_failed or not graded else not found.failed
    facts.passed = passed
    facts.judge_failed = judge_failed
    facts.answer_score = sum(found.answers) / len(found.answers) if found.answers else None
    facts.tool_overall = sum(found.tools) / len(found.tools) if found.tools else None
    outcome = decide_outcome(facts, None, sc.partial_tool_min, sc.partial_answer_min)
    if used_judge and outcome is not Outcome.UNSCORED:
        outcome = judged_outcome(outcome, judged.outcome, facts, judged.rules_failed)
    automated = [g for g in graded_by if g != "label"]
    before_label = None
    if automated and passed is not None:  # the prediction a label corrects: kept apart from the label
        before_label = {
            "graded_by": automated,
            "outcome": outcome,
            "passed": passed,
            "asr_credit": asr_credit(outcome, penalty, sc.credits),
        }
    if label is not None and label_decides:
        source = OutcomeSource.LABEL
        outcome = label
        passed = None if label is Outcome.UNSCORED else label is Outcome.COMPLETE
        reasons.insert(0, f"label: outcome {label.value} set by a label")
    elif used_judge or judge_failed:
        source = OutcomeSource.JUDGE
    else:
        source = OutcomeSource.RULES
    if label is not None and not label_decides:
        why = "labels do not grade in this run" if labels == "ignore" else "outside the graded sample"
        reasons.insert(0, f"label: outcome {label.value} set by a label {why} (not graded)")
    if not graded:
        for ts in found.turn_scores:
            ts["passed"] = None  # evidence is in the reasons; a verdict is for graded conversations only
        if not conv.turns:
            reasons.append("no_grader: the conversation has no turns")
        else:
            reasons.append(
                "no_grader: no expectation, task policy, judge sample or review-sample label applies"
            )
    if conv.incomplete:
        reasons.append("incomplete: the collector finished this conversation early (a cap was hit)")
    return Decision(passed, outcome, source, label, before_label)


def score_record(
    conv: Conversation,
    ended: datetime | None,
    sample: SampleDecision,
    graders: Graders,
    found: Findings,
    cost: Cost,
    decision: Decision,
    credits: OutcomeCredits,
) -> ConversationScore:
    """The score record of `conv`, which ended at `ended` (`ended_at(conv)`); its turn and tool scores are plain
    dicts, validated with the whole result."""
    verdict = graders.verdict
    judged = verdict if verdict is not None and verdict.ok else None
    passed, outcome = decision.passed, decision.outcome
    duration_ms = found.duration_ms
    return ConversationScore.model_validate(
        {
            "schema_version": conv.schema_version,
            "conversation_id": conv.conversation_id,
            "agent": conv.agent,
            "version": conv.version,
            "task": conv.task,
            "instance": conv.instance,
            "attempt": conv.attempt,
            "tags": dict(conv.tags),
            "turns": len(conv.turns),
            "passed": passed,
            "outcome": outcome,
            "outcome_source": decision.source,
            "reasons": found.reasons,
            "turn_scores": found.turn_scores,
            "differences": found.differences,
            "cost_usd": cost.result.cost_usd,
            "budget_usd": cost.ceiling,
            "cost_penalty": cost.penalty,
            "asr_credit": asr_credit(outcome, cost.penalty, credits),
            # finite turns may sum past a float's range (1e308 ms twice): no duration is better than an infinite one
            "duration_s": duration_ms / 1000
            if duration_ms is not None and math.isfinite(duration_ms)
            else None,
            "input_tokens": cost.result.input_tokens,
            "output_tokens": cost.result.output_tokens,
            "cache_read_input_tokens": cost.result.cache_read_input_tokens,
            "ended_at": ended,
            "incomplete": conv.incomplete,
            "graded_by": graders.graded_by if passed is not None else [],
            "evidence": [e for e in EVIDENCE if e in found.codes],
            "policy": graders.policy.ref if graders.policy is not None else None,
            "judge": verdict.judge_id or None if verdict is not None else None,
            "judge_score": judged.score if judged is not None else None,
            "judge_explanation": (judged.explanation or None) if judged is not None else None,
            "judge_outcome": judged.outcome if judged is not None else None,
            "judge_sampled": sample.judge,
            "review_sampled": sample.review,
            "label": decision.label,
            "automated": decision.before_label,
            "judge_rate": sample.judge_rate,
            "review_rate": sample.review_rate,
        }
    )


def ended_at(conv: Conversation) -> datetime | None:
    """When the conversation ended: its own end time, else the end of its last turn with a start time (the start
    when that turn has no duration, or one that would end it past the year 9999)."""
    end = conv.ended_at
    if end is not None:
        return end
    for turn in reversed(conv.turns):
        if turn.started_at is not None:
            if turn.duration_ms is None:
                return turn.started_at
            try:
                return turn.started_at + timedelta(milliseconds=turn.duration_ms)
            except OverflowError:  # a clock or a transcript gone wrong; the start is still true
                return turn.started_at
    return None
