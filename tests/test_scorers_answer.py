"""Reference answer grader and the Judge interface (fake judges, failures → unscored)."""

from __future__ import annotations

from collections import Counter

import pytest
from agentwatch.scorers import ConversationScorer, JudgeVerdict, score_conversation
from agentwatch.scorers.answer import grade_answer, token_f1
from agentwatch.scorers.judge import Judge, run_judge

from agentwatch.schema import Conversation, Outcome, OutcomeSource


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


def test_token_f1_hand_computed():
    # answer tokens: cat sat on mat; reference: cat sat on hat ("the" removed) → 3 common, P = R = 3/4
    assert grade_answer("cat sat on mat", "the cat sat on the hat") == pytest.approx(0.75)
    a, b = ["x", "y", "y", "z"], ["y", "y", "w"]
    assert token_f1(a, b) == pytest.approx(f1_reference(a, b)) == pytest.approx(2 * (2 / 4) * (2 / 3) / (2 / 4 + 2 / 3))


def test_numeric_tolerance_is_relative():
    assert grade_answer("1000.0005", "1000", numeric_tolerance=1e-6) == 1.0
    assert grade_answer("1000.01", "1000", numeric_tolerance=1e-6) == 0.0


# --------------------------------------------------------------------------- judges


class FixedJudge:
    def __init__(self, score):
        self.value = score
        self.calls = 0

    def score(self, turn, conversation):
        self.calls += 1
        return JudgeVerdict.ok(self.value)


class RaisingJudge:
    def __init__(self, exc):
        self.exc = exc

    def score(self, turn, conversation):
        raise self.exc


class FailingJudge:
    def score(self, turn, conversation):
        return JudgeVerdict.failed("bad JSON from model")


def conv(**turn) -> Conversation:
    base = {"input": "q", "answer": "some answer"}
    base.update(turn)
    return Conversation.model_validate({"conversation_id": "j1", "turns": [base]})


def test_judge_protocol_is_structural():
    assert isinstance(FixedJudge(1.0), Judge)


def test_judge_score_used_and_outcome_source_judge():
    judge = FixedJudge(0.9)
    s = score_conversation(conv(), judge=judge)
    assert judge.calls == 1
    assert s.passed is True and s.outcome is Outcome.COMPLETE and s.outcome_source is OutcomeSource.JUDGE
    assert s.turn_scores[0].answer_score == 0.9
    low = score_conversation(conv(), judge=FixedJudge(0.5))
    assert low.passed is False and any(r.startswith("answer:") for r in low.reasons)


def test_turn_judge_score_wins_over_judge_and_reference():
    judge = FixedJudge(0.0)
    s = score_conversation(conv(judge_score=0.8, expected={"reference_answer": "nothing alike"}), judge=judge)
    assert judge.calls == 0 and s.turn_scores[0].answer_score == 0.8 and s.passed is True
    assert s.outcome_source is OutcomeSource.RULES


@pytest.mark.parametrize(
    "judge",
    [
        RaisingJudge(TimeoutError("judge timed out after 30 s")),
        RaisingJudge(ValueError("Expecting value: line 1 column 1")),
        FailingJudge(),
        FixedJudge(1.7),
        FixedJudge(float("nan")),
        FixedJudge(None),
    ],
)
def test_judge_failure_makes_conversation_unscored_never_wrong(judge):
    s = ConversationScorer(judge=judge).score(conv(expected={"reference_answer": "some answer"}))
    assert s.passed is None
    assert s.outcome is Outcome.UNSCORED
    assert s.asr_credit is None
    assert any(r.startswith("judge_failed: turn 0: ") for r in s.reasons), s.reasons


def test_run_judge_rejects_non_verdicts():
    class Weird:
        def score(self, turn, conversation):
            return 0.9

    c = conv()
    v = run_judge(Weird(), c.turns[0], c)
    assert v.score is None and "not a JudgeVerdict" in v.reason


def test_label_wins_even_when_judge_fails():
    c = conv()
    c.outcome = Outcome.PARTIAL_CORRECT
    s = score_conversation(c, judge=FailingJudge())
    assert s.outcome is Outcome.PARTIAL_CORRECT and s.outcome_source is OutcomeSource.LABEL
    assert s.asr_credit == pytest.approx(0.4)
