"""Content the source did not record (OpenTelemetry content capture off): graders that need it are not applied,
detectors that read it stay quiet, and what can still be checked grades every conversation alike."""

from __future__ import annotations

import random
from typing import Any

import pytest

from agentwatch.config import Settings, TaskPolicy
from agentwatch.judge.verdict import JudgeVerdict
from agentwatch.scorers import ConversationScorer
from agentwatch.scorers.capture import expectation_needs, policy_needs
from agentwatch.wire.schema import Conversation, Expectation, Outcome

OFF = ["messages", "arguments", "results"]


def _conv(cid: str, calls: list[str], not_captured: list[str], **extra: Any) -> Conversation:
    captured = not not_captured
    turn = {
        "input": "Cancel order #W1, please." if captured else None,
        "answer": "Done: order #W1 is cancelled and refunded." if captured else None,
        "tool_calls": [
            {
                "name": n,
                "arguments": {"order_id": "#W1"} if captured else None,
                "result": "ok" if captured else None,
            }
            for n in calls
        ],
        **extra,
    }
    return Conversation.model_validate(
        {
            "conversation_id": cid,
            "agent": "shop",
            "task": "cancel",
            "turns": [turn],
            "not_captured": not_captured,
        }
    )


ARGS_POLICY = TaskPolicy.model_validate(
    {
        "id": "cancel",
        "agent": "shop",
        "task": "cancel",
        "tools": [{"name": "cancel_order", "arguments": {"order_id": "#W1"}}],
    }
)
NAMES_POLICY = TaskPolicy.model_validate(
    {
        "id": "cancel-names",
        "agent": "shop",
        "task": "cancel",
        "tools": [{"name": "cancel_order"}],
        "forbidden_tools": ["delete_account"],
    }
)


@pytest.mark.parametrize(
    ("policy", "needs"),
    [
        (ARGS_POLICY, {"arguments"}),
        (NAMES_POLICY, set()),
        (TaskPolicy.model_validate({"id": "o", "outputs": ["refunded"]}), {"messages"}),
        (TaskPolicy.model_validate({"id": "g", "grounding": ["get_order"], "end": "answer"}), {"messages"}),
    ],
)
def test_what_a_policy_reads(policy: TaskPolicy, needs: set[str]) -> None:
    assert policy_needs(policy) == needs


def test_what_an_expectation_reads() -> None:
    assert (
        expectation_needs(Expectation.model_validate({"forbidden_tools": ["x"], "end": "handoff"})) == set()
    )
    names_only = Expectation.model_validate({"tools": [{"name": "f"}], "uses_tool_results": False})
    assert expectation_needs(names_only) == set()
    with_args = Expectation.model_validate(
        {"tools": [{"name": "f", "arguments": {"a": 1}}], "uses_tool_results": False}
    )
    assert expectation_needs(with_args) == {"arguments"}
    assert expectation_needs(Expectation.model_validate({"tools": [{"name": "f"}]})) == {
        "messages"
    }  # utilization
    assert expectation_needs(Expectation.model_validate({"reference_answer": "42"})) == {"messages"}


def test_a_policy_that_reads_what_was_not_recorded_is_not_applied() -> None:
    scorer = ConversationScorer(Settings(policies=[ARGS_POLICY]))
    off = scorer.score(_conv("off", ["get_order", "cancel_order"], OFF))
    assert off.passed is None and off.outcome is Outcome.UNSCORED and off.graded_by == []
    assert off.reasons[0] == (
        "not_captured: task policy cancel@1 not applied: tool arguments not recorded by the source "
        "(content capture off?)"
    )
    assert off.evidence == []  # no answer, no loop: nothing is flagged for what was not recorded
    on = scorer.score(_conv("on", ["get_order", "cancel_order"], []))
    assert on.passed is True and on.graded_by == ["policy"]


def test_what_can_be_checked_still_grades_both_ways() -> None:
    scorer = ConversationScorer(Settings(policies=[NAMES_POLICY]))
    assert scorer.score(_conv("ok", ["get_order", "cancel_order"], OFF)).passed is True
    missed = scorer.score(_conv("missed", ["get_order"], OFF))
    assert missed.passed is False and missed.reasons == [
        "policy_tools: no successful call matches cancel_order: no call of cancel_order was made"
    ]
    assert scorer.score(_conv("forbidden", ["cancel_order", "delete_account"], OFF)).passed is False


def test_repeated_calls_whose_arguments_were_not_recorded_are_no_loop() -> None:
    scorer = ConversationScorer(Settings())
    calls = ["search"] * 5
    assert "loop" not in scorer.score(_conv("off", calls, ["arguments"])).evidence
    assert "loop" in scorer.score(_conv("on", calls, [])).evidence  # identical recorded arguments: a loop


