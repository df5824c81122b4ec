"""Agents that act in text (τ-bench's `react` and `act` strategies): their steps read as tool calls and answers,
and their verdicts on real runs equal the verdicts on the same runs logged with API tool calls."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from agentwatch.importers.openai_chat import conversation_from_messages
from agentwatch.importers.text_actions import TextAction, acts_in_text, read_action
from tests.support import published_runs
from tests.support.dialects import tau_bench_as_react, verdicts

CALL = 'Thought:\nI need the user.\nAction:\n{"name": "get_user_details", "arguments": {"user_id": "mia_li_3668"}}'
SAY = 'Thought:\nI can answer now.\nAction:\n{"name": "respond", "arguments": {"content": "Your flight is booked."}}'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (CALL, TextAction(name="get_user_details", arguments={"user_id": "mia_li_3668"})),
        (
            'Action:\n{"name": "get_user_details", "arguments": {}}',
            TextAction(name="get_user_details", arguments={}),
        ),
        (SAY, TextAction(said="Your flight is booked.")),
        ('Action:\n{"name": "respond", "arguments": {"content": ["a", 1]}}', TextAction(said='["a", 1]')),
        (
            'Action:\n{"name": "calculate", "arguments": "2 + 2"}',
            TextAction(name="calculate", arguments={"value": "2 + 2"}),
        ),
        # τ-bench's own reading: what follows the last `Action:` is said to the user when it is not an action
        ("Thought:\nhm\nAction:\nI will book it now.", TextAction(said="I will book it now.")),
        ('Action: {"name": "x"}', TextAction(said='{"name": "x"}')),
        ("Hello, how can I help?", TextAction(said="Hello, how can I help?")),
    ],
)
def test_a_step_reads_as_tau_bench_reads_it(text: str, expected: TextAction) -> None:
    assert read_action(text) == expected


def test_a_trajectory_acts_in_text_only_without_api_tool_calls() -> None:
    react = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": CALL}]
    assert acts_in_text(react)
    assert not acts_in_text([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello"}])
    with_calls = [*react, {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f"}}]}]
    assert not acts_in_text(with_calls)
    assert not acts_in_text([{"role": "assistant", "content": "Action:\nnot json"}])


def _react_messages() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "Book me a flight, I am mia_li_3668."},
        {"role": "assistant", "content": CALL},
        {"role": "user", "content": 'API output: {"name": {"first_name": "Mia"}, "membership": "gold"}'},
        {"role": "assistant", "content": 'Action:\n{"name": "book", "arguments": {"flight": "HAT001"}}'},
        {"role": "user", "content": "API output: Error: flight HAT001 is full"},
        {"role": "assistant", "content": SAY},
        {"role": "user", "content": "API output: is what my screen says, thanks"},
    ]


def test_text_steps_become_calls_results_and_answers() -> None:
    conv = conversation_from_messages(_react_messages(), "c1", text_actions=True)
    first, second = conv.turns
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("get_user_details", {"user_id": "mia_li_3668"}),
        ("book", {"flight": "HAT001"}),
    ]
    assert first.tool_calls[0].result == {"name": {"first_name": "Mia"}, "membership": "gold"}
    assert first.tool_calls[1].error == "Error: flight HAT001 is full" and first.tool_calls[1].result is None
    assert first.answer == "Your flight is booked."  # the respond action's words, not the thought
    # a user message that looks like a result while no call waits is the user speaking
    assert second.input == "API output: is what my screen says, thanks" and not second.tool_calls
    assert conv.notes == []


def test_without_the_option_the_same_messages_are_words() -> None:
    conv = conversation_from_messages(_react_messages(), "c1")
    assert all(not t.tool_calls for t in conv.turns)


@pytest.mark.parametrize("name", [published_runs.AIRLINE, published_runs.RETAIL])
def test_a_real_run_logged_in_text_gets_the_verdicts_of_its_tool_calling_log(name: str) -> None:
    with gzip.open(published_runs.require(name)) as fh:
        document = json.load(fh)
    original = verdicts(document)
    assert (
        len(original) == 100
        and any(v[0] for v in original.values())
        and any(not v[0] for v in original.values())
    )
    for reasoning in (True, False):
        rewritten = verdicts(tau_bench_as_react(document, reasoning))
        assert rewritten.keys() == original.keys()
        for cid, (passed, codes, calls) in rewritten.items():
            assert (passed, calls) == (original[cid][0], original[cid][2]), cid
            assert codes == original[cid][1], cid
