"""GenAI message events sent as OTLP log records, decoded into fragments of the spans they belong to.

The GenAI conventions are moving events from spans to log records, and the official instrumentations log a
model call's messages so when content capture is on in event mode: one `gen_ai.client.inference.operation.details`
record per call (the messages in its attributes), or, in older releases, one record per message
(`gen_ai.user.message`, ..., `gen_ai.choice`, the message in the record's body). The OpenTelemetry Collector's
kafka exporter writes log records to a topic of their own (`otlp_logs`), as OTLP `LogsData`, protobuf or JSON.

A record counts when it names one of `message_events.NAMES` (its `event_name`, or the `event.name` attribute of
older SDKs) and carries a trace id and a span id. Its attributes, with its body's keys over them, are read as the
attributes of a span event of that name. The records of one span in one message, in their order, make one
fragment (`span_fragments`); its id is a digest of what it holds, so a replayed message de-duplicates. Every
other record (application logs, other events, records of no span) is counted and skipped, not dead-lettered: a
logs topic carries all of a service's logs. A message that is not `LogsData` raises DecodeError.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError as _PbDecodeError
from opentelemetry.proto.logs.v1.logs_pb2 import LogsData

from agentwatch.collector.conventions import RESOURCE_KEYS
from agentwatch.collector.decode import pb_value
from agentwatch.collector.decode_json import (
    json_attributes,
    json_field,
    json_id,
    json_int,
    json_value,
    otlp_items,
)
from agentwatch.collector.foreign_messages import ENCODE
from agentwatch.collector.message_events import DEPTH, NAMES, structured
from agentwatch.collector.message_events import fold as fold_events
from agentwatch.collector.span_fragments import FRAGMENT_KEY, FRAGMENT_NAME
from agentwatch.collector.span_record import (
    MAX_ARRAY,
    DecodeError,
    SpanRecord,
    conversation_of,
    looks_json,
    message_bytes,
    truncate,
    with_conversations,
)

__all__ = ["LogBatch", "decode_log_message"]

EVENT_NAME_KEY = "event.name"  # the event's name as an attribute (SDKs before LogRecord.event_name)
_ZERO_TRACE, _ZERO_SPAN = bytes(16), bytes(8)


@dataclass(slots=True)
class LogBatch:
    """What one message of log records gave: the fragments, and how many records it held and skipped."""

    fragments: list[SpanRecord] = field(default_factory=list)
    records: int = 0
    skipped: int = 0  # not a message event of a span


@dataclass(slots=True)
class _Span:
    """The message events of one span met so far in a message."""

    trace_id: str
    span_id: str
    resource: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    times: list[int] = field(default_factory=list)
    conversation: str | None = None


def _event_attributes(attributes: dict[str, Any], body: Any) -> dict[str, Any]:
    """A record's attributes with its body's keys over them (a body written as JSON text read; another text body
    as `content`), as a span event of its name carries them."""
    body = structured(body)
    if isinstance(body, dict):
        return {**attributes, **body}
    if body not in (None, ""):
        return {**attributes, "content": body}
    return attributes


class _Collect:
    """The message events of one message, grouped by span in first-seen order."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.batch = LogBatch()
        self._spans: dict[tuple[str, str], _Span] = {}

    def add(
        self,
        trace_id: str,
        span_id: str,
        time_ns: int,
        name: str,
        attributes: dict[str, Any],
        body: Any,
        resource: dict[str, Any],
    ) -> None:
        """One message event of span (trace_id, span_id)."""
        span = self._spans.get((trace_id, span_id))
        if span is None:
            span = self._spans[(trace_id, span_id)] = _Span(trace_id, span_id, resource)
        span.events.append((name, _event_attributes(attributes, body)))
        span.times.append(time_ns)
        if span.conversation is None:
            span.conversation = conversation_of(attributes)

    def finish(self) -> LogBatch:
        """The batch, one fragment per span whose events gave messages (the others counted as skipped)."""
        for span in self._spans.values():
            fragment = self._fragment(span)
            if fragment is None:
                self.batch.skipped += len(span.events)
            else:
                self.batch.fragments.append(fragment)
        if self.batch.fragments:
            with_conversations(self.batch.fragments)
        return self.batch

    def _fragment(self, span: _Span) -> SpanRecord | None:
        attrs: dict[str, Any] = {}
        fold_events(attrs, span.events, self.limit)
        if not attrs:
            return None
        attrs[FRAGMENT_KEY] = span.span_id
        start = min(span.times)
        digest = hashlib.blake2b(digest_size=8)
        digest.update(f"{span.trace_id}{span.span_id}{start}{len(span.events)}".encode())
        digest.update(ENCODE(attrs).encode("utf-8", "surrogatepass"))
        conversation = "" if span.conversation is None else truncate(span.conversation, self.limit)
        return SpanRecord(
            span.trace_id,
            digest.hexdigest(),
            span.span_id,
            FRAGMENT_NAME,
            start,
            max(span.times),
            None,
            attrs,
            span.resource,
            conversation,
        )


