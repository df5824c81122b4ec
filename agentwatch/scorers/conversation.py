"""Score a conversation: every grader over every turn, then outcome class, cost penalty and ASR credit."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any, Literal

from agentwatch.config import Settings
from agentwatch.config.policies import TaskPolicy
from agentwatch.config.prices import PriceLookup
from agentwatch.judge.verdict import JudgeVerdict, validate_verdict
from agentwatch.scorers.cost import CostResult, budget_ceiling, conversation_cost, cost_penalty
from agentwatch.scorers.endings import EndMarkers, ending
from agentwatch.scorers.expected_conversation import grade_expected, says_something
from agentwatch.scorers.hallucination import Evidence
from agentwatch.scorers.judged import apply_verdict, judged_outcome
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.outcome import OutcomeFacts, asr_credit, decide_outcome
from agentwatch.scorers.policy import PolicyBook, grade_policy
from agentwatch.scorers.relabel import label_grades
from agentwatch.scorers.sampling import SampleDecision, Sampler
from agentwatch.scorers.tool_kinds import ToolKinds
from agentwatch.scorers.turn import TurnGrader
from agentwatch.wire.schema import (
    EVIDENCE,
    ArgumentDifference,
    Conversation,
    ConversationScore,
    Expectation,
    Outcome,
    OutcomeSource,
)

log = logging.getLogger(__name__)


@cache
def default_settings() -> Settings:
    """Settings from defaults and `AGENTWATCH_*` variables, built once."""
    return Settings()


def unscored(conv: Conversation, reason: str) -> ConversationScore:
    """An unscored result for a conversation that could not be graded (tolerates a conversation built unvalidated)."""
    return ConversationScore.model_construct(
        conversation_id=str(getattr(conv, "conversation_id", "")),
        agent=str(getattr(conv, "agent", "unknown")),
        version=str(getattr(conv, "version", "unknown")),
        task=str(getattr(conv, "task", "default")),
        instance=getattr(conv, "instance", None),
        attempt=getattr(conv, "attempt", None),
        tags=dict(getattr(conv, "tags", {}) or {}),
        turns=len(getattr(conv, "turns", []) or []),
        passed=None,
        outcome=Outcome.UNSCORED,
        outcome_source=OutcomeSource.RULES,
        reasons=[reason],
        ended_at=getattr(conv, "ended_at", None),
        incomplete=bool(getattr(conv, "incomplete", False)),
    )


# When an outcome label on a conversation grades it:
# - "review_sample" (live traffic): on the review sample, or where another grader already applies; elsewhere
#   feedback is not a blind sample and the label only feeds label metrics;
# - "truth" (transcript files, `agentwatch score`): a label a person put in a file is the conversation's
#   truth;
# - "ignore" (`agentwatch score --no-labels`): labels are recorded on the score and never grade, so that the
#   verdicts of expectations, policies and the judge can be compared with them.
LabelRule = Literal["review_sample", "truth", "ignore"]


class ConversationScorer:
    """Scores conversations with configuration computed once (weights, name normaliser, price lookup)."""

    def __init__(self, settings: Settings | None = None, labels: LabelRule = "review_sample") -> None:
        if labels not in ("review_sample", "truth", "ignore"):
            raise ValueError(f"labels must be review_sample, truth or ignore, got {labels!r}")
        self._labels = labels
        settings = settings or default_settings()
        sc = settings.scoring
        self._scoring = sc
        self._cost = settings.cost
        self._names = NameNormalizer(sc.names)
        self._kinds = ToolKinds(self._names, sc.read_only_tools, sc.handoff_tools)
        self._turns = TurnGrader(sc, self._names, self._kinds)
        self._markers = EndMarkers(sc.end_markers)
        self._failing = frozenset(sc.failing_evidence)
        self._prices = PriceLookup(settings.cost.prices.models)
        self._answer_min = sc.answer_threshold - sc.tolerance
        self._sampler = Sampler(settings.sampling)
        self.policies = PolicyBook(settings.policies)

    def reload_policies(self, settings: Settings) -> None:
        """Grade with the policies and sample rates of `settings` from now on (e.g. on SIGHUP); the adaptive
        rates keep what they learnt of the traffic."""
        self._sampler = Sampler(settings.sampling, self._sampler.targets)
        self.policies = PolicyBook(settings.policies)

    @property
    def sampler(self) -> Sampler:
        """The sampler deciding the judge and review samples."""
        return self._sampler

    def _sample(self, conv: Conversation) -> SampleDecision:
        ended = _ended_at(conv)
        t = None if ended is None else _epoch(ended)
        return self._sampler.decide(conv.conversation_id, conv.agent, conv.task, conv.version, t)

    def wants_judge(self, conv: Conversation) -> bool:
        """Whether a judge verdict would grade `conv` (it is in the judge sample and has turns)."""
        return bool(conv.turns) and self._sample(conv).judge

    def score(self, conv: Conversation, verdict: JudgeVerdict | None = None) -> ConversationScore:
        """Score one conversation; never raises (an internal error yields an unscored result with a reason).

        `verdict`: the judge's verdict on `conv` (see `JudgeRunner`), used when `conv` is in the judge sample.
        """
        try:
            return self._score(conv, verdict)
        except Exception as exc:  # a scorer bug must not stop the collector; it is logged and visible
            log.exception("scoring conversation %r failed", getattr(conv, "conversation_id", None))
            return unscored(conv, f"scorer_error: {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------ the phases of one score

    def _score(self, conv: Conversation, verdict: JudgeVerdict | None) -> ConversationScore:
        sample = self._sample(conv)
        graders = self._choose_graders(conv, sample, verdict)
        found = self._grade_turns(conv, graders.failing)
        cost = self._price(conv, found)
        self._grade_whole(conv, graders, cost.cost_usd, found)
        judged = self._weigh_judge(graders, found)
        decision = self._decide(conv, graders, sample, found, judged, cost.penalty)
        return self._result(conv, sample, graders, found, cost, decision)

    def _choose_graders(
        self, conv: Conversation, sample: SampleDecision, verdict: JudgeVerdict | None
    ) -> _Graders:
        """Which graders decide success: chosen before looking at the outcome."""
        graded_by: list[str] = []
        expected = conv.expected if conv.expected is not None and says_something(conv.expected) else None
        turns = conv.turns
        if expected is not None or any(t.expected is not None and says_something(t.expected) for t in turns):
            graded_by.append("expectations")
        if any(t.judge_score is not None for t in turns):
            graded_by.append("judge_score")
        policy = None if "expectations" in graded_by else self.policies.match(conv.agent, conv.task)
        if policy is not None:
            graded_by.append("policy")
        if verdict is not None:
            verdict = validate_verdict(verdict) if sample.judge and turns else None
        failing = self._failing | frozenset(policy.fail_on) if policy is not None else self._failing
        return _Graders(graded_by, expected, policy, verdict, failing)

    def _grade_turns(self, conv: Conversation, failing: frozenset[str]) -> _Findings:
        """Every turn through every grader that applies to it, and the failure evidence on each (the detectors
        in `failing` fail the turn)."""
        found = _Findings()
        found.evidence.add(conv.system)  # the agent's instructions are a source (fees, rules)
        turns = conv.turns
        ended = ending(turns, self._names, self._kinds, self._markers)
        for i, turn in enumerate(turns):
            ts, answer_score, tool_overall = self._turns.grade(
                i, turn, i == ended.unanswered, found.evidence, found.facts, found.codes, failing
            )
            found.turn_scores.append(ts)
            found.reasons.extend(ts["reasons"])
            found.failed = found.failed or ts["passed"] is False
            if answer_score is not None:
                found.answers.append(answer_score)
            if tool_overall is not None:
                found.tools.append(tool_overall)
            turn_ms = turn.duration_ms
            if turn_ms is not None:
                found.duration_ms = turn_ms if found.duration_ms is None else found.duration_ms + turn_ms
        if ended.marker is not None:
            marker, kind, at = ended.marker
            found.reasons.append(f"ending: turn {at}: the user ended the conversation with {marker} ({kind})")
        return found

    def _price(self, conv: Conversation, found: _Findings) -> _Cost:
        """The conversation's cost, its budget ceiling and the ASR penalty above it (over budget is evidence)."""
        cost = conversation_cost(conv.turns, self._prices)
        found.reasons.extend(cost.reasons)
        ceiling = budget_ceiling(conv, self._cost)
        penalty = cost_penalty(cost.cost_usd, ceiling)
        if penalty > 0:
            found.codes.add("over_budget")
            found.reasons.append(
                f"over_budget: cost ${cost.cost_usd:.4g} above ceiling ${ceiling:.4g} (penalty {penalty:.3g})"
            )
        return _Cost(cost, ceiling, penalty)

    def _grade_whole(
        self, conv: Conversation, graders: _Graders, cost_usd: float | None, found: _Findings
    ) -> None:
        """The conversation-level graders: its own expectation, or the task policy that matched."""
        sc = self._scoring
        if graders.expected is not None:
            whole = grade_expected(
                graders.expected, conv, self._names, self._kinds, sc.numeric_tolerance, self._answer_min
            )
            found.reasons.extend([*whole.notes, *whole.failures])
            found.differences.extend(whole.differences)
            found.failed = found.failed or bool(whole.failures)
            if whole.answer_score is not None:
                found.answers.append(whole.answer_score)
            if whole.forbidden:
                found.facts.forbidden = True
                found.codes.add("forbidden_tool")
        if graders.policy is not None:
            checked = grade_policy(
                graders.policy, conv, cost_usd, self._names, self._kinds, sc.numeric_tolerance
            )
            found.reasons.extend([*checked.notes, *checked.failures])
            found.differences.extend(checked.differences)
            found.failed = found.failed or not checked.passed
            if checked.forbidden:
                found.facts.forbidden = True
                found.codes.add("forbidden_tool")

    def _weigh_judge(self, graders: _Graders, found: _Findings) -> _Judged:
        """The judge's verdict added to what the rules found: the class it grants, and whether the rules had
        failed the conversation before it."""
        verdict = graders.verdict
        judged = _Judged(rules_failed=found.failed)
        if verdict is not None:
            graders.graded_by.append("judge")
            judged.outcome = apply_verdict(
                verdict, self._scoring, self._answer_min, found.answers, found.reasons
            )
            found.failed = found.failed or judged.outcome is not Outcome.COMPLETE
        return judged

    def _decide(
        self,
        conv: Conversation,
        graders: _Graders,
        sample: SampleDecision,
        found: _Findings,
        judged: _Judged,
        penalty: float,
    ) -> _Decision:
        """Verdict, outcome class and its source: rules, the judge, or a label that grades."""
        sc = self._scoring
        verdict, graded_by, facts, reasons = graders.verdict, graders.graded_by, found.facts, found.reasons
        judge_failed = verdict is not None and not verdict.ok
        used_judge = verdict is not None and verdict.ok
        label = conv.outcome
        label_decides = label is not None and (
            self._labels == "truth"
            or (self._labels == "review_sample" and label_grades(sample.review, graded_by))
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
            why = (
                "labels do not grade in this run" if self._labels == "ignore" else "outside the graded sample"
            )
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
        return _Decision(passed, outcome, source, label, before_label)

    def _result(
        self,
        conv: Conversation,
        sample: SampleDecision,
        graders: _Graders,
        found: _Findings,
        cost: _Cost,
        decision: _Decision,
    ) -> ConversationScore:
        """The score record; its turn and tool scores are plain dicts, validated with the whole result."""
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
                "asr_credit": asr_credit(outcome, cost.penalty, self._scoring.credits),
                "duration_s": duration_ms / 1000 if duration_ms is not None else None,
                "input_tokens": cost.result.input_tokens,
                "output_tokens": cost.result.output_tokens,
                "ended_at": _ended_at(conv),
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


@dataclass(slots=True)
class _Graders:
    """The graders that decide a conversation's success, chosen before its outcome is looked at."""

    graded_by: list[str]
    expected: Expectation | None  # the conversation's own expectation, when it says something
    policy: TaskPolicy | None  # the task policy that matched
    verdict: JudgeVerdict | None  # the judge's verdict, when the conversation is in the judge sample
    failing: frozenset[str]  # the detectors whose finding fails the conversation


@dataclass(slots=True)
class _Findings:
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
class _Cost:
    """The cost of a conversation, its budget ceiling and the ASR cost penalty."""

    result: CostResult
    ceiling: float | None
    penalty: float

    @property
    def cost_usd(self) -> float | None:
        """The known total cost (None if nothing is known)."""
        return self.result.cost_usd


@dataclass(slots=True)
class _Judged:
    """The class a judge's verdict grants (None: no verdict, or a failed one) and whether the rules had failed
    the conversation before the judge was weighed."""

    rules_failed: bool
    outcome: Outcome | None = None


@dataclass(slots=True)
class _Decision:
    """The verdict and outcome class of a conversation, their source, and the automated verdict a label
    replaced."""

    passed: bool | None
    outcome: Outcome
    source: OutcomeSource
    label: Outcome | None
    before_label: dict[str, Any] | None


def _epoch(dt: datetime) -> float:
    """Unix time of a datetime (naive ones are UTC)."""
    return (dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)).timestamp()


def _ended_at(conv: Conversation) -> datetime | None:
    ended_at = conv.ended_at
    if ended_at is not None:
        return ended_at
    for turn in reversed(conv.turns):
        if turn.started_at is not None:
            if turn.duration_ms is None:
                return turn.started_at
            return turn.started_at + timedelta(milliseconds=turn.duration_ms)
    return None


@cache
def _default_scorer() -> ConversationScorer:
    return ConversationScorer()


def score_conversation(
    conv: Conversation, settings: Settings | None = None, verdict: JudgeVerdict | None = None
) -> ConversationScore:
    """Score one conversation (builds a `ConversationScorer`; reuse one for many conversations)."""
    scorer = _default_scorer() if settings is None else ConversationScorer(settings)
    return scorer.score(conv, verdict)
