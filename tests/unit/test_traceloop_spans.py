"""Traceloop's decorator spans folded into the GenAI keys, rule by rule (the SDK's own recording is rebuilt in
tests/unit/test_recorded_traces.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentwatch.collector.traceloop_spans import KEYS, fold
from agentwatch.wire import attributes as A


def folded(kind: str, span_name: str, **extra: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {"traceloop.span.kind": kind, **extra}
    fold(attrs, span_name, 65536)
    assert KEYS.isdisjoint(attrs), "a Traceloop key was left behind"
    return attrs


def test_an_agent_span_is_a_turn_with_its_question_and_answer() -> None:
    attrs = folded(
        "agent",
        "weather-agent.agent",
        **{
            "traceloop.entity.name": "weather-agent",
            "traceloop.entity.input": json.dumps({"args": ["Weather in Paris?"], "kwargs": {}}),
            "traceloop.entity.output": json.dumps("Sunny."),
        },
    )
    assert (attrs[A.OPERATION], attrs[A.AGENT_NAME]) == (A.INVOKE_AGENT, "weather-agent")
    assert json.loads(attrs[A.INPUT_MESSAGES])[0]["parts"] == [
        {"type": "text", "content": "Weather in Paris?"}
    ]
    assert json.loads(attrs[A.OUTPUT_MESSAGES])[0]["parts"] == [{"type": "text", "content": "Sunny."}]


@pytest.mark.parametrize(("entity", "tool"), [("get_weather", "get_weather"), (None, "lookup")])
def test_a_tool_span_is_a_tool_call_named_by_its_entity_else_its_span(entity: str | None, tool: str) -> None:
    extra: dict[str, Any] = {
        "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"city": "Paris"}}),
        "traceloop.entity.output": json.dumps({"t": 18}),
    }
    if entity is not None:
        extra["traceloop.entity.name"] = entity
    attrs = folded("tool", "lookup.tool", **extra)
    assert (attrs[A.OPERATION], attrs[A.TOOL_NAME]) == (A.EXECUTE_TOOL, tool)
    assert (json.loads(attrs[A.TOOL_ARGUMENTS]), json.loads(attrs[A.TOOL_RESULT])) == (
        {"city": "Paris"},
        {"t": 18},
    )


def test_a_span_naming_a_genai_operation_keeps_only_its_genai_keys() -> None:
    """OpenLLMetry's LangChain instrumentation writes both: its entity input is a callback payload, not messages."""
    attrs = folded(
        "workflow",
        "LangGraph.workflow",
        **{A.OPERATION: A.INVOKE_AGENT, "traceloop.entity.input": json.dumps({"inputs": {"messages": []}})},
    )
    assert attrs == {A.OPERATION: A.INVOKE_AGENT}
    attrs = folded("tool", "x.tool", **{A.OPERATION: A.EXECUTE_TOOL, "traceloop.entity.output": '"ok"'})
    assert attrs == {A.OPERATION: A.EXECUTE_TOOL}


@pytest.mark.parametrize("kind", ["workflow", "task", "unknown"])
def test_workflow_and_task_spans_fold_into_nothing(kind: str) -> None:
    assert (
        folded(kind, f"x.{kind}", **{"traceloop.entity.input": "{}", "traceloop.entity.output": '"y"'}) == {}
    )
