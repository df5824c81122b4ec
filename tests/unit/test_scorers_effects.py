"""Tool effects: kinds of tools, calls compared by effects (policies and conversation-level expectations),
endings (handoffs, goodbyes), required outputs, and the per-turn grader's free lookups."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentwatch.config import HANDOFF_TOOLS, READ_ONLY_TOOLS, Settings, TaskPolicy
from agentwatch.config.scoring import END_MARKERS
from agentwatch.scorers import ConversationScorer, score_conversation
from agentwatch.scorers.endings import EndMarkers, ending, is_closing
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.outputs import missing_outputs
from agentwatch.scorers.policy import grade_policy
from agentwatch.scorers.tool_correctness import ToolGrader
from agentwatch.scorers.tool_kinds import EFFECT, HANDOFF, READ_ONLY, ToolKinds
from agentwatch.wire.schema import Conversation, Expectation, ToolCall, Turn

NAMES = NameNormalizer()
KINDS = ToolKinds(NAMES, READ_ONLY_TOOLS, HANDOFF_TOOLS)


def call(name: str, error: str | None = None, read_only: bool | None = None, **arguments: object) -> dict:
    return {
        "name": name,
        "arguments": arguments,
        "result": {"ok": True} if error is None else None,
        "error": error,
        "read_only": read_only,
    }


def conv(*calls: dict, answer: str | None = "Done.", **fields: object) -> Conversation:
    turn = {"input": "Please change reservation R1.", "answer": answer, "tool_calls": list(calls)}
    return Conversation.model_validate({"conversation_id": "c", "task": "t", "turns": [turn], **fields})


def policy_codes(policy: dict, c: Conversation) -> set[str]:
    result = grade_policy(TaskPolicy.model_validate({"id": "p", **policy}), c, None, NAMES, KINDS)
    return {r.split(":", 1)[0] for r in result.failures}


# --------------------------------------------------------------------------- kinds


@pytest.mark.parametrize(
    ("name", "flag", "kind"),
    [
        ("get_user_details", None, READ_ONLY),
        ("functions.Search-Flights", None, READ_ONLY),  # names normalised before the patterns apply
        ("calculate", None, READ_ONLY),
        ("think", None, READ_ONLY),
        ("final_answer", None, READ_ONLY),  # smolagents' agents answer by calling it
        ("transfer_to_human_agents", None, HANDOFF),
        ("transfer_to_human_agents", True, HANDOFF),
        ("book_reservation", None, EFFECT),
        ("lookup_order", None, READ_ONLY),
        ("lookupOrder", None, READ_ONLY),  # camelCase words are separated like any others
        ("reprice_order", None, EFFECT),  # not a default pattern: the SDK flag or a policy says otherwise
        ("reprice_order", True, READ_ONLY),
        ("get_refund", False, EFFECT),  # the flag wins over the name
        ("transfer_to_human_agents", False, EFFECT),
    ],
)
def test_tool_kinds(name: str, flag: bool | None, kind: str) -> None:
    assert KINDS.of(ToolCall(name=name, read_only=flag), NAMES(name)) == kind


def test_a_policy_adds_read_only_patterns() -> None:
    more = KINDS.extended(["reprice_*"])
    assert more.of_name("reprice_order") == READ_ONLY and KINDS.of_name("reprice_order") == EFFECT
    assert KINDS.extended(["reprice_*"]) is more  # built once


# --------------------------------------------------------------------------- effects (policies)

EXPECTED = {
    "tools": [{"name": "update_reservation", "arguments": {"reservation_id": "R1", "cabin": "economy"}}]
}


def test_lookups_are_free_and_the_expected_effect_must_happen() -> None:
    done = conv(
        call("get_reservation", reservation_id="R1"),
        call("search_flights"),
        call("think"),
        call("update_reservation", reservation_id="R1", cabin="economy", payment_id="card"),
    )
    assert policy_codes(EXPECTED, done) == set()  # extra top-level arguments are allowed, lookups are free
    assert policy_codes(EXPECTED, conv(call("get_reservation"))) == {"policy_tools"}


def test_a_refused_call_changed_nothing_and_a_retry_counts() -> None:
    refused = call("update_reservation", error="Error: not available", reservation_id="R1", cabin="economy")
    assert policy_codes(EXPECTED, conv(refused)) == {"policy_tools"}  # refused: not done, not an extra effect
    retried = call("update_reservation", reservation_id="R1", cabin="economy")
    assert policy_codes(EXPECTED, conv(refused, retried)) == set()


def test_an_unexpected_call_with_effects_fails_as_extra_calls_says() -> None:
    extra = conv(call("update_reservation", reservation_id="R1", cabin="economy"), call("cancel_reservation"))
    assert policy_codes(EXPECTED, extra) == {"policy_effects"}
    assert policy_codes({**EXPECTED, "extra_calls": "any"}, extra) == set()
    lookups = conv(call("update_reservation", reservation_id="R1", cabin="economy"), call("get_user"))
    assert policy_codes({**EXPECTED, "extra_calls": "none"}, lookups) == {"policy_effects"}
    assert policy_codes({**EXPECTED, "read_only_tools": ["cancel_*"]}, extra) == set()


def test_no_call_with_effects_is_expressible_and_lookups_still_pass() -> None:
    refuse: dict[str, list] = {"tools": []}
    assert policy_codes(refuse, conv(call("get_reservation"), call("transfer_to_human_agents"))) == set()
    assert policy_codes(refuse, conv(call("cancel_reservation"))) == {"policy_effects"}
    assert (
        policy_codes({}, conv(call("cancel_reservation"))) == set()
    )  # a policy without `tools` does not say


def test_expected_calls_are_a_multiset_and_wrong_arguments_are_an_extra_effect() -> None:
    two = {
        "tools": [{"name": "update_reservation", "arguments": {"reservation_id": r}} for r in ("R1", "R2")]
    }
    assert policy_codes(two, conv(call("update_reservation", reservation_id="R1"))) == {"policy_tools"}
    both = conv(
        call("update_reservation", reservation_id="R2"), call("update_reservation", reservation_id="R1")
    )
    assert policy_codes(two, both) == set()
    wrong = conv(
        call("update_reservation", reservation_id="R1"), call("update_reservation", reservation_id="R9")
    )
    assert policy_codes(two, wrong) == {"policy_tools", "policy_effects"}


def test_an_expected_lookup_is_optional_unless_required() -> None:
    lookup = {"tools": [{"name": "get_reservation", "arguments": {"reservation_id": "R1"}}]}
    assert policy_codes(lookup, conv()) == set()
    required = {
        "tools": [{"name": "get_reservation", "arguments": {"reservation_id": "R1"}, "required": True}]
    }
    assert policy_codes(required, conv()) == {"policy_tools"}
    assert policy_codes(required, conv(call("get_reservation", reservation_id="R1"))) == set()
    optional_effect = {"tools": [{"name": "cancel_reservation", "required": False}]}
    assert policy_codes(optional_effect, conv()) == set()
    assert policy_codes(optional_effect, conv(call("cancel_reservation"))) == set()


def test_argument_modes_in_policies() -> None:
    handoff_like = {
        "tools": [
            {
                "name": "escalate",
                "arguments": {"case": "C1", "summary": "user wants money back"},
                "match": {"summary": "ignore"},
            }
        ]
    }
    assert policy_codes(handoff_like, conv(call("escalate", case="C1", summary="refund request"))) == set()
    pay = {
        "tools": [
            {"name": "pay", "arguments": {"amount": "430+412-(136+109)"}, "match": {"amount": "numeric"}}
        ]
    }
    assert policy_codes(pay, conv(call("pay", amount=597))) == set()
    assert policy_codes(pay, conv(call("pay", amount="(430-136)+(412-109)"))) == set()
    assert policy_codes(pay, conv(call("pay", amount=596))) == {"policy_tools", "policy_effects"}


# --------------------------------------------------------------------------- writes that change nothing

ADDRESS = {"address1": "760 Elm Avenue", "address2": "Suite 564", "city": "Houston", "zip": "77034"}
MOVE = {"tools": [{"name": "modify_user_address", "arguments": {"user_id": "u1", **ADDRESS}}]}


def looked_up(name: str, result: object, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments, "result": result}


def test_an_expected_write_the_record_already_shows_is_not_missing() -> None:
    """τ²-bench retail task 110: the ground truth "changed" the user's address to the one it had; an agent that
    looked it up and skipped the write changed nothing and succeeded. The note names the lookup."""
    user = {"user_id": "u1", "name": "Sophia", "address": dict(ADDRESS), "orders": ["#W1"]}
    c = conv(looked_up("get_user_details", user, user_id="u1"))
    result = grade_policy(TaskPolicy.model_validate({"id": "p", **MOVE}), c, None, NAMES, KINDS)
    assert result.failures == []
    [note] = result.notes
    assert note.startswith("note: policy: the expected modify_user_address(")
    assert note.endswith(
        "would have changed nothing: get_user_details (turn 0) returned its values already: not required"
    )
    # the record's own fields count too, and its JSON text as a result
    flat = {"user_id": "u1", **ADDRESS, "email": "s@example.com"}
    assert policy_codes(MOVE, conv(looked_up("get_user_details", json.dumps(flat), user_id="u1"))) == set()


@pytest.mark.parametrize(
    ("calls", "why"),
    [
        ([], "never looked up"),
        (
            [
                looked_up(
                    "get_user_details",
                    {"user_id": "u1", "address": {**ADDRESS, "zip": "77242"}},
                    user_id="u1",
                )
            ],
            "one value differs",
        ),
        (
            [looked_up("get_user_details", {"user_id": "u2", "address": dict(ADDRESS)}, user_id="u2")],
            "another user's record",
        ),
        # an order holds its user's id and an address: a lookup by the order's id is not one of the user
        (
            [
                looked_up(
                    "get_order_details",
                    {"order_id": "#W1", "user_id": "u1", "address": dict(ADDRESS)},
                    order_id="#W1",
                )
            ],
            "a lookup of another record",
        ),
        (
            [
                looked_up("get_user_details", {"user_id": "u1", "address": dict(ADDRESS)}, user_id="u1"),
                looked_up(
                    "get_user_details",
                    {"user_id": "u1", "address": {**ADDRESS, "city": "Austin"}},
                    user_id="u1",
                ),
            ],
            "the latest look differs",
        ),
        (
            [looked_up("list_addresses", {"user_id": "u1", "addresses": [dict(ADDRESS)]}, user_id="u1")],
            "values in a list of records, not in the record",
        ),
        (
            [
                looked_up(
                    "get_user_details",
                    {
                        "user_id": "u1",
                        "address": {"address1": "760 Elm Avenue"},
                        "billing": {k: v for k, v in ADDRESS.items() if k != "address1"},
                    },
                    user_id="u1",
                )
            ],
            "values spread over two objects",
        ),
        (
            [
                looked_up("get_user_details", {"user_id": "u1", "address": dict(ADDRESS)}, user_id="u1")
                | {"result": None, "error": "timeout"}
            ],
            "the lookup failed",
        ),
    ],
)
def test_an_expected_write_not_shown_by_the_latest_lookup_of_its_record_is_missing(
    calls: list[dict], why: str
) -> None:
    assert policy_codes(MOVE, conv(*calls)) == {"policy_tools"}, why


def test_a_write_with_a_constraint_or_nothing_beside_its_record_address_is_never_taken_as_shown() -> None:
    user = {"user_id": "u1", "address": dict(ADDRESS), "status": "active"}
    lookup = looked_up("get_user_details", user, user_id="u1")
    constrained = {
        "tools": [
            {
                "name": "modify_user_address",
                "arguments": {"user_id": "u1", **ADDRESS, "city": {"regex": "Hou.*"}},
            }
        ]
    }
    assert policy_codes(constrained, conv(lookup)) == {"policy_tools"}
    bare = {"tools": [{"name": "activate_user", "arguments": {"user_id": "u1"}}]}
    assert policy_codes(bare, conv(lookup)) == {"policy_tools"}


def test_relative_order_among_effects() -> None:
    ordered = {"tools": [{"name": "cancel_reservation"}, {"name": "book_reservation"}], "order": "relative"}
    assert (
        policy_codes(ordered, conv(call("cancel_reservation"), call("get_x"), call("book_reservation")))
        == set()
    )
    assert policy_codes(ordered, conv(call("book_reservation"), call("cancel_reservation"))) == {
        "policy_order"
    }


def test_outputs_and_endings_in_policies() -> None:
    handoff = conv(call("transfer_to_human_agents", summary="x"), answer="You saved $23,553.")
    assert policy_codes({"outputs": ["23553"], "end": "handoff"}, handoff) == set()
    assert policy_codes({"outputs": ["23554"], "end": "answer"}, handoff) == {"policy_outputs", "policy_end"}
    refused = conv(call("transfer_to_human_agents", error="no agents"))
    assert policy_codes({"end": "handoff"}, refused) == {"policy_end"}


# --------------------------------------------------------------------------- conversation-level expectations


def test_a_conversation_expectation_is_matched_anywhere_and_graded() -> None:
    expected = Expectation.model_validate(
        {
            "tools": [
                {"name": "get_reservation", "arguments": {"reservation_id": "R1"}},
                {
                    "name": "update_reservation",
                    "arguments": {"reservation_id": "R1", "flights": [{"flight_number": "HAT2"}]},
                },
            ],
            "outputs": ["HAT2"],
        }
    )
    turns = [
        {
            "input": "Change R1 to HAT2",
            "answer": "Let me check R1.",
            "tool_calls": [
                {
                    "name": "get_reservation",
                    "arguments": {"reservation_id": "R1"},
                    "result": {"reservation_id": "R1", "flights": [{"flight_number": "HAT1"}]},
                }
            ],
        },
        {
            "input": "yes",
            "answer": "R1 now flies HAT2 (was HAT1).",
            "tool_calls": [
                {
                    "name": "update_reservation",
                    "arguments": {
                        "reservation_id": "R1",
                        "flights": [{"flight_number": "HAT2", "origin": "JFK"}],
                    },
                    "result": {"reservation_id": "R1", "status": "updated"},
                }
            ],
        },
        {"input": "Thanks, bye!", "answer": "You're welcome!"},
    ]
    c = Conversation.model_validate(
        {"conversation_id": "c", "expected": expected.model_dump(), "turns": turns}
    )
    s = score_conversation(c)
    assert (s.passed, s.graded_by, s.reasons) == (True, ["expectations"], [])
    # the same conversation without the update: the effect and the output are missing
    c2 = c.model_copy(update={"turns": [Turn.model_validate(turns[0]), Turn.model_validate(turns[2])]})
    codes = [r.split(":", 1)[0] for r in score_conversation(c2).reasons]
    assert codes == ["expected_tools", "expected_outputs"]
    # utilization is graded only when asked for: no answer used R1's details
    asked = c2.model_copy(update={"expected": expected.model_copy(update={"uses_tool_results": True})})
    assert [r.split(":", 1)[0] for r in score_conversation(asked).reasons][-1] == "tool_utilization"


def test_conversation_expectation_answer_forbidden_end_and_utilization() -> None:
    base: dict[str, Any] = {
        "conversation_id": "c",
        "turns": [
            {
                "input": "Where is order 7?",
                "answer": "It shipped with DHL.",
                "tool_calls": [{"name": "get_order", "arguments": {"id": 7}, "result": {"carrier": "DHL"}}],
            },
            {"input": "ok", "answer": "Anything else?"},
        ],
    }
    ok = {
        "tools": [{"name": "get_order", "required": True}],
        "reference_answer": "shipped with DHL",
        "forbidden_tools": ["refund"],
        "end": "answer",
    }
    assert score_conversation(Conversation.model_validate({**base, "expected": ok})).reasons == []
    bad = {**ok, "reference_answer": "lost in transit", "forbidden_tools": ["get_order"], "end": "handoff"}
    s = score_conversation(Conversation.model_validate({**base, "expected": bad}))
    assert [r.split(":", 1)[0] for r in s.reasons] == ["forbidden_tool", "answer", "expected_end"]
    assert s.evidence == ["forbidden_tool"]
    unused = {**base, "turns": [dict(base["turns"][0], answer="Let me see."), base["turns"][1]]}
    lookup = {
        "tools": [{"name": "get_order"}]
    }  # e.g. a lookup before a refusal: nothing it returned is quoted
    assert score_conversation(Conversation.model_validate({**unused, "expected": lookup})).reasons == []
    s2 = score_conversation(
        Conversation.model_validate({**unused, "expected": {**lookup, "uses_tool_results": True}})
    )
    assert [r.split(":", 1)[0] for r in s2.reasons] == ["tool_utilization"]


def test_transcript_expectations_win_over_policies_and_a_conversation_expectation_counts() -> None:
    settings = Settings(
        policies=[
            TaskPolicy.model_validate({"id": "p", "task": "t", "tools": [{"name": "cancel_reservation"}]})
        ]
    )
    scorer = ConversationScorer(settings)
    c = conv(
        call("update_reservation", reservation_id="R1", cabin="economy"),
        expected={**EXPECTED, "uses_tool_results": False},
    )
    s = scorer.score(c)
    assert s.graded_by == ["expectations"] and s.policy is None and s.passed is True
    assert scorer.score(c.model_copy(update={"expected": None})).policy == "p@1"


# --------------------------------------------------------------------------- per-turn tool correctness


def test_per_turn_lookups_nobody_expected_are_free_effects_are_not() -> None:
    grader = ToolGrader()
    exp = Expectation.model_validate(
        {"tools": [{"name": "refund", "arguments": {"id": 1}}], "uses_tool_results": False}
    )
    used = [ToolCall(name="get_order", arguments={"id": 1}), ToolCall(name="refund", arguments={"id": 1})]
    assert grader.grade(exp, used, "ok").passed is True
    with_effect = [*used, ToolCall(name="cancel", arguments={})]
    assert grader.grade(exp, with_effect, "ok").selection == 0.5
    strict = exp.model_copy(update={"extra_calls": "none"})
    assert grader.grade(strict, used, "ok").selection == 0.5
    loose = exp.model_copy(update={"extra_calls": "any"})
    assert grader.grade(loose, with_effect, "ok").passed is True
    optional = Expectation.model_validate(
        {"tools": [{"name": "get_order", "required": False}, {"name": "refund"}], "uses_tool_results": False}
    )
    assert grader.grade(optional, [ToolCall(name="refund")], "ok").passed is True


# --------------------------------------------------------------------------- endings and outputs


@pytest.mark.parametrize(
    ("text", "closing"),
    [
        ("Thanks, bye!", True),
        ("Thank you so much for your help. That's all I needed.", True),
        ("Great, have a good day", True),
        ("Thanks! Can you also add a bag?", False),
        ("Thank you, but the date is wrong.", False),
        ("Thanks, please cancel it.", False),
        ("I want to change my flight.", False),
        ("Thanks " + "word " * 30, False),
        ("", False),
        (None, False),
    ],
)
def test_closings(text: str | None, closing: bool) -> None:
    assert is_closing(text) is closing


MARKERS = EndMarkers(END_MARKERS)


def _t(inp: str, answer: str | None = None, calls: list[dict] | None = None) -> Turn:
    return Turn.model_validate({"input": inp, "answer": answer, "tool_calls": calls or []})


def _unanswered(turns: list[Turn]) -> int | None:
    return ending(turns, NAMES, KINDS, MARKERS).unanswered


def test_the_unanswered_turn_skips_trailing_closings_and_handoffs_end_it() -> None:
    assert _unanswered([_t("q", "a"), _t("thanks"), _t("###STOP###")]) is None
    assert _unanswered([_t("q"), _t("thanks")]) == 0
    handoff = [{"name": "transfer_to_human_agents", "result": "ok"}]
    assert _unanswered([_t("q", None, handoff)]) is None
    assert _unanswered([_t("q", None, [{"name": "book", "result": "ok"}])]) == 0
    assert _unanswered([_t("thanks")]) is None  # nothing was asked


def test_a_run_ended_by_a_tool_made_for_ending_it_is_answered() -> None:
    """SWE-agent ends its run by calling `submit`, whose result is the patch, and writes nothing after it: five of
    five published runs got `no_answer`. A successful call of an `answer_tools` tool ends the turn; a refused one
    or another tool's does not, and an empty list turns the rule off."""
    patch = [{"name": "submit", "arguments": {}, "result": "diff --git a/src/fields.py b/src/fields.py"}]
    scorer = ConversationScorer()
    ended = scorer.score(conv(*patch, answer=None))
    assert "no_answer" not in ended.evidence, ended.reasons
    refused = [{**patch[0], "result": None, "error": "submission rejected"}]
    other = [{"name": "edit", "arguments": {"line": 1}, "result": "ok"}]
    for calls in (refused, other):
        s = scorer.score(conv(*calls, answer=None))
        assert "no_answer" in s.evidence, calls
    off = ConversationScorer(Settings.model_validate({"scoring": {"answer_tools": []}}))
    assert "no_answer" in off.score(conv(*patch, answer=None)).evidence


