"""OTLP decoding: protobuf and OTLP/JSON built by the real OTel SDK, checked field by field against the spans."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
from opentelemetry.trace import Status, StatusCode

from agentwatch.collector.conventions import NEEDED_KEYS
from agentwatch.collector.decode import TRUNCATION_MARKER, DecodeError, decode_message, encode_spans_otlp
from tests.support.spans import SpanFactory, attrs, sdk_turn


@pytest.fixture
def factory() -> SpanFactory:
    f = SpanFactory()
    sdk_turn(
        f.tracer,
        "conv-1",
        "refund order 7",
        "done",
        [{"name": "lookup_order", "id": "call_1", "arguments": {"order": 7}, "result": {"ok": True}}],
        extra={
            "agentwatch.tag.difficulty": "hard",
            "agentwatch.conversation.end": True,
            "agentwatch.budget.usd": 0.5,
        },
    )
    return f


def _by_id(records):
    return {r.span_id: r for r in records}


def test_protobuf_fields_match_the_sdk_spans(factory: SpanFactory) -> None:
    records = _by_id(decode_message(factory.protobuf()))
    spans = factory.spans()
    assert len(records) == len(spans) == 3
    for span in spans:
        rec = records[format(span.context.span_id, "016x")]
        assert rec.trace_id == format(span.context.trace_id, "032x")
        assert rec.parent_span_id == (format(span.parent.span_id, "016x") if span.parent else None)
        assert rec.name == span.name
        assert (rec.start_ns, rec.end_ns) == (span.start_time, span.end_time)
        expected = {k: (list(v) if isinstance(v, tuple) else v) for k, v in attrs(span).items()}
        expected = {k: v for k, v in expected.items() if k in NEEDED_KEYS or k.startswith("agentwatch.tag.")}
        assert rec.attrs == expected
        assert "http.noise" not in rec.attrs
        assert rec.resource == {"service.name": "shop-agent", "service.version": "2.1.0"}
        assert rec.conversation_id == "conv-1"
        assert rec.status_error is None
    turn = next(r for r in records.values() if r.parent_span_id is None)
    assert turn.attrs["agentwatch.tag.difficulty"] == "hard"
    assert turn.attrs["agentwatch.conversation.end"] is True
    assert turn.attrs["agentwatch.budget.usd"] == 0.5


def test_json_mapping_gives_the_same_records(factory: SpanFactory) -> None:
    from_pb = decode_message(factory.protobuf())
    raw = factory.json()
    assert b'"traceId"' in raw  # camelCase official mapping, base64 ids
    assert decode_message(raw) == from_pb
    assert decode_message(raw, "application/json") == from_pb
    snake = factory.json(preserving_proto_field_name=True)
    assert b'"trace_id"' in snake
    assert decode_message(snake) == from_pb


def test_json_with_hex_ids_and_string_ints_per_otlp_spec() -> None:
    doc = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "5B8EFFF798038103D269B633813FC60C",
                                "spanId": "EEE19B7EC3C1B174",
                                "parentSpanId": "",
                                "name": "chat m",
                                "startTimeUnixNano": "1544712660000000000",
                                "endTimeUnixNano": "1544712661000000000",
                                "attributes": [
                                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "42"}},
                                    {"key": "llm.cost.total", "value": {"doubleValue": 0.25}},
                                    {"key": "agentwatch.conversation.end", "value": {"boolValue": True}},
                                    {
                                        "key": "gen_ai.response.model",
                                        "value": {
                                            "arrayValue": {"values": [{"stringValue": "a"}, {"intValue": 3}]}
                                        },
                                    },
                                    {"key": "ignored.key", "value": {"stringValue": "x"}},
                                ],
                                "status": {"code": "STATUS_CODE_ERROR", "message": "boom"},
                            }
                        ]
                    }
                ],
            }
        ]
    }
    (rec,) = decode_message(json.dumps(doc).encode())
    assert rec.trace_id == "5b8efff798038103d269b633813fc60c"
    assert rec.span_id == "eee19b7ec3c1b174"
    assert rec.parent_span_id is None
    assert (rec.start_ns, rec.end_ns) == (1544712660000000000, 1544712661000000000)
    assert rec.attrs == {
        "gen_ai.usage.input_tokens": 42,
        "llm.cost.total": 0.25,
        "agentwatch.conversation.end": True,
        "gen_ai.response.model": ["a", 3],
    }
    assert rec.status_error == "boom"
    assert rec.resource == {"service.name": "svc"}
    assert rec.conversation_id == rec.trace_id  # no conversation key: one-turn conversation of the trace


def test_errors_from_status_error_type_and_exception_events() -> None:
    f = SpanFactory()
    with f.tracer.start_as_current_span("a", attributes={"error.type": "Timeout"}):
        pass
    with pytest.raises(ValueError), f.tracer.start_as_current_span("b"):
        raise ValueError("bad value")
    with f.tracer.start_as_current_span("c") as span:
        span.set_status(Status(StatusCode.ERROR))
        span.record_exception(KeyError("k"))
    with f.tracer.start_as_current_span("d") as span:
        span.set_status(Status(StatusCode.OK))
    errors = {r.name: r.status_error for r in decode_message(f.protobuf())}
    assert errors == {"a": "Timeout", "b": "ValueError: bad value", "c": "KeyError", "d": None}
    assert {r.name: r.status_error for r in decode_message(f.json())} == errors


def test_conversation_id_inherited_within_the_trace_else_trace_id() -> None:
    f = SpanFactory()
    with (
        f.tracer.start_as_current_span("root", attributes={"session.id": "sess-9"}),
        f.tracer.start_as_current_span("child"),
    ):
        pass
    with f.tracer.start_as_current_span("other-trace") as other:
        pass
    records = {r.name: r for r in decode_message(f.protobuf())}
    assert records["root"].conversation_id == "sess-9"
    assert records["child"].conversation_id == "sess-9"
    assert records["other-trace"].conversation_id == format(other.get_span_context().trace_id, "032x")


def test_long_attributes_are_truncated_with_a_marker() -> None:
    f = SpanFactory()
    big = "é" * 200_000
    with f.tracer.start_as_current_span("s", attributes={"gen_ai.output.messages": big, "other": big}):
        pass
    (rec,) = decode_message(f.protobuf(), max_attribute_bytes=1000)
    assert rec.attrs["gen_ai.output.messages"] == "é" * 1000 + TRUNCATION_MARKER
    assert "other" not in rec.attrs


def test_content_type_header_wins(factory: SpanFactory) -> None:
    with pytest.raises(DecodeError) as err:
        decode_message(factory.json(), "application/x-protobuf")
    assert err.value.reason == "invalid_protobuf"
    with pytest.raises(DecodeError) as err:
        decode_message(factory.protobuf(), "application/json")
    assert err.value.reason == "invalid_json"


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"", "empty"),
        (b"\x00\x01garbage\xff", "not_otlp"),
        (b"{}", "not_otlp"),
        (b"{not json", "invalid_json"),
        (b'{"resourceSpans": []}', "empty"),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "spanId": "AAAAAAAAAAE="}]}]}]}',
            "invalid_span",
        ),
        (
            (
                b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "5b8efff798038103d269b633813fc60c",'
                b' "spanId": "eee19b7ec3c1b174", "attributes": [{"key": "gen_ai.usage.input_tokens",'
                b' "value": {"intValue": "many"}}]}]}]}]}'
                b""
            ),
            "invalid_json",
        ),
        (TracesData().SerializeToString() + b"\x0a\x00", "empty"),
    ],
)
def test_bad_messages_raise_decode_error_with_reason(payload: bytes, reason: str) -> None:
    with pytest.raises(DecodeError) as err:
        decode_message(payload)
    assert err.value.reason == reason
    assert str(err.value).startswith(reason)


def test_truncated_protobuf_and_zero_ids(factory: SpanFactory) -> None:
    raw = factory.protobuf()
    with pytest.raises(DecodeError) as err:
        decode_message(raw[: len(raw) // 2], "application/x-protobuf")
    assert err.value.reason == "invalid_protobuf"
    data = TracesData.FromString(raw)
    data.resource_spans[0].scope_spans[0].spans[1].span_id = bytes(8)
    with pytest.raises(DecodeError) as err:
        decode_message(data.SerializeToString())
    assert err.value.reason == "invalid_span"
    assert "span 1" in err.value.detail


def test_a_conversation_id_is_written_once_a_trace_not_once_a_span() -> None:
    """A 60 kB conversation id on one span of 200 in a 74 kB message: re-published, every span once carried it
    (a 12 MB record, over a Kafka broker's limit); now the trace's first span carries it and the rest inherit."""
    data = TracesData()
    spans = data.resource_spans.add().scope_spans.add().spans
    cid = "c" * 60_000
    for i in range(200):
        span = spans.add(trace_id=b"\x01" * 16, span_id=(i + 1).to_bytes(8, "big"), name="chat")
        if i == 0:
            span.attributes.add(key="gen_ai.conversation.id").value.string_value = cid
    raw = data.SerializeToString()
    records = decode_message(raw, "application/x-protobuf")
    for order, copies in ((records, 1), (records[::-1], 2)):  # reversed, the first span has it added
        encoded = encode_spans_otlp(order)
        assert len(encoded) < len(raw) + copies * len(cid)
        back = decode_message(encoded)
        assert len(back) == 200 and all(r.conversation_id == cid for r in back)
        assert sum("gen_ai.conversation.id" in r.attrs for r in back) == copies


def test_encode_round_trips(factory: SpanFactory) -> None:
    records = decode_message(factory.protobuf())
    assert decode_message(encode_spans_otlp(records)) == records
    # a span whose conversation id was inherited keeps it when re-published alone
    f = SpanFactory()
    with (
        f.tracer.start_as_current_span("root", attributes={"gen_ai.conversation.id": "c-7"}),
        f.tracer.start_as_current_span("child"),
    ):
        pass
    child = next(r for r in decode_message(f.protobuf()) if r.name == "child")
    (again,) = decode_message(encode_spans_otlp([child]))
    assert again.conversation_id == "c-7"
    assert (again.trace_id, again.span_id, again.parent_span_id) == (
        child.trace_id,
        child.span_id,
        child.parent_span_id,
    )


def test_base64_and_hex_ids_are_both_accepted() -> None:
    tid, sid = bytes(range(1, 17)), bytes(range(1, 9))
    for enc in (lambda b: b.hex(), lambda b: base64.b64encode(b).decode()):
        doc = {
            "resourceSpans": [
                {"scopeSpans": [{"spans": [{"traceId": enc(tid), "spanId": enc(sid), "name": "x"}]}]}
            ]
        }
        (rec,) = decode_message(json.dumps(doc).encode())
        assert (rec.trace_id, rec.span_id) == (tid.hex(), sid.hex())


@pytest.mark.parametrize("length", [ord("{"), ord("[")])
def test_protobuf_whose_first_length_reads_as_json_is_still_protobuf(length: int) -> None:
    """Without a content type, b"\\n{" starts JSON after whitespace, and protobuf with a 123-byte first field."""
    name = "x"
    while True:
        data = TracesData()
        sp = data.resource_spans.add().scope_spans.add().spans.add()
        sp.trace_id, sp.span_id, sp.name = b"\x01" * 16, b"\x02" * 8, name
        payload = data.SerializeToString()
        if payload[1] >= length:
            break
        name += "x"
    assert payload[:2] == b"\n" + bytes([length])
    assert [r.name for r in decode_message(payload)] == [name]
    with pytest.raises(DecodeError) as err:
        decode_message(b"\n{not json")
    assert err.value.reason == "invalid_json"


def test_protobuf_file_whose_first_length_reads_as_json_is_read_as_protobuf() -> None:
    from agentwatch.collector.otlp_files import PROTOBUF, iter_records

    name = "x"
    while True:
        data = TracesData()
        sp = data.resource_spans.add().scope_spans.add().spans.add()
        sp.trace_id, sp.span_id, sp.name = b"\x01" * 16, b"\x02" * 8, name
        payload = data.SerializeToString()
        if payload[1] >= ord("{"):
            break
        name += "x"
    assert [(where, ct) for where, _, ct in iter_records(payload)] == [("message", PROTOBUF)]


def _one_span_message(name: str) -> bytes:
    data = TracesData()
    sp = data.resource_spans.add().scope_spans.add().spans.add()
    sp.trace_id, sp.span_id, sp.name = b"\x01" * 16, b"\x02" * 8, name
    return data.SerializeToString()


def test_size_prefixed_records_cut_short_keep_the_whole_ones() -> None:
    """Size-prefixed protobuf records whose last is cut short (a file still being written): every record was
    lost, the file read as one undecodable message. The whole ones are records 1..n, the rest one more record
    (reported by the decoder as the record it is)."""
    from agentwatch.collector.otlp_files import PROTOBUF, iter_records

    whole = [_one_span_message(f"span {i}") for i in range(3)]
    framed = b"".join(len(m).to_bytes(4, "big") + m for m in whole)
    assert [p for _, p, _ in iter_records(framed)] == whole
    for cut in (1, 3, 4 + len(whole[-1]) - 1):
        records = list(iter_records(framed[:-cut]))
        assert [where for where, _, _ in records] == ["record 1", "record 2", "record 3"]
        assert [p for _, p, ct in records[:2]] == whole[:2] and records[2][2] == PROTOBUF
        with pytest.raises(DecodeError):
            decode_message(records[2][1], PROTOBUF)


@pytest.mark.parametrize(
    ("module", "not_loaded"),
    [
        (
            "agentwatch.collector.span_record",
            ["agentwatch.collector.decode", "agentwatch.collector.decode_json"],
        ),
        ("agentwatch.collector.decode_json", ["agentwatch.collector.decode"]),
    ],
)
def test_decoders_depend_one_way(module: str, not_loaded: list[str]) -> None:
    """decode → decode_json → span_record: loading a module in a fresh interpreter loads none above it."""
    code = f"import sys, {module}\nprint(sorted(m for m in {not_loaded!r} if m in sys.modules))"
    run = subprocess.run(
        [sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert run.stdout.strip() == "[]", run.stdout


def test_a_gzip_file_cut_short_keeps_the_records_before_the_cut(tmp_path) -> None:
    """A gzip file of OTLP records cut short lost every record (`invalid_gzip`), where `agentwatch score` keeps
    the lines it read. The whole records before the cut are read; the cut is reported as the file's problem."""
    import gzip

    from agentwatch.collector.otlp_files import read_otlp_files

    whole = [_one_span_message(f"span {i}") for i in range(40)]
    framed = b"".join(len(m).to_bytes(4, "big") + m for m in whole)
    packed = gzip.compress(framed)
    cut = tmp_path / "cut.pb.gz"
    cut.write_bytes(packed[: len(packed) * 3 // 4])
    read = read_otlp_files([cut])
    assert 0 < len(read.spans) < 40
    assert [s.name for s in read.spans] == [f"span {i}" for i in range(len(read.spans))]
    assert any(p.reason == "truncated_gzip" for p in read.problems)
    padded = tmp_path / "padded.pb.gz"
    padded.write_bytes(packed + gzip.compress(b"") + b"\x00" * 16)  # two members, zeros after: all read
    again = read_otlp_files([padded])
    assert len(again.spans) == 40 and again.problems == []
