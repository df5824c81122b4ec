"""Hostile OTLP input to the decoders: absurd numbers, deep nesting, invalid Unicode, huge counts.

Complements test_collector_properties.py (random bytes, truncated protobuf, arbitrary JSON shapes): here each
input is aimed at one weak spot. Every message either decodes into well-formed records or raises DecodeError
with a short reason and a location; nothing else escapes.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentwatch.collector.decode import DecodeError, SpanRecord, decode_message

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REASONS = {"empty", "not_otlp", "invalid_protobuf", "invalid_json", "invalid_span"}
TRACE, SPAN = "01" * 16, "02" * 8


def _decode(payload: bytes, content_type: str | None = None) -> list[SpanRecord] | DecodeError:
    try:
        records = decode_message(payload, content_type, max_attribute_bytes=256)
    except DecodeError as exc:
        assert exc.reason in REASONS
        return exc
    for r in records:
        for text in _strings(r):
            text.encode("utf-8")  # every decoded string can go to Kafka, Prometheus and JSON as it is
    return records


def _strings(r: SpanRecord):
    stack: list = [
        r.trace_id,
        r.span_id,
        r.parent_span_id,
        r.name,
        r.status_error,
        r.conversation_id,
        r.attrs,
        r.resource,
    ]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def _doc(span_fields: dict | None = None, attrs: list | None = None) -> dict:
    span = {
        "traceId": TRACE,
        "spanId": SPAN,
        "name": "s",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [{"key": "gen_ai.conversation.id", "value": {"stringValue": "c"}}, *(attrs or [])],
    }
    span.update(span_fields or {})
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


# --------------------------------------------------------------------------- JSON numbers

hostile_numbers = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 10**400, -(10**400), 2**64, -1, 1e300, 0.5, True, None]),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e3", "0x10", "", " 7 ", "9" * 5000, "12", "1.5"]),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@FAST
@given(
    value=hostile_numbers,
    kind=st.sampled_from(["intValue", "doubleValue", "stringValue", "boolValue"]),
    field=st.sampled_from(["startTimeUnixNano", "endTimeUnixNano", None]),
)
def test_numbers_of_any_kind_in_otlp_json_decode_or_are_rejected_with_their_location(value, kind, field):
    fields = {field: value} if field else {}
    attrs = [{"key": "gen_ai.usage.input_tokens", "value": {kind: value}}]
    payload = json.dumps(_doc(fields, attrs), allow_nan=True).encode()
    result = _decode(payload)
    if isinstance(result, DecodeError):
        assert result.reason in {"invalid_json", "invalid_span"}
        assert "resourceSpans[0].scopeSpans[0].spans[0]" in str(result)  # where the bad value is
    else:
        assert 0 <= result[0].start_ns < 2**64 and 0 <= result[0].end_ns < 2**64


@pytest.mark.parametrize(
    ("kind", "token"),
    [
        ("doubleValue", "1" + "0" * 400),  # an integer too large for a float
        ("intValue", "Infinity"),
        ("intValue", "-Infinity"),
        ("intValue", "NaN"),
    ],
)
def test_overflowing_attribute_numbers_are_invalid_json_not_a_crash(kind: str, token: str) -> None:
    doc = json.dumps(_doc(attrs=[{"key": "llm.cost.total", "value": {kind: "PLACEHOLDER"}}]))
    payload = doc.replace('"PLACEHOLDER"', token).encode()
    with pytest.raises(DecodeError) as err:
        decode_message(payload)
    assert err.value.reason == "invalid_json"
    assert "spans[0] attribute 'llm.cost.total'" in str(err.value)


@pytest.mark.parametrize("token", ["Infinity", "-Infinity", "NaN", "1e400", '"1.5"', '"x"', "[1]"])
def test_non_integer_timestamps_are_rejected_with_their_field(token: str) -> None:
    payload = json.dumps(_doc({"startTimeUnixNano": "PLACEHOLDER"})).replace('"PLACEHOLDER"', token).encode()
    with pytest.raises(DecodeError) as err:
        decode_message(payload)
    assert err.value.reason in {"invalid_json", "invalid_span"}
    assert "spans[0].startTimeUnixNano" in str(err.value)


def test_numbers_as_strings_are_read_as_numbers() -> None:
    attrs = [
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
        {"key": "llm.cost.total", "value": {"doubleValue": "0.25"}},
    ]
    (rec,) = decode_message(json.dumps(_doc({"startTimeUnixNano": "1700000000000000000"}, attrs)).encode())
    assert rec.attrs["gen_ai.usage.input_tokens"] == 12
    assert rec.attrs["llm.cost.total"] == 0.25
    assert rec.start_ns == 1_700_000_000_000_000_000


# --------------------------------------------------------------------------- invalid Unicode


@FAST
@given(
    st.text(alphabet=st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010), max_size=6)
    | st.text(max_size=12)
)
def test_lone_surrogate_escapes_never_reach_the_records(text: str) -> None:
    doc = _doc(
        {"name": text},
        [
            {"key": "gen_ai.conversation.id", "value": {"stringValue": text or "c"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": text}},
        ],
    )
    result = _decode(json.dumps(doc).encode())  # ensure_ascii: lone surrogates become \udXXX escapes
    assert isinstance(result, list)  # a lone surrogate is replaced (U+FFFD), the span is kept
    parsed = json.loads(json.dumps(text))  # escaped pairs combine into one character, as in any JSON parser
    valid = parsed.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        assert valid == text
    assert result[0].name == valid
    assert result[0].attrs["gen_ai.tool.name"] == valid


def test_surrogate_pairs_escaped_by_ensure_ascii_survive() -> None:
    (rec,) = decode_message(json.dumps(_doc({"name": "ok 😀 \U0001f680"})).encode())
    assert rec.name == "ok 😀 \U0001f680"


def test_invalid_utf8_in_otlp_json_is_invalid_json() -> None:
    payload = json.dumps(_doc({"name": "PLACEHOLDER"})).encode().replace(b"PLACEHOLDER", b"\xff\xfe\xc3(")
    with pytest.raises(DecodeError) as err:
        decode_message(payload)
    assert err.value.reason == "invalid_json"
    assert "utf-8" in str(err.value)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _ld(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _pb_span(
    name: bytes = b"s",
    key: bytes = b"gen_ai.conversation.id",
    value: bytes = b"c",
    any_value: bytes | None = None,
) -> bytes:
    """TracesData with one span, built by hand (the official classes refuse to write bad UTF-8)."""
    kv = _ld(1, key) + _ld(2, any_value if any_value is not None else _ld(1, value))
    span = _ld(1, bytes.fromhex(TRACE)) + _ld(2, bytes.fromhex(SPAN)) + _ld(5, name) + _ld(9, kv)
    return _ld(1, _ld(2, _ld(2, span)))


@pytest.mark.parametrize("where", ["name", "key", "value"])
@pytest.mark.parametrize("content_type", [None, "application/x-protobuf"])
def test_invalid_utf8_in_protobuf_strings_is_rejected_with_the_parsers_reason(where, content_type) -> None:
    bad = b"\xc3\x28\xff"
    assert isinstance(_decode(_pb_span()), list)  # the same message with valid strings decodes
    payload = _pb_span(**{where: bad})
    with pytest.raises(DecodeError) as err:
        decode_message(payload, content_type)
    assert err.value.reason in {"invalid_protobuf", "not_otlp"}
    assert "bad UTF-8" in str(err.value)


# --------------------------------------------------------------------------- deep nesting


def _nested_any_value(depth: int, kind: str) -> bytes:
    value = _ld(1, b"leaf")  # AnyValue.string_value
    for _ in range(depth):
        if kind == "kvlist":  # AnyValue.kvlist_value(6) -> KeyValueList.values(1) -> KeyValue(key 1, value 2)
            value = _ld(6, _ld(1, _ld(1, b"k") + _ld(2, value)))
        else:  # AnyValue.array_value(5) -> ArrayValue.values(1)
            value = _ld(5, _ld(1, value))
    return value


@settings(max_examples=60, deadline=None)
@given(depth=st.integers(0, 20_000), kind=st.sampled_from(["kvlist", "array"]))
def test_any_depth_of_protobuf_anyvalue_nesting_decodes_bounded_or_is_rejected(depth: int, kind: str) -> None:
    payload = _pb_span(key=b"gen_ai.tool.call.arguments", any_value=_nested_any_value(depth, kind))
    result = _decode(payload)
    if isinstance(result, DecodeError):
        assert depth > 20  # the parser's depth limit, not an accident
        assert "MaxDepth" in str(result)
        return
    value, levels = result[0].attrs["gen_ai.tool.call.arguments"], 0
    while isinstance(value, (list, dict)) and value:
        value = next(iter(value.values())) if isinstance(value, dict) else value[0]
        levels += 1
    assert levels <= 3  # the decoder keeps three levels and drops the rest


@settings(max_examples=40, deadline=None)
@given(depth=st.integers(0, 200_000), kind=st.sampled_from(["kvlist", "array", "raw"]))
def test_any_depth_of_json_nesting_decodes_bounded_or_is_rejected(depth: int, kind: str) -> None:
    if kind == "raw":
        payload = b"[" * depth + b"]" * depth
    else:
        head, tail = {
            "kvlist": ('{"kvlistValue":{"values":[{"key":"k","value":', "}]}}"),
            "array": ('{"arrayValue":{"values":[', "]}}"),
        }[kind]
        doc = json.dumps(_doc(attrs=[{"key": "gen_ai.tool.call.arguments", "value": {"stringValue": "@"}}]))
        payload = doc.replace(
            '{"stringValue": "@"}', head * depth + '{"stringValue": "x"}' + tail * depth
        ).encode()
    result = _decode(payload)
    if isinstance(result, DecodeError):
        assert result.reason in {"invalid_json", "not_otlp", "empty"}
    if depth > 2_000:
        assert isinstance(result, DecodeError) and "recursion" in str(result)


# --------------------------------------------------------------------------- absurd counts and sizes


def test_absurd_length_prefix_is_rejected_without_allocating_it() -> None:
    payload = _varint(1 << 3 | 2) + _varint(2**62) + b"x"
    with pytest.raises(DecodeError) as err:
        decode_message(payload)
    assert err.value.reason == "not_otlp"


def test_three_hundred_thousand_empty_spans_are_rejected_at_the_first() -> None:
    payload = _ld(1, _ld(2, _ld(2, b"") * 300_000))
    with pytest.raises(DecodeError) as err:
        decode_message(payload)
    assert err.value.reason == "invalid_span" and "span 0" in str(err.value)


def test_a_huge_key_list_with_one_needed_key_keeps_only_that_key() -> None:
    kvs = b"".join(_ld(9, _ld(1, f"junk.{i}".encode()) + _ld(2, _ld(1, b"x" * 100))) for i in range(20_000))
    span = _ld(1, bytes.fromhex(TRACE)) + _ld(2, bytes.fromhex(SPAN)) + kvs
    span += _ld(9, _ld(1, b"gen_ai.conversation.id") + _ld(2, _ld(1, b"c" * 100_000)))
    (rec,) = decode_message(_ld(1, _ld(2, _ld(2, span))), max_attribute_bytes=1024)
    assert set(rec.attrs) == {"gen_ai.conversation.id"}
    assert len(rec.conversation_id) <= 1024 + len("…[truncated]")
