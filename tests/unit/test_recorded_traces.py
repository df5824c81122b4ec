"""Spans real agent SDKs sent, recorded on 2026-11-28 against fake models and rebuilt by both decoders:
- Strands (strands-agents 1.62.0, `python -m tests.support.record_strands`): messages as span events in Bedrock's
  content-block shape, a tool span whose arguments and result are events, an agent span with the usage of all
  its model calls;
- the Vercel AI SDK, majors 4 to 6 (`ai.*` keys) and 7 (the GenAI conventions through `@ai-sdk/otel`),
  `tests/support/ai_sdk/record.mjs`, under an HTTP span.
Each is one turn: a question, one tool call with its arguments and result, the answer, two model calls."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

from agentwatch.collector.decode import decode_message
from agentwatch.collector.reconstruct import build_conversation
from tests.support.fake_openai import FINAL_TEXT, TOOL_CALL_ID, USAGE
from tests.support.spans import otlp_json_to_protobuf

DATA = Path(__file__).parent.parent / "data"
SYSTEM = "You answer weather questions."


class Recording(NamedTuple):
    file: str
    agent: str
    session: str | None  # the conversation id it names, if any (else the trace id)


RECORDINGS = [
    Recording("strands_trace.json", "Strands Agents", None),
    Recording("ai_sdk_4_trace.json", "weather-chat", "chat-41"),
    Recording("ai_sdk_5_trace.json", "weather-chat", "chat-42"),
    Recording("ai_sdk_6_trace.json", "weather-chat", "chat-43"),
    Recording("ai_sdk_7_trace.json", "weather-chat", None),
]


@pytest.mark.parametrize("encoding", ["json", "protobuf"])
@pytest.mark.parametrize("recording", RECORDINGS, ids=[r.file for r in RECORDINGS])
def test_a_recorded_run_rebuilds_its_turn(recording: Recording, encoding: str) -> None:
    text = (DATA / recording.file).read_bytes()
    if encoding == "json":
        records = decode_message(text, "application/json")
    else:
        records = decode_message(otlp_json_to_protobuf(text))
    conv = build_conversation(records)
    assert conv.notes == [] and conv.not_captured == []
    assert conv.conversation_id == (recording.session or records[0].trace_id)
    assert (conv.agent, conv.system) == (recording.agent, SYSTEM)
    (turn,) = conv.turns  # an HTTP span above the call is not a turn of its own
    assert turn.input == "What is the weather in Paris?"
    assert (
        turn.answer is not None and turn.answer.strip() == FINAL_TEXT
    )  # Strands' answer ends with a newline
    assert [(c.name, c.arguments, c.result, c.call_id) for c in turn.tool_calls] == [
        (
            "get_weather",
            {"city": "Paris"},
            {"city": "Paris", "temperature_c": 18, "sky": "cloudy"},
            TOOL_CALL_ID,
        )
    ]
    # each model call's tokens once: the totals on the agent span (`ai.usage.*`, Strands') are not a model call
    assert [(u.input_tokens, u.output_tokens) for u in turn.usage] == [USAGE["tool_call"], USAGE["final"]]
