"""Property-based tests of the collector's pure half: bad input is a DecodeError or bounded, never a crash."""

from __future__ import annotations

import json
import math
import tracemalloc
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from agentwatch.collector.assembler import Assembler
from agentwatch.collector.decode import DecodeError, SpanRecord, decode_message, encode_spans_otlp
from agentwatch.collector.reconstruct import build_conversation
from agentwatch.config import CollectorConfig
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation
from tests.support.spans import SpanFactory, sdk_turn
from tests.support.spoil import ODD, spoil

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _valid_payload() -> bytes:
    f = SpanFactory()
    sdk_turn(
        f.tracer,
        "c",
        "question",
        "answer",
        [{"name": "t", "id": "1", "arguments": {"a": 1}, "result": [1, 2]}],
    )
    return f.protobuf()


VALID = _valid_payload()
VALID_JSON = TracesData.FromString(VALID)


def _decode_or_reason(payload: bytes, content_type: str | None = None) -> list[SpanRecord] | str:
    try:
        records = decode_message(payload, content_type, max_attribute_bytes=256)
    except DecodeError as exc:
        assert exc.reason in {"empty", "not_otlp", "invalid_protobuf", "invalid_json", "invalid_span"}
        return exc.reason
    assert records and all(isinstance(r, SpanRecord) for r in records)
    for r in records:
        assert len(r.trace_id) == 32 and len(r.span_id) == 16 and r.conversation_id
        for value in r.attrs.values():
            if isinstance(value, str):
                assert len(value) <= 256 + len("…[truncated]")
    return records


@FAST
@given(st.binary(max_size=2000), st.sampled_from([None, "application/x-protobuf", "application/json"]))
def test_random_bytes_never_crash(payload: bytes, content_type: str | None) -> None:
    _decode_or_reason(payload, content_type)


@FAST
@given(st.integers(min_value=0, max_value=len(VALID)), st.integers(min_value=0, max_value=255), st.booleans())
def test_truncated_or_flipped_protobuf_never_crashes(cut: int, byte: int, flip: bool) -> None:
    payload = bytearray(VALID[:cut])
    if flip and payload:
        payload[cut // 2] = byte
    result = _decode_or_reason(bytes(payload))
    if isinstance(result, list):
        build_conversation(result)  # whatever decodes, reconstructs


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@FAST
@given(json_values)
def test_arbitrary_json_never_crashes(doc: object) -> None:
    _decode_or_reason(json.dumps(doc).encode())
    _decode_or_reason(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [doc]}]}]}).encode())


RECORDED = [
    doc
    for path in sorted((Path(__file__).parents[1] / "data").glob("*_trace.json"))
    if isinstance(doc := json.loads(path.read_text(encoding="utf-8")), dict) and "resourceSpans" in doc
]
# OTLP/JSON attribute values of every kind, some of them where a text is expected
ANY_VALUE = st.sampled_from(
    [
        {"stringValue": ""},
        {"stringValue": "{"},
        {"intValue": "-1"},
        {"intValue": str(2**63 - 1)},
        {"boolValue": True},
        {"doubleValue": 1e308},
        {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "3"}]}},
        {"kvlistValue": {"values": [{"key": "role", "value": {"stringValue": "user"}}]}},
        {},
    ]
).map(lambda value: json.loads(json.dumps(value)))  # a fresh copy each draw


def _spoil_a_json_text(document: Any, data: st.DataObject) -> Any:
    """`document` with the JSON held in one of its text attributes (messages, arguments, results) spoiled."""
    texts = [
        attribute["value"]
        for resource in document["resourceSpans"]
        for scope in resource.get("scopeSpans", [])
        for span in scope.get("spans", [])
        for attribute in span.get("attributes", [])
        if str(attribute.get("value", {}).get("stringValue", ""))[:1] in ("[", "{")
    ]
    if texts:
        value = data.draw(st.sampled_from(texts))
        try:
            held = json.loads(value["stringValue"])
        except ValueError:
            return document
        value["stringValue"] = json.dumps(spoil(held, data))
    return document


def _rebuilt_and_scored(records: list[SpanRecord]) -> None:
    """Every conversation of `records` rebuilds and scores without a scorer error."""
    scorer = ConversationScorer()
    for cid in sorted({r.conversation_id for r in records}):
        conv = build_conversation([r for r in records if r.conversation_id == cid])
        score = scorer.score(Conversation.model_validate(conv.model_dump()))
        assert not any(r.startswith("scorer_error") for r in score.reasons), score.reasons


@FAST
@given(data=st.data())
def test_a_recorded_trace_spoiled_anywhere_decodes_or_is_rejected_then_rebuilds_and_scores(
    data: st.DataObject,
) -> None:
    """Each SDK's recorded trace with values of any kind put anywhere (attribute values, the JSON inside them,
    ids, names, events) is rejected with a reason, or decodes, rebuilds and scores: an odd value once made the
    decoder raise TypeError (an AI SDK operation id that was a list, an event whose name was a map), which
    sent the whole message to the dead-letter topic as `decoder_error`."""
    document = json.loads(json.dumps(data.draw(st.sampled_from(RECORDED))))
    document = _spoil_a_json_text(document, data) if data.draw(st.booleans()) else document
    document = spoil(document, data, st.one_of(ODD, ANY_VALUE))
    try:
        records = decode_message(json.dumps(document).encode(), "application/json")
    except DecodeError as exc:
        assert exc.reason in {"empty", "not_otlp", "invalid_json", "invalid_span"}, exc
        return
    _rebuilt_and_scored(records)


