"""GenAI message events sent as OTLP log records (`log_records`, `span_fragments`): the official OpenAI
instrumentation in event mode (1.3b0: one `gen_ai.client.inference.operation.details` record per call, messages
in its attributes), its predecessor (openai-v2 2.1b0 on SDK 1.31: one record per message, the message in the
body, the event's name as the `event.name` attribute) and OpenLLMetry's in event mode (0.62.4: one record per
message, a choice's tool calls beside its message, tool messages without the id of their call), and Google's
GenAI SDK under its official instrumentation in event mode, recorded by `python -m tests.support.record_agents
openai_events` / `openai_v2_events` / `openllmetry_events` / `google_genai_events` on 2026-11-28;
and records built here for what those do not show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import Parse
from opentelemetry.proto.logs.v1.logs_pb2 import LogsData

from agentwatch.collector.assembler import Assembler
from agentwatch.collector.decode import DecodeError, decode_message, encode_spans_otlp
from agentwatch.collector.log_records import decode_log_message
from agentwatch.collector.otlp_files import group_by_conversation, read_otlp_files
from agentwatch.collector.reconstruct import build_conversation
from agentwatch.collector.span_fragments import FRAGMENT_KEY, attach, is_fragment
from agentwatch.config.services import CollectorConfig
from tests.support.fake_openai import FINAL_TEXT, TOOL_CALL_ID, USAGE
from tests.support.record_agents import calls_of, weather_call

DATA = Path(__file__).parent.parent / "data"
RUNS = ["openai_events", "openai_v2_events", "openllmetry_events"]
QUESTION = "What is the weather in Paris?"
TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"


def _logs(run: str, encoding: str) -> bytes:
    text = (DATA / f"{run}_logs.json").read_bytes()
    return text if encoding == "json" else Parse(text, LogsData()).SerializeToString()


def _spans(run: str) -> list[Any]:
    return decode_message((DATA / f"{run}_trace.json").read_bytes(), "application/json")


@pytest.mark.parametrize("encoding", ["json", "protobuf"])
@pytest.mark.parametrize("run", RUNS)
def test_a_run_whose_messages_are_log_records_rebuilds_its_whole_turn(run: str, encoding: str) -> None:
    batch = decode_log_message(_logs(run, encoding), None)
    assert batch.skipped == 0 and batch.records == (
        2 if run == "openai_events" else 8
    )  # per call, per message
    assert len(batch.fragments) == 2  # one per model call
    spans = _spans(run)
    chats = {s.span_id for s in spans if s.attrs.get("gen_ai.operation.name") == "chat"}
    assert {f.parent_span_id for f in batch.fragments} == chats
    conv = build_conversation(spans + batch.fragments)
    assert conv.conversation_id == "conv-events-1"  # the trace's, named by the caller's agent span
    assert conv.notes == [] and conv.not_captured == []
    assert conv.system == "You answer weather questions."
    (turn,) = conv.turns
    assert (turn.input, turn.answer) == (QUESTION, FINAL_TEXT)
    # the tool span logged neither arguments nor result: the model calls' messages have both under its call id
    assert calls_of(turn.tool_calls) == weather_call()
    assert [(u.input_tokens, u.output_tokens) for u in turn.usage] == [USAGE["tool_call"], USAGE["final"]]


@pytest.mark.parametrize("run", RUNS)
def test_without_its_log_records_the_run_has_no_messages(run: str) -> None:
    conv = build_conversation(_spans(run))
    assert conv.not_captured == ["messages", "arguments", "results"]


@pytest.mark.parametrize("run", RUNS)
def test_the_files_read_together_make_one_conversation(run: str) -> None:
    """`agentwatch reconstruct` / `score` on a trace file and a log file: the fragments join their trace's
    conversation."""
    found = read_otlp_files([DATA / f"{run}_trace.json", DATA / f"{run}_logs.json"])
    assert found.problems == [] and found.records == 2
    (conversation,) = group_by_conversation(found.spans).values()
    (turn,) = build_conversation(conversation).turns
    assert (turn.input, turn.answer) == (QUESTION, FINAL_TEXT)


def test_a_log_file_of_application_logs_is_a_problem_with_its_reason(tmp_path: Path) -> None:
    path = tmp_path / "app.json"
    path.write_text(json.dumps(_document([_record(event=None, body={"stringValue": "GET /health 200"})])))
    found = read_otlp_files([path])
    assert [(p.where, p.reason) for p in found.problems] == [("document", "no_message_events")]
    assert found.spans == []


def test_fragments_survive_the_rekey_topic_and_deduplicate_on_replay() -> None:
    """Re-keyed fragments are re-decoded from OTLP spans: still fragments, of the same span; a replayed message
    gives the same fragment ids, which the assembler counts as duplicates."""
    batch = decode_log_message(_logs("openai_events", "protobuf"))
    again = decode_message(encode_spans_otlp(batch.fragments))
    assert [(f.span_id, f.parent_span_id, f.attrs) for f in again] == [
        (f.span_id, f.parent_span_id, f.attrs) for f in batch.fragments
    ]
    assert all(is_fragment(f) for f in again)
    replay = decode_log_message(_logs("openai_events", "json"))
    assert [f.span_id for f in replay.fragments] == [f.span_id for f in batch.fragments]
    assembler = Assembler(CollectorConfig())
    assert [assembler.add(f, 0, 1, 0.0) for f in batch.fragments + replay.fragments] == [
        "added",
        "added",
        "duplicate",
        "duplicate",
    ]


# --------------------------------------------------------------------------- records built here


def _value(value: Any) -> dict[str, Any]:
    """An OTLP/JSON AnyValue."""
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"kvlistValue": {"values": [{"key": k, "value": _value(v)} for k, v in value.items()]}}


def _record(
    event: str | None = "gen_ai.user.message",
    body: Any = None,
    attributes: dict[str, Any] | None = None,
    trace_id: str | None = TRACE,
    span_id: str | None = SPAN,
    time_ns: int = 1_000,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "timeUnixNano": str(time_ns),
        "attributes": [{"key": k, "value": _value(v)} for k, v in (attributes or {}).items()],
    }
    if event is not None:
        record["eventName"] = event
    if body is not None:
        record["body"] = body
    if trace_id is not None:
        record["traceId"] = trace_id
    if span_id is not None:
        record["spanId"] = span_id
    return record


def _document(records: list[dict[str, Any]]) -> dict[str, Any]:
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "weather"}}]}
    return {"resourceLogs": [{"resource": resource, "scopeLogs": [{"logRecords": records}]}]}


def _decode(records: list[dict[str, Any]]) -> Any:
    return decode_log_message(json.dumps(_document(records)).encode(), "application/json")


def test_application_logs_and_records_of_no_span_are_skipped_and_counted() -> None:
    batch = _decode(
        [
            _record(event=None, body={"stringValue": "GET /health 200"}),  # an application log
            _record(event="db.query", body=_value({"content": "SELECT 1"})),  # another event
            _record(body=_value({"content": "hi"}), span_id=None),  # no span
            _record(body=_value({"content": "hi"}), trace_id="00000000000000000000000000000000"),
            _record(body=_value({"content": "What is the weather in Paris?"})),
        ]
    )
    assert (batch.records, batch.skipped, len(batch.fragments)) == (5, 4, 1)
    (fragment,) = batch.fragments
    assert (fragment.trace_id, fragment.parent_span_id, fragment.attrs[FRAGMENT_KEY]) == (TRACE, SPAN, SPAN)
    assert fragment.conversation_id == TRACE  # no conversation key: the trace join finds it
    assert fragment.resource == {"service.name": "weather"}
    assert json.loads(fragment.attrs["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "What is the weather in Paris?"}]}
    ]


def test_the_event_name_attribute_and_a_text_body_are_read() -> None:
    """SDKs before `LogRecord.event_name` put the name in `event.name`; a text body is the message's content."""
    batch = _decode(
        [_record(event=None, body={"stringValue": "Hello"}, attributes={"event.name": "gen_ai.user.message"})]
    )
    (fragment,) = batch.fragments
    assert json.loads(fragment.attrs["gen_ai.input.messages"])[0]["parts"] == [
        {"type": "text", "content": "Hello"}
    ]


