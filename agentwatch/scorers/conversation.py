"""Score a conversation: every grader over every turn, then outcome class, cost penalty and ASR credit."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any, Literal

from agentwatch.config import Settings
from agentwatch.config.prices import PriceLookup
from agentwatch.judge.verdict import JudgeVerdict, validate_verdict
from agentwatch.scorers.answer import grade_answer
from agentwatch.scorers.cost import budget_ceiling, conversation_cost, cost_penalty
from agentwatch.scorers.endings import handed_off, unanswered_turn
from agentwatch.scorers.expected_conversation import grade_expected, says_something
from agentwatch.scorers.graders import forbidden_called, loops
from agentwatch.scorers.hallucination import Evidence, find_hallucinations
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.outcome import OutcomeFacts, asr_credit, decide_outcome
from agentwatch.scorers.outputs import missing_outputs
from agentwatch.scorers.policy import PolicyBook, grade_policy
from agentwatch.scorers.relabel import label_grades
from agentwatch.scorers.sampling import SampleDecision, Sampler
from agentwatch.scorers.text import AnswerText
from agentwatch.scorers.tool_correctness import ToolGrader
from agentwatch.scorers.tool_kinds import ToolKinds
from agentwatch.wire.schema import (
    EVIDENCE,
    Conversation,
    ConversationScore,
    Outcome,
    OutcomeSource,
    Turn,
)

log = logging.getLogger(__name__)


@cache
def default_settings() -> Settings:
    """Settings from defaults and `AGENTWATCH_*` variables, built once."""
    return Settings()


def _fmt(x: float) -> str:
    return f"{x:.3g}"


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
        self._tools = ToolGrader(self._names, sc.tool_weights, sc.tool_threshold, sc.tolerance, self._kinds)
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

    # ------------------------------------------------------------------ turns

    def _turn(
        self,
        i: int,
        turn: Turn,
        conv: Conversation,
        unanswered: bool,
        evidence: Evidence,
        facts: OutcomeFacts,
        found: set[str],
    ) -> tuple[dict[str, Any], float | None, float | None]:
        """Grade one turn; returns its `TurnScore` fields, answer score and tool overall. Failure evidence is added to `found` and fails the turn (`passed` is False);
        whether that counts is the conversation's business (only graded conversations have a verdict)."""
        sc = self._scoring
        names = self._names
        exp = turn.expected
        reasons: list[str] = []
        applied = False
        failed = False

        calls = turn.tool_calls
        turn_input = turn.input
        error = turn.error
        used_names = names.of(calls) if calls else []  # shared by every grader of the turn
        evidence.add_turn(turn_input, calls, used_names)

        answer = turn.answer
        has_answer = bool(answer and answer.strip())
        text = AnswerText(answer) if answer else None  # shared by the tool and hallucination graders
        reference = exp.reference_answer if exp is not None else None

        # answer correctness: judge_score > reference grader (a judge verdict grades the whole conversation)
        answer_score: float | None = None
        if turn.judge_score is not None:
            answer_score = turn.judge_score
        elif reference is not None:
            answer_score = grade_answer(answer, reference, sc.numeric_tolerance)
        answer_passed: bool | None = None
        if answer_score is not None:
            applied = True
            answer_passed = answer_score >= self._answer_min
            if not answer_passed:
                failed = True
                reasons.append(
                    f"answer: turn {i}: score {_fmt(answer_score)} below threshold {_fmt(sc.answer_threshold)}"
                )

        # tool correctness
        tool = None
        if exp is not None and (exp.tools or "tools" in exp.model_fields_set):
            applied = True
            tool = self._tools.grade_fields(
                exp, calls, answer, turn_input, used_names=used_names, answer_text=text
            )
            if not tool["passed"]:
                failed = True
                reasons.extend(_tool_reasons(i, tool, exp.sequence_matters))

        # required outputs and the turn's ending
        if exp is not None and exp.outputs:
            applied = True
            absent = missing_outputs(exp.outputs, [answer] if answer is not None and has_answer else [])
            if absent:
                failed = True
                stated = ", ".join(map(repr, absent))
                reasons.append(f"expected_outputs: turn {i}: the answer does not state {stated}")
        if exp is not None and exp.end is not None:
            applied = True
            if (exp.end == "handoff") != handed_off(turn, names, self._kinds):
                failed = True
                wanted = "a" if exp.end == "handoff" else "no"
                reasons.append(f"expected_end: turn {i}: expected {wanted} handoff")

        # forbidden tools
        forbidden: list[str] = []
        if exp is not None and exp.forbidden_tools:
            applied = True
            forbidden = forbidden_called(calls, exp.forbidden_tools, names, used_names)
            if forbidden:
                failed = True
                facts.forbidden = True
                found.add("forbidden_tool")
                reasons.append(f"forbidden_tool: turn {i}: called {', '.join(forbidden)}")

        # failure evidence, looked for on every conversation: loops, errors, missing final answer, hallucinations
        looped = loops(calls, sc.loop_threshold, names, used_names) if len(calls) >= sc.loop_threshold else ()
        if looped:
            failed = facts.abandoned = True
            found.add("loop")
            for name, count in looped:
                reasons.append(f"loop: turn {i}: {name} called {count} times with identical arguments")
        if error:
            failed = facts.abandoned = True
            found.add("error")
            reasons.append(f"error: turn {i}: {error}")
        if unanswered:
            failed = facts.abandoned = True
            found.add("no_answer")
            reasons.append(f"no_answer: turn {i}: the conversation ends without an answer or a handoff")
        if text is not None and sc.hallucination_checks:
            for claim in find_hallucinations(text, evidence, reference):
                failed = facts.hallucinated = True
                found.add("hallucination")
                reasons.append(f"hallucination: turn {i}: {claim}")

        passed = False if failed else (True if applied else None)
        score = {
            "index": i,
            "answer_score": answer_score,
            "answer_passed": answer_passed,
            "tool": tool,
            "loop": bool(looped),
            "forbidden_tools": forbidden,
            "error": error,
            "passed": passed,
            "reasons": reasons,
        }
        return score, answer_score, (tool["overall"] if tool is not None else None)

    # ------------------------------------------------------------------ conversation

    def _score(self, conv: Conversation, verdict: JudgeVerdict | None) -> ConversationScore:
        sc = self._scoring
        turns = conv.turns
        n = len(turns)
        sample = self._sample(conv)
        # which graders decide success, chosen before looking at the outcome
        graded_by: list[str] = []
        expected = conv.expected if conv.expected is not None and says_something(conv.expected) else None
        if expected is not None or any(t.expected is not None and says_something(t.expected) for t in turns):
            graded_by.append("expectations")
        if any(t.judge_score is not None for t in turns):
            graded_by.append("judge_score")
        policy = None if "expectations" in graded_by else self.policies.match(conv.agent, conv.task)
        if policy is not None:
            graded_by.append("policy")
        if verdict is not None:
            verdict = validate_verdict(verdict) if sample.judge and n else None

        evidence = Evidence()
        evidence.add(conv.system)  # the agent's instructions are a source (fees, rules)
        facts = OutcomeFacts()
        found: set[str] = set()  # failure evidence codes
        turn_scores: list[dict[str, Any]] = []  # TurnScore fields, validated once with the whole result
        reasons: list[str] = []
        answers: list[float] = []
        tools: list[float] = []
        duration_ms: float | None = None
        any_failed = False
        unanswered = unanswered_turn(turns, self._names, self._kinds)
        for i, turn in enumerate(turns):
            ts, answer_score, tool_overall = self._turn(
                i, turn, conv, i == unanswered, evidence, facts, found
            )
            turn_scores.append(ts)
            reasons.extend(ts["reasons"])
            any_failed = any_failed or ts["passed"] is False
            if answer_score is not None:
                answers.append(answer_score)
            if tool_overall is not None:
                tools.append(tool_overall)
            turn_ms = turn.duration_ms
            if turn_ms is not None:
                duration_ms = turn_ms if duration_ms is None else duration_ms + turn_ms

        cost = conversation_cost(turns, self._prices)
        reasons.extend(cost.reasons)
        ceiling = budget_ceiling(conv, self._cost)
        penalty = cost_penalty(cost.cost_usd, ceiling)
        if penalty > 0:
            found.add("over_budget")
            reasons.append(
                f"over_budget: cost ${cost.cost_usd:.4g} above ceiling ${ceiling:.4g} (penalty {penalty:.3g})"
            )
        if expected is not None:
            whole = grade_expected(
                expected, conv, self._names, self._kinds, sc.numeric_tolerance, self._answer_min
            )
            reasons.extend(whole.failures)
            any_failed = any_failed or bool(whole.failures)
            if whole.answer_score is not None:
                answers.append(whole.answer_score)
            if whole.forbidden:
                facts.forbidden = True
                found.add("forbidden_tool")
        if policy is not None:
            checked = grade_policy(
                policy, conv, cost.cost_usd, self._names, self._kinds, sc.numeric_tolerance
            )
            reasons.extend(checked.failures)
            any_failed = any_failed or not checked.passed
            if checked.forbidden:
                facts.forbidden = True
                found.add("forbidden_tool")

        judge_failed = verdict is not None and not verdict.ok
        judged = verdict if verdict is not None and verdict.ok else None  # a verdict that grades
        used_judge = judged is not None
        judged_outcome: Outcome | None = None
        rules_failed = any_failed
        if verdict is not None:
            graded_by.append("judge")
            judged_outcome = _apply_verdict(verdict, sc, self._answer_min, answers, reasons)
            any_failed = any_failed or judged_outcome is not Outcome.COMPLETE

        label = conv.outcome
        label_decides = label is not None and (
            self._labels == "truth"
            or (self._labels == "review_sample" and label_grades(sample.review, graded_by))
        )
        if label_decides:
            graded_by.append("label")
        # a verdict only for the graded sample; failure evidence fails it but never puts a conversation in it
        graded = bool(graded_by)
        passed: bool | None = None if judge_failed or not graded else not any_failed
        facts.passed = passed
        facts.judge_failed = judge_failed
        facts.answer_score = sum(answers) / len(answers) if answers else None
        facts.tool_overall = sum(tools) / len(tools) if tools else None
        outcome = decide_outcome(facts, None, sc.partial_tool_min, sc.partial_answer_min)
        if used_judge and outcome is not Outcome.UNSCORED:
            outcome = _judged_outcome(outcome, judged_outcome, facts, rules_failed)
        automated = [g for g in graded_by if g != "label"]
        verdict_before_label = None
        if automated and passed is not None:  # the prediction a label corrects: kept apart from the label
            verdict_before_label = {
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
            ignored = self._labels == "ignore"
            why = "labels do not grade in this run" if ignored else "outside the graded sample"
            reasons.insert(0, f"label: outcome {label.value} set by a label {why} (not graded)")
        if not graded:
            for ts in turn_scores:
                ts["passed"] = None  # evidence is in the reasons; a verdict is for graded conversations only
            if not n:
                reasons.append("no_grader: the conversation has no turns")
            else:
                reasons.append(
                    "no_grader: no expectation, task policy, judge sample or review-sample label applies"
                )
        incomplete = conv.incomplete
        if incomplete:
            reasons.append("incomplete: the collector finished this conversation early (a cap was hit)")

        # the turn and tool scores are plain dicts, validated with the whole result
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
                "turns": n,
                "passed": passed,
                "outcome": outcome,
                "outcome_source": source,
                "reasons": reasons,
                "turn_scores": turn_scores,
                "cost_usd": cost.cost_usd,
                "budget_usd": ceiling,
                "cost_penalty": penalty,
                "asr_credit": asr_credit(outcome, penalty, sc.credits),
                "duration_s": duration_ms / 1000 if duration_ms is not None else None,
                "input_tokens": cost.input_tokens,
                "output_tokens": cost.output_tokens,
                "ended_at": _ended_at(conv),
                "incomplete": incomplete,
                "graded_by": graded_by if passed is not None else [],
                "evidence": [e for e in EVIDENCE if e in found],
                "policy": policy.ref if policy is not None else None,
                "judge": verdict.judge_id or None if verdict is not None else None,
                "judge_score": judged.score if judged is not None else None,
                "judge_explanation": (judged.explanation or None) if judged is not None else None,
                "judge_outcome": judged.outcome if judged is not None else None,
                "judge_sampled": sample.judge,
                "review_sampled": sample.review,
                "label": label,
                "automated": verdict_before_label,
                "judge_rate": sample.judge_rate,
                "review_rate": sample.review_rate,
            }
        )


