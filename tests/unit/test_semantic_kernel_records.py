"""Semantic Kernel 1.45.0 with its own GenAI diagnostics (`python -m tests.support.record_agents semantic_kernel`,
2026-11-28): spans without messages, the messages Python log records bridged to OpenTelemetry (`event.name` in
their attributes, the message as JSON text in the body), beside the kernel's application logs."""

from __future__ import annotations

from pathlib import Path

from agentwatch.collector.decode import decode_message
from agentwatch.collector.log_records import decode_log_message
from agentwatch.collector.reconstruct import build_conversation
from agentwatch.config import Settings
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Expectation
from tests.support.fake_openai import FINAL_TEXT, USAGE
from tests.support.record_agents import calls_of, weather_call

DATA = Path(__file__).parent.parent / "data"


def _spans() -> list:
    return decode_message((DATA / "semantic_kernel_trace.json").read_bytes(), "application/json")


def test_its_log_records_give_the_turn_its_instructions_question_and_calls() -> None:
    batch = decode_log_message((DATA / "semantic_kernel_logs.json").read_bytes(), None)
    assert len(batch.fragments) == 2 and batch.skipped == 7  # the kernel's application logs
    conv = build_conversation(_spans() + batch.fragments)
    assert conv.agent == "weather-agent" and conv.notes == [] and conv.not_captured == []
    assert conv.system == "You answer weather questions."
    (turn,) = conv.turns
    assert (turn.input, turn.answer) == ("What is the weather in Paris?", FINAL_TEXT)
    # a plugin's function is named `Plugin-function` (scoring.names.strip_prefixes can take the plugin off)
    assert calls_of(turn.tool_calls) == weather_call(name="Weather-get_weather")
    assert [(u.input_tokens, u.output_tokens) for u in turn.usage] == [USAGE["tool_call"], USAGE["final"]]


def test_without_its_log_records_the_question_is_not_captured_and_said_so() -> None:
    """The agent span logs the answer and an empty input list: the turn has its answer and calls, no question."""
    conv = build_conversation(_spans())
    (turn,) = conv.turns
    assert (turn.input, turn.answer) == (None, FINAL_TEXT)
    assert conv.notes == ["no user input captured for turn(s) 0"]
    assert [c.arguments for c in turn.tool_calls] == [{"city": "Paris"}]


def test_its_plugin_prefix_stripped_by_configuration_its_calls_meet_expectations_that_name_the_function() -> (
    None
):
    batch = decode_log_message((DATA / "semantic_kernel_logs.json").read_bytes(), None)
    conv = build_conversation(_spans() + batch.fragments)
    expected = Expectation.model_validate(
        {"tools": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
    )
    conv = conv.model_copy(update={"turns": [conv.turns[0].model_copy(update={"expected": expected})]})
    plugin = Settings.model_validate(
        {"scoring": {"names": {"strip_prefixes": ["functions.", "tools.", "tool.", "Weather-"]}}}
    )
    tools = [ConversationScorer(s).score(conv).turn_scores[0].tool for s in (Settings(), plugin)]
    assert [t.binary if t is not None else None for t in tools] == [False, True]
