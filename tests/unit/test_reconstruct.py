"""Rebuilding `Conversation` transcripts from real OTel spans (SDK conventions, OpenInference, official instrumentation)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentwatch.cli import app
from agentwatch.collector.assembler import FinishedConversation
from agentwatch.collector.decode import decode_message
from agentwatch.collector.reconstruct import build_conversation
from agentwatch.config import Settings, TaskPolicy
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation, Outcome
from tests.support.spans import SpanFactory, assistant_msg, attrs, end_of, sdk_turn, start_of, user_msg


def _conversation(factory: SpanFactory, **kw) -> Conversation:
    return build_conversation(decode_message(factory.protobuf()), **kw)


def test_sdk_conversation_every_field() -> None:
    f = SpanFactory(service="svc-name", version="9.9")
    expected = {
        "tools": [{"name": "lookup_order", "arguments": {"order": 7}}],
        "reference_answer": "refunded",
    }
    sdk_turn(
        f.tracer,
        "conv-42",
        "where is order 7?",
        "it ships tomorrow",
        [{"name": "lookup_order", "id": "call_a", "arguments": {"order": 7}, "result": {"eta": "tomorrow"}}],
        tokens=(120, 30),
        extra={
            "gen_ai.agent.version": "1.4.0",
            "agentwatch.tag.difficulty": "easy",
            "agentwatch.budget.usd": 0.05,
            "agentwatch.task.instance": "order-7",
            "agentwatch.attempt": 2,
        },
    )
    sdk_turn(
        f.tracer,
        "conv-42",
        "refund it",
        "refunded",
        [
            {"name": "refund", "id": "call_b", "arguments": {"order": 7, "amount": 12.5}, "result": "ok"},
            {"name": "notify", "id": "call_c", "arguments": {}, "error": "smtp down"},
        ],
        tokens=(200, 40),
        extra={
            "agentwatch.expected": json.dumps(expected),
            "agentwatch.conversation.end": True,
            "agentwatch.outcome": "Partial-Correct",
            "agentwatch.cost.usd": 0.01,
            "agentwatch.tag.channel": "chat",
        },
        fail="TimeoutError",
    )
    spans = {s.name + str(i): s for i, s in enumerate(f.spans())}
    turn_spans = sorted((s for s in spans.values() if s.name.startswith("invoke_agent")), key=start_of)
    conv = _conversation(f)
    assert conv.conversation_id == "conv-42"
    assert (conv.agent, conv.version, conv.task) == ("shop-agent", "1.4.0", "refunds")
    assert conv.tags == {"difficulty": "easy", "channel": "chat"}
    assert (conv.instance, conv.attempt) == ("order-7", 2)
    assert conv.budget_usd == 0.05
    assert conv.outcome is Outcome.PARTIAL_CORRECT
    assert conv.incomplete is False
    assert conv.ended_at == datetime.fromtimestamp(max(end_of(s) for s in spans.values()) / 1e9, tz=UTC)
    assert [t.input for t in conv.turns] == ["where is order 7?", "refund it"]
    assert [t.answer for t in conv.turns] == ["it ships tomorrow", "refunded"]
    t0, t1 = conv.turns
    assert [(c.name, c.call_id, c.arguments, c.result, c.error) for c in t0.tool_calls] == [
        ("lookup_order", "call_a", {"order": 7}, {"eta": "tomorrow"}, None)
    ]
    assert [(c.name, c.call_id, c.arguments, c.result, c.error) for c in t1.tool_calls] == [
        ("refund", "call_b", {"order": 7, "amount": 12.5}, "ok", None),
        ("notify", "call_c", {}, None, "smtp down"),
    ]
    assert [(u.model, u.input_tokens, u.output_tokens) for u in t0.usage] == [("gpt-4o-mini", 120, 30)]
    assert [(u.model, u.input_tokens, u.output_tokens) for u in t1.usage] == [("gpt-4o-mini", 200, 40)]
    assert t0.expected is None
    assert t1.expected is not None and t1.expected.reference_answer == "refunded"
    assert [(e.name, e.arguments) for e in t1.expected.tools] == [("lookup_order", {"order": 7})]
    assert (t0.cost_usd, t1.cost_usd) == (None, 0.01)
    assert (t0.error, t1.error) == (None, "TimeoutError")
    for turn, span in zip(conv.turns, turn_spans, strict=True):
        assert turn.duration_ms == pytest.approx((end_of(span) - start_of(span)) / 1e6)
        assert turn.started_at == datetime.fromtimestamp(start_of(span) / 1e9, tz=UTC)
    assert conv.notes == []


def test_content_capture_off_still_gives_tool_names_and_ids() -> None:
    f = SpanFactory()
    sdk_turn(
        f.tracer, "c", "q", None, [{"name": "search", "id": "call_1"}, {"name": "fetch", "id": "call_2"}]
    )
    with f.tracer.start_as_current_span(
        "invoke_agent shop-agent",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "c"},
    ):
        pass
    conv = _conversation(f)
    assert [(c.name, c.call_id, c.arguments, c.result) for c in conv.turns[0].tool_calls] == [
        ("search", "call_1", {}, None),
        ("fetch", "call_2", {}, None),
    ]
    assert conv.turns[1].input is None and conv.turns[1].answer is None
    assert "no answer text captured (content capture off?) for turn(s) 0, 1" in conv.notes
    assert "no user input captured for turn(s) 1" in conv.notes
    assert "tool arguments not captured (content capture off?) for 2 tool call(s)" in conv.notes
    assert "tool result not captured for 2 tool call(s)" in conv.notes
    # turn 0's input was captured, so messages were; no model call logged a request without its output
    assert conv.not_captured == ["arguments", "results"]


def test_tool_calls_from_model_messages_when_no_tool_spans() -> None:
    f = SpanFactory()
    call = {"type": "tool_call", "id": "call_9", "name": "get_weather", "arguments": {"city": "Paris"}}
    attrs = {
        "gen_ai.conversation.id": "w",
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.input.messages": user_msg("weather?"),
    }
    with f.tracer.start_as_current_span(
        "invoke_agent", attributes={**attrs, "gen_ai.output.messages": assistant_msg("21C")}
    ):
        with f.tracer.start_as_current_span(
            "chat",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [call]}]),
            },
        ):
            pass
        response = {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "call_9", "response": {"temp": 21}}],
        }
        with f.tracer.start_as_current_span(
            "chat",
            attributes={"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps([response])},
        ):
            pass
    (turn,) = _conversation(f).turns
    assert [(c.name, c.call_id, c.arguments, c.result) for c in turn.tool_calls] == [
        ("get_weather", "call_9", {"city": "Paris"}, {"temp": 21})
    ]
    assert (turn.input, turn.answer) == ("weather?", "21C")


def test_openinference_spans() -> None:
    f = SpanFactory()
    with f.tracer.start_as_current_span(
        "agent",
        attributes={
            "openinference.span.kind": "AGENT",
            "session.id": "s1",
            "agent.name": "oi-agent",
            "input.value": "hi",
            "output.value": "hello",
        },
    ):
        with f.tracer.start_as_current_span(
            "llm",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "m1",
                "llm.token_count.prompt": 10,
                "llm.token_count.completion": 3,
                "llm.cost.total": 0.002,
            },
        ):
            pass
        with f.tracer.start_as_current_span(
            "tool",
            attributes={
                "openinference.span.kind": "TOOL",
                "tool.name": "calc",
                "input.value": '{"x": 1}',
                "output.value": "2",
            },
        ):
            pass
    conv = _conversation(f)
    assert (conv.conversation_id, conv.agent) == ("s1", "oi-agent")
    (turn,) = conv.turns
    assert (turn.input, turn.answer) == ("hi", "hello")
    assert [(c.name, c.arguments, c.result) for c in turn.tool_calls] == [("calc", {"x": 1}, 2)]
    assert [(u.model, u.input_tokens, u.output_tokens, u.cost_usd) for u in turn.usage] == [
        ("m1", 10, 3, 0.002)
    ]


def test_trace_roots_are_turns_without_agent_spans_and_bad_values_become_notes() -> None:
    f = SpanFactory()
    for q in ("first", "second"):
        with f.tracer.start_as_current_span(
            "root",
            attributes={
                "session.id": "s",
                "input.value": q,
                "agentwatch.expected": "{not json",
                "agentwatch.outcome": "great",
                "agentwatch.attempt": "second",
                "agentwatch.task.instance": 17,
            },
        ):
            pass
    conv = _conversation(f)
    assert [t.input for t in conv.turns] == ["first", "second"]
    assert all(t.expected is None for t in conv.turns)
    assert conv.outcome is None
    assert any(n.startswith("turn 0: agentwatch.expected ignored") for n in conv.notes)
    assert "agentwatch.outcome 'great' ignored: not an outcome class" in conv.notes
    assert (
        "agentwatch.attempt 'second' ignored: not an integer from 0 to 1,000,000 in ASCII digits"
        in conv.notes
    )
    assert (conv.attempt, conv.instance) == (None, "17")  # an integer instance id reads as text


def test_missing_parents_cycles_and_deep_chains_terminate() -> None:
    f = SpanFactory()
    sdk_turn(f.tracer, "c", "q", "a", [{"name": "t", "id": "1", "arguments": {}, "result": 1}])
    records = decode_message(f.protobuf())
    chat = next(r for r in records if r.name.startswith("chat"))
    chat.parent_span_id = "00000000000000ff"  # parent never seen
    conv = build_conversation(records)
    assert len(conv.turns) == 2  # the orphan is a root; no agent span in its tree, so it is a turn
    assert "1 span(s) whose parent was not seen treated as roots" in conv.notes
    # a cycle a -> b -> c -> a, and a deep chain of 50,000 spans
    base = records[0]
    cyc = [
        type(base)(
            base.trace_id, f"{i + 1:016x}", f"{(i + 1) % 3 + 1:016x}", f"s{i}", i, i + 1, None, {}, {}, "cy"
        )
        for i in range(3)
    ]
    conv = build_conversation(cyc)
    assert len(conv.turns) == 1 and "parent-id cycle(s) broken at 1 span(s)" in conv.notes
    chain = [
        type(base)(
            base.trace_id, f"{i + 1:016x}", f"{i:016x}" if i else None, "x", i, i + 1, None, {}, {}, "d"
        )
        for i in range(50_000)
    ]
    conv = build_conversation(chain)
    assert len(conv.turns) == 1


def test_finished_conversation_flags_and_empty_input() -> None:
    f = SpanFactory()
    sdk_turn(f.tracer, "c", "q", "a", [])
    fin = FinishedConversation("c", 3, decode_message(f.protobuf()), "cap", True)
    conv = build_conversation(fin)
    assert conv.incomplete and "finished early: open-conversation cap reached" in conv.notes
    assert build_conversation([]).notes == ["no spans"]


# --------------------------------------------------------------------------- official GenAI instrumentation

_RESPONSES = [
    {
        "id": "r1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_w",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    },
    {
        "id": "r2",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "It is 21C in Paris."},
            }
        ],
        "usage": {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39},
    },
]


@pytest.fixture
def fake_openai() -> Iterator[str]:
    """A local OpenAI-compatible server answering chat completions from `_RESPONSES` in turn."""
    calls = {"n": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            body = json.dumps(_RESPONSES[calls["n"] % len(_RESPONSES)]).encode()
            calls["n"] += 1
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


def _run_instrumented_agent(base_url: str, capture: str) -> SpanFactory:
    from openai import OpenAI
    from openai.types.chat import ChatCompletionFunctionToolParam
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    f = SpanFactory()
    saved = {
        k: os.environ.get(k)
        for k in ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "OTEL_SEMCONV_STABILITY_OPT_IN")
    }
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = capture
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=f.provider)
    try:
        client = OpenAI(base_url=base_url, api_key="test")
        tools: list[ChatCompletionFunctionToolParam] = [
            {
                "type": "function",
                "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
            }
        ]
        with f.tracer.start_as_current_span("weather-agent", attributes={"gen_ai.conversation.id": "oai-1"}):
            messages: list = [{"role": "user", "content": "Weather in Paris?"}]
            first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
            calls = first.choices[0].message.tool_calls
            assert calls is not None
            tc = calls[0]
            assert tc.type == "function"
            messages.append(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": tc.id,
                            "type": "function",
                            "function": {"name": tc.function.name, "arguments": tc.function.arguments},
                        }
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": "21C"})
            client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    finally:
        instrumentor.uninstrument()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return f


def test_official_openai_instrumentation_with_content(fake_openai: str) -> None:
    f = _run_instrumented_agent(fake_openai, "SPAN_ONLY")
    assert sum(attrs(s).get("gen_ai.operation.name") == "chat" for s in f.spans()) == 2
    conv = _conversation(f)
    assert conv.conversation_id == "oai-1"
    (turn,) = conv.turns
    assert turn.input == "Weather in Paris?"
    assert turn.answer == "It is 21C in Paris."
    assert [(c.name, c.call_id, c.arguments, c.result) for c in turn.tool_calls] == [
        ("get_weather", "call_w", {"city": "Paris"}, "21C")
    ]
    assert [(u.model, u.input_tokens, u.output_tokens) for u in turn.usage] == [
        ("gpt-4o-mini-2024-07-18", 11, 7),
        ("gpt-4o-mini-2024-07-18", 30, 9),
    ]
    assert conv.not_captured == []


def test_official_openai_instrumentation_without_content(fake_openai: str) -> None:
    f = _run_instrumented_agent(fake_openai, "NO_CONTENT")
    conv = _conversation(f)
    (turn,) = conv.turns
    assert (turn.input, turn.answer, turn.tool_calls) == (None, None, [])
    assert [(u.input_tokens, u.output_tokens) for u in turn.usage] == [(11, 7), (30, 9)]
    assert "no answer text captured (content capture off?) for turn(s) 0" in conv.notes
    assert conv.not_captured == ["messages"]
    # what the content would be graded by is not applied, and nothing is flagged for its absence
    policy = TaskPolicy.model_validate(
        {
            "id": "weather",
            "tools": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
            "outputs": ["21C"],
        }
    )
    score = ConversationScorer(Settings(policies=[policy])).score(conv)
    assert score.passed is None and score.outcome is Outcome.UNSCORED
    assert score.reasons[0] == (
        "not_captured: task policy weather@1 not applied: messages not recorded by the source (content capture off?)"
    )
    assert score.evidence == []


# --------------------------------------------------------------------------- CLI


def test_reconstruct_command_reads_protobuf_json_and_json_lines(tmp_path) -> None:
    f = SpanFactory()
    sdk_turn(f.tracer, "c1", "q1", "a1", [{"name": "t", "id": "x", "arguments": {"k": 1}, "result": 2}])
    (tmp_path / "a.pb").write_bytes(f.protobuf())
    g = SpanFactory()
    sdk_turn(g.tracer, "c2", "q2", "a2", [])
    (tmp_path / "b.json").write_bytes(g.json())
    h = SpanFactory()
    sdk_turn(h.tracer, "c3", "q3", "a3", [])
    (tmp_path / "c.jsonl").write_bytes(h.json(indent=None) + b"\n" + b"this is not json\n")
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "reconstruct",
            str(tmp_path / "a.pb"),
            str(tmp_path / "b.json"),
            str(tmp_path / "c.jsonl"),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 1  # one line of c.jsonl is unreadable; the rest is still written
    convs = [Conversation.model_validate_json(line) for line in out.read_text().splitlines()]
    assert sorted((c.conversation_id, c.turns[0].input, c.turns[0].answer) for c in convs) == [
        ("c1", "q1", "a1"),
        ("c2", "q2", "a2"),
        ("c3", "q3", "a3"),
    ]
    assert "c.jsonl:line 2: invalid_json" in result.output
    assert "3 conversation(s)" in result.output
    ok = CliRunner().invoke(app, ["reconstruct", str(tmp_path / "a.pb")])
    assert ok.exit_code == 0
    (line,) = [x for x in ok.stdout.splitlines() if x.startswith("{")]
    assert json.loads(line)["turns"][0]["tool_calls"][0] == {
        "name": "t",
        "arguments": {"k": 1},
        "result": 2,
        "error": None,
        "call_id": "x",
        "read_only": None,  # no agentwatch.tool.read_only on the span: decided by the tool-name patterns
    }


def test_two_agents_reusing_conversation_ids_are_split_per_agent() -> None:
    from agentwatch.collector.reconstruct import split_by_agent

    a, b = SpanFactory(service="bot-a"), SpanFactory(service="bot-b")
    sdk_turn(
        a.tracer,
        "1",
        "refund order 7",
        "done",
        [{"name": "refund", "arguments": {"order": 7}}],
        agent="bot-a",
    )
    sdk_turn(b.tracer, "1", "weather?", "sunny", [], agent="bot-b")
    sdk_turn(
        a.tracer,
        "1",
        "and order 8?",
        "done too",
        [{"name": "refund", "arguments": {"order": 8}}],
        agent="bot-a",
    )
    spans = decode_message(a.protobuf()) + decode_message(b.protobuf())
    finished = FinishedConversation("1", 3, spans, "idle", False, 12)
    parts = split_by_agent(finished)
    convs = sorted((build_conversation(p) for p in parts), key=lambda c: c.agent)
    assert [(c.agent, c.conversation_id, len(c.turns)) for c in convs] == [
        ("bot-a", "1", 2),
        ("bot-b", "1", 1),
    ]
    assert [len(t.tool_calls) for t in convs[0].turns] == [1, 1] and convs[1].turns[0].tool_calls == []
    assert sum(len(p.spans) for p in parts) == len(spans)
    assert all((p.partition, p.min_offset) == (3, 12) for p in parts)
    one = FinishedConversation("2", 0, decode_message(b.protobuf()), "idle", False)
    assert split_by_agent(one) == [one]


def test_instructions_conversation_expectation_and_read_only_flags_are_read() -> None:
    f = SpanFactory()
    whole = {
        "tools": [{"name": "book", "arguments": {"flight": "HAT1"}, "match": {"flight": "exact"}}],
        "outputs": ["HAT1"],
        "end": "handoff",
    }
    parts = [{"type": "text", "content": "You are the desk."}, {"type": "text", "content": "Fees: $25."}]
    sdk_turn(
        f.tracer,
        "c-fx",
        "book HAT1",
        "booked HAT1",
        [
            {
                "name": "find_flight",
                "id": "a",
                "arguments": {},
                "result": {},
                "attributes": {"agentwatch.tool.read_only": "true"},
            },
            {
                "name": "book",
                "id": "b",
                "arguments": {"flight": "HAT1"},
                "result": "ok",
                "attributes": {"agentwatch.tool.read_only": False},
            },
            {
                "name": "note",
                "id": "c",
                "arguments": {},
                "result": "ok",
                "attributes": {"agentwatch.tool.read_only": "perhaps"},
            },
        ],
        extra={
            "gen_ai.system_instructions": json.dumps(parts),
            "agentwatch.conversation.expected": json.dumps(whole),
        },
    )
    sdk_turn(
        f.tracer,
        "c-fx",
        "thanks",
        None,
        [],
        extra={"agentwatch.conversation.expected": json.dumps({**whole, "end": "answer"})},
    )
    conv = _conversation(f)
    assert conv.system == "You are the desk.\nFees: $25."
    assert conv.expected is not None and conv.expected.end == "answer"  # the latest expectation wins
    assert conv.expected.tools[0].match == {"flight": "exact"} and conv.expected.outputs == ["HAT1"]
    assert [c.read_only for c in conv.turns[0].tool_calls] == [True, False, None]
    assert conv.turns[0].expected is None  # a conversation's expectation is not a turn's


def test_instructions_from_the_system_message_of_a_model_call_and_a_bad_expectation_is_a_note() -> None:
    f = SpanFactory()
    with (
        f.tracer.start_as_current_span(
            "invoke_agent a",
            attributes={
                "gen_ai.conversation.id": "c-sys",
                "gen_ai.operation.name": "invoke_agent",
                "agentwatch.conversation.expected": "{not json",
            },
        ),
        f.tracer.start_as_current_span(
            "chat m",
            attributes={
                "gen_ai.conversation.id": "c-sys",
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps(
                    [
                        {"role": "system", "parts": [{"type": "text", "content": "Refunds take 5 days."}]},
                        {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
                    ]
                ),
                "gen_ai.output.messages": assistant_msg("hello"),
            },
        ),
    ):
        pass
    conv = _conversation(f)
    assert conv.system == "Refunds take 5 days." and conv.turns[0].input == "hi"
    assert conv.expected is None
    assert any(n.startswith("agentwatch.conversation.expected ignored") for n in conv.notes)


def _chat(f: SpanFactory, inputs: list[dict], outputs: list[dict]) -> None:
    """One model call, a trace root of its own, its messages in the GenAI form."""
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.conversation.id": "loop",
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
    }
    f.tracer.start_span("chat", attributes=attributes).end()


def _said(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


# a question, the model's call of a tool for it, and the tool's result
_ASK = [_said("user", "weather in Paris?")]
_CALL = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "c1", "name": "weather", "arguments": {}}],
}
_RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": {"temp": 18}}]}


def test_model_calls_of_one_tool_loop_are_one_turn_without_agent_spans() -> None:
    """A model call given the result of the tool the previous one asked for continues its turn; a new question
    starts a turn; a call that answers no call of the previous one does too."""
    f = SpanFactory()
    ask, call, result = _ASK, _CALL, _RESULT
    _chat(f, ask, [call])
    _chat(f, [*ask, call, result], [_said("assistant", "18 degrees")])
    ask2 = [*ask, call, result, _said("assistant", "18 degrees"), _said("user", "and Rome?")]
    _chat(f, ask2, [_said("assistant", "no idea")])
    other = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c9", "response": {}}]}
    _chat(f, [_said("user", "hi"), other], [_said("assistant", "hello")])  # answers no call asked here
    conv = _conversation(f)
    assert [(t.input, t.answer) for t in conv.turns] == [
        ("weather in Paris?", "18 degrees"),
        ("and Rome?", "no idea"),
        ("hi", "hello"),
    ]
    assert [(c.name, c.result) for c in conv.turns[0].tool_calls] == [("weather", {"temp": 18})]


def _step(f: SpanFactory, inputs: list[dict], outputs: list[dict]) -> None:
    """One run of a graph's "agent" node: an agent span over one model call, below the current span."""
    with f.tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}):
        _chat(f, inputs, outputs)


