"""A real Strands agent's spans (strands-agents 1.62.0, recorded by `tests.support.record_strands` on
2026-11-28): messages as span events in Bedrock's content-block shape, a tool span whose arguments and result
are events, an agent span with the usage of all its model calls. Both decoders rebuild the one turn."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf.json_format import Parse
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from agentwatch.collector.decode import decode_message
from agentwatch.collector.reconstruct import build_conversation
from tests.support.fake_openai import FINAL_TEXT, TOOL_CALL_ID, USAGE

RECORDED = Path(__file__).parent.parent / "data" / "strands_trace.json"


@pytest.mark.parametrize("encoding", ["json", "protobuf"])
def test_a_strands_agent_run_rebuilds_its_turn(encoding: str) -> None:
    text = RECORDED.read_bytes()
    if encoding == "json":
        records = decode_message(text, "application/json")
    else:
        records = decode_message(Parse(text, TracesData()).SerializeToString())
    conv = build_conversation(records)
    assert conv.notes == [] and conv.not_captured == []
    assert (conv.agent, conv.system) == ("Strands Agents", "You answer weather questions.")
    (turn,) = conv.turns
    assert turn.input == "What is the weather in Paris?"
    assert turn.answer is not None and turn.answer.strip() == FINAL_TEXT
    assert [(c.name, c.arguments, c.result, c.call_id) for c in turn.tool_calls] == [
        (
            "get_weather",
            {"city": "Paris"},
            {"city": "Paris", "temperature_c": 18, "sky": "cloudy"},
            TOOL_CALL_ID,
        )
    ]
    # the model calls' usage once each: the agent span's sum of them is not a model call
    assert [(u.input_tokens, u.output_tokens) for u in turn.usage] == [USAGE["tool_call"], USAGE["final"]]
