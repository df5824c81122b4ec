"""Tool spans that log no call id (OpenInference's OpenAI Agents and LlamaIndex tools) take the id of the model's
call they answer: by their arguments, or as the one span and the one call of their tool; never by a guess."""

from __future__ import annotations

import json
from typing import Any

from agentwatch.collector.reconstruct import build_conversation
from agentwatch.collector.span_record import SpanRecord

TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLS = [("c1", {"city": "Paris"}), ("c2", {"city": "Rome"})]


def _span(span_id: str, parent: str | None, start: int, attrs: dict[str, Any]) -> SpanRecord:
    return SpanRecord(
        TRACE,
        span_id,
        parent,
        attrs.get("gen_ai.operation.name", "span"),
        start,
        start + 5,
        None,
        attrs,
        {},
        "conv",
    )


def _messages(role: str, parts: list[dict[str, Any]]) -> str:
    return json.dumps([{"role": role, "parts": parts}])


def _turn(tools: list[dict[str, Any]], calls: list[tuple[str, dict[str, Any]]] = CALLS) -> list[Any]:
    """An agent span, a model call asking for `calls` of get_weather, tool spans of `tools` (their own
    attributes, no call id), and a model call given each call's result ("result of <id>")."""
    asked = [
        {"type": "tool_call", "id": cid, "name": "get_weather", "arguments": args} for cid, args in calls
    ]
    given = [{"type": "tool_call_response", "id": cid, "response": f"result of {cid}"} for cid, _ in calls]
    spans = [
        _span("a" * 16, None, 0, {"gen_ai.operation.name": "invoke_agent"}),
        _span(
            "b" * 16,
            "a" * 16,
            10,
            {"gen_ai.operation.name": "chat", "gen_ai.output.messages": _messages("assistant", asked)},
        ),
        _span(
            "d" * 16,
            "a" * 16,
            90,
            {"gen_ai.operation.name": "chat", "gen_ai.input.messages": _messages("tool", given)},
        ),
    ]
    for i, attrs in enumerate(tools):
        spans.append(
            _span(
                f"{i + 1:016x}",
                "a" * 16,
                20 + 10 * i,
                {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", **attrs},
            )
        )
    (turn,) = build_conversation(spans).turns
    return [(c.call_id, c.arguments, c.result) for c in turn.tool_calls]


def test_spans_with_arguments_take_the_id_of_the_call_with_those_arguments() -> None:
    rome, paris = (
        {"gen_ai.tool.call.arguments": json.dumps(args)} for args in ({"city": "Rome"}, {"city": "Paris"})
    )
    assert _turn([rome, paris]) == [
        ("c2", {"city": "Rome"}, "result of c2"),
        ("c1", {"city": "Paris"}, "result of c1"),
    ]


def test_two_spans_without_arguments_for_two_calls_of_their_tool_are_not_guessed() -> None:
    assert _turn([{}, {}]) == [(None, {}, None), (None, {}, None)]  # arguments not seen: {}


def test_the_one_span_of_the_one_call_of_its_tool_takes_its_id_arguments_and_result() -> None:
    assert _turn([{}], CALLS[:1]) == [("c1", {"city": "Paris"}, "result of c1")]


def test_a_span_whose_arguments_match_no_call_keeps_no_id() -> None:
    other = {"gen_ai.tool.call.arguments": json.dumps({"city": "Oslo"})}
    assert _turn([other], CALLS[:1]) == [(None, {"city": "Oslo"}, None)]


def _history(calls: list[str], responses: list[str]) -> str:
    """A later call's input: the assistant's calls of get_weather under `calls`, then a tool message per id of
    `responses` ("result <i>")."""
    asked = [{"type": "tool_call", "id": cid, "name": "get_weather", "arguments": {}} for cid in calls]
    found = [{"role": "assistant", "parts": asked}]
    found += [
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": rid, "response": f"result {i}"}]}
        for i, rid in enumerate(responses)
    ]
    return json.dumps(found)


def test_results_under_ids_no_call_has_answer_the_calls_before_them_in_order() -> None:
    from agentwatch.collector.messages import _answered_in_order

    assert _answered_in_order(_history(["fc_1", "fc_2"], ["call_1", "call_2"])) == {
        "fc_1": "result 0",
        "fc_2": "result 1",
    }
    assert _answered_in_order(_history(["fc_1", "fc_2"], ["call_1"])) == {}  # not as many: no guess
    assert _answered_in_order(_history(["fc_1", "fc_2"], ["fc_2", "call_1"])) == {}  # ids that match: by id
    assert _answered_in_order(_history(["fc_1"], [])) == {}


def test_calls_before_a_turns_first_model_call_are_those_after_the_last_question() -> None:
    """A loop the caller runs, its earlier steps in other traces: the calls the first call's input repeats after
    the last user message with text, with their results; an earlier turn's calls, and calls already known, not."""
    from agentwatch.collector.messages import calls_before

    def user(text: str) -> dict[str, Any]:
        return {"role": "user", "parts": [{"type": "text", "content": text}]}

    def asked(cid: str) -> dict[str, Any]:
        return {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": cid, "name": "f", "arguments": {"n": cid}}],
        }

    def given(cid: str) -> dict[str, Any]:
        return {"role": "tool", "parts": [{"type": "tool_call_response", "id": cid, "response": f"r{cid}"}]}

    history = [user("one"), asked("a"), given("a"), user("two"), asked("b"), given("b"), asked("c")]
    first = _span("b" * 16, None, 0, {"gen_ai.input.messages": json.dumps(history)})
    assert [(c["call_id"], c.get("result")) for c in calls_before(first, set())] == [("b", "rb"), ("c", None)]
    assert [c["call_id"] for c in calls_before(first, {"b"})] == ["c"]
    nothing = _span("b" * 16, None, 0, {"gen_ai.input.messages": json.dumps([asked("x"), given("x")])})
    assert calls_before(nothing, set()) == []
