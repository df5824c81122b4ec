"""Conversation scoring: graders, hallucinations, outcome precedence, cost and budget, ASR credit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentwatch.config import CostConfig, SamplingConfig, ScoringConfig, Settings, TaskPolicy
from agentwatch.scorers import ConversationScorer, score_conversation
from agentwatch.wire.schema import Conversation, Outcome, OutcomeSource


def make(*turns, **conv) -> Conversation:
    return Conversation.model_validate({"conversation_id": "c", "turns": list(turns), **conv})


def codes(score) -> set[str]:
    return {r.split(":", 1)[0] for r in score.reasons}


def evidence_codes(score) -> set[str]:
    """The kinds of the findings that failed nothing (`evidence: loop: …`)."""
    return {r.split(":", 2)[1].strip() for r in score.reasons if r.startswith("evidence:")}


# A hallucination is evidence by default (its false-fail rate on other teams' real successes is over 1%); a
# deployment may make it fail conversations, as these tests of the detector's verdicts do.
FAILING_HALLUCINATIONS = ConversationScorer(
    Settings(scoring=ScoringConfig(failing_evidence=["error", "no_answer", "loop", "hallucination"]))
)


def strict(conv: Conversation):
    """The score with hallucinations failing."""
    return FAILING_HALLUCINATIONS.score(conv)


ORDER_TURN = {
    "input": "Where is order ORD-1234?",
    "answer": "Order ORD-1234 has shipped; the total was $42.50.",
    "tool_calls": [
        {"name": "get_order", "arguments": {"id": "ORD-1234"}, "result": {"status": "shipped", "total": 42.5}}
    ],
    "expected": {
        "tools": [{"name": "get_order", "arguments": {"id": "ORD-1234"}}],
        "reference_answer": "shipped",
    },
}


def test_complete_conversation():
    s = score_conversation(make(ORDER_TURN))
    assert s.passed is True and s.outcome is Outcome.COMPLETE and s.outcome_source is OutcomeSource.RULES
    assert s.asr_credit == 1.0 and s.reasons == []
    tool = s.turn_scores[0].tool
    assert tool is not None and tool.overall == 1.0 and s.turn_scores[0].passed is True


# --------------------------------------------------------------------------- hallucinations


@pytest.mark.parametrize(
    ("answer", "hallucinated"),
    [
        ("Order ORD-9999 has shipped.", True),  # id nowhere in inputs/results
        ("Order ORD-1234 has shipped.", False),
        ("A receipt went to jane@example.com.", True),
        ("A receipt went to ann@shop.io.", False),  # the e-mail is in the tool result
        ("It shipped; you paid $99.10.", True),
        ("It shipped; you paid $42.5.", False),  # amount in the result as 42.50
        ("It shipped, tracking 998877665.", True),  # long number not seen
    ],
)
def test_identifier_hallucination(answer, hallucinated):
    turn = {
        "input": "Where is order ORD-1234?",
        "answer": answer,
        "tool_calls": [
            {
                "name": "get_order",
                "arguments": {"id": "ORD-1234"},
                "result": '{"total": "42.50", "email": "ann@shop.io"}',
            }
        ],
    }
    s = strict(make(turn))
    assert ("hallucination" in codes(s)) is hallucinated
    assert ("hallucination" in s.evidence) is hallucinated
    # nothing grades it: evidence is reported, but it never makes the conversation graded
    assert s.outcome is Outcome.UNSCORED and s.passed is None and s.graded_by == []
    graded = make(dict(turn, expected={"tools": [{"name": "get_order"}]}))
    failing = strict(graded)
    if hallucinated:
        assert (
            failing.outcome is Outcome.HALLUCINATED and failing.passed is False and failing.asr_credit == 0.0
        )
    else:
        assert failing.outcome is not Outcome.HALLUCINATED and failing.passed is not None
    # by default the finding is evidence: reported, never a verdict
    default = score_conversation(graded)
    assert ("hallucination" in default.evidence) is hallucinated
    assert ("hallucination" in evidence_codes(default)) is hallucinated
    assert "hallucination" not in codes(default) and default.outcome is not Outcome.HALLUCINATED


def test_identifier_from_reference_is_not_hallucinated():
    turn = {"input": "id?", "answer": "Your id is INV-20931.", "expected": {"reference_answer": "INV-20931"}}
    s = score_conversation(make(turn))
    assert "hallucination" not in codes(s) and s.passed is True


def test_identifier_check_skipped_when_results_not_captured():
    turn = {"input": "Where?", "answer": "Order ORD-9999 shipped.", "tool_calls": [{"name": "get_order"}]}
    assert "hallucination" not in codes(score_conversation(make(turn)))


@pytest.mark.parametrize(
    ("answer", "tools", "hallucinated"),
    [
        ("I have cancelled your order.", [], True),
        ("I've gone ahead and refunded the payment.", [{"name": "get_order", "result": {"a": 1}}], True),
        (
            "Your booking has been cancelled.",
            [{"name": "functions.Cancel-Booking", "result": {"ok": True}}],
            False,
        ),
        ("I have cancelled your order.", [{"name": "cancel_order", "error": "permission denied"}], True),
        ("I have not cancelled anything yet.", [], False),
        ("I can cancel it if you want.", [], False),
    ],
)
def test_claimed_action_needs_successful_tool_call(answer, tools, hallucinated):
    s = strict(make({"input": "please", "answer": answer, "tool_calls": tools}))
    assert ("hallucination" in codes(s)) is hallucinated, s.reasons


def test_action_performed_in_earlier_turn_supports_later_claim():
    t1 = {"input": "cancel", "answer": "Done.", "tool_calls": [{"name": "cancel_order", "result": "ok"}]}
    t2 = {"input": "did it work?", "answer": "Yes, I have cancelled it."}
    assert "hallucination" not in codes(score_conversation(make(t1, t2)))


# --------------------------------------------------------------------------- loops, forbidden, errors


def loop_turn(n: int) -> dict:
    """A turn calling `get_order` `n` times with identical arguments, each refused."""
    calls = [{"name": "get_order", "arguments": {"id": 1, "x": [1, 2]}, "error": "timeout"} for _ in range(n)]
    return {
        "input": "q",
        "answer": "It is okay.",
        "tool_calls": calls,
        "expected": {"tools": [{"name": "get_order"}]},
    }


def test_loop_at_exactly_threshold():
    two = score_conversation(make(loop_turn(2)))
    assert two.turn_scores[0].loop is False and "loop" not in codes(two)
    three = score_conversation(make(loop_turn(3)))
    assert three.turn_scores[0].loop is True and three.outcome is Outcome.ABANDONED and three.passed is False
    assert "loop" in codes(three)


def test_loop_needs_identical_arguments_in_canonical_form():
    calls = [
        {"name": "f", "arguments": {"a": 1, "b": 2}},
        {"name": "F", "arguments": {"b": 2, "a": 1}},  # same canonical JSON, same normalised name
        {"name": "f", "arguments": {"a": 1, "b": 3}},
    ]
    s = score_conversation(make({"input": "q", "answer": "x", "tool_calls": calls}))
    assert s.turn_scores[0].loop is False
    calls[2]["arguments"] = {"b": 2, "a": 1}
    assert (
        score_conversation(make({"input": "q", "answer": "x", "tool_calls": calls})).turn_scores[0].loop
        is True
    )


def test_the_same_call_after_another_changed_something_is_a_check_not_a_loop():
    """A coding agent runs its test after each edit: three identical `python test.py` calls with an edit between
    each were a loop (SWE-agent's published trajectories). A successful call with effects of another tool between
    two repeats starts the count again; a lookup between them, or a refused write, does not."""
    run = {"name": "python", "arguments": {"command": "python test.py"}, "result": "FAILED"}
    edit = {"name": "edit", "arguments": {"command": "edit 3:3"}, "result": "ok"}
    look = {"name": "get_file", "arguments": {"path": "a.py"}, "result": "x = 1"}
    refused = {**edit, "error": "syntax error", "result": None}

    def looped(calls: list[dict]) -> bool:
        turn = {"input": "fix it", "answer": "Fixed.", "tool_calls": calls}
        return score_conversation(make(turn)).turn_scores[0].loop

    assert not looped([run, edit, run, edit, run])
    assert not looped([run, run, edit, run, run])  # at most two between changes
    assert looped([run, run, edit, run, run, run])
    assert looped([run, look, run, look, run])  # a lookup changes nothing
    assert looped([run, refused, run, refused, run])  # nor does a refused write
    # a call with effects made again does not reset its own count: the same edit three times is a loop
    assert looped([edit, look, edit, look, edit])
    assert not looped([edit, run, edit, run, edit])  # each edit after a run that changed something


def test_forbidden_tool():
    turn = {
        "input": "q",
        "answer": "done",
        "tool_calls": [{"name": "functions.Delete-Account", "result": "ok"}],
        "expected": {"forbidden_tools": ["delete_account"]},
    }
    s = score_conversation(make(turn))
    assert s.turn_scores[0].forbidden_tools == ["functions.Delete-Account"]
    assert s.passed is False and "forbidden_tool" in codes(s) and s.outcome is Outcome.PARTIAL_INCORRECT
    clean = dict(turn, tool_calls=[])
    ok = score_conversation(make(clean))
    assert ok.passed is True and ok.outcome is Outcome.COMPLETE  # forbidden-tools grader applied and passed


def test_error_means_abandoned():
    s = score_conversation(make(dict(ORDER_TURN, error="TimeoutError")))
    assert s.outcome is Outcome.ABANDONED and s.passed is False and "error" in codes(s)
    assert s.turn_scores[0].error == "TimeoutError"


def test_no_final_answer_on_last_turn_is_abandoned():
    s = score_conversation(make(ORDER_TURN, {"input": "And when will it arrive?", "answer": "  "}))
    assert s.outcome is Outcome.ABANDONED and "no_answer" in codes(s)


@pytest.mark.parametrize(
    "closing", ["thanks", "Thank you so much, that's all!", "###STOP###", "Bye! ###STOP###"]
)
def test_a_closing_left_unanswered_is_no_missing_answer(closing):
    s = score_conversation(make(ORDER_TURN, {"input": closing, "answer": None}))
    assert s.passed is True and s.outcome is Outcome.COMPLETE and "no_answer" not in codes(s)
    # a closing is only skipped at the end: the turn before it still needs its answer
    s2 = score_conversation(make(dict(ORDER_TURN, answer=None), {"input": closing}))
    assert "no_answer" in codes(s2) and s2.turn_scores[0].reasons[-1].startswith("no_answer: turn 0")


def test_a_handoff_to_a_person_is_an_ending_not_a_missing_answer():
    handoff: dict[str, Any] = {
        "input": "I want a human.",
        "answer": None,
        "tool_calls": [{"name": "transfer_to_human_agents", "arguments": {"summary": "x"}, "result": "ok"}],
    }
    assert "no_answer" not in codes(score_conversation(make(ORDER_TURN, handoff)))
    refused = dict(handoff, tool_calls=[dict(handoff["tool_calls"][0], error="unavailable")])
    # a refused handoff ended nothing
    assert "no_answer" in codes(score_conversation(make(ORDER_TURN, refused)))
    other = dict(handoff, tool_calls=[{"name": "refund_order", "arguments": {}, "result": "ok"}])
    assert "no_answer" in codes(score_conversation(make(ORDER_TURN, other)))


def test_error_alone_is_evidence_not_a_grade():
    s = score_conversation(make({"input": "q", "answer": "a", "error": "RuntimeError"}))
    assert s.passed is None and s.outcome is Outcome.UNSCORED and s.asr_credit is None
    assert s.evidence == ["error"] and s.graded_by == [] and "error" in codes(s)
    assert s.turn_scores[0].passed is None and s.turn_scores[0].error == "RuntimeError"
    # the same conversation graded by a policy: the evidence fails it
    policed = ConversationScorer(Settings(policies=[TaskPolicy(id="p")])).score(
        make({"input": "q", "answer": "a", "error": "RuntimeError"})
    )
    assert (
        policed.passed is False and policed.outcome is Outcome.ABANDONED and policed.graded_by == ["policy"]
    )
    assert policed.policy == "p@1" and policed.evidence == ["error"]


# --------------------------------------------------------------------------- outcome precedence


def test_unscored_conversation():
    s = score_conversation(make({"input": "hello", "answer": "hi there"}))
    assert s.passed is None and s.outcome is Outcome.UNSCORED and s.asr_credit is None
    assert "no_grader" in codes(s) and s.scored is False
    empty = score_conversation(make())
    assert empty.outcome is Outcome.UNSCORED and empty.turns == 0


def test_turns_without_expectation_only_add_failure_evidence():
    free = {"input": "hello", "answer": "hi"}
    s = score_conversation(make(free, ORDER_TURN))
    assert s.turn_scores[0].passed is None and s.passed is True and s.outcome is Outcome.COMPLETE


def test_label_wins_over_rules():
    s = score_conversation(make(dict(ORDER_TURN, error="boom"), outcome="Partial-Correct"))
    assert s.outcome is Outcome.PARTIAL_CORRECT and s.outcome_source is OutcomeSource.LABEL
    assert s.asr_credit == pytest.approx(0.4) and "label" in codes(s) and s.passed is False
    # a label on a conversation nothing else grades is its truth only on the review sample
    outside = score_conversation(make({"input": "q", "answer": "a"}, outcome="complete"))
    assert (
        outside.passed is None and outside.outcome is Outcome.UNSCORED and outside.label is Outcome.COMPLETE
    )
    assert outside.review_sampled is False and "label" in codes(outside)
    reviewed = ConversationScorer(Settings(sampling=SamplingConfig(review_rate=1.0))).score(
        make({"input": "q", "answer": "a"}, outcome="complete")
    )
    assert reviewed.passed is True and reviewed.asr_credit == 1.0 and reviewed.graded_by == ["label"]


def test_partial_correct_and_partial_incorrect():
    # wrong parameters: tool overall = (1 + 0 + 1 + 1)/4 = 0.75 ≥ 0.5; answer exact → partial_correct
    turn = dict(
        ORDER_TURN,
        expected={
            "tools": [{"name": "get_order", "arguments": {"id": "ORD-1"}}],
            "reference_answer": "shipped",
        },
    )
    s = score_conversation(make(turn))
    tool = s.turn_scores[0].tool
    assert tool is not None and tool.overall == pytest.approx(0.75)
    assert s.outcome is Outcome.PARTIAL_CORRECT and s.asr_credit == pytest.approx(0.4)
    assert "tool_parameters" in codes(s)
    # wrong tool and wrong answer → partial_incorrect
    bad = dict(turn, answer="Sorry, I cannot help.", tool_calls=[{"name": "search", "result": {"x": "y"}}])
    b = score_conversation(make(bad))
    assert b.outcome is Outcome.PARTIAL_INCORRECT and b.asr_credit == 0.0
    assert {"tool_selection", "answer"} <= codes(b)


def test_abandoned_beats_hallucinated():
    t = {
        "input": "q",
        "answer": "I have refunded you.",
        "error": "crash",
        "expected": {"reference_answer": "done"},
    }
    assert score_conversation(make(t)).outcome is Outcome.ABANDONED


# --------------------------------------------------------------------------- cost and budget


def priced_settings(**cost) -> Settings:
    prices = {
        "as_of": "2025-01-01",
        "models": {
            "m": {"input_per_mtok": 3, "output_per_mtok": 15},
            "m-large": {"input_per_mtok": 10, "output_per_mtok": 30},
        },
    }
    return Settings(cost=CostConfig.model_validate({"prices": prices, **cost}))


def test_cost_from_tokens_exact_and_prefix_match():
    turn = {
        "input": "q",
        "answer": "a",
        "usage": [
            {"model": "m", "input_tokens": 1234, "output_tokens": 567},
            {
                "model": "m-large-2025-01",
                "input_tokens": 1000,
                "output_tokens": 10,
            },  # longest prefix: m-large
            {"model": "m-20250601", "input_tokens": 7, "output_tokens": 0},  # a snapshot of m
            {"model": "router/m-large", "input_tokens": 2, "output_tokens": 1},  # a gateway's provider/model
        ],
    }
    s = ConversationScorer(priced_settings()).score(make(turn))
    exact = (
        Fraction(1234 * 3 + 567 * 15)
        + Fraction(1000 * 10 + 10 * 30)
        + Fraction(7 * 3)
        + Fraction(2 * 10 + 1 * 30)
    ) / 1_000_000
    assert s.cost_usd == pytest.approx(float(exact), rel=1e-12)
    assert s.input_tokens == 1234 + 1000 + 7 + 2 and s.output_tokens == 567 + 10 + 1


@pytest.mark.parametrize(
    "model",
    ["m-x", "m-large-2", "m-2025-06-01-mini", "m-large-v2-lite", "mx"],
)
def test_a_model_that_extends_a_table_entry_by_more_than_a_snapshot_is_not_priced_as_that_entry(model: str):
    """A newer or smaller model of a family (claude-opus-4-5 beside claude-opus-4, gemini-2.0-flash-lite beside
    gemini-2.0-flash) often costs something else: its cost is unknown, not its elder's."""
    turn = {
        "input": "q",
        "answer": "a",
        "usage": [{"model": model, "input_tokens": 1000, "output_tokens": 10}],
    }
    s = ConversationScorer(priced_settings()).score(make(turn))
    assert s.cost_usd is None and f"cost_unknown: model {model} not in price table" in s.reasons


def test_reported_costs_win_and_unknown_models_are_named():
    t1 = {"input": "q", "answer": "a", "cost_usd": 0.5, "usage": [{"model": "m", "input_tokens": 10**6}]}
    t2 = {
        "input": "q",
        "answer": "a",
        "usage": [
            {"model": "m", "cost_usd": 0.25, "input_tokens": 10**6},
            {"model": "mystery", "input_tokens": 5},
        ],
    }
    s = ConversationScorer(priced_settings()).score(make(t1, t2))
    assert s.cost_usd == pytest.approx(0.75)
    assert (
        "cost_unknown: model mystery not in price table" in s.reasons
    )  # "m" prefixes it, not at a separator
    none = ConversationScorer(priced_settings()).score(make({"input": "q", "answer": "a"}))
    assert none.cost_usd is None and none.cost_penalty == 0.0


@pytest.mark.parametrize(
    ("cost", "ceiling", "penalty"),
    [
        (0.05, 0.10, 0.0),
        (0.10, 0.10, 0.0),
        (0.15, 0.10, 0.5),
        (0.20, 0.10, 1.0),
        (0.50, 0.10, 1.0),
        (3.0, 2.0, 0.5),
    ],
)
def test_budget_penalty_examples_from_asr(cost, ceiling, penalty):
    # ASR: 1.5x ceiling = 0.5 penalty, 2x = 1.0 (max), 5x still 1.0; at or below the ceiling nothing.
    s = score_conversation(make(dict(ORDER_TURN, cost_usd=cost), budget_usd=ceiling))
    assert s.budget_usd == ceiling
    assert s.cost_penalty == pytest.approx(penalty)
    assert s.outcome is Outcome.COMPLETE
    assert s.asr_credit == pytest.approx(max(0.0, 1.0 - penalty))
    assert ("over_budget" in codes(s)) is (penalty > 0)


def test_partial_credit_minus_penalty_floors_at_zero():
    turn = dict(
        ORDER_TURN, expected={"tools": [{"name": "get_order", "arguments": {"id": "X"}}]}, cost_usd=0.12
    )
    s = score_conversation(make(turn, budget_usd=0.1))
    assert s.outcome is Outcome.PARTIAL_CORRECT
    assert s.asr_credit == pytest.approx(0.4 - 0.2)
    s2 = score_conversation(make(dict(turn, cost_usd=0.2), budget_usd=0.1))
    assert s2.asr_credit == 0.0


def test_budget_ceiling_sources():
    st_ = priced_settings(budgets={"triage": 0.1}, default_budget_usd=2.0)
    scorer = ConversationScorer(st_)
    turn = dict(ORDER_TURN, cost_usd=0.15)
    assert scorer.score(make(turn, task="triage")).budget_usd == 0.1
    assert scorer.score(make(turn, task="research")).budget_usd == 2.0
    assert scorer.score(make(turn, task="triage", budget_usd=1.0)).budget_usd == 1.0
    assert score_conversation(make(turn)).budget_usd is None


# --------------------------------------------------------------------------- times


def test_duration_and_ended_at():
    t0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    turns = [
        dict(ORDER_TURN, duration_ms=1500, started_at=t0.isoformat()),
        dict(ORDER_TURN, duration_ms=500, started_at=(t0 + timedelta(seconds=5)).isoformat()),
    ]
    s = score_conversation(make(*turns))
    assert s.duration_s == pytest.approx(2.0)
    assert s.ended_at == t0 + timedelta(seconds=5, milliseconds=500)
    explicit = score_conversation(make(*turns, ended_at="2026-01-02T00:00:00Z"))
    assert explicit.ended_at == datetime(2026, 1, 2, tzinfo=UTC)
    assert score_conversation(make({"input": "q", "answer": "a"})).duration_s is None


def test_output_is_valid_and_round_trips_as_json():
    s = score_conversation(
        make(ORDER_TURN, {"input": "x", "answer": "I have refunded $5.", "error": "e"}, tags={"k": "v"})
    )
    back = type(s).model_validate_json(s.model_dump_json())
    assert back == s and back.tags == {"k": "v"}


# --------------------------------------------------------------------------- properties

turn_st = st.fixed_dictionaries(
    {
        "input": st.sampled_from(["order ORD-1234", "hi", None]),
        "answer": st.sampled_from(["shipped, $42.50", "I have cancelled it", "", None, "ORD-1234 shipped"]),
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {
                    "name": st.sampled_from(["get_order", "cancel", "x"]),
                    "arguments": st.sampled_from([{}, {"id": 1}]),
                    "result": st.sampled_from([None, {"total": 42.5}, "ok"]),
                }
            ),
            max_size=4,
        ),
    },
    optional={
        "expected": st.fixed_dictionaries(
            {},
            optional={
                "tools": st.lists(
                    st.fixed_dictionaries({"name": st.sampled_from(["get_order", "cancel"])}), max_size=2
                ),
                "reference_answer": st.sampled_from(["shipped", "42.5"]),
                "forbidden_tools": st.just(["x"]),
                "sequence_matters": st.booleans(),
            },
        ),
        "judge_score": st.floats(0, 1),
        "error": st.just("boom"),
        "cost_usd": st.floats(0, 1),
    },
)


