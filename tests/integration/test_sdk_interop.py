"""Interoperability: spans of the official OpenAI GenAI instrumentation pass through our exporter unchanged and
carry our conversation id (stamped by our processor)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentwatch import configure, conversation, shutdown, trace
from agentwatch.sdk import KafkaSpanExporter
from tests.support.fake_openai import (  # noqa: F401
    FINAL_TEXT,
    MODEL,
    RESPONSE_MODEL,
    TOOL_CALL_ID,
    USAGE,
    fake_openai_server,
)
from tests.support.sdk import attr_json, consume, decode
from tests.support.spans import attrs, start_of

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionFunctionToolParam

pytestmark = pytest.mark.broker

TOOLS: list[ChatCompletionFunctionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "weather of a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def _scope(span: ReadableSpan) -> str:
    """The name of the instrumentation scope of a span (the SDK always sets one)."""
    assert span.instrumentation_scope is not None
    return span.instrumentation_scope.name


def any_value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return tuple(any_value(x) for x in v.array_value.values)
    return getattr(v, kind)


def test_openai_instrumentation_spans_pass_through_unchanged(broker, topic, fake_openai_server, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    from openai import OpenAI
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    memory = InMemorySpanExporter()
    exporter = KafkaSpanExporter(broker.bootstrap_servers, topic=topic)
    provider = TracerProvider()
    configure(exporter, tracer_provider=provider, extra_processors=[SimpleSpanProcessor(memory)])
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        client = OpenAI(base_url=fake_openai_server.base_url, api_key="test-key", max_retries=0)

        @trace(kind="tool")
        def get_weather(city: str, tool_call_id: str | None = None) -> dict:
            return {"city": city, "celsius": 18}

        @trace(kind="agent", name="weather-bot")
        def bot(question: str) -> str | None:
            messages: list = [{"role": "user", "content": question}]
            first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
            calls = first.choices[0].message.tool_calls
            assert calls is not None
            call = calls[0]
            assert call.type == "function"
            result = get_weather(**json.loads(call.function.arguments), tool_call_id=call.id)
            messages.append(first.choices[0].message.model_dump(exclude_none=True))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
            final = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
            return final.choices[0].message.content

        with conversation(id="interop-1", task="weather"):
            assert bot("Weather in Paris?") == FINAL_TEXT
        provider.force_flush()
        assert exporter.force_flush(20_000)
    finally:
        instrumentor.uninstrument()
        shutdown()
        provider.shutdown()

    made = {s.context.span_id: s for s in memory.get_finished_spans()}
    assert len(fake_openai_server.requests) == 2
    chats = [s for s in made.values() if _scope(s) != "agentwatch"]
    assert len(chats) == 2, [s.name for s in made.values()]
    agent = next(s for s in made.values() if s.name == "invoke_agent weather-bot")
    tool = next(s for s in made.values() if s.name == "execute_tool get_weather")
    assert attrs(tool)["gen_ai.tool.call.id"] == TOOL_CALL_ID
    for chat, usage in zip(sorted(chats, key=start_of), (USAGE["tool_call"], USAGE["final"]), strict=True):
        a = attrs(chat)
        assert chat.name == f"chat {MODEL}"
        assert a["gen_ai.conversation.id"] == "interop-1" and a["agentwatch.task"] == "weather"
        assert chat.parent is not None and chat.parent.span_id == agent.context.span_id
        assert a["gen_ai.response.model"] == RESPONSE_MODEL
        assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == usage
        assert "gen_ai.output.messages" in a  # content captured by the instrumentation (SPAN_ONLY)
    first_out = attr_json(min(chats, key=start_of), "gen_ai.output.messages")
    parts = [p for m in first_out for p in m["parts"]]
    assert any(p.get("type") == "tool_call" and p.get("id") == TOOL_CALL_ID for p in parts)

    records = consume(
        broker.bootstrap_servers, topic, lambda rs: sum(len(decode(r)) for r in rs) >= len(made)
    )
    assert {r.key for r in records} == {b"interop-1"}
    received = {int.from_bytes(span.span_id, "big"): span for r in records for _, span in decode(r)}
    assert set(received) == set(made)
    for span_id, original in made.items():
        got = received[span_id]
        assert got.name == original.name
        assert got.start_time_unix_nano == original.start_time and got.end_time_unix_nano == original.end_time
        assert {kv.key: any_value(kv.value) for kv in got.attributes} == {
            k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in attrs(original).items()
        }
