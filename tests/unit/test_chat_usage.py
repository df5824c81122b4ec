"""A model call's usage recorded on the agent's message (τ²-bench through LiteLLM: `usage`, `cost`, the model in
`raw_data`): the turns' usage when every agent message records one, none otherwise (a cost summed over some of
the calls would be too low)."""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import pytest

from agentwatch.importers.tau_bench import import_results
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation
from tests.unit.test_importers import TAU2

MODEL = "gpt-4o-2024-08-06"


def _metered(costs: list[Any], greeting: bool = True) -> dict[str, Any]:
    """TAU2's first simulation with `costs[i]` (and 100·(i+1) prompt, 10·(i+1) completion tokens) on the i-th
    agent message after the greeting; the greeting as τ²-bench writes it (cost 0, no usage) when `greeting`."""
    document = copy.deepcopy(TAU2)
    sim = document["simulations"][0]
    sim["messages"] = [m for m in sim["messages"] if greeting or m.get("content") != "Hi! How can I help?"]
    agent = [
        m for m in sim["messages"] if m["role"] == "assistant" and m.get("content") != "Hi! How can I help?"
    ]
    assert len(agent) == len(costs) == 3
    for i, (message, cost) in enumerate(zip(agent, costs, strict=True)):
        message.update(
            cost=cost,
            usage={"prompt_tokens": 100 * (i + 1), "completion_tokens": 10 * (i + 1)},
            raw_data={"model": MODEL},
        )
    if greeting:
        sim["messages"][0].update(cost=0.0, usage=None)
    document["simulations"] = [sim]
    return document


def _conversation(document: dict[str, Any]) -> Conversation:
    (line,) = import_results(document, "a", "v", "run").lines
    return Conversation.model_validate(line)


def test_every_agent_message_metered_gives_each_turn_its_calls_and_the_conversation_its_cost() -> None:
    costs = [0.00125, 0.0025, 0.00375]
    conv = _conversation(_metered(costs))
    usage = [(u.model, u.input_tokens, u.output_tokens, u.cost_usd) for t in conv.turns for u in t.usage]
    assert usage == [(MODEL, 100, 10, 0.00125), (MODEL, 200, 20, 0.0025), (MODEL, 300, 30, 0.00375)]
    assert conv.notes == ["1 tool call(s) made by the user (not the agent) left out"]
    score = ConversationScorer().score(conv)
    assert score.cost_usd is not None
    assert Fraction(score.cost_usd).limit_denominator(10**8) == Fraction(75, 10_000)
    assert (score.input_tokens, score.output_tokens) == (600, 60)
    assert not any(r.startswith("cost_unknown") for r in score.reasons)


def test_tokens_without_a_cost_are_priced_by_the_table() -> None:
    document = _metered([None, None, None])
    conv = _conversation(document)
    assert [u.cost_usd for t in conv.turns for u in t.usage] == [None, None, None]
    score = ConversationScorer().score(conv)
    # gpt-4o in agentwatch/data/prices.yaml: 2.50 and 10.00 USD per million input and output tokens
    expected = Fraction(600 * 250 + 60 * 1000, 100 * 1_000_000)
    assert score.cost_usd is not None and abs(Fraction(score.cost_usd) - expected) < Fraction(1, 10**12)


@pytest.mark.parametrize(
    "odd",
    [None, -0.01, float("nan"), 20_000.0, "0.01", True],
    ids=["unrecorded", "negative", "nan", "implausible", "text", "bool"],
)
def test_one_agent_message_without_a_usable_record_leaves_the_whole_cost_unknown(odd: Any) -> None:
    document = _metered([0.001, odd, 0.003])
    second = [m for m in document["simulations"][0]["messages"] if "raw_data" in m][1]
    second.pop("usage")
    conv = _conversation(document)
    assert all(t.usage == [] for t in conv.turns)
    assert "usage recorded on 2 of 3 agent messages: none taken, the cost is unknown" in conv.notes
    assert ConversationScorer().score(conv).cost_usd is None


def test_token_counts_no_call_has_are_not_taken() -> None:
    document = _metered([0.001, 0.002, 0.003])
    agent = [m for m in document["simulations"][0]["messages"] if m.get("usage")]
    agent[0]["usage"] = {"prompt_tokens": -5, "completion_tokens": 1}
    agent[1]["usage"] = {"prompt_tokens": 10**12, "completion_tokens": 1}
    conv = _conversation(document)
    assert all(t.usage == [] for t in conv.turns)
    assert "usage recorded on 1 of 3 agent messages: none taken, the cost is unknown" in conv.notes


def test_a_greeting_no_model_wrote_is_not_a_call() -> None:
    """τ²-bench's greeting (cost 0, no usage) is no model call: not a usage entry, and not an unmetered call."""
    conv = _conversation(_metered([0.1, 0.2, 0.3]))
    assert [(t.input, len(t.usage)) for t in conv.turns] == [("", 0), ("Cancel R1, I am u1.", 3)]
    unmetered = copy.deepcopy(TAU2)
    unmetered["simulations"][0]["messages"][0].update(cost=0.0, usage=None)
    conv = _conversation(unmetered)
    assert all(t.usage == [] for t in conv.turns) and not any("usage" in n for n in conv.notes)


def test_a_run_without_usage_has_no_note_about_it() -> None:
    conv = _conversation(TAU2)
    assert all(t.usage == [] for t in conv.turns)
    assert not any("usage" in n for n in conv.notes)
