"""Spans of one conversation from the official OpenAI GenAI instrumentation, plus tool spans that carry no
conversation id, exported the way the OpenTelemetry Collector's kafka exporter writes them (a trace split over
several messages keyed by hex trace id; or one span per message with no key, shuffled): the collector joins
them by trace and scores exactly one conversation, with one and with two collector processes."""

from __future__ import annotations

import json
import random
import re
import signal
import time
from typing import TYPE_CHECKING, Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.collector_kafka import (
    ServiceThread,
    TopicReader,
    create_topic,
    otlp_bytes,
    producer,
    scores_of,
    start_collector_process,
    unique,
)
from tests.support.collector_kafka import collector_settings as _collector_settings
from tests.support.fake_openai import FINAL_TEXT, MODEL, TOOL_CALL_ID, USAGE, FakeOpenAI
from tests.support.spans import attrs

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionFunctionToolParam

pytestmark = pytest.mark.broker

TOOLS: list[ChatCompletionFunctionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
QUESTIONS = ["What is the weather in Paris?", "And tomorrow in Paris?"]


class _ConversationOnChatSpans(SpanProcessor):
    """Puts `gen_ai.conversation.id` on chat spans only, as instrumentations that know it do; tool spans of
    other libraries stay without it."""

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if span.name.startswith("chat"):
            span.set_attribute("gen_ai.conversation.id", self.conversation_id)


@pytest.fixture(scope="module")
def conversation_spans(monkeypatch_module) -> tuple[str, list[ReadableSpan]]:
    """Two turns (two traces) of `weather-bot`, each: invoke_agent → chat (tool call) → execute_tool → chat."""
    monkeypatch_module.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    monkeypatch_module.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    from openai import OpenAI
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    cid = unique("join")
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "weather-bot", "service.version": "0.3.0"})
    )
    provider.add_span_processor(_ConversationOnChatSpans(cid))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("weather-bot")
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with FakeOpenAI() as server:
            client = OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
            for question in QUESTIONS:
                with tracer.start_as_current_span("invoke_agent weather-bot") as agent:
                    agent.set_attributes(
                        {
                            "gen_ai.operation.name": "invoke_agent",
                            "gen_ai.agent.name": "weather-bot",
                            "gen_ai.conversation.id": cid,
                            "agentwatch.task": "weather",
                            "agentwatch.expected": json.dumps(
                                {"tools": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
                            ),
                        }
                    )
                    messages: list = [{"role": "user", "content": question}]
                    first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
                    calls = first.choices[0].message.tool_calls
                    assert calls is not None
                    call = calls[0]
                    assert call.type == "function"
                    with tracer.start_as_current_span("execute_tool get_weather") as tool:
                        result = json.dumps({"temp_c": 18, "sky": "cloudy"})
                        tool.set_attributes(
                            {
                                "gen_ai.operation.name": "execute_tool",
                                "gen_ai.tool.name": "get_weather",
                                "gen_ai.tool.call.id": call.id,
                                "gen_ai.tool.call.arguments": call.function.arguments,
                                "gen_ai.tool.call.result": result,
                            }
                        )
                    messages.append(first.choices[0].message.model_dump(exclude_none=True))
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
                    client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
                    agent.set_attribute(
                        "gen_ai.output.messages",
                        json.dumps(
                            [{"role": "assistant", "parts": [{"type": "text", "content": FINAL_TEXT}]}]
                        ),
                    )
                    agent.set_attribute(
                        "gen_ai.input.messages",
                        json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}]),
                    )
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    spans = list(memory.get_finished_spans())  # in end order: chat, tool, chat, agent per trace
    assert len(spans) == 8
    assert sum("gen_ai.conversation.id" not in attrs(s) for s in spans) == 2  # the tool spans
    return cid, spans


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _trace_hex(span: ReadableSpan) -> bytes:
    return format(span.context.trace_id, "032x").encode()


def by_trace_batches(spans: list[ReadableSpan]) -> list[tuple[bytes | None, bytes]]:
    """`partition_traces_by_id`: one trace per message keyed by hex trace id, one message per export batch. The
    batches (in end order: chat | tool | chat, invoke_agent) split each trace over three messages, and the tool
    span, alone in its message, arrives before any span of its trace that names the conversation."""
    out: list[tuple[bytes | None, bytes]] = []
    i, sizes = 0, [1, 1, 2]
    while i < len(spans):
        batch = spans[i : i + sizes[0]]
        i += sizes[0]
        sizes = sizes[1:] + sizes[:1]
        for tid in dict.fromkeys(_trace_hex(s) for s in batch):
            out.append((tid, otlp_bytes([s for s in batch if _trace_hex(s) == tid])))
    return out


def single_spans_shuffled(spans: list[ReadableSpan]) -> list[tuple[bytes | None, bytes]]:
    """One span per message, no key, in shuffled order."""
    out: list[tuple[bytes | None, bytes]] = [(None, otlp_bytes([s])) for s in spans]
    random.Random(7).shuffle(out)
    return out


LAYOUTS = {"by_trace": by_trace_batches, "single_spans_shuffled": single_spans_shuffled}