def _tool_reasons(i: int, tool: dict[str, Any], sequence_matters: bool) -> list[str]:
    """Reason entries of a failed tool grading (`tool`: the fields of a `ToolScore`)."""
    out = []
    if tool["selection"] < 1.0 - 1e-9:
        out.append(f"tool_selection: turn {i}: selection {_fmt(tool['selection'])} (tools missing or extra)")
    if tool["parameters"] < 1.0 - 1e-9:
        out.append(f"tool_parameters: turn {i}: parameters {_fmt(tool['parameters'])} (arguments differ)")
    if sequence_matters and tool["sequence"] < 1.0 - 1e-9:
        out.append(f"tool_sequence: turn {i}: sequence {_fmt(tool['sequence'])} (order differs)")
    if tool["utilization"] is not None and tool["utilization"] < 1.0:
        out.append(f"tool_utilization: turn {i}: the answer uses no value from a successful tool result")
    if not out:
        out.append(f"tool_overall: turn {i}: overall {_fmt(tool['overall'])} below the tool threshold")
    return out


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


def _apply_verdict(
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
        reasons.append(f"judge: score {_fmt(score)} below threshold {_fmt(threshold)}{why}")
    elif outcome is not Outcome.COMPLETE:
        reasons.append(f"judge: outcome {outcome.value}, score {_fmt(score)}{why}")
    return outcome


def _judged_outcome(
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
