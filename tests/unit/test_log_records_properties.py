"""Property-based tests of the log-record decoder: bad input is a DecodeError or bounded fragments, never a crash,
and whatever decodes folds into any spans."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.protobuf.json_format import Parse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.logs.v1.logs_pb2 import LogsData

from agentwatch.collector.decode import SpanRecord, decode_message
from agentwatch.collector.log_records import decode_log_message
from agentwatch.collector.reconstruct import build_conversation
from agentwatch.collector.span_fragments import is_fragment
from agentwatch.collector.span_record import TRUNCATION_MARKER, DecodeError

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DATA = Path(__file__).parent.parent / "data"
VALID = Parse((DATA / "openai_v2_events_logs.json").read_bytes(), LogsData()).SerializeToString()
SPANS = decode_message((DATA / "openai_v2_events_trace.json").read_bytes(), "application/json")
LIMIT = 256
# a record whose trace or span id is there but no id rejects its message, as a malformed span does
REASONS = {"empty", "not_otlp", "invalid_protobuf", "invalid_json", "invalid_span"}
MESSAGE_LISTS = {"gen_ai.input.messages", "gen_ai.output.messages"}


def _decode_or_reason(payload: bytes, content_type: str | None = None) -> list[SpanRecord] | str:
    try:
        batch = decode_log_message(payload, content_type, max_attribute_bytes=LIMIT)
    except DecodeError as exc:
        assert exc.reason in REASONS, exc
        return exc.reason
    assert batch.records >= batch.skipped >= 0 and len(batch.fragments) <= batch.records - batch.skipped
    for fragment in batch.fragments:
        assert is_fragment(fragment) and len(fragment.trace_id) == 32 and len(fragment.span_id) == 16
        for key, value in fragment.attrs.items():
            if key in MESSAGE_LISTS:  # JSON whose texts are cut, the oldest messages left out past the limit
                assert isinstance(json.loads(value), list)
            elif isinstance(value, str):
                assert len(value) <= LIMIT + len(TRUNCATION_MARKER)
    return batch.fragments


@FAST
@given(st.binary(max_size=2000), st.sampled_from([None, "application/x-protobuf", "application/json"]))
def test_random_bytes_never_crash(payload: bytes, content_type: str | None) -> None:
    _decode_or_reason(payload, content_type)


@FAST
@given(st.integers(min_value=0, max_value=len(VALID)), st.integers(min_value=0, max_value=255), st.booleans())
def test_truncated_or_flipped_log_records_never_crash_and_fold(cut: int, byte: int, flip: bool) -> None:
    payload = bytearray(VALID[:cut])
    if flip and payload:
        payload[cut // 2] = byte
    result = _decode_or_reason(bytes(payload), "application/x-protobuf")
    if isinstance(result, list):
        build_conversation([*SPANS, *result])  # whatever decodes, folds into its spans and rebuilds


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def _any_value(value: Any) -> Any:
    """An arbitrary JSON value as an OTLP/JSON AnyValue, where it has a shape for one."""
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _any_value(v)} for k, v in value.items()]}}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"stringValue": str(value)}


@FAST
@given(json_values, st.sampled_from(["gen_ai.choice", "gen_ai.user.message", "gen_ai.tool.message"]))
def test_arbitrary_bodies_of_message_events_never_crash(doc: object, event: str) -> None:
    record = {
        "eventName": event,
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "body": _any_value(doc),
    }
    payload = {"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}
    _decode_or_reason(json.dumps(payload).encode(), "application/json")
    _decode_or_reason(json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [doc]}]}]}).encode())