@settings(max_examples=200, deadline=None)
@given(st.lists(turn_st, max_size=4), st.one_of(st.none(), st.floats(0, 0.5)))
def test_properties(turns, budget):
    s = score_conversation(make(*turns, budget_usd=budget))
    verdicts = [t.passed for t in s.turn_scores if t.passed is not None]
    if verdicts:
        assert s.passed is all(verdicts)
    else:
        assert s.passed is None and s.outcome is Outcome.UNSCORED and s.asr_credit is None
    assert (s.passed is True) == (s.outcome is Outcome.COMPLETE)
    assert 0.0 <= s.cost_penalty <= 1.0
    assert s.asr_credit is None or 0.0 <= s.asr_credit <= 1.0
    for t in s.turn_scores:
        if t.answer_score is not None:
            assert 0.0 <= t.answer_score <= 1.0
        if t.tool is not None:
            for v in (t.tool.selection, t.tool.parameters, t.tool.sequence, t.tool.overall):
                assert 0.0 <= v <= 1.0
        if (
            s.passed is not None
        ):  # a turn fails for what it names, evidence aside (findings that fail nothing)
            assert (t.passed is False) == any(not r.startswith("evidence:") for r in t.reasons)
        else:
            assert t.passed is None
    assert set(s.evidence) <= codes(s) | evidence_codes(s)
    assert not any(r.startswith("scorer_error") for r in s.reasons)


