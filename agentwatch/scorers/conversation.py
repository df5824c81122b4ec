"""Score a conversation: every grader over every turn, then outcome class, cost penalty and ASR credit (the
decision and the score record are in `decision`)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from functools import cache

from agentwatch.config import Settings
from agentwatch.config.prices import PriceLookup
from agentwatch.judge.verdict import JudgeVerdict, validate_verdict
from agentwatch.scorers.capture import (
    ANSWERS,
    MESSAGES,
    answers_missing,
    expectations_need,
    missing,
    not_applied,
    policy_needs,
    without_expectations,
)
from agentwatch.scorers.cost import budget_ceiling, conversation_cost, cost_penalty
from agentwatch.scorers.decision import (
    Cost,
    Findings,
    Graders,
    Judged,
    LabelRule,
    decide,
    ended_at,
    score_record,
)
from agentwatch.scorers.endings import AnswerTools, EndMarkers, ending
from agentwatch.scorers.expected_conversation import grade_expected, says_something
from agentwatch.scorers.judged import apply_verdict
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.policy import PolicyBook, grade_policy
from agentwatch.scorers.sampling import SampleDecision, Sampler
from agentwatch.scorers.tool_kinds import ToolKinds
from agentwatch.scorers.turn import TurnGrader
from agentwatch.wire.schema import Conversation, ConversationScore, Outcome, OutcomeSource

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
        self._answer_tools = AnswerTools(self._names, sc.answer_tools)
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

    def _sample(self, conv: Conversation, ended: datetime | None) -> SampleDecision:
        """The sample decisions of `conv`, which ended at `ended` (`ended_at(conv)`)."""
        t = None if ended is None else _epoch(ended)
        return self._sampler.decide(conv.conversation_id, conv.agent, conv.task, conv.version, t)

    def wants_judge(self, conv: Conversation) -> bool:
        """Whether a judge verdict would grade `conv` (it is in the judge sample, has turns, and its messages were
        captured: a judge cannot read what was not recorded)."""
        return bool(conv.turns) and not answers_missing(conv) and self._sample(conv, ended_at(conv)).judge

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
        ended = ended_at(conv)
        sample = self._sample(conv, ended)
        skipped: list[str] = []
        if conv.not_captured:
            conv = self._checkable(conv, skipped)
        graders = self._choose_graders(conv, sample, verdict, skipped)
        found = self._grade_turns(conv, graders)
        found.reasons.extend(skipped)
        cost = self._price(conv, found)
        self._grade_whole(conv, graders, cost.cost_usd, found)
        judged = self._weigh_judge(graders, found)
        decision = decide(conv, graders, sample, found, judged, cost.penalty, self._labels, self._scoring)
        return score_record(conv, ended, sample, graders, found, cost, decision, self._scoring.credits)

    def _checkable(self, conv: Conversation, skipped: list[str]) -> Conversation:
        """`conv` without the expectations that need content its source did not capture (`scorers.capture`);
        the reason goes to `skipped`."""
        if conv.expected is None and all(t.expected is None for t in conv.turns):
            return conv
        unmet = missing(expectations_need(conv), conv.not_captured)
        if not unmet:
            return conv
        skipped.append(not_applied("the expectations", unmet))
        return without_expectations(conv)

    def _choose_graders(
        self,
        conv: Conversation,
        sample: SampleDecision,
        verdict: JudgeVerdict | None,
        skipped: list[str] | None = None,
    ) -> Graders:
        """Which graders decide success: chosen before looking at the outcome (and, from what the source
        captured, before it too); a policy that needs content not captured is not applied (said in `skipped`)."""
        graded_by: list[str] = []
        expected = conv.expected if conv.expected is not None and says_something(conv.expected) else None
        turns = conv.turns
        if expected is not None or any(t.expected is not None and says_something(t.expected) for t in turns):
            graded_by.append("expectations")
        if any(t.judge_score is not None for t in turns):
            graded_by.append("judge_score")
        policy = None if "expectations" in graded_by else self.policies.match(conv.agent, conv.task)
        if policy is not None and conv.not_captured:
            unmet = missing(policy_needs(policy), conv.not_captured)
            if unmet:
                if skipped is not None:
                    skipped.append(not_applied(f"task policy {policy.ref}", unmet))
                policy = None
        if policy is not None:
            graded_by.append("policy")
        if verdict is not None and answers_missing(conv):
            if skipped is not None:
                skipped.append(
                    not_applied("the judge's verdict", missing(frozenset({MESSAGES}), conv.not_captured))
                )
            verdict = None
        if verdict is not None:
            verdict = validate_verdict(verdict) if sample.judge and turns else None
        failing = self._failing | frozenset(policy.fail_on) if policy is not None else self._failing
        return Graders(graded_by, expected, policy, verdict, failing)

    def _grade_turns(self, conv: Conversation, graders: Graders) -> Findings:
        """Every turn through every grader that applies to it, and the failure evidence on each (the detectors
        in `graders.failing` fail the turn)."""
        failing = graders.failing
        policy = graders.policy
        repeats = self.policies.repeats(policy, self._names) if policy is not None else None
        # a policy's own read-only tools (a standard environment's: every tool but its writes) tell lookups too
        kinds = self._kinds.extended(policy.read_only_tools) if policy is not None else self._kinds
        found = Findings()
        found.evidence.add(conv.system)  # the agent's instructions are a source (fees, rules)
        turns = conv.turns
        ended = ending(turns, self._names, self._kinds, self._markers, self._answer_tools)
        # no answer was recorded for any turn: one missing cannot be told from one not logged
        unanswered = None if ANSWERS in conv.not_captured else ended.unanswered
        arguments_known = "arguments" not in conv.not_captured
        for i, turn in enumerate(turns):
            ts, answer_score, tool_overall = self._turns.grade(
                i,
                turn,
                i == unanswered,
                found.evidence,
                found.facts,
                found.codes,
                failing,
                arguments_known,
                repeats,
                kinds,
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

    def _price(self, conv: Conversation, found: Findings) -> Cost:
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
        return Cost(cost, ceiling, penalty)

    def _grade_whole(
        self, conv: Conversation, graders: Graders, cost_usd: float | None, found: Findings
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

    def _weigh_judge(self, graders: Graders, found: Findings) -> Judged:
        """The judge's verdict added to what the rules found: the class it grants, and whether the rules had
        failed the conversation before it."""
        verdict = graders.verdict
        judged = Judged(rules_failed=found.failed)
        if verdict is not None:
            graders.graded_by.append("judge")
            judged.outcome = apply_verdict(
                verdict, self._scoring, self._answer_min, found.answers, found.reasons
            )
            found.failed = found.failed or judged.outcome is not Outcome.COMPLETE
        return judged


def _epoch(dt: datetime) -> float:
    """Unix time of a datetime (naive ones are UTC)."""
    return (dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)).timestamp()


@cache
def _default_scorer() -> ConversationScorer:
    return ConversationScorer()


def score_conversation(
    conv: Conversation, settings: Settings | None = None, verdict: JudgeVerdict | None = None
) -> ConversationScore:
    """Score one conversation (builds a `ConversationScorer`; reuse one for many conversations)."""
    scorer = _default_scorer() if settings is None else ConversationScorer(settings)
    return scorer.score(conv, verdict)
