"""OpenAI's `tool_calls` and `tool_call_id` on messages of a `gen_ai.*.messages` attribute, beside GenAI parts
(LiteLLM's OpenTelemetry callback) or without any: read as `tool_call` and `tool_call_response` parts."""

from __future__ import annotations

import json

from agentwatch.collector.foreign_messages import response_of
from agentwatch.collector.messages import messages

CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}


def test_parts_with_openais_calls_and_call_id_beside_them() -> None:
    logged = [
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
        {"role": "assistant", "parts": [{"type": "text", "content": ""}], "tool_calls": [CALL]},
        {"role": "tool", "parts": [{"type": "text", "content": '{"temp": 18}'}], "tool_call_id": "call_1"},
    ]
    found = messages(json.dumps(logged))
    assert found is not None
    assert found[0] == logged[0]  # a message without them as it is
    assert found[1]["parts"] == [
        {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}
    ]
    assert found[2]["parts"] == [{"type": "tool_call_response", "id": "call_1", "response": '{"temp": 18}'}]


def test_a_call_already_a_part_is_not_read_twice() -> None:
    part = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}
    logged = [{"role": "assistant", "parts": [part], "tool_calls": [CALL]}]
    found = messages(json.dumps(logged))
    assert found is not None and found[0]["parts"] == [part]


def test_openai_messages_without_parts() -> None:
    logged = [
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "content": '{"temp": 18}', "tool_call_id": "call_1"},
    ]
    found = messages(json.dumps(logged))
    assert found is not None
    assert [p["type"] for m in found for p in m["parts"]] == ["tool_call", "tool_call_response"]
    assert found[1]["parts"][0]["id"] == "call_1"


def _result(response: object) -> object:
    logged = [{"role": "user", "parts": [{"type": "tool_call_response", "id": "c1", "response": response}]}]
    found = messages(json.dumps(logged))
    assert found is not None
    return response_of(found[0]["parts"][0])


def test_a_result_in_bedrocks_content_blocks_is_the_value_it_holds() -> None:
    """OpenLLMetry's Bedrock instrumentation logs a `toolResult`'s content blocks, in JSON or structured."""
    assert _result('[{"json": {"temp": 18}}]') == {"temp": 18}
    assert _result([{"json": {"temp": 18}}]) == {"temp": 18}
    assert _result([{"text": "18 degrees"}, {"text": "cloudy"}]) == "18 degrees\ncloudy"
    assert _result([{"json": {"temp": 18}, "status": "ok"}]) == [{"json": {"temp": 18}, "status": "ok"}]


def test_an_mcp_result_is_the_value_its_text_holds() -> None:
    """MCP's text content blocks (the OpenAI Agents SDK's MCP tools) and a `CallToolResult`."""
    block = {"type": "text", "text": '{"temp": 18}'}
    assert _result(block) == {"temp": 18}
    assert _result([block, {"type": "text", "text": "and cloudy"}]) == '{"temp": 18}\nand cloudy'
    assert _result({"content": [block], "isError": False}) == {"temp": 18}
    assert _result({"content": [block], "structuredContent": {"temp": 18.5}}) == {"temp": 18.5}
    assert _result({"type": "text", "text": "plain", "extra": 1}) == {
        "type": "text",
        "text": "plain",
        "extra": 1,
    }
