"""MLflow Tracing's span attributes folded into the GenAI ones, rule by rule (the recording of the SDK itself is
rebuilt in tests/unit/test_recorded_traces.py). MLflow writes every value as JSON, strings quoted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentwatch.collector.mlflow_spans import KEYS, fold
from agentwatch.wire import attributes as A


def folded(kind: str, name: str = "step", **values: Any) -> dict[str, Any]:
    """The attributes of one span of MLflow span type `kind` with `values` (`spanInputs=`, `llm__cost=`, ...),
    each JSON-encoded as MLflow writes it."""
    attrs: dict[str, Any] = {"mlflow.spanType": json.dumps(kind)}
    for key, value in values.items():
        attrs[f"mlflow.{key.replace('__', '.')}"] = json.dumps(value)
    fold(attrs, name, 65536)
    assert KEYS.isdisjoint(attrs), "an MLflow key was left behind"
    return attrs


def test_a_chat_spans_usage_model_and_cost_become_the_calls() -> None:
    usage = {"input_tokens": 1200, "output_tokens": 30, "total_tokens": 1230, "cache_read_input_tokens": 1000}
    cost = {"input_cost": 0.001, "output_cost": 0.0005, "total_cost": 0.0015}
    attrs = folded("CHAT_MODEL", llm__model="claude-sonnet-4-5", chat__tokenUsage=usage, llm__cost=cost)
    assert (attrs[A.OPERATION], attrs[A.RESPONSE_MODEL]) == (A.CHAT, "claude-sonnet-4-5")
    # MLflow's input tokens already count the cache (its autologgers normalise every provider): not added again
    assert (attrs[A.INPUT_TOKENS], attrs[A.OUTPUT_TOKENS], attrs[A.CACHE_READ_INPUT_TOKENS]) == (
        1200,
        30,
        1000,
    )
    assert attrs[A.COST_USD] == 0.0015
    assert folded("LLM", chat__tokenUsage={"input_tokens": 5, "output_tokens": 2})[A.INPUT_TOKENS] == 5


def test_a_chat_spans_request_and_provider_response_become_its_messages() -> None:
    request = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather in Paris?"}]}
    response = {"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Sunny."}}]}
    attrs = folded("CHAT_MODEL", spanInputs=request, spanOutputs=response)
    assert [m["role"] for m in json.loads(attrs[A.INPUT_MESSAGES])] == ["user"]
    assert json.loads(attrs[A.OUTPUT_MESSAGES])[0]["parts"] == [{"type": "text", "content": "Sunny."}]
    # Anthropic's: the instructions beside the messages, the response's content blocks
    request = {"system": "Be brief.", "messages": [{"role": "user", "content": "Weather in Paris?"}]}
    response = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Paris"}}],
    }
    attrs = folded("CHAT_MODEL", spanInputs=request, spanOutputs=response)
    assert [m["role"] for m in json.loads(attrs[A.INPUT_MESSAGES])] == ["system", "user"]
    (call,) = json.loads(attrs[A.OUTPUT_MESSAGES])[0]["parts"]
    assert (call["type"], call["id"], call["name"]) == ("tool_call", "t1", "get_weather")


def test_an_agent_span_reads_its_functions_one_text_argument_and_its_answer() -> None:
    attrs = folded("AGENT", spanInputs={"question": "Weather in Paris?"}, spanOutputs="Sunny.")
    assert attrs[A.OPERATION] == A.INVOKE_AGENT
    assert json.loads(attrs[A.INPUT_MESSAGES])[0]["parts"] == [
        {"type": "text", "content": "Weather in Paris?"}
    ]
    assert json.loads(attrs[A.OUTPUT_MESSAGES])[0]["parts"] == [{"type": "text", "content": "Sunny."}]
    both = folded("AGENT", spanInputs={"question": "Weather?", "city": "Paris"}, spanOutputs="Sunny.")
    assert A.INPUT_MESSAGES not in both  # which argument is the question is not known: the models' is read


def test_a_tool_span_is_a_tool_call_named_by_the_span() -> None:
    attrs = folded("TOOL", name="get_weather", spanInputs={"city": "Paris"}, spanOutputs={"t": 18})
    assert (attrs[A.OPERATION], attrs[A.TOOL_NAME]) == (A.EXECUTE_TOOL, "get_weather")
    assert (json.loads(attrs[A.TOOL_ARGUMENTS]), json.loads(attrs[A.TOOL_RESULT])) == (
        {"city": "Paris"},
        {"t": 18},
    )


@pytest.mark.parametrize("kind", ["CHAIN", "RETRIEVER", "PARSER", "EMBEDDING", "UNKNOWN"])
def test_other_span_types_fold_into_nothing(kind: str) -> None:
    assert folded(kind, spanInputs={"q": "x"}, spanOutputs="y", llm__model="m") == {}


def test_what_the_span_says_in_the_genai_conventions_wins() -> None:
    attrs: dict[str, Any] = {
        "mlflow.spanType": '"CHAT_MODEL"',
        "mlflow.llm.model": '"gpt-4o-mini"',
        A.RESPONSE_MODEL: "gpt-4o-2024-08-06",
        A.OPERATION: "text_completion",
    }
    fold(attrs, "chat", 65536)
    assert (attrs[A.RESPONSE_MODEL], attrs[A.OPERATION]) == ("gpt-4o-2024-08-06", "text_completion")
