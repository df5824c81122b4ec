"""Messages logged as flattened attributes (OpenInference, OpenLLMetry), built by the real OTel SDK, rebuilt into
turns by both decoders and after re-keying."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from agentwatch.collector.decode import decode_message, encode_spans_otlp
from agentwatch.collector.flat_messages import fold
from agentwatch.collector.reconstruct import build_conversation
from agentwatch.wire.schema import Conversation
from tests.support.fake_openai import FINAL_TEXT, TOOL_CALL_ID, FakeOpenAI
from tests.support.spans import SpanFactory

RESULT = {"order": "A-1", "status": "shipped", "eta": "2026-12-02"}
ANSWER = "Order A-1 has shipped; it should arrive on 2026-12-02."


def _trace(f: SpanFactory, root: dict[str, Any], children: list[tuple[str, dict[str, Any]]]) -> None:
    """One trace: a root span with `root`'s attributes and, in order, a child span per (name, attributes)."""
    with f.tracer.start_as_current_span("run", attributes=root):
        for name, attributes in children:
            f.tracer.start_span(name, attributes=attributes).end()


def _openinference(f: SpanFactory) -> None:
    """A CHAIN with two LLM calls and a TOOL call between them, as OpenInference's instrumentors log them."""
    first = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o",
        "input.value": json.dumps({"messages": [{"role": "user", "content": "Where is A-1?"}]}),
        "output.value": json.dumps({"id": "chatcmpl-9xYz123", "created": 1712345678}),
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "You are a support agent.",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": "What is the status of order A-1?",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_a",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"order": "A-1"}',
        "llm.token_count.prompt": 42,
        "llm.token_count.completion": 17,
    }
    tool = {
        "openinference.span.kind": "TOOL",
        "tool.name": "lookup",
        "input.value": '{"order": "A-1"}',
        "output.value": json.dumps(RESULT),
    }
    second = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o",
        "output.value": json.dumps({"id": "chatcmpl-AbC987", "created": 1712345679}),
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "What is the status of order A-1?",
        "llm.input_messages.1.message.role": "tool",
        "llm.input_messages.1.message.tool_call_id": "call_a",
        "llm.input_messages.1.message.content": json.dumps(RESULT),
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.contents.0.message_content.type": "text",
        "llm.output_messages.0.message.contents.0.message_content.text": ANSWER,
    }
    root = {"openinference.span.kind": "CHAIN", "session.id": "s-1"}
    _trace(f, root, [("ChatCompletion", first), ("lookup", tool), ("ChatCompletion", second)])


def _openllmetry(f: SpanFactory) -> None:
    """Two model calls as OpenLLMetry logs them (no tool spans: the call and its result are in the messages)."""
    common = {"gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o", "session.id": "s-2"}
    question = {"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "What is the status of order A-1?"}
    first = {
        **common,
        **question,
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.finish_reason": "tool_calls",
        "gen_ai.completion.0.tool_calls.0.id": "call_b",
        "gen_ai.completion.0.tool_calls.0.name": "lookup",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"order": "A-1"}',
        "gen_ai.usage.prompt_tokens": 30,
        "gen_ai.usage.completion_tokens": 9,
    }
    second = {
        **common,
        **question,
        "gen_ai.prompt.1.role": "assistant",
        "gen_ai.prompt.1.tool_calls.0.id": "call_b",
        "gen_ai.prompt.1.tool_calls.0.name": "lookup",
        "gen_ai.prompt.2.role": "tool",
        "gen_ai.prompt.2.tool_call_id": "call_b",
        "gen_ai.prompt.2.content": json.dumps(RESULT),
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": ANSWER,
    }
    _trace(f, {"session.id": "s-2"}, [("openai.chat", first), ("openai.chat", second)])


def _conversation(payload: bytes, content_type: str | None = None) -> Conversation:
    return build_conversation(decode_message(payload, content_type))


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_openinference_messages_rebuild_the_turn(encoding: str) -> None:
    f = SpanFactory()
    _openinference(f)
    payload, kind = (f.protobuf(), None) if encoding == "protobuf" else (f.json(), "application/json")
    conv = _conversation(payload, kind)
    assert conv.not_captured == [] and conv.notes == []
    assert conv.system == "You are a support agent."
    (turn,) = conv.turns
    assert turn.input == "What is the status of order A-1?"
    assert turn.answer == ANSWER
    assert [(c.name, c.arguments, c.result) for c in turn.tool_calls] == [
        ("lookup", {"order": "A-1"}, RESULT)
    ]