def test_malformed_conversation_never_raises():
    # Built without validation (as a buggy producer might): the scorer logs and returns an unscored result.
    bad = Conversation.model_construct(conversation_id="bad", turns=[{"not": "a turn"}])
    s = ConversationScorer().score(bad)
    assert s.conversation_id == "bad" and s.outcome is Outcome.UNSCORED and s.passed is None
    assert s.reasons and s.reasons[0].startswith("scorer_error: ")


def test_label_unscored_and_incomplete_flag():
    s = score_conversation(make(ORDER_TURN, outcome="unscored", incomplete=True))
    assert s.outcome is Outcome.UNSCORED and s.passed is None and s.asr_credit is None
    assert s.incomplete is True and "incomplete" in codes(s)


def test_hallucination_checks_can_be_turned_off():
    turn = {
        "input": "q",
        "answer": "I have cancelled ORD-9999.",
        "expected": {"reference_answer": "cancelled"},
    }
    on = strict(make(turn))
    assert on.outcome is Outcome.HALLUCINATED
    off = ConversationScorer(
        Settings(
            scoring=ScoringConfig(
                hallucination_checks=False, failing_evidence=["error", "no_answer", "loop", "hallucination"]
            )
        )
    ).score(make(turn))
    assert off.outcome is Outcome.COMPLETE and off.passed is True


