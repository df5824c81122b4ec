"""The Vercel AI SDK's telemetry (`ai.*` keys), built with the real OTel SDK in the shapes AI SDK 4 and 5 write,
rebuilt into turns by both decoders and after re-keying."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from agentwatch.collector.decode import decode_message, encode_spans_otlp
from agentwatch.collector.reconstruct import build_conversation
from agentwatch.collector.vercel_ai import fold
from agentwatch.wire.schema import Conversation
from tests.support.spans import SpanFactory

QUESTION = "What is the status of order A-1?"
SYSTEM = "You are a support agent."
RESULT = {"order": "A-1", "status": "shipped"}
ANSWER = "Order A-1 has shipped."


def _request(f: SpanFactory, session: str, question: str, v5: bool = False, tool_span: bool = True) -> None:
    """One chat request as a Next.js route logs it: an HTTP span, `ai.streamText` below it, and below that a
    model call that asks for a tool, the tool call, and a model call that answers."""
    base: dict[str, Any] = {
        "ai.telemetry.functionId": "support-chat",
        "ai.telemetry.metadata.sessionId": session,
    }
    if v5:
        asked: dict[str, Any] = {"toolCallId": "call_v", "toolName": "lookup", "input": {"order": "A-1"}}
        result: dict[str, Any] = {
            "type": "tool-result",
            "toolCallId": "call_v",
            "toolName": "lookup",
            "output": {"type": "json", "value": RESULT},
        }
    else:
        asked = {
            "toolCallType": "function",
            "toolCallId": "call_v",
            "toolName": "lookup",
            "args": '{"order":"A-1"}',
        }
        result = {"type": "tool-result", "toolCallId": "call_v", "toolName": "lookup", "result": RESULT}
    history = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": [{"type": "text", "text": question}]},
    ]
    model: dict[str, Any] = {
        "gen_ai.system": "openai.chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o",
    }
    tracer = f.tracer
    with tracer.start_as_current_span("POST /api/chat", attributes={"http.method": "POST"}):
        call: dict[str, Any] = {
            **base,
            "operation.name": "ai.streamText support-chat",
            "ai.operationId": "ai.streamText",
            "ai.model.id": "gpt-4o",
            "ai.prompt": json.dumps({"system": SYSTEM, "messages": history[1:]}),
            "ai.response.text": ANSWER,
            "ai.usage.promptTokens": 110,
            "ai.usage.completionTokens": 30,
        }
        with tracer.start_as_current_span("ai.streamText", attributes=call):
            first: dict[str, Any] = {
                **base,
                **model,
                "ai.operationId": "ai.streamText.doStream",
                "ai.prompt.messages": json.dumps(history),
                "ai.response.text": "",
                "ai.response.toolCalls": json.dumps([asked]),
                "gen_ai.usage.input_tokens": 50,
                "gen_ai.usage.output_tokens": 10,
            }
            tracer.start_span("ai.streamText.doStream", attributes=first).end()
            if tool_span:
                tool: dict[str, Any] = {
                    **base,
                    "ai.operationId": "ai.toolCall",
                    "ai.toolCall.name": "lookup",
                    "ai.toolCall.id": "call_v",
                    "ai.toolCall.args": '{"order":"A-1"}',
                    "ai.toolCall.result": json.dumps(RESULT),
                }
                tracer.start_span("ai.toolCall", attributes=tool).end()
            call_part = {"type": "tool-call", **{k: v for k, v in asked.items() if k != "toolCallType"}}
            second: dict[str, Any] = {
                **base,
                **model,
                "ai.operationId": "ai.streamText.doStream",
                "ai.prompt.messages": json.dumps(
                    [
                        *history,
                        {"role": "assistant", "content": [call_part]},
                        {"role": "tool", "content": [result]},
                    ]
                ),
                "ai.response.text": ANSWER,
                "gen_ai.usage.input_tokens": 60,
                "gen_ai.usage.output_tokens": 20,
            }
            tracer.start_span("ai.streamText.doStream", attributes=second).end()


def _conversation(payload: bytes, content_type: str | None = None) -> Conversation:
    return build_conversation(decode_message(payload, content_type))


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
@pytest.mark.parametrize("v5", [False, True])
def test_a_stream_text_call_is_one_turn_with_its_tool_call(encoding: str, v5: bool) -> None:
    f = SpanFactory(service="next-app")
    _request(f, "chat-7", QUESTION, v5=v5)
    payload, kind = (f.protobuf(), None) if encoding == "protobuf" else (f.json(), "application/json")
    conv = _conversation(payload, kind)
    assert conv.notes == [] and conv.not_captured == []
    assert (conv.conversation_id, conv.agent, conv.system) == ("chat-7", "support-chat", SYSTEM)
    (turn,) = conv.turns
    assert (turn.input, turn.answer) == (QUESTION, ANSWER)
    assert [(c.name, c.arguments, c.result, c.call_id) for c in turn.tool_calls] == [
        ("lookup", {"order": "A-1"}, RESULT, "call_v")
    ]
    # the model calls' usage, once: the streamText span's own totals are not a model call of their own
    assert [(u.model, u.input_tokens, u.output_tokens) for u in turn.usage] == [
        ("gpt-4o", 50, 10),
        ("gpt-4o", 60, 20),
    ]


@pytest.mark.parametrize("v5", [False, True])
def test_tool_calls_without_tool_spans_are_read_from_the_prompt_messages(v5: bool) -> None:
    """A tool without an execute function has no `ai.toolCall` span: the call is in the first model call's
    response, its result in the second's prompt."""
    f = SpanFactory()
    _request(f, "chat-8", QUESTION, v5=v5, tool_span=False)
    (turn,) = _conversation(f.protobuf()).turns
    assert [(c.name, c.arguments, c.result, c.call_id) for c in turn.tool_calls] == [
        ("lookup", {"order": "A-1"}, RESULT, "call_v")
    ]


