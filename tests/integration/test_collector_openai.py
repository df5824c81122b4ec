"""Spans of the official OTel GenAI instrumentation of `openai` (tests/support/fake_openai.py) → broker → collector."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentwatch.collector.service import default_scorer
from tests.support.collector_kafka import ServiceThread, TopicReader, collector_settings, unique
from tests.support.fake_openai import FINAL_TEXT, RESPONSE_MODEL, TOOL_CALL_ID, FakeOpenAI
from tests.support.fake_openai import USAGE as USAGE_BY_STEP

pytestmark = pytest.mark.broker

USAGE = [USAGE_BY_STEP["tool_call"], USAGE_BY_STEP["final"]]
TOOL_RESULT = '{"temp_c": 18, "sky": "cloudy"}'


AGENT = r"""
import os, sys
os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
from agentwatch.sdk import configure, conversation, shutdown, trace

bootstrap, topic, cid, base_url, tool_result = sys.argv[1:6]
inst = configure("kafka", agent="weather-bot", version="0.3.0", bootstrap_servers=bootstrap, topic=topic,
                 capture_content=True)
from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor
OpenAIInstrumentor().instrument(tracer_provider=inst.tracer_provider)
from openai import OpenAI

client = OpenAI(base_url=base_url, api_key="test-key")
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]


@trace(kind="agent")
def weather_bot(question: str) -> str:
    conversation.expect([("get_weather", {"city": "Paris"})])
    messages = [{"role": "user", "content": question}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": tool_result})
    second = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    conversation.end()
    return second.choices[0].message.content


with conversation(id=cid, task="weather"):
    weather_bot("What is the weather in Paris?")
shutdown()
"""


def test_openai_instrumentation_spans_become_turns_tools_and_tokens(broker, topic, tmp_path):
    bs = broker.bootstrap_servers
    cid = unique("oai")
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    with FakeOpenAI() as server:
        run = subprocess.run(
            [sys.executable, str(script), bs, topic, cid, server.base_url, TOOL_RESULT],
            check=False,
            capture_output=True,
            timeout=60,
        )
    assert run.returncode == 0, run.stderr.decode()[-3000:]

    settings = collector_settings(bs, [topic], unique("oai"))
    seen = []
    score = default_scorer(settings)

    def recording_scorer(conv):
        seen.append(conv)
        return score(conv)

    reader = TopicReader(bs, settings.collector.scores_topic)
    with ServiceThread(settings, scorer=recording_scorer) as svc:
        records = reader.wait(lambda r: len(r) >= 1, 30)
        assert svc.error is None
    reader.close()
    assert len(records) == 1 and len(seen) == 1
    conv = seen[0]
    assert conv.conversation_id == cid
    assert (conv.agent, conv.version, conv.task) == ("weather-bot", "0.3.0", "weather")
    assert len(conv.turns) == 1
    turn = conv.turns[0]
    assert turn.answer == FINAL_TEXT
    assert "What is the weather in Paris?" in (turn.input or "")
    assert len(turn.tool_calls) == 1
    call = turn.tool_calls[0]
    assert (call.name, call.arguments, call.call_id) == ("get_weather", {"city": "Paris"}, TOOL_CALL_ID)
    assert call.result in (json.loads(TOOL_RESULT), TOOL_RESULT)
    assert sorted((u.input_tokens, u.output_tokens) for u in turn.usage) == sorted(USAGE)
    assert all(u.model == RESPONSE_MODEL for u in turn.usage)

    s = json.loads(records[0].value)
    assert s["conversation_id"] == cid
    assert s["turns"] == 1
    assert s["input_tokens"] == sum(i for i, _ in USAGE)
    assert s["output_tokens"] == sum(o for _, o in USAGE)
    tool = s["turn_scores"][0]["tool"]
    assert (tool["selection"], tool["parameters"], tool["binary"]) == (1.0, 1.0, True)