def test_agent_steps_of_one_tool_loop_in_one_trace_are_one_turn() -> None:
    """A graph run logs an agent span per step with the tool between them: the step given the result of the tool
    the previous step asked for continues its turn, with the tool span; a step after an answer starts a turn,
    and so does a step of another trace."""
    f = SpanFactory()
    ask, call, result = _ASK, _CALL, _RESULT
    tool = {
        "openinference.span.kind": "TOOL",
        "tool.name": "weather",
        "input.value": "{}",
        "output.value": '{"temp": 18}',
    }
    history = [*ask, call, result, _said("assistant", "18 degrees")]
    with f.tracer.start_as_current_span("LangGraph", attributes={"openinference.span.kind": "CHAIN"}):
        _step(f, ask, [call])
        with f.tracer.start_as_current_span("tools", attributes={"openinference.span.kind": "CHAIN"}):
            f.tracer.start_span("weather", attributes=tool).end()
        _step(f, [*ask, call, result], [_said("assistant", "18 degrees")])
        _step(f, [*history, _said("user", "and Rome?")], [call])  # after an answer: a turn of its own
    with f.tracer.start_as_current_span("LangGraph", attributes={"openinference.span.kind": "CHAIN"}):
        _step(f, [*history, _said("user", "and Rome?"), call, result], [_said("assistant", "no idea")])
    conv = _conversation(f)
    assert conv.notes == ["tool calls taken from model output messages (no execute_tool spans) for turn(s) 1"]
    assert [(t.input, t.answer) for t in conv.turns] == [
        ("weather in Paris?", "18 degrees"),
        ("and Rome?", None),
        ("and Rome?", "no idea"),
    ]
    (first_call,) = conv.turns[0].tool_calls  # from the tool span joined in, not from the messages
    assert (first_call.name, first_call.result) == ("weather", {"temp": 18})


