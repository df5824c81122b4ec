"""ADK's own span attributes (`gcp.vertex.agent.*`) folded into the GenAI keys: a model call's request and
response, a tool call's arguments and result; placeholders, cut values and hostile values fold into nothing."""

from __future__ import annotations

import json
import random
from typing import Any

from agentwatch.collector.adk_spans import fold

REQUEST = {
    "model": "gemini-2.0-flash",
    "config": {"system_instruction": "You answer weather questions.", "tools": []},
    "contents": [
        {"role": "user", "parts": [{"text": "What is the weather in Paris?"}]},
        {
            "role": "model",
            "parts": [{"function_call": {"id": "c1", "name": "get_weather", "args": {"city": "Paris"}}}],
        },
        {
            "role": "user",
            "parts": [{"function_response": {"id": "c1", "name": "get_weather", "response": {"t": 18}}}],
        },
    ],
}
RESPONSE = {"content": {"role": "model", "parts": [{"text": "18 degrees."}]}, "usage_metadata": {}}


def test_a_model_call_gives_its_messages_and_instructions() -> None:
    attrs: dict[str, Any] = {
        "gcp.vertex.agent.llm_request": json.dumps(REQUEST),
        "gcp.vertex.agent.llm_response": json.dumps(RESPONSE),
    }
    fold(attrs, 65536)
    assert attrs["gen_ai.system_instructions"] == "You answer weather questions."
    assert json.loads(attrs["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "What is the weather in Paris?"}]},
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}
            ],
        },
        {"role": "user", "parts": [{"type": "tool_call_response", "id": "c1", "response": {"t": 18}}]},
    ]
    assert json.loads(attrs["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "18 degrees."}]}
    ]
    assert not any(key.startswith("gcp.") for key in attrs)


def test_a_tool_call_gives_its_arguments_and_result_and_genai_keys_win() -> None:
    attrs: dict[str, Any] = {
        "gcp.vertex.agent.tool_call_args": '{"city": "Paris"}',
        "gcp.vertex.agent.tool_response": '{"t": 18}',
        "gcp.vertex.agent.llm_request": "{}",  # ADK's placeholders on a tool span
        "gcp.vertex.agent.llm_response": "{}",
        "gen_ai.tool.call.result": '{"t": 19}',
    }
    fold(attrs, 65536)
    assert attrs == {
        "gen_ai.tool.call.arguments": '{"city": "Paris"}',
        "gen_ai.tool.call.result": '{"t": 19}',
    }


def test_placeholders_and_cut_values_fold_into_nothing() -> None:
    for request in ("{}", '{"contents": [{"role": "user", "parts": [{"te', "not json", "[1, 2]"):
        attrs: dict[str, Any] = {
            "gcp.vertex.agent.llm_request": request,
            "gcp.vertex.agent.llm_response": "{}",
        }
        fold(attrs, 65536)
        assert attrs == {}


def test_any_value_folds_without_raising() -> None:
    rng = random.Random(5)
    values: list[Any] = [
        None,
        0,
        "",
        "{}",
        "[",
        "x",
        '{"contents": 3}',
        '{"contents": [1, {"parts": 2}, {"role": 4, "parts": [5]}]}',
        '{"config": {"system_instruction": {"parts": [{"text": 1}]}}}',
        '{"config": 7}',
        '{"content": {"parts": [{"function_call": 3}, {"function_response": {"id": [1]}}]}}',
        ["a"],
        {"k": 1},
    ]
    keys = [
        "gcp.vertex.agent.llm_request",
        "gcp.vertex.agent.llm_response",
        "gcp.vertex.agent.tool_call_args",
        "gcp.vertex.agent.tool_response",
    ]
    for _ in range(400):
        attrs = {k: rng.choice(values) for k in rng.sample(keys, rng.randint(1, 4))}
        fold(attrs, 300)
        for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
            if key in attrs:
                assert isinstance(json.loads(attrs[key]), list)
