"""Messages the official OpenAI GenAI instrumentation logs as OTLP log records (content in events only), sent
through a real broker the way the OpenTelemetry Collector's kafka exporter writes traces and logs (`otlp_proto`,
no key, spans and log records on topics of their own): the collector joins each call's messages to its span and
scores one conversation with the question, the tool call and the answer; an application log beside them is
skipped, and a message that is no log records is dead-lettered with its reason."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

from agentwatch.collector.deadletter import REASON_HEADER
from agentwatch.collector.rekey import REKEY_HEADERS
from agentwatch.collector.service import default_scorer
from tests.support.collector_kafka import (
    ServiceThread,
    TopicReader,
    collector_settings,
    create_topic,
    producer,
    unique,
)
from tests.support.fake_openai import FINAL_TEXT, MODEL, TOOL_CALL_ID, USAGE, FakeOpenAI
from tests.support.spans import SpanFactory

pytestmark = pytest.mark.broker

QUESTION = "What is the weather in Paris?"
RESULT = {"temp_c": 18, "sky": "cloudy"}
TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


@pytest.fixture(scope="module")
def telemetry() -> tuple[str, bytes, bytes]:
    """One turn of `weather-bot` (invoke_agent → chat → execute_tool → chat), its messages only in log records:
    (conversation id, spans as OTLP protobuf, log records as OTLP protobuf)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "EVENT_ONLY")
    mp.setenv("OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT", "true")
    from openai import OpenAI
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    cid = unique("logs")
    factory = SpanFactory(service="weather-bot", version="0.3.0")
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=factory.provider, logger_provider=factory.logger_provider)
    try:
        with FakeOpenAI() as server:
            client = OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
            agent = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "weather-bot",
                "gen_ai.conversation.id": cid,
                "agentwatch.task": "weather",
                "agentwatch.expected": json.dumps(
                    {"tools": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
                ),
            }
            with factory.tracer.start_as_current_span("invoke_agent weather-bot", attributes=agent):
                messages: list[Any] = [{"role": "user", "content": QUESTION}]
                first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
                asked = first.choices[0].message
                assert asked.tool_calls is not None
                call = asked.tool_calls[0]
                tool = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": call.id,
                }
                with factory.tracer.start_as_current_span("execute_tool get_weather", attributes=tool):
                    pass  # content capture is in events only: the tool span logs no arguments or result
                messages += [
                    asked.model_dump(exclude_none=True),
                    {"role": "tool", "tool_call_id": call.id, "content": json.dumps(RESULT)},
                ]
                client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    finally:
        instrumentor.uninstrument()
        mp.undo()
    spans, logs = factory.spans(), factory.logs()
    assert len(spans) == 4 and len(logs) == 2
    assert not any("gen_ai.input.messages" in (s.attributes or {}) for s in spans)
    return cid, factory.protobuf(), encode_logs(logs).SerializeToString()


def _collector(bs: str, prefix: str, idle_timeout_s: float) -> tuple[Any, str, str]:
    """Settings of a collector reading a spans topic and a logs topic of its own (created, with its rekey
    topic): (settings, spans topic, logs topic)."""
    name = unique(prefix)
    spans_topic, logs_topic = f"{name}-spans", f"{name}-logs"
    settings = collector_settings(
        bs,
        [spans_topic],
        name,
        log_topics=[logs_topic],
        idle_timeout_s=idle_timeout_s,
        trace_join_timeout_s=10.0,
    )
    for topic in (spans_topic, logs_topic, settings.collector.rekey_topic):
        create_topic(bs, topic, 2)
    return settings, spans_topic, logs_topic


def _application_log() -> bytes:
    """An ordinary log record of the same service, with no event name."""
    from opentelemetry.proto.logs.v1.logs_pb2 import LogsData

    data = LogsData()
    record = data.resource_logs.add().scope_logs.add().log_records.add()
    record.body.string_value = "GET /health 200"
    record.time_unix_nano = 1
    return data.SerializeToString()