def test_openllmetry_messages_give_the_call_and_its_result() -> None:
    f = SpanFactory()
    _openllmetry(f)
    conv = _conversation(f.protobuf())
    (turn,) = conv.turns
    assert turn.input == "What is the status of order A-1?"
    assert turn.answer == ANSWER
    assert [(c.name, c.arguments, c.result, c.call_id) for c in turn.tool_calls] == [
        ("lookup", {"order": "A-1"}, RESULT, "call_b")
    ]
    assert [(u.input_tokens, u.output_tokens) for u in turn.usage] == [(30, 9), (0, 0)]


def test_the_same_turns_after_re_keying() -> None:
    """Re-keyed spans are re-encoded from their records: the folded messages survive it."""
    f = SpanFactory()
    _openinference(f)
    records = decode_message(f.protobuf())
    again = decode_message(encode_spans_otlp(records))
    assert build_conversation(again).turns == build_conversation(records).turns


def test_a_model_turn_without_text_has_no_answer_not_the_response_body() -> None:
    """A trace whose root is a model call that only calls a tool: `output.value` (the response's JSON body) is
    not the answer, and `input.value` (the request's) not the input."""
    f = SpanFactory()
    model = {
        "openinference.span.kind": "LLM",
        "session.id": "s-3",
        "input.value": json.dumps({"messages": [{"role": "user", "content": "hi"}], "model": "gpt-4o"}),
        "output.value": json.dumps({"id": "chatcmpl-9xYz123", "choices": []}),
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Cancel order A-1",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "cancel",
    }
    f.tracer.start_span("ChatCompletion", attributes=model).end()
    (turn,) = _conversation(f.protobuf()).turns
    assert turn.input == "Cancel order A-1"
    assert turn.answer is None
    assert [c.name for c in turn.tool_calls] == ["cancel"]