def test_a_body_written_as_json_text_is_read_as_its_object() -> None:
    body = json.dumps({"index": 0, "message": {"role": "assistant", "content": "It is 18 degrees."}})
    (fragment,) = _decode([_record(event="gen_ai.choice", body={"stringValue": body})]).fragments
    (message,) = json.loads(fragment.attrs["gen_ai.output.messages"])
    assert message == {"role": "assistant", "parts": [{"type": "text", "content": "It is 18 degrees."}]}


def test_a_tool_call_deep_in_a_body_keeps_its_arguments() -> None:
    """An assistant message's tool call sits four levels down its body: read whole, not cut at the depth span
    attributes are read to."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
    }
    batch = _decode([_record(event="gen_ai.assistant.message", body=_value({"tool_calls": [call]}))])
    (message,) = json.loads(batch.fragments[0].attrs["gen_ai.input.messages"])
    (part,) = message["parts"]
    assert (part["type"], part["id"], part["name"]) == ("tool_call", "call_1", "get_weather")
    assert part["arguments"] in ({"city": "Paris"}, '{"city": "Paris"}')


def test_a_conversation_key_on_a_record_names_the_fragments_conversation() -> None:
    batch = _decode(
        [_record(body=_value({"content": "hi"}), attributes={"gen_ai.conversation.id": "conv-7"})]
    )
    assert batch.fragments[0].conversation_id == "conv-7"


@pytest.mark.parametrize(
    ("payload", "content_type", "reason"),
    [
        (b"", None, "empty"),
        (b"\xff\x00garbage", None, "not_otlp"),
        (b"\xff\x00garbage", "application/x-protobuf", "invalid_protobuf"),
        (b'{"resourceSpans": []}', "application/json", "not_otlp"),
        (b"{not json", "application/json", "invalid_json"),
        (json.dumps(_document([])).encode(), "application/json", "empty"),
    ],
)
def test_a_message_that_is_no_log_records_is_a_decode_error_with_its_reason(
    payload: bytes, content_type: str | None, reason: str
) -> None:
    with pytest.raises(DecodeError) as raised:
        decode_log_message(payload, content_type)
    assert raised.value.reason == reason


# --------------------------------------------------------------------------- attach


def _fragments_of(records: list[dict[str, Any]]) -> list[Any]:
    return list(_decode(records).fragments)


def test_a_spans_own_messages_win_over_its_fragments() -> None:
    (chat,) = decode_message(
        json.dumps(
            {
                "resourceSpans": [
                    {
                        "scopeSpans": [
                            {
                                "spans": [
                                    {
                                        "traceId": TRACE,
                                        "spanId": SPAN,
                                        "name": "chat",
                                        "attributes": [
                                            {
                                                "key": "gen_ai.operation.name",
                                                "value": {"stringValue": "chat"},
                                            },
                                            {
                                                "key": "gen_ai.input.messages",
                                                "value": {
                                                    "stringValue": json.dumps(
                                                        [
                                                            {
                                                                "role": "user",
                                                                "parts": [{"type": "text", "content": "own"}],
                                                            }
                                                        ]
                                                    )
                                                },
                                            },
                                        ],
                                    }
                                ]
                            }
                        ]
                    }
                ]
            }
        ).encode()
    )
    fragments = _fragments_of(
        [
            _record(body=_value({"content": "logged"})),
            _record(
                event="gen_ai.choice",
                body=_value({"index": 0, "message": {"role": "assistant", "content": "done"}}),
            ),
        ]
    )
    spans, orphans = attach([chat, *fragments])
    assert (spans, orphans) == ([chat], 0)
    assert json.loads(chat.attrs["gen_ai.input.messages"])[0]["parts"][0]["content"] == "own"
    assert json.loads(chat.attrs["gen_ai.output.messages"])[0]["parts"][0]["content"] == "done"


def test_fragments_of_one_span_are_read_in_time_order_and_orphans_counted() -> None:
    chat = _fragments_of([_record(body=_value({"content": "x"}))])[0]  # any span record with SPAN as its id
    chat.name, chat.span_id, chat.parent_span_id, chat.attrs = "chat", SPAN, None, {}
    later = _fragments_of([_record(body=_value({"content": "second"}), time_ns=2_000)])
    earlier = _fragments_of(
        [_record(event="gen_ai.system.message", body=_value({"content": "first"}), time_ns=1_000)]
    )
    orphan = _fragments_of([_record(body=_value({"content": "lost"}), span_id="00f067aa0ba902b7")])
    spans, orphans = attach([*later, chat, *orphan, *earlier])
    assert (spans, orphans) == ([chat], 1)
    assert [m["role"] for m in json.loads(chat.attrs["gen_ai.input.messages"])] == ["system", "user"]


def test_spans_without_fragments_are_given_back_as_they_are() -> None:
    spans = _spans("openai_events")
    assert attach(spans) == (spans, 0) and attach(spans)[0] is spans


def test_a_topic_read_both_as_spans_and_as_log_records_fails_at_start() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="log_topics: otlp_spans also read as spans"):
        CollectorConfig(input_topics=["otlp_spans"], log_topics=["otlp_logs", "otlp_spans"])
    assert CollectorConfig(input_topics=["otlp_spans"], log_topics=["otlp_logs"]).log_topics == ["otlp_logs"]


def test_tool_messages_without_ids_answer_the_calls_before_them_in_order() -> None:
    """OpenLLMetry logs a tool message's content without the id of the call it answers: the first answers the
    assistant's first call, the next the second; one with its id answers that call, whatever its place."""
    calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
        for i in (1, 2, 3)
    ]
    batch = _decode(
        [
            _record(event="gen_ai.assistant.message", body=_value({"tool_calls": calls})),
            _record(event="gen_ai.tool.message", body=_value({"content": "third", "id": "call_3"})),
            _record(event="gen_ai.tool.message", body=_value({"content": '{"temp_c": 18}'})),
            _record(event="gen_ai.tool.message", body=_value({"content": "second"})),
        ]
    )
    messages = json.loads(batch.fragments[0].attrs["gen_ai.input.messages"])
    answers = [(p["id"], p["response"]) for m in messages[1:] for p in m["parts"]]
    assert answers == [("call_3", "third"), ("call_1", {"temp_c": 18}), ("call_2", "second")]