ids = st.integers(min_value=1, max_value=40).map(lambda i: f"{i:016x}")
attr_values = st.one_of(
    st.text(max_size=30),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.lists(st.text(max_size=5), max_size=3),
    st.sampled_from(
        [
            '[{"role":"user","parts":[{"type":"text","content":"hi"}]}]',
            '[{"role":"assistant","parts":[{"type":"tool_call","id":"x","name":"t","arguments":"{}"}]}]',
            '{"tools":[{"name":"t"}]}',
            "[1, 2",
            "invoke_agent",
            "execute_tool",
            "chat",
            "TOOL",
            "LLM",
            "AGENT",
        ]
    ),
)
attr_keys = st.sampled_from(
    [
        "gen_ai.operation.name",
        "openinference.span.kind",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.request.model",
        "llm.cost.total",
        "agentwatch.expected",
        "agentwatch.outcome",
        "agentwatch.budget.usd",
        "agentwatch.cost.usd",
        "agentwatch.reference_answer",
        "agentwatch.tag.x",
        "agentwatch.task",
        "input.value",
        "output.value",
    ]
)
records = st.builds(
    SpanRecord,
    trace_id=st.sampled_from(["1" * 32, "2" * 32]),
    span_id=ids,
    parent_span_id=st.none() | ids,
    name=st.sampled_from(["invoke_agent a", "execute_tool t", "chat m", "x"]),
    start_ns=st.integers(min_value=0, max_value=2**64 - 1),
    end_ns=st.integers(min_value=0, max_value=2**64 - 1),
    status_error=st.none() | st.text(max_size=10),
    attrs=st.dictionaries(attr_keys, attr_values, max_size=6),
    resource=st.dictionaries(
        st.sampled_from(["service.name", "service.version"]), st.text(max_size=5), max_size=2
    ),
    # a conversation of its own, another, or a trace's id (its own trace's or the other's)
    conversation_id=st.sampled_from(["conv", "other", "1" * 32, "2" * 32]),
)


@FAST
@given(st.lists(records, max_size=30))
def test_any_span_soup_reconstructs(spans: list[SpanRecord]) -> None:
    conv = build_conversation(spans)
    assert isinstance(conv, Conversation)
    Conversation.model_validate_json(conv.model_dump_json())  # and it serialises as valid JSONL
    if spans:
        roots_or_agents = conv.turns
        assert len(roots_or_agents) <= len({s.span_id for s in spans})


@FAST
@given(st.lists(records, min_size=1, max_size=20, unique_by=lambda r: r.span_id))
def test_encode_decode_round_trip(spans: list[SpanRecord]) -> None:
    back = sorted(decode_message(encode_spans_otlp(spans)), key=lambda r: r.span_id)
    spans = sorted(spans, key=lambda r: r.span_id)  # spans are regrouped by resource
    assert [(r.span_id, r.parent_span_id, r.start_ns, r.end_ns, r.name) for r in back] == [
        (s.span_id, s.parent_span_id, s.start_ns, s.end_ns, s.name) for s in spans
    ]
    for r, s in zip(back, spans, strict=True):
        assert r.conversation_id == s.conversation_id
        assert r.status_error == (s.status_error if s.status_error is None else s.status_error or "error")
        for key, value in s.attrs.items():
            if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
                value = str(value)
            if isinstance(value, float) and math.isnan(value):
                assert math.isnan(r.attrs[key])
            else:
                assert r.attrs[key] == value


def test_ten_megabyte_attribute_is_bounded() -> None:
    data = TracesData.FromString(VALID)
    span = data.resource_spans[0].scope_spans[0].spans[0]
    kv = span.attributes.add()
    kv.key = "gen_ai.output.messages"
    kv.value.string_value = "x" * 10_000_000
    payload = data.SerializeToString()
    tracemalloc.start()
    try:
        records = decode_message(payload, max_attribute_bytes=65_536)
        conv = build_conversation(records)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert max(len(v) for r in records for v in r.attrs.values() if isinstance(v, str)) <= 65_536 + 20
    assert isinstance(conv, Conversation)
    assert peak < 40_000_000  # generous: the 10 MB string is read once, then truncated


def test_hundred_thousand_spans_in_one_conversation_are_capped_with_bounded_memory() -> None:
    data = TracesData()
    scope = data.resource_spans.add().scope_spans.add()
    for i in range(100_000):
        sp = scope.spans.add()
        sp.trace_id = b"\x01" * 16
        sp.span_id = (i + 1).to_bytes(8, "big")
        if i:
            sp.parent_span_id = i.to_bytes(8, "big")  # one deep chain
        sp.name = "execute_tool t"
        sp.start_time_unix_nano = i
        kv = sp.attributes.add()
        kv.key = "gen_ai.conversation.id"
        kv.value.string_value = "huge"
    payload = data.SerializeToString()
    assembler = Assembler(CollectorConfig(max_spans_per_conversation=10_000))
    tracemalloc.start()
    try:
        for span in decode_message(payload):
            assembler.add(span, 0, 0, now=0.0)
        assembler.message_done(0, 0)
        (fin,) = assembler.drain()
        conv = build_conversation(fin)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(fin.spans) == 10_000 and fin.incomplete
    assert assembler.stats.dropped_spans == 90_000
    assert conv.incomplete and len(conv.turns) == 1
    assert peak < 400_000_000  # generous bound; the decoded message itself holds 100k records


def test_parent_cycles_of_any_shape_terminate() -> None:
    spans = [
        SpanRecord(
            "1" * 32, f"{i + 1:016x}", f"{(i * 7 + 3) % 500 + 1:016x}", "x", i, i + 1, None, {}, {}, "c"
        )
        for i in range(500)
    ]
    conv = build_conversation(spans)
    assert conv.turns and sum(1 for _ in conv.turns) <= 500