def test_a_turn_whose_words_were_not_captured_is_no_missing_answer() -> None:
    """Content capture off (OpenTelemetry's default): no input and no answer recorded, tool names only."""
    uncaptured = Turn.model_validate({"input": None, "answer": None, "tool_calls": [{"name": "get_order"}]})
    assert _unanswered([_t("q", "a"), uncaptured]) is None
    assert _unanswered([uncaptured, Turn.model_validate({"input": None, "answer": None})]) is None
    # an input captured and no answer: the agent did not answer; an empty input is captured too
    assert _unanswered([Turn.model_validate({"input": "Where is it?", "answer": None})]) == 0
    assert (
        _unanswered([Turn.model_validate({"input": "", "answer": None, "tool_calls": [{"name": "f"}]})]) == 0
    )


@pytest.mark.parametrize(
    ("text", "marker", "kind"),
    [
        ("You too! ###STOP###", "###STOP", "stop"),
        ("I'll reach out once I have the reservation ID.###STOP", "###STOP", "stop"),
        ("Thanks for your help!###STOP###", "###STOP", "stop"),
        ("###TRANSFER###", "###TRANSFER", "transfer"),
        ("I understand, thanks for the information.###TRANSFER###", "###TRANSFER", "transfer"),
        ("###out-of-scope###", "###OUT-OF-SCOPE", "out_of_scope"),  # case does not matter
    ],
)
def test_an_end_marker_of_the_user_ends_the_conversation(text: str, marker: str, kind: str) -> None:
    """τ-bench's and τ²-bench's simulated users end with a marker: not a missing answer, and it is named."""
    asked = _t("Can you change my flight?")  # asked, got no answer, then the user ended it
    ended = ending([_t("q", "a"), asked, _t(text)], NAMES, KINDS, MARKERS)
    assert ended.unanswered == 1 and ended.marker == (marker, kind, 2)
    ended = ending([_t("q", "a"), _t(text)], NAMES, KINDS, MARKERS)
    assert ended.unanswered is None and ended.marker == (marker, kind, 1)
    assert ending([_t("q", "a"), _t(text)], NAMES, KINDS, EndMarkers({})).marker is None  # markers off


def test_a_marker_the_agent_answered_is_no_ending() -> None:
    """The marker ends only a trailing turn left without answer or call."""
    ended = ending([_t("###STOP### and also?", "Sure, here it is.")], NAMES, KINDS, MARKERS)
    assert ended == ending([_t("x", "y")], NAMES, KINDS, MARKERS) and ended.marker is None


def test_outputs() -> None:
    answers = ["Your total is $1,327.00 and the refund is 327 USD.", "Code: ABC-12"]
    assert missing_outputs(["1327", "327", "abc-12", "1,327", "Code"], answers) == []
    # a number is found as a number, not inside a longer one; a text as a case-insensitive substring
    assert missing_outputs(["132", "XYZ", "1000"], [*answers, "You pay $1000.50"]) == ["132", "XYZ", "1000"]
    assert missing_outputs(["42"], ["It costs 42.00 dollars"]) == []
    assert missing_outputs(["x"], []) == ["x"]