@pytest.mark.parametrize(
    ("result", "hallucinated"),
    [
        ({"total": 116.25}, True),
        ({"total": 16.3}, True),
        ({"total": 16.254}, False),
        ({"total": "1,016.25"}, True),
        ({"total": 16.25}, False),
        ({"note": "total 16.250"}, False),
        ({"total": "16.25 EUR"}, False),
    ],
)
def test_amount_must_match_a_whole_number(result, hallucinated):
    turn = {
        "input": "total?",
        "answer": "The total is $16.25.",
        "tool_calls": [{"name": "get", "result": result}],
    }
    assert ("hallucination" in codes(strict(make(turn)))) is hallucinated


@pytest.mark.parametrize(
    ("answer", "utilized"),
    [("Order ORD-52459 was delivered yesterday.", False), ("Order ORD-52459 is shipped with DHL.", True)],
)
def test_utilization_needs_a_result_value_not_in_the_input(answer, utilized):
    turn = {
        "input": "Where is my order ORD-52459?",
        "answer": answer,
        "tool_calls": [
            {
                "name": "lookup_order",
                "arguments": {"order_id": "ORD-52459"},
                "result": {"order_id": "ORD-52459", "status": "shipped", "carrier": "DHL"},
            }
        ],
        "expected": {"tools": [{"name": "lookup_order", "arguments": {"order_id": "ORD-52459"}}]},
    }
    s = score_conversation(make(turn))
    tool = s.turn_scores[0].tool
    assert tool is not None and tool.utilization == (1.0 if utilized else 0.0)
    assert s.passed is utilized
    assert ("tool_utilization" in codes(s)) is not utilized