def test_google_genai_in_event_mode_rebuilds_as_in_span_mode() -> None:
    """Google's GenAI SDK under its official instrumentation, recorded in each content mode
    (`record_agents google_genai` and `google_genai_events`): the same turn, whether the messages were on the
    spans or in log records."""
    batch = decode_log_message(_logs("google_genai_events", "protobuf"))
    assert (batch.records, batch.skipped, len(batch.fragments)) == (2, 0, 2)
    from_events = build_conversation(_spans("google_genai_events") + batch.fragments)
    on_spans = build_conversation(_spans("google_genai"))
    fields = {"input", "answer", "tool_calls", "usage"}
    assert [t.model_dump(include=fields) for t in from_events.turns] == [
        t.model_dump(include=fields) for t in on_spans.turns
    ]
    assert (from_events.system, from_events.not_captured, from_events.notes) == (
        on_spans.system,
        on_spans.not_captured,
        on_spans.notes,
    )
    (turn,) = from_events.turns
    assert (turn.input, turn.answer) == (QUESTION, FINAL_TEXT)


def test_the_reconstruct_command_reads_a_gzipped_proto_log_file_beside_the_trace_file(tmp_path: Path) -> None:
    """The Collector's file exporter with `format: proto` writes size-prefixed records: the log file's records
    are told from trace records and read as log records."""
    import gzip

    from typer.testing import CliRunner

    from agentwatch.cli import app

    record = Parse((DATA / "openai_events_logs.json").read_bytes(), LogsData()).SerializeToString()
    framed = len(record).to_bytes(4, "big") + record
    (tmp_path / "logs.pb.gz").write_bytes(gzip.compress(framed))
    result = CliRunner().invoke(
        app, ["reconstruct", str(DATA / "openai_events_trace.json"), str(tmp_path / "logs.pb.gz")]
    )
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("{")]
    (turn,) = json.loads(line)["turns"]
    assert (turn["input"], turn["answer"]) == (QUESTION, FINAL_TEXT)


