"""Reference answer grader and judge verdicts in the scorer (verdicts grade the judge sample; failures → unscored)."""

from __future__ import annotations

from collections import Counter

import pytest

from agentwatch.judge.verdict import FAILURE_CODES, Judge, run_judge
from agentwatch.scorers import ConversationScorer, JudgeVerdict, score_conversation
from agentwatch.scorers.answer import grade_answer, token_f1
from agentwatch.wire.schema import Conversation, Outcome, OutcomeSource


def f1_reference(a: list[str], b: list[str]) -> float:
    common = sum((Counter(a) & Counter(b)).values())
    if common == 0:
        return 0.0
    p, r = common / len(a), common / len(b)
    return 2 * p * r / (p + r)


@pytest.mark.parametrize(
    ("answer", "reference", "score"),
    [
        ("Paris.", "paris", 1.0),  # normalised exact match
        ("The answer is 42.50", "42.5", 1.0),  # numeric, formatting differs
        ("Total: $1,234.50", "$1234.5", 1.0),
        ("It is 41", "42", 0.0),  # numeric reference, wrong number → 0, no F1 credit
        ("There are 7 days left", "7 days", 1.0),
        ("The capital of France is Paris", "Paris", 1.0),  # reference contained as a token run
        ("", "anything", 0.0),
        (None, "anything", 0.0),
    ],
)
def test_reference_grader(answer, reference, score):
    assert grade_answer(answer, reference) == pytest.approx(score)


@pytest.mark.parametrize(
    ("answer", "reference", "score"),
    [
        # a negation just before every run: the answer says the opposite, 0.0 (token F1 passed the short ones:
        # "No refund was issued." scored 0.86 against "refund was issued")
        ("The order has not shipped", "shipped", 0.0),
        ("It has not yet been shipped.", "shipped", 0.0),  # three tokens before it
        ("It hasn't been shipped", "shipped", 0.0),  # hasn't → "hasn", "t"
        ("No, it was never refunded.", "refunded", 0.0),
        ("No refund was issued.", "refund was issued", 0.0),  # "no" before a noun negates
        ("No, it was never refunded.", "it was refunded", 2 * (3 / 5 * 1) / (3 / 5 + 1)),  # no run: token F1
        ("I cannot confirm that the refund was issued", "refund was issued", 0.0),
        # no negation within reach, or a negation the reference states too: stated
        ("No problem! Your order has shipped.", "shipped", 1.0),
        # a negation word said as an interjection negates nothing after it
        ("No, it has shipped.", "shipped", 1.0),
        ("No worries, your refund has been issued", "refund has been issued", 1.0),
        ("No problem - it shipped", "shipped", 1.0),
        ("There is no doubt it shipped", "shipped", 1.0),
        ("It is not cancelled", "not cancelled", 1.0),
        ("It had not shipped on Monday; it has shipped since.", "shipped", 1.0),  # the second run
        (
            "Not to worry at all: the refund of order 7 was issued",
            "refund of order 7 was issued",
            1.0,
        ),  # 4 away
    ],
)
def test_a_negated_run_does_not_state_the_reference(answer, reference, score):
    assert grade_answer(answer, reference) == pytest.approx(score)


def test_token_f1_hand_computed():
    # answer tokens: cat sat on mat; reference: cat sat on hat ("the" removed) → 3 common, P = R = 3/4
    assert grade_answer("cat sat on mat", "the cat sat on the hat") == pytest.approx(0.75)
    a, b = ["x", "y", "y", "z"], ["y", "y", "w"]
    assert (
        token_f1(a, b)
        == pytest.approx(f1_reference(a, b))
        == pytest.approx(2 * (2 / 4) * (2 / 3) / (2 / 4 + 2 / 3))
    )


def test_numeric_tolerance_is_relative():
    assert grade_answer("1000.0005", "1000", numeric_tolerance=1e-6) == 1.0
    assert grade_answer("1000.01", "1000", numeric_tolerance=1e-6) == 0.0


# --------------------------------------------------------------------------- judge verdicts


def conv(cid: str = "j1", **turn) -> Conversation:
    base = {"input": "q", "answer": "some answer"}
    base.update(turn)
    return Conversation.model_validate({"conversation_id": cid, "turns": [base]})


def ok(outcome="complete", score=0.9, explanation="fine"):
    return JudgeVerdict.graded(outcome, score, explanation, judge_id="fake:m:v1")


def test_verdict_grades_a_judge_sampled_conversation():
    s = score_conversation(conv(), verdict=ok())
    assert s.passed is True and s.outcome is Outcome.COMPLETE and s.outcome_source is OutcomeSource.JUDGE
    assert s.graded_by == ["judge"] and s.judge == "fake:m:v1" and s.judge_sampled
    assert s.asr_credit == 1.0