def test_genai_messages_win_over_flattened_ones() -> None:
    attrs: dict[str, Any] = {
        "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", "content": "kept"}]}]',
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "dropped",
        "llm.output_messages.0.message.content": "folded",
    }
    fold(attrs, 65536)
    assert json.loads(attrs["gen_ai.input.messages"])[0]["parts"][0]["content"] == "kept"
    assert json.loads(attrs["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "folded"}]}
    ]
    assert not any(k.startswith("llm.") for k in attrs)


def test_fields_out_of_form_are_skipped() -> None:
    attrs: dict[str, Any] = {
        "llm.input_messages.x.message.content": "no index",
        "llm.input_messages.0.content": "no `message.` word",
        "llm.input_messages.5000.message.content": "index past the cap",
        "llm.input_messages.².message.content": "a digit that is no decimal",
        "llm.input_messages.٣.message.content": "a decimal that is not ASCII",
        f"llm.input_messages.{'9' * 5000}.message.content": "more digits than int() reads",
        "llm.input_messages.1.message.contents.a.message_content.text": "no content index",
        "llm.input_messages.2.message.tool_calls.0.tool_call.function.name": 7,
        "llm.input_messages.3.message.content": None,
    }
    fold(attrs, 65536)
    assert json.loads(attrs["gen_ai.input.messages"]) == [
        {"role": "user", "parts": []},
        {"role": "user", "parts": [{"type": "tool_call", "id": None, "name": "7", "arguments": None}]},
    ]


def test_folded_messages_are_bounded_oldest_first_system_and_latest_kept() -> None:
    attrs: dict[str, Any] = {
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "rules",
    }
    for i in range(1, 40):
        attrs[f"llm.input_messages.{i}.message.role"] = "user" if i % 2 else "assistant"
        attrs[f"llm.input_messages.{i}.message.content"] = f"message {i} " + "x" * 200
    fold(attrs, 2000)
    text = attrs["gen_ai.input.messages"]
    assert len(text) <= 2000
    kept = json.loads(text)
    assert kept[0] == {"role": "system", "parts": [{"type": "text", "content": "rules"}]}
    assert kept[-1]["parts"][0]["content"].startswith("message 39 ")
    contents = [m["parts"][0]["content"].split(" x")[0] for m in kept[1:]]
    assert contents == [f"message {i}" for i in range(40 - len(contents), 40)]  # the latest, in order


def test_content_and_contents_of_one_message_are_read_once() -> None:
    attrs: dict[str, Any] = {
        "llm.output_messages.0.message.content": "Done.",
        "llm.output_messages.0.message.contents.0.message_content.type": "text",
        "llm.output_messages.0.message.contents.0.message_content.text": "Done.",
        "llm.output_messages.1.message.contents.1.message_content.text": "second",
        "llm.output_messages.1.message.contents.0.message_content.text": "first",
    }
    fold(attrs, 65536)
    assert [[p["content"] for p in m["parts"]] for m in json.loads(attrs["gen_ai.output.messages"])] == [
        ["Done."],
        ["first", "second"],
    ]


def test_any_value_of_any_field_folds_into_readable_json() -> None:
    """Hostile values: every field of both forms given every kind of attribute value."""
    rng = random.Random(7)
    values: list[Any] = ["text", "", 0, -3, 2.5, True, None, [1, "a"], {"k": [None]}, "\ud800", "x" * 300]
    fields = [
        "message.role",
        "message.content",
        "message.tool_call_id",
        "message.contents.0.message_content.text",
        "message.tool_calls.0.tool_call.id",
        "message.tool_calls.0.tool_call.function.name",
        "message.tool_calls.1.tool_call.function.arguments",
        "message.function_call_name",
        "role",
        "content",
        "tool_calls.0.arguments",
    ]
    prefixes = ["llm.input_messages.", "llm.output_messages.", "gen_ai.prompt.", "gen_ai.completion."]
    for _ in range(500):
        attrs = {
            f"{rng.choice(prefixes)}{rng.randrange(3)}.{rng.choice(fields)}": rng.choice(values)
            for _ in range(rng.randrange(1, 12))
        }
        fold(attrs, 256)
        assert not any(k.startswith(tuple(prefixes)) for k in attrs)
        for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
            if key in attrs:
                assert all(isinstance(m["parts"], list) for m in json.loads(attrs[key]))


def test_openinference_instrumentation_of_openai() -> None:
    """The real OpenInference instrumentor of `openai` against a local fake model: a tool-calling loop without
    agent spans (each model call a turn of its own) and the same loop under an agent span."""
    from openai import OpenAI
    from openinference.instrumentation import using_session
    from openinference.instrumentation.openai import OpenAIInstrumentor

    f = SpanFactory()
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=f.provider)
    question = "What is the weather in Paris?"
    tools: Any = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    try:
        with FakeOpenAI() as server:
            client = OpenAI(base_url=server.base_url, api_key="test")

            def loop() -> str | None:
                chat: list[Any] = [
                    {"role": "system", "content": "Weather only."},
                    {"role": "user", "content": question},
                ]
                first = client.chat.completions.create(model="gpt-4o-mini", messages=chat, tools=tools)
                call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
                chat.append(first.choices[0].message.model_dump(exclude_none=True))
                chat.append({"role": "tool", "tool_call_id": call.id, "content": '{"temp_c": 18}'})
                return (
                    client.chat.completions.create(model="gpt-4o-mini", messages=chat)
                    .choices[0]
                    .message.content
                )

            with using_session("oi-plain"):
                loop()
            agent = {"openinference.span.kind": "AGENT", "session.id": "oi-agent", "input.value": question}
            with f.tracer.start_as_current_span("weather_bot", attributes=agent) as span:
                span.set_attribute("output.value", loop() or "")
    finally:
        instrumentor.uninstrument()
    records = decode_message(f.protobuf())
    plain = build_conversation([r for r in records if r.conversation_id == "oi-plain"])
    assert plain.system == "Weather only." and plain.not_captured == []
    # the two model calls are one tool loop: one turn, from the question to the answer
    (loop_turn,) = plain.turns
    assert (loop_turn.input, loop_turn.answer) == (question, FINAL_TEXT)
    (call,) = loop_turn.tool_calls
    assert (call.name, call.call_id, call.arguments, call.result) == (
        "get_weather",
        TOOL_CALL_ID,
        {"city": "Paris"},
        {"temp_c": 18},
    )
    assert len(loop_turn.usage) == 2
    model_calls = sorted((r for r in records if r.conversation_id == "oi-plain"), key=lambda r: r.start_ns)
    assert loop_turn.duration_ms == (model_calls[-1].end_ns - model_calls[0].start_ns) / 1e6
    assert not any("no answer" in note for note in plain.notes)
    (turn,) = build_conversation([r for r in records if r.conversation_id == "oi-agent"]).turns
    assert (turn.input, turn.answer) == (question, FINAL_TEXT)
    assert [(c.name, c.result) for c in turn.tool_calls] == [("get_weather", {"temp_c": 18})]