def test_tool_parameters_are_arguments_only_when_they_are_no_schema() -> None:
    """OpenInference's `tool.parameters` is the tool's JSON schema; an older Strands put the call's input there."""
    f = SpanFactory()
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "params"}
    with f.tracer.start_as_current_span("invoke_agent", attributes=agent):
        for parameters in ({"city": "Paris"}, schema):
            tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather"}
            f.tracer.start_span(
                "execute_tool weather", attributes={**tool, "tool.parameters": json.dumps(parameters)}
            ).end()
    conv = _conversation(f)
    assert [c.arguments for c in conv.turns[0].tool_calls] == [{"city": "Paris"}, {}]
    assert "tool arguments not captured (content capture off?) for 1 tool call(s)" in conv.notes


def test_a_model_span_that_only_prepares_a_call_is_no_model_call() -> None:
    """A model span reporting nothing (no tokens, cost, output or error) before a call of the same model that
    reports something is left out of the usage; one before a call of another model or of one that reports
    nothing either, or the last, stays (its cost is unknown, not 0)."""
    f = SpanFactory()
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "prep"}

    def model(name: str, tokens: int | None) -> None:
        attributes: dict = {"gen_ai.operation.name": "chat", "gen_ai.request.model": name}
        if tokens is not None:
            attributes["gen_ai.usage.input_tokens"] = tokens
        f.tracer.start_span("chat", attributes=attributes).end()

    with f.tracer.start_as_current_span("invoke_agent", attributes=agent):
        model("gpt-4o-mini", None)  # prepares the next call: left out
        model("gpt-4o-mini", 21)
        model("gpt-4o", None)  # another model follows: stays
        model("gpt-4o-mini", None)  # a call of the same model follows, but reports nothing either: stays
        model("gpt-4o-mini", None)  # the last: stays
    (turn,) = _conversation(f).turns
    assert [(u.model, u.input_tokens) for u in turn.usage] == [
        ("gpt-4o-mini", 21),
        ("gpt-4o", 0),
        ("gpt-4o-mini", 0),
        ("gpt-4o-mini", 0),
    ]


