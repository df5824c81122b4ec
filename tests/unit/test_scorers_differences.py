"""Reasons say where an expected call and the closest call made differ: the path and both values."""

from __future__ import annotations

import pytest

from agentwatch.config import Settings, TaskPolicy
from agentwatch.scorers import ConversationScorer
from agentwatch.scorers.differences import ABSENT, Difference, argument_differences
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.policy import grade_policy
from agentwatch.wire.schema import Conversation

FLIGHTS = [
    {"flight_number": "HAT169", "date": "2024-05-17"},
    {"flight_number": "HAT033", "date": "2024-05-19"},
]


@pytest.mark.parametrize(
    ("expected", "used", "modes", "want"),
    [
        (
            {"flights": FLIGHTS},
            {"flights": [FLIGHTS[0], {"flight_number": "HAT212", "date": "2024-05-20", "origin": "JFK"}]},
            {},
            [
                Difference("flights[1].flight_number", "HAT033", "HAT212"),
                Difference("flights[1].date", "2024-05-19", "2024-05-20"),
            ],
        ),
        ({"a": 1, "b": 2}, {"a": 1}, {}, [Difference("b", 2, ABSENT)]),
        ({"ids": ["1", "2"]}, {"ids": ["1", "2", "3"]}, {}, [Difference("ids (length)", 2, 3)]),
        (
            {"ids": ["1", "2"]},
            {"ids": ["2", "3"]},
            {"ids": "unordered"},
            [Difference("ids (any order)", ["1"], ["3"])],
        ),
        ({"ids": ["1", "2"]}, {"ids": ["2", "1"]}, {"ids": "unordered"}, []),
        ({"note": "long text"}, {"note": "other"}, {"note": "ignore"}, []),
        ({"amount": 5}, {"amount": "5"}, {}, []),  # a number and its text are the same argument
        ({"x": {"y": {"z": 1}}}, {"x": {"y": {"z": 2}}}, {}, [Difference("x.y.z", 1, 2)]),
    ],
)
def test_differences_follow_the_matching_rules(expected: dict, used: dict, modes: dict, want: list) -> None:
    assert argument_differences(expected, used, modes, 1e-9) == want


def _policy_reasons(tools: list[dict], calls: list[dict]) -> tuple[list[str], list]:
    conv = Conversation.model_validate(
        {"conversation_id": "c", "turns": [{"input": "change it", "answer": "Done.", "tool_calls": calls}]}
    )
    result = grade_policy(
        TaskPolicy.model_validate({"id": "p", "tools": tools}), conv, None, NameNormalizer()
    )
    return result.failures, result.differences


def test_the_reason_shows_the_differing_value_cut_labels_hide() -> None:
    """The task-19 case of τ-bench's airline run: the label is cut before the second flight; the reason still
    names it."""
    tools = [
        {"name": "update_reservation_flights", "arguments": {"reservation_id": "VA5SGQ", "flights": FLIGHTS}}
    ]
    sent = [FLIGHTS[0], {"flight_number": "HAT212", "date": "2024-05-20"}]
    call = {
        "name": "update_reservation_flights",
        "arguments": {"reservation_id": "VA5SGQ", "flights": sent},
        "result": {},
    }
    reasons, differences = _policy_reasons(tools, [call])
    (missing,) = [r for r in reasons if r.startswith("policy_tools")]
    assert "flights[1].flight_number: expected 'HAT033', got 'HAT212'" in missing
    assert "flights[1].date: expected '2024-05-19', got '2024-05-20'" in missing
    assert [(d.tool, d.path, d.expected, d.got) for d in differences] == [
        ("update_reservation_flights", "flights[1].flight_number", "HAT033", "HAT212"),
        ("update_reservation_flights", "flights[1].date", "2024-05-19", "2024-05-20"),
    ]


def test_no_call_and_a_refused_call_say_so() -> None:
    tools = [{"name": "cancel_reservation", "arguments": {"reservation_id": "R1"}}]
    reasons, differences = _policy_reasons(tools, [])
    assert reasons == [
        "policy_tools: no successful call matches cancel_reservation(reservation_id='R1'): no call of cancel_reservation was made"
    ]
    assert [(d.path, d.got) for d in differences] == [("(call)", None)]
    refused = {"name": "cancel_reservation", "arguments": {"reservation_id": "R1"}, "error": "not allowed"}
    reasons, _ = _policy_reasons(tools, [refused])
    assert reasons[0].endswith(
        "the closest call cancel_reservation (turn 0) returned an error ('not allowed')"
    )


def test_constraints_and_replacements_differ_as_what_they_ask() -> None:
    tools = [
        {
            "name": "modify_items",
            "arguments": {"order": {"regex": "#W\\d+"}, "item_ids": ["a"], "new_item_ids": ["b"]},
            "replacements": [["item_ids", "new_item_ids"]],
        }
    ]
    call = {
        "name": "modify_items",
        "arguments": {"order": "W1", "item_ids": ["a"], "new_item_ids": ["c"]},
        "result": {},
    }
    _, differences = _policy_reasons(tools, [call])
    assert [(d.path, d.expected, d.got) for d in differences] == [
        ("item_ids -> new_item_ids (any order)", ["a -> b"], ["a -> c"]),
        ("order", {"regex": "#W\\d+"}, "W1"),
    ]


def test_the_score_carries_the_differences_as_json() -> None:
    policy = {"id": "p", "tools": [{"name": "book", "arguments": {"seat": "12A"}}]}
    conv = Conversation.model_validate(
        {
            "conversation_id": "c",
            "turns": [
                {
                    "input": "book",
                    "answer": "Booked.",
                    "tool_calls": [{"name": "book", "arguments": {"seat": "12B"}, "result": {}}],
                }
            ],
        }
    )
    score = ConversationScorer(Settings.model_validate({"policies": [policy]})).score(conv)
    assert score.passed is False
    assert score.model_dump(mode="json")["differences"] == [
        {"reason": "policy_tools", "tool": "book", "path": "seat", "expected": "12A", "got": "12B"}
    ]