def test_a_source_that_logs_inputs_but_no_outputs_is_not_taken_for_an_agent_that_never_answered() -> None:
    """The OpenAI Agents SDK under OpenLLMetry 0.62.4, with the Chat Completions model (`record_agents
    openai_agents_openllmetry`): its model spans log the input messages, never the output nor the tokens. The
    answer was not recorded: `not_captured: answers`, and the `no_answer` detector does not fire on it."""
    from agentwatch.scorers import ConversationScorer

    conv = build_conversation(_spans("openai_agents_openllmetry"))
    assert conv.not_captured == ["answers"]
    (turn,) = conv.turns
    assert (turn.input, turn.answer) == (QUESTION, None)
    assert [(c.name, c.arguments, c.call_id) for c in turn.tool_calls] == [
        ("get_weather", {"city": "Paris"}, TOOL_CALL_ID)
    ]
    score = ConversationScorer().score(conv)
    assert not any(r.startswith("no_answer") for r in score.reasons) and score.evidence == []
    assert "cost_unknown: a model call reported no token usage" in score.reasons


def test_an_agent_that_failed_before_answering_is_still_unanswered() -> None:
    """The same spans with the model calls failed, or without them: the answer is missing, not unrecorded."""
    failed = _spans("openai_agents_openllmetry")
    for span in failed:
        if span.attrs.get("gen_ai.operation.name") == "chat":
            span.status_error = "APITimeoutError"
    assert build_conversation(failed).not_captured == []
    without_models = [
        s for s in _spans("openai_agents_openllmetry") if s.attrs.get("gen_ai.operation.name") != "chat"
    ]
    assert build_conversation(without_models).not_captured != ["answers"]