# --------------------------------------------------------------------------- protobuf


def _pb_event_name(record: Any) -> str:
    if record.event_name:
        return str(record.event_name)
    for kv in record.attributes:
        if kv.key == EVENT_NAME_KEY:
            return str(kv.value.string_value)
    return ""


def _decode_protobuf(payload: bytes, limit: int) -> LogBatch:
    try:
        data = LogsData.FromString(payload)
    except (_PbDecodeError, RuntimeError, ValueError) as exc:
        raise DecodeError("invalid_protobuf", str(exc)[:200]) from None
    found = _Collect(limit)
    for rl in data.resource_logs:
        resource = {
            kv.key: pb_value(kv.value, limit) for kv in rl.resource.attributes if kv.key in RESOURCE_KEYS
        }
        for sl in rl.scope_logs:
            for record in sl.log_records:
                found.batch.records += 1
                tid, sid = record.trace_id, record.span_id
                name = _pb_event_name(record)
                if (
                    name not in NAMES
                    or len(tid) != 16
                    or len(sid) != 8
                    or tid == _ZERO_TRACE
                    or sid == _ZERO_SPAN
                ):
                    found.batch.skipped += 1
                    continue
                attributes = {
                    kv.key: pb_value(kv.value, limit, max_depth=DEPTH) for kv in record.attributes[:MAX_ARRAY]
                }
                body = pb_value(record.body, limit, max_depth=DEPTH) if record.HasField("body") else None
                time_ns = record.time_unix_nano or record.observed_time_unix_nano
                found.add(tid.hex(), sid.hex(), time_ns, name, attributes, body, resource)
    if not found.batch.records:
        raise DecodeError("empty", "no log records in the message")
    return found.finish()


# --------------------------------------------------------------------------- OTLP/JSON


def _json_record(record: Any, resource: dict[str, Any], found: _Collect, where: str) -> None:
    found.batch.records += 1
    if not isinstance(record, dict):
        raise DecodeError("invalid_json", f"{where}: expected an object")
    limit = found.limit
    name = json_field(record, "eventName", "event_name")
    attributes = None
    if not name:
        attributes = json_attributes(record.get("attributes"), limit, where, max_depth=DEPTH)
        name = attributes.get(EVENT_NAME_KEY)
    trace_id = json_id(json_field(record, "traceId", "trace_id"), 16, f"{where}.traceId", False)
    span_id = json_id(json_field(record, "spanId", "span_id"), 8, f"{where}.spanId", False)
    # an event name that is no text (a list, a map) names no message event: the record is skipped, as others are
    if not isinstance(name, str) or name not in NAMES or trace_id is None or span_id is None:
        found.batch.skipped += 1
        return
    if attributes is None:
        attributes = json_attributes(record.get("attributes"), limit, where, max_depth=DEPTH)
    raw_body = record.get("body")
    body = json_value(raw_body, limit, f"{where}.body", max_depth=DEPTH) if raw_body is not None else None
    time_ns = json_int(json_field(record, "timeUnixNano", "time_unix_nano"), f"{where}.timeUnixNano")
    if not time_ns:
        time_ns = json_int(
            json_field(record, "observedTimeUnixNano", "observed_time_unix_nano"),
            f"{where}.observedTimeUnixNano",
        )
    found.add(trace_id, span_id, time_ns, name, attributes, body, resource)


def _decode_json(payload: bytes, limit: int) -> LogBatch:
    found = _Collect(limit)
    for resource, record, where in otlp_items(payload, limit, ("resourceLogs", "scopeLogs", "logRecords")):
        _json_record(record, resource, found, where)
    if not found.batch.records:
        raise DecodeError("empty", "no log records in the message")
    return found.finish()


# --------------------------------------------------------------------------- entry point


def is_json_logs(payload: bytes) -> bool:
    """Whether an OTLP/JSON document starts like log records (`resourceLogs`) rather than spans."""
    head = payload[:256]
    return b'"resourceLogs"' in head or b'"resource_logs"' in head


def decode_log_message(
    payload: bytes, content_type: str | None = None, *, max_attribute_bytes: int = 65536
) -> LogBatch:
    """Decode one Kafka message of OTLP log records (protobuf or OTLP/JSON `LogsData`); raise DecodeError."""
    payload = message_bytes(payload)
    kind = (content_type or "").lower()
    if "json" in kind or ("proto" not in kind and looks_json(payload)):
        try:
            return _decode_json(payload, max_attribute_bytes)
        except DecodeError as exc:
            if "json" in kind or exc.reason != "invalid_json":
                raise
    try:
        return _decode_protobuf(payload, max_attribute_bytes)
    except DecodeError as exc:
        if exc.reason == "invalid_protobuf" and "proto" not in kind:
            raise DecodeError(
                "not_otlp", f"neither OTLP protobuf nor OTLP/JSON log records ({exc.detail})"
            ) from None
        raise