def test_model_calls_of_one_tool_loop_without_call_ids_are_one_turn() -> None:
    """Calls without ids (Gemini's, older function calling): the next model call's input repeats them by name,
    followed by their results, in order; a call that repeats other names starts a turn of its own."""
    f = SpanFactory()
    ask = [_said("user", "weather in Paris and Rome?")]
    call = {
        "role": "assistant",
        "parts": [
            {"type": "tool_call", "name": "weather", "arguments": {"city": "Paris"}},
            {"type": "tool_call", "name": "weather", "arguments": {"city": "Rome"}},
        ],
    }
    results = {
        "role": "tool",
        "parts": [
            {"type": "tool_call_response", "response": {"temp": 18}},
            {"type": "tool_call_response", "response": {"temp": 24}},
        ],
    }
    _chat(f, ask, [call])
    _chat(f, [*ask, call, results], [_said("assistant", "18 and 24 degrees")])
    other = {"role": "assistant", "parts": [{"type": "tool_call", "name": "news", "arguments": {}}]}
    _chat(f, [_said("user", "news?")], [call])
    _chat(f, [_said("user", "news?"), other, results], [_said("assistant", "none")])  # repeats another call
    conv = _conversation(f)
    assert [(t.input, t.answer) for t in conv.turns] == [
        ("weather in Paris and Rome?", "18 and 24 degrees"),
        ("news?", None),
        ("news?", "none"),
    ]
    assert [(c.arguments, c.result, c.call_id) for c in conv.turns[0].tool_calls] == [
        ({"city": "Paris"}, {"temp": 18}, None),
        ({"city": "Rome"}, {"temp": 24}, None),
    ]