def _final_call_unlogged(status_error: str | None = None, which: int = -1) -> Any:
    """The official OpenAI instrumentation's streamed run (`record_agents openai_stream`), one model call's output
    taken off (the last by default: a stream given up before its end), that call failed or not."""
    spans = decode_message((DATA / "openai_stream_trace.json").read_bytes(), "application/json")
    chats = sorted(
        (s for s in spans if s.attrs.get("gen_ai.operation.name") == "chat"), key=lambda s: s.start_ns
    )
    chats[which].attrs.pop("gen_ai.output.messages")
    chats[which].status_error = status_error
    return build_conversation(spans)


def test_a_turn_whose_last_call_logged_no_output_has_its_answer_unseen_not_missing() -> None:
    """A source that logged the tool call's output but not the answer's (calls logged one way, and another):
    `answers` not captured, and no `no_answer`, though the turn's first call logged what it returned."""
    from agentwatch.scorers import ConversationScorer

    conv = _final_call_unlogged()
    assert conv.not_captured == ["answers"] and conv.turns[0].answer is None
    score = ConversationScorer().score(conv)
    assert not any("no_answer" in r for r in score.reasons)


def test_a_failed_last_call_leaves_the_turn_unanswered_and_an_earlier_unlogged_output_changes_nothing() -> (
    None
):
    from agentwatch.scorers import ConversationScorer

    failed = _final_call_unlogged("APIConnectionError")
    assert failed.not_captured == []
    assert any(r.startswith("no_answer") for r in ConversationScorer().score(failed).reasons)
    earlier = _final_call_unlogged(which=0)  # the tool call's output not logged, the answer's logged
    assert earlier.not_captured == [] and earlier.turns[0].answer == FINAL_TEXT