def test_a_model_call_without_token_usage_makes_the_cost_unknown_not_free():
    """An LLM call that returned a plain string reports a model but no tokens: its cost is unknown, not $0."""
    turn = {"input": "q", "answer": "a", "usage": [{"model": "gpt-4o-mini"}]}
    s = score_conversation(make(turn, budget_usd=0.01))
    assert s.cost_usd is None and s.cost_penalty == 0.0
    assert "cost_unknown: a model call reported no token usage" in s.reasons
    priced = score_conversation(make(dict(turn, usage=[{"model": "gpt-4o-mini", "input_tokens": 1000}])))
    assert priced.cost_usd is not None and priced.cost_usd > 0


@pytest.mark.parametrize("duration_ms", [1e15, 1e308, float("inf")])
def test_a_turn_lasting_past_the_year_9999_ends_the_conversation_at_its_start(duration_ms: float) -> None:
    """A duration a clock or a transcript got wrong, ending the turn past what a date holds, made working out the
    end time raise (OverflowError: scorer_error, unscored); the conversation now ends at that turn's start."""
    start = datetime(2026, 11, 29, tzinfo=UTC)
    conv = Conversation.model_validate(
        {
            "conversation_id": "long",
            "agent": "a",
            "turns": [{"input": "hi", "answer": "ok", "duration_ms": duration_ms, "started_at": start}],
        }
    )
    score = score_conversation(conv)
    assert score.ended_at == start and not any(r.startswith("scorer_error") for r in score.reasons)
