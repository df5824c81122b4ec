"""The span record both decoders produce, the error they raise, and the value rules they share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentwatch.collector.conventions import CONVERSATION_KEYS, ERROR_TYPE_KEYS

MAX_ARRAY = 1024  # items kept of an array or key-value list attribute
TRUNCATION_MARKER = "…[truncated]"


class DecodeError(ValueError):
    """A message that is not decodable OTLP; `reason` is a short code for headers and metric labels."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass(slots=True)
class SpanRecord:
    """The parts of one span the collector uses."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    start_ns: int
    end_ns: int
    status_error: str | None
    attrs: dict[str, Any] = field(default_factory=dict)
    resource: dict[str, Any] = field(default_factory=dict)
    conversation_id: str = ""


def message_bytes(payload: object) -> bytes:
    """A Kafka message's value as bytes; DecodeError `empty` or `not_otlp` for none, or for another type."""
    if not payload:
        raise DecodeError("empty", "empty message")
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise DecodeError("not_otlp", f"payload is {type(payload).__name__}, not bytes")
    return bytes(payload)


def looks_json(payload: bytes) -> bool:
    """Whether a message starts like a JSON document (after blanks)."""
    return payload[:64].lstrip()[:1] in (b"{", b"[")


def truncate(s: str, limit: int) -> str:
    """`s` cut to `limit` characters, marked with TRUNCATION_MARKER when it was cut."""
    if len(s) <= limit:
        return s
    return s[:limit] + TRUNCATION_MARKER


def conversation_of(attrs: dict[str, Any]) -> str | None:
    """The conversation id a span's attributes name (the first conversation key set), else None."""
    for key in CONVERSATION_KEYS:
        value = attrs.get(key)
        if value is not None and value != "":
            return str(value)
    return None


def error_of(status_is_error: bool, message: str, attrs: dict[str, Any], exc_type: str | None) -> str | None:
    """A span's error text: the status message, error type or exception type of a failed span; else None."""
    etype = None
    for key in ERROR_TYPE_KEYS:
        if key in attrs:
            etype = str(attrs[key])
            break
    if status_is_error:
        return message or etype or exc_type or "error"
    return etype or exc_type


def with_conversations(records: list[SpanRecord]) -> list[SpanRecord]:
    """The span records of one message, those without a conversation key given the one of another span of the
    same trace in the message (else their trace id); DecodeError if there are none."""
    if not records:
        raise DecodeError("empty", "no spans in the message")
    by_trace: dict[str, str] = {}
    for rec in records:
        if rec.conversation_id and rec.trace_id not in by_trace:
            by_trace[rec.trace_id] = rec.conversation_id
    for rec in records:
        if not rec.conversation_id:
            rec.conversation_id = by_trace.get(rec.trace_id, rec.trace_id)
    return records
