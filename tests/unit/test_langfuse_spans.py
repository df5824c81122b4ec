"""Langfuse's observation attributes folded into the GenAI ones: each rule on its own (the recordings of the
SDK itself are rebuilt in tests/unit/test_recorded_traces.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentwatch.collector.langfuse_spans import KEYS, fold
from agentwatch.wire import attributes as A


def folded(kind: str, name: str = "step", limit: int = 65536, **values: Any) -> dict[str, Any]:
    """The attributes of one span of observation type `kind` with `values` (`input=`, `usage_details=`, ...)."""
    attrs: dict[str, Any] = {"langfuse.observation.type": kind}
    for key, value in values.items():
        full = "langfuse.release" if key == "release" else f"langfuse.observation.{key.replace('__', '.')}"
        full = "langfuse.trace.name" if key == "trace_name" else full
        attrs[full] = value if isinstance(value, str) else json.dumps(value)
    fold(attrs, name, limit)
    assert KEYS.isdisjoint(attrs), "a Langfuse key was left behind"
    return attrs


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"input": 120, "output": 30, "total": 150}, (120, 30, None, None)),  # Langfuse's own names
        ({"prompt_tokens": 120, "completion_tokens": 30}, (120, 30, None, None)),  # the OpenAI wrapper's
        (
            {"prompt_tokens": 120, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 100}},
            (120, 30, 100, None),
        ),
        # Anthropic's counts the cache apart from its input: added, as the GenAI conventions count
        (
            {
                "input_tokens": 20,
                "output_tokens": 30,
                "cache_read_input_tokens": 100,
                "cache_creation_input_tokens": 5,
            },
            (125, 30, 100, 5),
        ),
        ({"input": 120, "output": 30, "input_cached_tokens": 100}, (120, 30, 100, None)),
    ],
    ids=["langfuse", "openai", "openai cached", "anthropic cached", "langfuse cached"],
)
def test_a_generations_usage_becomes_its_token_counts(usage: dict, expected: tuple) -> None:
    attrs = folded("generation", usage_details=usage, model__name="gpt-4o-mini")
    got = tuple(
        attrs.get(k)
        for k in (A.INPUT_TOKENS, A.OUTPUT_TOKENS, A.CACHE_READ_INPUT_TOKENS, A.CACHE_CREATION_INPUT_TOKENS)
    )
    assert got == expected
    assert (attrs[A.OPERATION], attrs[A.RESPONSE_MODEL]) == (A.CHAT, "gpt-4o-mini")


@pytest.mark.parametrize(
    ("cost", "expected"),
    [
        ({"input": 0.25, "output": 0.5, "total": 0.75}, 0.75),
        ({"input": 0.25, "output": 0.5}, 0.75),
        ({}, None),
    ],
)
def test_a_generations_cost_details_are_its_cost_in_usd(cost: dict, expected: float | None) -> None:
    assert folded("generation", cost_details=cost).get(A.COST_USD) == expected


def test_a_generation_reads_its_request_and_response_messages() -> None:
    body = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]}
    asked = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}],
    }
    attrs = folded("generation", input=body, output=asked)
    given = json.loads(attrs[A.INPUT_MESSAGES])
    assert [m["role"] for m in given] == ["system", "user"]
    (answer,) = json.loads(attrs[A.OUTPUT_MESSAGES])
    (call,) = answer["parts"]
    assert (call["type"], call["id"], call["name"], json.loads(call["arguments"])) == (
        "tool_call",
        "c1",
        "f",
        {"x": 1},
    )
    # a bare list of messages, as LangChain's handler logs, and a text output
    attrs = folded("generation", input=body["messages"], output="Hello.")
    assert len(json.loads(attrs[A.INPUT_MESSAGES])) == 2
    assert json.loads(attrs[A.OUTPUT_MESSAGES])[0]["parts"] == [{"type": "text", "content": "Hello."}]


@pytest.mark.parametrize(
    ("logged", "question"),
    [
        ({"args": ["What is the weather?"], "kwargs": {}}, "What is the weather?"),
        (
            {"args": [], "kwargs": {"question": "What is the weather?"}},
            "What is the weather?",
        ),  # one text by name
        ({"args": [], "kwargs": {"question": "Weather?", "city": "Paris"}}, None),  # several: no text said
        ("What is the weather?", "What is the weather?"),
    ],
)
def test_an_agent_observations_input_is_its_decorated_functions_argument(
    logged: Any, question: str | None
) -> None:
    attrs = folded(
        "agent", name="weather-agent", input=logged, output="It is sunny.", trace_name="shop", release="1.4"
    )
    assert (attrs[A.OPERATION], attrs[A.AGENT_NAME], attrs[A.AGENT_VERSION]) == (
        A.INVOKE_AGENT,
        "shop",
        "1.4",
    )
    said = json.loads(attrs[A.INPUT_MESSAGES]) if A.INPUT_MESSAGES in attrs else []
    texts = [p.get("content") for m in said for p in m["parts"] if p["type"] == "text"]
    assert texts == ([question] if question else [])
    assert json.loads(attrs[A.OUTPUT_MESSAGES])[0]["parts"] == [{"type": "text", "content": "It is sunny."}]


def test_a_tool_observation_is_a_tool_call_and_a_langchain_tool_message_its_content() -> None:
    attrs = folded(
        "tool", name="get_weather", input={"args": [], "kwargs": {"city": "Paris"}}, output={"t": 18}
    )
    assert (attrs[A.OPERATION], attrs[A.TOOL_NAME]) == (A.EXECUTE_TOOL, "get_weather")
    assert (json.loads(attrs[A.TOOL_ARGUMENTS]), json.loads(attrs[A.TOOL_RESULT])) == (
        {"city": "Paris"},
        {"t": 18},
    )
    message = {
        "content": '{"t": 18}',
        "type": "tool",
        "name": "get_weather",
        "tool_call_id": "c7",
        "status": "success",
    }
    attrs = folded("tool", name="get_weather", input={"city": "Paris"}, output=message)
    assert (attrs[A.TOOL_RESULT], attrs[A.TOOL_CALL_ID]) == ('{"t": 18}', "c7")


def test_what_the_span_says_in_the_genai_conventions_wins_and_other_observations_fold_into_nothing() -> None:
    attrs: dict[str, Any] = {
        "langfuse.observation.type": "generation",
        "langfuse.observation.model.name": "gpt-4o-mini",
        A.RESPONSE_MODEL: "gpt-4o-2024-08-06",
        A.INPUT_TOKENS: 7,
        "langfuse.observation.usage_details": json.dumps({"input": 120, "output": 30}),
    }
    fold(attrs, "chat", 65536)
    assert (attrs[A.RESPONSE_MODEL], attrs[A.INPUT_TOKENS], attrs[A.OUTPUT_TOKENS]) == (
        "gpt-4o-2024-08-06",
        7,
        30,
    )
    for kind in ("span", "chain", "event", "retriever", "embedding"):
        assert folded(kind, input={"q": 1}, output="x", model__name="m") == {}


def test_an_input_cut_at_the_attribute_limit_gives_no_messages_rather_wrong_ones() -> None:
    cut = json.dumps({"messages": [{"role": "user", "content": "x" * 100}]})[:60] + "...[truncated]"
    attrs = folded("generation", input=cut, output="ok")
    assert A.INPUT_MESSAGES not in attrs and A.OUTPUT_MESSAGES in attrs
    attrs = folded("agent", input="What is the weather?", output=cut)
    assert A.INPUT_MESSAGES in attrs and A.OUTPUT_MESSAGES not in attrs