def test_a_model_span_around_the_call_its_client_logs_is_counted_once() -> None:
    """A framework's model span around the span its client's instrumentation logs for the same call (ADK's
    `call_llm` around `generate_content`, LangChain's around OpenAI's): the tokens are counted once, the inner
    span's, also through a span of another kind between them; a wrapper whose inner spans report nothing stays."""
    f = SpanFactory()
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "nested"}

    def model(name: str, tokens: int | None = None) -> dict:
        attributes: dict = {"gen_ai.request.model": name, "gen_ai.operation.name": "chat"}
        if tokens is not None:
            attributes["gen_ai.usage.input_tokens"] = tokens
        return attributes

    tracer = f.tracer
    with tracer.start_as_current_span("invoke_agent", attributes=agent):
        with tracer.start_as_current_span("call_llm", attributes=model("wrapped", 21)):
            tracer.start_span("generate_content", attributes=model("wrapped", 21)).end()
        with tracer.start_as_current_span("call_llm", attributes=model("wrapped-twice", 40)):
            with tracer.start_as_current_span("retry", attributes={"http.method": "POST"}):
                tracer.start_span("generate_content", attributes=model("wrapped-twice", 40)).end()
        with tracer.start_as_current_span("call_llm", attributes=model("outer-only", 7)):
            tracer.start_span("http", attributes=model("outer-only")).end()
    (turn,) = _conversation(f).turns
    assert [(u.model, u.input_tokens) for u in turn.usage] == [
        ("wrapped", 21),
        ("wrapped-twice", 40),
        ("outer-only", 7),
        ("outer-only", 0),
    ]


