"""Messages logged as span events (per-message GenAI events, Azure AI Inference's JSON bodies, Strands' Bedrock
content blocks, the older prompt/completion events, the inference details event), built with the real OTel SDK
and rebuilt into turns by both decoders."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from agentwatch.collector.decode import decode_message, encode_spans_otlp
from agentwatch.collector.foreign_messages import genai_messages
from agentwatch.collector.message_events import fold
from agentwatch.collector.reconstruct import build_conversation
from agentwatch.wire.schema import Conversation
from tests.support.spans import SpanFactory

QUESTION = "What is the status of order A-1?"
SYSTEM = "You are a support agent."
RESULT = {"order": "A-1", "status": "shipped"}
ANSWER = "Order A-1 has shipped."
Events = list[tuple[str, dict[str, Any]]]


def _agent(f: SpanFactory, models: list[Events], tool: bool = True, error: bool = False) -> None:
    """An agent span over model calls whose messages are events, and a tool span after the first."""
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "conv-1"}
    model = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
    with f.tracer.start_as_current_span("invoke_agent support", attributes=agent):
        for i, events in enumerate(models):
            span = f.tracer.start_span("chat gpt-4o", attributes=model)
            for name, attributes in events:
                span.add_event(name, attributes)
            if error and i == len(models) - 1:
                span.record_exception(TimeoutError("upstream timed out"))
            span.end()
            if i == 0 and tool:
                attributes = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup",
                    "gen_ai.tool.call.id": "call_e",
                    "gen_ai.tool.call.arguments": '{"order": "A-1"}',
                    "gen_ai.tool.call.result": json.dumps(RESULT),
                }
                f.tracer.start_span("execute_tool lookup", attributes=attributes).end()


def _semconv() -> list[Events]:
    """Per-message events, bodies as attributes (OpenAI-style tool calls as JSON)."""
    call = [
        {"id": "call_e", "type": "function", "function": {"name": "lookup", "arguments": '{"order": "A-1"}'}}
    ]
    first: Events = [
        ("gen_ai.system.message", {"content": SYSTEM}),
        ("gen_ai.user.message", {"content": QUESTION}),
        (
            "gen_ai.choice",
            {"index": 0, "finish_reason": "tool_calls", "message": json.dumps({"tool_calls": call})},
        ),
    ]
    second: Events = [
        ("gen_ai.user.message", {"content": QUESTION}),
        ("gen_ai.assistant.message", {"tool_calls": json.dumps(call)}),
        ("gen_ai.tool.message", {"content": json.dumps(RESULT), "id": "call_e"}),
        ("gen_ai.choice", {"index": 0, "finish_reason": "stop", "message": json.dumps({"content": ANSWER})}),
    ]
    return [first, second]


def _azure() -> list[Events]:
    """Azure AI Inference: every body as JSON in `gen_ai.event.content`."""

    def event(name: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return name, {"gen_ai.system": "az.ai.inference", "gen_ai.event.content": json.dumps(body)}

    call = [
        {"id": "call_e", "type": "function", "function": {"name": "lookup", "arguments": '{"order": "A-1"}'}}
    ]
    return [
        [
            event("gen_ai.system.message", {"role": "system", "content": SYSTEM}),
            event("gen_ai.user.message", {"role": "user", "content": QUESTION}),
            event(
                "gen_ai.choice", {"message": {"tool_calls": call}, "finish_reason": "tool_calls", "index": 0}
            ),
        ],
        [
            event("gen_ai.user.message", {"role": "user", "content": QUESTION}),
            event("gen_ai.tool.message", {"role": "tool", "content": json.dumps(RESULT), "id": "call_e"}),
            event("gen_ai.choice", {"message": {"content": ANSWER}, "finish_reason": "stop", "index": 0}),
        ],
    ]


def _strands() -> list[Events]:
    """Strands: Bedrock Converse content blocks as JSON in `content` / `message`."""
    use = {"toolUse": {"toolUseId": "call_e", "name": "lookup", "input": {"order": "A-1"}}}
    done = {"toolResult": {"toolUseId": "call_e", "status": "success", "content": [{"json": RESULT}]}}
    return [
        [
            ("gen_ai.system.message", {"content": json.dumps([{"text": SYSTEM}])}),
            ("gen_ai.user.message", {"content": json.dumps([{"text": QUESTION}])}),
            ("gen_ai.choice", {"message": json.dumps([use]), "finish_reason": "tool_use"}),
        ],
        [
            ("gen_ai.user.message", {"content": json.dumps([{"text": QUESTION}])}),
            ("gen_ai.assistant.message", {"content": json.dumps([use])}),
            ("gen_ai.tool.message", {"content": json.dumps([done]), "id": "call_e"}),
            ("gen_ai.choice", {"message": json.dumps([{"text": ANSWER}]), "finish_reason": "end_turn"}),
        ],
    ]


def _prompt_completion() -> list[Events]:
    """The older pair of events (Semantic Kernel, Spring AI): OpenAI-style messages as JSON, or text."""
    return [
        [
            (
                "gen_ai.content.prompt",
                {
                    "gen_ai.prompt": json.dumps(
                        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
                    )
                },
            ),
            (
                "gen_ai.content.completion",
                {
                    "gen_ai.completion": json.dumps(
                        [
                            {
                                "role": "assistant",
                                "content": None,
                                "tool_calls": [
                                    {"id": "call_e", "function": {"name": "lookup", "arguments": "{}"}}
                                ],
                            }
                        ]
                    )
                },
            ),
        ],
        [
            ("gen_ai.content.prompt", {"gen_ai.prompt": QUESTION}),
            ("gen_ai.content.completion", {"gen_ai.completion": ANSWER}),
        ],
    ]


def _details() -> list[Events]:
    """The inference details event: the GenAI message attributes themselves, on an event."""

    def parts(role: str, text: str) -> dict[str, Any]:
        return {"role": role, "parts": [{"type": "text", "content": text}]}

    return [
        [
            (
                "gen_ai.client.inference.operation.details",
                {
                    "gen_ai.system_instructions": json.dumps([{"type": "text", "content": SYSTEM}]),
                    "gen_ai.input.messages": json.dumps([parts("user", QUESTION)]),
                    "gen_ai.output.messages": json.dumps([parts("assistant", ANSWER)]),
                },
            )
        ]
    ]


def _conversation(payload: bytes, content_type: str | None = None) -> Conversation:
    return build_conversation(decode_message(payload, content_type))


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
@pytest.mark.parametrize("form", [_semconv, _azure, _strands])
def test_per_message_events_rebuild_the_turn(encoding: str, form: Any) -> None:
    f = SpanFactory()
    _agent(f, form())
    payload, kind = (f.protobuf(), None) if encoding == "protobuf" else (f.json(), "application/json")
    conv = _conversation(payload, kind)
    assert conv.notes == [] and conv.not_captured == []
    assert conv.system == SYSTEM
    (turn,) = conv.turns
    assert (turn.input, turn.answer) == (QUESTION, ANSWER)
    assert [(c.name, c.arguments, c.result) for c in turn.tool_calls] == [
        ("lookup", {"order": "A-1"}, RESULT)
    ]


@pytest.mark.parametrize("form", [_semconv, _azure, _strands])
def test_tool_calls_and_results_are_read_from_events_without_tool_spans(form: Any) -> None:
    f = SpanFactory()
    _agent(f, form(), tool=False)
    (turn,) = _conversation(f.protobuf()).turns
    assert [(c.name, c.arguments, c.result, c.call_id) for c in turn.tool_calls] == [
        ("lookup", {"order": "A-1"}, RESULT, "call_e")
    ]


def test_prompt_and_completion_events() -> None:
    f = SpanFactory()
    _agent(f, _prompt_completion(), tool=False)
    conv = _conversation(f.protobuf())
    assert conv.system == SYSTEM
    (turn,) = conv.turns
    assert (turn.input, turn.answer) == (QUESTION, ANSWER)
    assert [(c.name, c.call_id) for c in turn.tool_calls] == [("lookup", "call_e")]


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_the_inference_details_event(encoding: str) -> None:
    f = SpanFactory()
    _agent(f, _details(), tool=False)
    payload, kind = (f.protobuf(), None) if encoding == "protobuf" else (f.json(), "application/json")
    conv = _conversation(payload, kind)
    assert conv.system == SYSTEM and conv.notes == []
    assert [(t.input, t.answer) for t in conv.turns] == [(QUESTION, ANSWER)]


def test_an_exception_beside_message_events_still_fails_the_call() -> None:
    f = SpanFactory()
    _agent(f, _semconv(), error=True)
    records = decode_message(f.protobuf())
    (failed,) = [r for r in records if r.status_error is not None]
    assert failed.status_error == "TimeoutError"
    assert json.loads(failed.attrs["gen_ai.output.messages"])[0]["parts"][0]["content"] == ANSWER


def test_the_same_turns_after_re_keying() -> None:
    f = SpanFactory()
    _agent(f, _strands())
    records = decode_message(f.protobuf())
    again = decode_message(encode_spans_otlp(records))
    assert build_conversation(again).turns == build_conversation(records).turns


def test_message_attributes_win_over_events() -> None:
    kept = '[{"role": "user", "parts": [{"type": "text", "content": "kept"}]}]'
    attrs: dict[str, Any] = {"gen_ai.input.messages": kept}
    fold(
        attrs,
        [("gen_ai.user.message", {"content": "dropped"}), ("gen_ai.choice", {"message": "answer"})],
        65536,
    )
    assert attrs["gen_ai.input.messages"] == kept
    assert json.loads(attrs["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "answer"}]}
    ]


def test_event_messages_are_bounded_oldest_first() -> None:
    events = [("gen_ai.system.message", {"content": "rules"})]
    events += [("gen_ai.user.message", {"content": f"{i} " + "x" * 90}) for i in range(20)]
    attrs: dict[str, Any] = {}
    fold(attrs, events, 600)
    kept = json.loads(attrs["gen_ai.input.messages"])
    assert len(attrs["gen_ai.input.messages"]) <= 600
    assert kept[0]["parts"][0]["content"] == "rules"
    assert kept[-1]["parts"][0]["content"].startswith("19 ")


def test_text_that_looks_like_json_stays_text() -> None:
    attrs: dict[str, Any] = {}
    fold(
        attrs,
        [
            ("gen_ai.user.message", {"content": "[1, 2, 3] or {a}?"}),
            ("gen_ai.user.message", {"content": "[1, 2]"}),
        ],
        65536,
    )
    assert [m["parts"][0]["content"] for m in json.loads(attrs["gen_ai.input.messages"])] == [
        "[1, 2, 3] or {a}?",
        "[1, 2]",
    ]


def test_any_event_body_folds_without_raising() -> None:
    rng = random.Random(11)
    values: list[Any] = [
        None,
        0,
        2.5,
        False,
        "",
        "t",
        "[",
        "{",
        "[1]",
        "{}",
        '{"message": 3}',
        '{"content": [{"toolUse": 1}]}',
        '[{"toolResult": {"content": 4}}, {"type": "tool_use"}]',
        '{"tool_calls": [1, {"function": 2}]}',
        '[{"role": 5, "content": {"text": 6}}]',
        ["a", 1],
        {"k": [1]},
    ]
    names = [
        "gen_ai.user.message",
        "gen_ai.tool.message",
        "gen_ai.choice",
        "gen_ai.content.prompt",
        "gen_ai.content.completion",
        "gen_ai.client.inference.operation.details",
        "gen_ai.system.message",
    ]
    keys = [
        "content",
        "message",
        "tool_calls",
        "id",
        "role",
        "gen_ai.event.content",
        "gen_ai.prompt",
        "gen_ai.completion",
        "gen_ai.input.messages",
    ]
    for _ in range(500):
        events = [
            (rng.choice(names), {k: rng.choice(values) for k in rng.sample(keys, rng.randint(0, 4))})
            for _ in range(rng.randint(1, 4))
        ]
        attrs: dict[str, Any] = {}
        fold(attrs, events, 300)
        for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
            if key in attrs and isinstance(attrs[key], str) and attrs[key].startswith('[{"role'):
                assert isinstance(json.loads(attrs[key]), list)


def test_a_strands_trace_its_agent_and_tool_spans_carrying_events() -> None:
    """Strands (without the latest GenAI conventions): the agent span has the user's message and the answer as
    text events, a tool span the call's arguments (`gen_ai.tool.message`) and its result (`gen_ai.choice`)."""
    f = SpanFactory()
    tracer = f.tracer
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Strands Agents"}
    with tracer.start_as_current_span("invoke_agent Strands Agents", attributes=agent) as root:
        root.add_event("gen_ai.user.message", {"content": json.dumps([{"text": QUESTION}])})
        first, second = _strands()
        for i, events in enumerate((first, second)):
            span = tracer.start_span("chat", attributes={"gen_ai.operation.name": "chat"})
            for name, attributes in events:
                span.add_event(name, attributes)
            span.end()
            if i == 0:
                tool = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup",
                    "gen_ai.tool.call.id": "call_e",
                }
                span = tracer.start_span("execute_tool lookup", attributes=tool)
                span.add_event(
                    "gen_ai.tool.message", {"role": "tool", "content": '{"order": "A-1"}', "id": "call_e"}
                )
                span.add_event("gen_ai.choice", {"message": json.dumps([{"json": RESULT}]), "id": "call_e"})
                span.end()
        root.add_event("gen_ai.choice", {"message": ANSWER + "\n", "finish_reason": "end_turn"})
    conv = _conversation(f.protobuf())
    assert conv.notes == [] and conv.not_captured == []
    (turn,) = conv.turns
    assert (turn.input, turn.answer) == (QUESTION, ANSWER + "\n")
    assert [(c.name, c.arguments, c.result, c.call_id) for c in turn.tool_calls] == [
        ("lookup", {"order": "A-1"}, RESULT, "call_e")
    ]


def test_a_choice_whose_answer_is_a_json_object_keeps_it_as_text() -> None:
    attrs: dict[str, Any] = {}
    fold(attrs, [("gen_ai.choice", {"message": '{"total": 12.5}'})], 65536)
    assert json.loads(attrs["gen_ai.output.messages"])[0]["parts"] == [
        {"type": "text", "content": '{"total": 12.5}'}
    ]


def test_responses_api_items_pair_a_call_with_its_output_by_call_id() -> None:
    """The Responses API's `function_call` item has its own `id` beside the `call_id` its output names."""
    items = [
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": '{"ok": true}'},
    ]
    (message,) = genai_messages([{"role": "assistant", "content": items}])
    assert [(p["type"], p["id"]) for p in message["parts"]] == [
        ("tool_call", "call_1"),
        ("tool_call_response", "call_1"),
    ]