def test_requests_of_one_session_are_the_turns_of_one_conversation() -> None:
    f = SpanFactory()
    _request(f, "chat-9", QUESTION)
    _request(f, "chat-9", "And order B-2?")
    records = decode_message(f.protobuf())
    assert {r.conversation_id for r in records} == {"chat-9"}  # the HTTP spans too, by their trace
    conv = build_conversation(records)
    assert [t.input for t in conv.turns] == [QUESTION, "And order B-2?"]


def test_the_same_turns_after_re_keying() -> None:
    f = SpanFactory()
    _request(f, "chat-7", QUESTION)
    records = decode_message(f.protobuf())
    again = decode_message(encode_spans_otlp(records))
    assert build_conversation(again).turns == build_conversation(records).turns
    assert not any(
        key.startswith("ai.") for r in again for key in r.attrs if key != "ai.telemetry.metadata.sessionId"
    )


def test_a_generate_text_call_with_a_plain_prompt() -> None:
    f = SpanFactory()
    attributes = {
        "ai.operationId": "ai.generateText",
        "ai.prompt": json.dumps({"system": SYSTEM, "prompt": QUESTION}),
        "ai.response.text": ANSWER,
    }
    f.tracer.start_span("ai.generateText", attributes=attributes).end()
    conv = _conversation(f.protobuf())
    assert conv.system == SYSTEM
    assert [(t.input, t.answer) for t in conv.turns] == [(QUESTION, ANSWER)]


def test_genai_attributes_win_over_the_sdk_keys() -> None:
    attrs: dict[str, Any] = {
        "ai.operationId": "ai.generateText.doGenerate",
        "gen_ai.operation.name": "text_completion",
        "gen_ai.output.messages": '[{"role": "assistant", "parts": [{"type": "text", "content": "kept"}]}]',
        "ai.response.text": "dropped",
        "ai.toolCall.name": "unused",
    }
    fold(attrs, 65536)
    assert attrs == {
        "gen_ai.operation.name": "text_completion",
        "gen_ai.output.messages": '[{"role": "assistant", "parts": [{"type": "text", "content": "kept"}]}]',
        "gen_ai.tool.name": "unused",
    }


def test_a_prompt_cut_at_the_attribute_limit_gives_no_input_not_an_error() -> None:
    attrs: dict[str, Any] = {"ai.operationId": "ai.generateText", "ai.prompt": '{"prompt": "What is the st'}
    fold(attrs, 65536)
    assert attrs == {"gen_ai.operation.name": "invoke_agent"}


def test_any_value_of_any_key_folds_without_raising() -> None:
    rng = random.Random(7)
    values: list[Any] = [
        None,
        0,
        1.5,
        True,
        "",
        "x",
        "[",
        "{}",
        "[1, 2]",
        '{"prompt": 3}',
        '{"messages": [1, "a", {"role": 4}]}',
        '[{"role": "user", "content": [{"type": "tool-call"}, {"type": "tool-result", "output": 5}, 7]}]',
        '[{"toolCallId": null, "toolName": ["x"], "args": {"a": 1}}, 3]',
        ["a", 1],
        {"k": "v"},
    ]
    keys = [
        "ai.operationId",
        "ai.prompt",
        "ai.prompt.messages",
        "ai.response.text",
        "ai.response.object",
        "ai.response.toolCalls",
        "ai.toolCall.name",
        "ai.toolCall.args",
        "ai.telemetry.functionId",
    ]
    ops = ["ai.generateText", "ai.streamText.doStream", "ai.toolCall", "ai.embed", 5, None]
    for _ in range(500):
        attrs = {k: rng.choice(values) for k in rng.sample(keys, rng.randint(1, len(keys)))}
        attrs["ai.operationId"] = rng.choice(ops)
        fold(attrs, 200)
        for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
            if key in attrs:
                assert isinstance(json.loads(attrs[key]), list)