def _settings(bs: str, topic: str, name: str) -> Any:
    settings = _collector_settings(bs, [topic], unique(name), idle_timeout_s=3.0, trace_join_timeout_s=10.0)
    create_topic(bs, settings.collector.rekey_topic, 4)
    return settings


def _send(bs: str, topic: str, records: list[tuple[bytes | None, bytes]]) -> None:
    out = producer(bs)
    for key, value in records:
        out.send(topic, value=value, key=key)
    out.flush()
    out.close()


def _check_one_conversation(records: list[Any], cid: str) -> None:
    scores = scores_of(records)
    assert [s["conversation_id"] for s in scores] == [cid], [
        (s["conversation_id"], s["turns"]) for s in scores
    ]
    s = scores[0]
    assert (s["agent"], s["version"], s["task"]) == ("weather-bot", "0.3.0", "weather")
    assert s["turns"] == 2
    assert s["input_tokens"] == 2 * (USAGE["tool_call"][0] + USAGE["final"][0])
    assert s["output_tokens"] == 2 * (USAGE["tool_call"][1] + USAGE["final"][1])
    for turn in s["turn_scores"]:
        assert turn["tool"]["binary"] is True, turn


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_one_collector_joins_tool_spans_to_their_conversation(broker, conversation_spans, layout):
    cid, spans = conversation_spans
    bs = broker.bootstrap_servers
    topic = unique("otlp")
    create_topic(bs, topic, 4)
    settings = _settings(bs, topic, "join1")
    seen = []
    from agentwatch.collector.service import default_scorer

    score = default_scorer(settings)

    def recording_scorer(conv):
        seen.append(conv)
        return score(conv)

    reader = TopicReader(bs, settings.collector.scores_topic)
    with ServiceThread(settings, scorer=recording_scorer) as svc:
        _send(bs, topic, LAYOUTS[layout](spans))
        reader.wait(lambda r: len(r) >= 1, 30)
        time.sleep(4.0)  # a stray tool span would be scored on its own after the idle timeout
        reader.poll()
        assert svc.error is None
        join = svc.service.join.stats
    reader.close()
    _check_one_conversation(reader.records, cid)
    [conv] = seen
    assert [len(t.tool_calls) for t in conv.turns] == [1, 1]
    call = conv.turns[0].tool_calls[0]
    assert (call.name, call.arguments, call.call_id) == ("get_weather", {"city": "Paris"}, TOOL_CALL_ID)
    assert conv.turns[-1].answer == FINAL_TEXT
    assert not any("outside" in n or "treated as roots" in n for n in conv.notes), conv.notes
    assert join.joined_spans == 2 and join.timed_out_spans == 0


_ASSIGNED = re.compile(r"assigned \[(.*)\]")


def _assigned(path) -> set[str]:
    lines = _ASSIGNED.findall(path.read_text()) if path.exists() else []
    return set(re.findall(r"'([^']+)'", lines[-1])) if lines else set()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_two_collector_processes_join_tool_spans_to_their_conversation(
    broker, conversation_spans, layout, tmp_path
):
    cid, spans = conversation_spans
    bs = broker.bootstrap_servers
    topic = unique("otlp")
    create_topic(bs, topic, 4)
    settings = _settings(bs, topic, "join2")
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    procs = [start_collector_process(settings, str(p)) for p in logs]
    reader = TopicReader(bs, settings.collector.scores_topic)
    try:
        want = {f"{t}[{p}]" for t in (topic, settings.collector.rekey_topic) for p in range(4)}
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            a, b = (_assigned(p) & want for p in logs)
            if a and b and not a & b and a | b == want:
                break
            assert all(p.poll() is None for p in procs)
            time.sleep(0.2)
        else:
            pytest.fail(f"group did not settle: {[_assigned(p) for p in logs]}")
        _send(bs, topic, LAYOUTS[layout](spans))
        reader.wait(lambda r: len(r) >= 1, 40)
        time.sleep(5.0)
        reader.poll()
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(20)
        reader.close()
    _check_one_conversation(reader.records, cid)


def test_two_agents_reusing_conversation_ids_are_scored_separately(broker):
    from tests.support.spans import SpanFactory, sdk_turn

    bs = broker.bootstrap_servers
    topic = unique("spans")
    create_topic(bs, topic, 2)
    settings = _collector_settings(bs, [topic], unique("agents"))
    out = producer(bs)
    headers = [("content-type", b"application/x-protobuf"), ("agentwatch-key", b"conversation")]
    for agent in ("bot-a", "bot-b"):
        for cid in ("1", "2"):
            f = SpanFactory(service=agent)
            sdk_turn(f.tracer, cid, f"question {cid}", f"answer of {agent}", [], agent=agent)
            out.send(topic, value=f.protobuf(), key=cid.encode(), headers=headers)
    out.flush()
    out.close()
    reader = TopicReader(bs, settings.collector.scores_topic)
    with ServiceThread(settings) as svc:
        reader.wait(lambda r: len(r) >= 4, 30)
        time.sleep(0.5)
        reader.poll()
        assert svc.error is None
    reader.close()
    assert sorted((s["agent"], s["conversation_id"], s["turns"]) for s in scores_of(reader.records)) == [
        ("bot-a", "1", 1),
        ("bot-a", "2", 1),
        ("bot-b", "1", 1),
        ("bot-b", "2", 1),
    ]