@pytest.mark.parametrize(
    ("logs_first", "keyed"),
    [(True, False), (False, False), (True, True)],
    ids=["logs_first", "spans_first", "spans_keyed_by_conversation"],
)
def test_messages_logged_as_log_records_join_their_spans(
    broker, telemetry, logs_first: bool, keyed: bool
) -> None:
    """The spans as the OTel Collector sends them (no key), or as our SDK does (keyed by conversation, with
    `agentwatch-key: conversation`); the log records before or after them."""
    cid, spans, logs = telemetry
    bs = broker.bootstrap_servers
    settings, spans_topic, logs_topic = _collector(bs, "otlp", idle_timeout_s=2.0)
    out = producer(bs)
    key, headers = (cid.encode(), REKEY_HEADERS) if keyed else (None, None)
    sent = [(logs_topic, logs, None, None), (spans_topic, spans, key, headers)]
    for topic, value, k, h in sent if logs_first else sent[::-1]:
        out.send(topic, value=value, key=k, headers=h)
    out.send(logs_topic, value=_application_log())
    out.send(logs_topic, value=b"not a log record", key=b"bad")
    out.flush()
    out.close()

    seen = []
    score = default_scorer(settings)

    def recording_scorer(conv: Any) -> Any:
        seen.append(conv)
        return score(conv)

    scores = TopicReader(bs, settings.collector.scores_topic)
    dlq = TopicReader(bs, settings.collector.dead_letter_topic)
    with ServiceThread(settings, scorer=recording_scorer) as svc:
        records = scores.wait(lambda r: len(r) >= 1, 40)
        letters = dlq.wait(lambda r: len(r) >= 1, 10)
        assert svc.error is None
        stats = svc.service.stats
    scores.close()
    dlq.close()

    assert [json.loads(r.value)["conversation_id"] for r in records] == [cid]
    (conv,) = seen
    assert conv.not_captured == [] and conv.notes == []
    (turn,) = conv.turns
    assert (turn.input, turn.answer) == (QUESTION, FINAL_TEXT)
    assert [(c.name, c.arguments, c.result, c.call_id) for c in turn.tool_calls] == [
        ("get_weather", {"city": "Paris"}, RESULT, TOOL_CALL_ID)
    ]
    assert [(u.input_tokens, u.output_tokens) for u in turn.usage] == [USAGE["tool_call"], USAGE["final"]]
    s = json.loads(records[0].value)
    assert (s["agent"], s["version"], s["task"]) == ("weather-bot", "0.3.0", "weather")
    assert s["turn_scores"][0]["tool"]["binary"] is True

    assert [(r.key, dict(r.headers)[REASON_HEADER]) for r in letters] == [(b"bad", b"not_otlp")]
    assert (stats.log_records_consumed, stats.log_records_skipped, stats.orphan_fragments) == (3, 1, 0)


def test_log_records_after_their_conversation_finished_change_nothing(broker, telemetry) -> None:
    """Log records that arrive once their conversation has been scored are late: no second score, counted."""
    cid, spans, logs = telemetry
    bs = broker.bootstrap_servers
    settings, spans_topic, logs_topic = _collector(bs, "late", idle_timeout_s=1.0)
    out = producer(bs)
    out.send(spans_topic, value=spans)
    out.flush()
    scores = TopicReader(bs, settings.collector.scores_topic)
    with ServiceThread(settings) as svc:
        first = scores.wait(lambda r: len(r) >= 1, 40)
        assert [json.loads(r.value)["conversation_id"] for r in first] == [cid]
        assert json.loads(first[0].value)["turn_scores"][0]["tool"] is None  # its arguments were not seen
        out.send(logs_topic, value=logs)
        out.flush()
        out.close()
        stats = svc.service.stats
        deadline = time.monotonic() + 20
        while stats.late_spans < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        again = scores.wait(lambda r: len(r) >= 2, 4)
        assert svc.error is None
    scores.close()
    assert stats.log_records_consumed == 2 and stats.late_spans == 2  # the two fragments
    assert len(again) == 1