def test_the_agent_is_named_by_an_agent_span_before_a_model_spans_default() -> None:
    """The official OpenAI Agents instrumentation names its workflow span nothing, its agent span the agent, and
    every model and tool span "OpenAI Agent": the agent span's name wins over the default on earlier spans."""
    from agentwatch.collector.span_record import SpanRecord

    trace = "0af7651916cd43dd8448eb211c80319c"
    default = {"gen_ai.agent.name": "OpenAI Agent"}
    spans = [
        SpanRecord(
            trace, "a" * 16, None, "Agent workflow", 0, 100, None, {"gen_ai.operation.name": "invoke_agent"}
        ),
        SpanRecord(
            trace, "d" * 16, "a" * 16, "unknown", 1, 95, None, {"gen_ai.operation.name": "unknown", **default}
        ),
        SpanRecord(
            trace, "c" * 16, "b" * 16, "chat", 10, 20, None, {"gen_ai.operation.name": "chat", **default}
        ),
        SpanRecord(
            trace,
            "b" * 16,
            "d" * 16,
            "invoke_agent weather-agent",
            5,
            90,
            None,
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather-agent"},
        ),
    ]
    assert build_conversation(spans).agent == "weather-agent"
    spans[3].attrs.pop("gen_ai.agent.name")
    assert build_conversation(spans).agent == "OpenAI Agent"  # no agent span names it: any span's name


def test_reconstruct_command_leaves_out_the_earlier_traces_of_a_loop_and_says_so() -> None:
    """Google GenAI's two model calls of a loop the caller runs, each a trace (`record_agents google_genai`): one
    conversation, the whole turn, where there were two."""
    recording = Path(__file__).parent.parent / "data" / "google_genai_trace.json"
    result = CliRunner().invoke(app, ["reconstruct", str(recording)])
    assert result.exit_code == 0
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("{")]
    (turn,) = Conversation.model_validate_json(line).turns
    assert turn.answer is not None and [c.name for c in turn.tool_calls] == ["get_weather"]
    assert "-> 1 conversation(s)" in result.output
    assert "1 trace(s) of a loop the caller runs, continued in a later trace's conversation" in result.output