def test_without_verdict_a_sampled_conversation_stays_ungraded():
    s = score_conversation(conv())
    assert s.passed is None and s.judge is None and s.graded_by == []


@pytest.mark.parametrize(
    ("outcome", "score", "expected"),
    [
        ("complete", 0.5, Outcome.PARTIAL_CORRECT),  # complete needs a passing score
        ("complete", 0.1, Outcome.PARTIAL_INCORRECT),
        ("partial_correct", 0.6, Outcome.PARTIAL_CORRECT),
        ("partial_incorrect", 0.2, Outcome.PARTIAL_INCORRECT),
        ("hallucinated", 0.0, Outcome.HALLUCINATED),
        ("abandoned", 0.0, Outcome.ABANDONED),
    ],
)
def test_verdict_outcome_classes(outcome, score, expected):
    s = score_conversation(conv(), verdict=ok(outcome, score))
    assert s.passed is False and s.outcome is expected
    assert any(r.startswith("judge:") for r in s.reasons), s.reasons


def test_rule_evidence_wins_over_the_judge():
    s = score_conversation(conv(error="TimeoutError"), verdict=ok("complete", 1.0))
    assert s.passed is False and s.outcome is Outcome.ABANDONED and "error" in s.evidence


def test_other_grader_failure_turns_judge_complete_into_partial():
    c = conv(expected={"reference_answer": "nothing alike at all"})
    s = score_conversation(c, verdict=ok("complete", 1.0))
    assert s.passed is False and s.outcome in (Outcome.PARTIAL_CORRECT, Outcome.PARTIAL_INCORRECT)
    assert s.graded_by == ["expectations", "judge"]


def test_verdict_ignored_outside_the_judge_sample():
    from agentwatch.config import SamplingConfig, Settings

    settings = Settings(sampling=SamplingConfig(judge_rate=0.0))
    scorer = ConversationScorer(settings)
    assert not scorer.wants_judge(conv())
    s = scorer.score(conv(), ok())
    assert s.passed is None and s.judge is None and not s.judge_sampled


def test_turn_judge_score_still_grades():
    s = score_conversation(conv(judge_score=0.8, expected={"reference_answer": "nothing alike"}))
    assert s.turn_scores[0].answer_score == 0.8 and s.passed is True
    assert s.outcome_source is OutcomeSource.RULES


@pytest.mark.parametrize("code", list(FAILURE_CODES))
def test_failed_verdict_makes_conversation_unscored_never_wrong(code):
    v = JudgeVerdict.failed(code, "details here", judge_id="fake:m:v1")
    s = ConversationScorer().score(conv(expected={"reference_answer": "some answer"}), v)
    assert s.passed is None and s.outcome is Outcome.UNSCORED and s.asr_credit is None
    assert s.reasons[0] == f"{code}: details here" and s.judge == "fake:m:v1"


@pytest.mark.parametrize(
    "verdict",
    [
        JudgeVerdict(outcome=Outcome.COMPLETE, score=1.7),
        JudgeVerdict(outcome=Outcome.COMPLETE, score=float("nan")),
        JudgeVerdict(outcome=Outcome.COMPLETE, score=None),
        JudgeVerdict(outcome=Outcome.UNSCORED, score=0.5),
        "0.9",
    ],
)
def test_malformed_verdict_is_bad_output(verdict):
    s = ConversationScorer().score(conv(), verdict)
    assert s.passed is None and s.reasons[0].startswith("judge_bad_output: ")


class RaisingJudge:
    judge_id = "raising"

    def __init__(self, exc):
        self.exc = exc

    def fingerprint(self, conversation):
        return "x"

    def judge(self, conversation):
        raise self.exc


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (TimeoutError("judge timed out after 30 s"), "judge_timeout"),
        (ValueError("Expecting value: line 1 column 1"), "judge_bad_output"),
        (ConnectionError("refused"), "judge_unavailable"),
    ],
)
def test_run_judge_maps_exceptions(exc, code):
    judge = RaisingJudge(exc)
    assert isinstance(judge, Judge)
    v = run_judge(judge, conv())
    assert v.failure == code and v.judge_id == "raising" and str(exc) in v.detail


def test_label_wins_even_when_judge_fails():
    c = conv()
    c.outcome = Outcome.PARTIAL_CORRECT
    s = score_conversation(c, verdict=JudgeVerdict.failed("judge_timeout", "30 s"))
    assert s.outcome is Outcome.PARTIAL_CORRECT and s.outcome_source is OutcomeSource.LABEL
    assert s.asr_credit == pytest.approx(0.4)
