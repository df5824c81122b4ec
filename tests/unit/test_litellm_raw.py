"""LiteLLM's `raw_gen_ai_request` spans: the provider's request and response as Python reprs, read as a model
call in the GenAI conventions; and the reprs themselves, read without evaluating anything."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentwatch.collector.litellm_raw import fold
from agentwatch.wire import attributes as A
from agentwatch.wire.values import read_python_value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("[{'role': 'user', 'content': 'hi'}]", [{"role": "user", "content": "hi"}]),
        (
            "[Message(role='assistant', tool_calls=[ToolCall(id='c1', function=Function(name='f', arguments='{}'))])]",
            [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}],
                }
            ],
        ),
        (
            "Usage(prompt_tokens=21, completion_tokens=9, details=None)",
            {"prompt_tokens": 21, "completion_tokens": 9, "details": None},
        ),
        ("(1, -2.5, True)", [1, -2.5, True]),
    ],
)
def test_a_repr_is_read_as_its_value(text: str, value: Any) -> None:
    assert read_python_value(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",  # an attribute call
        "open('/etc/passwd')",  # positional arguments: no repr of an object's fields
        "f(**{'a': 1})",
        "{**{'a': 1}}",
        "[x for x in range(3)]",
        "gpt-4o-mini",  # a name, not a value
        "[" * 100 + "]" * 100,  # deeper than the parser is let recurse
    ],
)
def test_what_is_no_repr_of_values_is_none(text: str) -> None:
    assert read_python_value(text) is None


def _fold(fields: dict[str, str], provider: str = "anthropic") -> dict[str, Any]:
    attrs: dict[str, Any] = {f"llm.{provider}.{key}": value for key, value in fields.items()}
    fold(attrs, 100_000)
    return attrs


def test_an_anthropic_call_its_system_content_blocks_and_cache_counted_apart() -> None:
    attrs = _fold(
        {
            "messages": "[{'role': 'user', 'content': 'Weather in Paris?'}]",
            "system": "'You answer weather questions.'",
            "content": "[{'type': 'tool_use', 'id': 'toolu_1', 'name': 'get_weather', 'input': {'city': 'Paris'}}]",
            "stop_reason": "tool_use",
            "model": "claude-sonnet-4-5-20250929",
            "usage": "{'input_tokens': 5, 'output_tokens': 9, 'cache_read_input_tokens': 16, "
            "'cache_creation_input_tokens': 0}",
        }
    )
    assert not any(key.startswith("llm.") for key in attrs)
    assert attrs[A.OPERATION] == A.CHAT and attrs[A.RESPONSE_MODEL] == "claude-sonnet-4-5-20250929"
    said = json.loads(attrs[A.INPUT_MESSAGES])
    assert [m["role"] for m in said] == ["system", "user"]
    (answer,) = json.loads(attrs[A.OUTPUT_MESSAGES])
    assert answer["finish_reason"] == "tool_use"
    assert answer["parts"] == [
        {"type": "tool_call", "id": "toolu_1", "name": "get_weather", "arguments": {"city": "Paris"}}
    ]
    assert (attrs[A.INPUT_TOKENS], attrs[A.OUTPUT_TOKENS], attrs[A.CACHE_READ_INPUT_TOKENS]) == (21, 9, 16)


def test_a_span_whose_request_is_no_repr_is_no_call() -> None:
    attrs = _fold({"messages": "[{'role': 'user', 'content': 'hi'}", "choices": "[]"}, "openai")  # cut short
    assert attrs == {}