def test_expectations_and_the_judge_need_the_messages() -> None:
    scorer = ConversationScorer(Settings())
    expected = {
        "expected": {
            "tools": [{"name": "cancel_order"}],
            "uses_tool_results": False,
            "reference_answer": "cancelled",
        }
    }
    off = scorer.score(_conv("e-off", ["cancel_order"], OFF, **expected))
    assert off.passed is None and off.reasons[0].startswith(
        "not_captured: the expectations not applied: messages"
    )
    assert scorer.score(_conv("e-on", ["cancel_order"], [], **expected)).passed is True
    judged = ConversationScorer(Settings.model_validate({"sampling": {"judge_rate": 1.0}}))
    conv = _conv("j-off", ["cancel_order"], OFF)
    assert not judged.wants_judge(conv)
    verdict = JudgeVerdict(outcome=Outcome.COMPLETE, score=1.0, explanation="fine")
    score = judged.score(conv, verdict)
    assert score.passed is None and "judge" not in score.graded_by
    assert score.reasons[0] == (
        "not_captured: the judge's verdict not applied: messages not recorded by the source (content capture off?)"
    )
    captured = _conv("j-on", ["cancel_order"], [])
    assert judged.wants_judge(captured) and "judge" in judged.score(captured, verdict).graded_by


def test_success_rate_on_simulated_traffic_with_capture_off_matches_the_truth() -> None:
    """Known truth: 70% of conversations call cancel_order. With content off, the names-only policy grades
    every conversation (none left out for its outcome) and finds exactly the true successes; the policy that
    reads arguments grades none, rather than failing the successes."""
    rng = random.Random(7)
    truth = [rng.random() < 0.7 for _ in range(400)]
    convs = [
        _conv(f"c{i}", ["get_order", "cancel_order"] if ok else ["get_order"], OFF)
        for i, ok in enumerate(truth)
    ]
    names = [s.passed for s in map(ConversationScorer(Settings(policies=[NAMES_POLICY])).score, convs)]
    assert names == truth
    args = [s.passed for s in map(ConversationScorer(Settings(policies=[ARGS_POLICY])).score, convs)]
    assert args == [None] * len(truth)


def test_answers_not_recorded_leave_what_reads_them_unapplied_and_no_answer_unflagged() -> None:
    """A source that logged the questions but no answer (`not_captured: answers`): the reference answer and the
    judge are not applied, the `no_answer` detector does not fire, and names-only checks still grade."""
    turn = {"input": "Cancel order #W1, please.", "answer": None, "tool_calls": [{"name": "cancel_order"}]}

    def conv(cid: str, not_captured: list[str], **expected: Any) -> Conversation:
        return Conversation.model_validate(
            {
                "conversation_id": cid,
                "agent": "shop",
                "task": "cancel",
                "turns": [{**turn, **expected}],
                "not_captured": not_captured,
            }
        )

    scorer = ConversationScorer(Settings.model_validate({"sampling": {"judge_rate": 1.0}}))
    reference = {"expected": {"reference_answer": "cancelled"}}
    off = scorer.score(conv("a-off", ["answers"], **reference))
    assert off.passed is None and off.reasons[0] == (
        "not_captured: the expectations not applied: answers not recorded by the source (content capture off?)"
    )
    assert "no_answer" not in off.evidence and not scorer.wants_judge(conv("j", ["answers"]))
    verdict = JudgeVerdict(outcome=Outcome.COMPLETE, score=1.0, explanation="fine")
    assert scorer.score(conv("j", ["answers"]), verdict).reasons[0] == (
        "not_captured: the judge's verdict not applied: answers not recorded by the source (content capture off?)"
    )
    recorded = scorer.score(conv("a-on", []))  # the same turn, its answer recorded as missing
    assert "no_answer" in recorded.evidence
    names = ConversationScorer(Settings(policies=[NAMES_POLICY]))
    assert names.score(conv("n", ["answers"])).passed is True


def test_without_its_later_steps_no_grader_of_the_outcome_applies() -> None:
    """`steps` not captured (a loop the caller runs, this conversation its first trace): a names-only policy,
    names-only expectations and the judge are not applied (the agent may have cancelled in a later trace), and
    nothing fails it; with `answers` alone, the names-only policy grades as before."""
    turn = {"input": "Cancel order #W1, please.", "answer": None, "tool_calls": [{"name": "lookup_order"}]}

    def conv(not_captured: list[str], **expected: Any) -> Conversation:
        return Conversation.model_validate(
            {
                "conversation_id": "c",
                "agent": "shop",
                "task": "cancel",
                "turns": [{**turn, **expected}],
                "not_captured": not_captured,
            }
        )

    names = ConversationScorer(Settings(policies=[NAMES_POLICY]))
    fragment = names.score(conv(["answers", "results", "steps"]))
    assert fragment.passed is None and fragment.evidence == []
    assert fragment.reasons[0].startswith(
        "not_captured: task policy cancel-names@1 not applied: the steps after its last call not seen"
    )
    assert names.score(conv(["answers"])).passed is False  # missing cancel_order: the policy still grades
    expected = {"expected": {"tools": [{"name": "cancel_order"}]}}
    assert ConversationScorer().score(conv(["answers", "steps"], **expected)).passed is None
