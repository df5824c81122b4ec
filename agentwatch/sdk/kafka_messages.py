"""The Kafka messages of the span exporter: one OTLP `TracesData` per conversation, split to fit a size."""

from __future__ import annotations

import os
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan

from agentwatch import wire

CONVERSATION_ID = "gen_ai.conversation.id"
HEADERS = [(wire.CONTENT_TYPE_HEADER, wire.PROTOBUF), (wire.KEY_HEADER, wire.KEY_CONVERSATION)]
_MAX_MESSAGE_BYTES = 900_000  # under the 1 MiB default max.request.size / message.max.bytes
MAX_MESSAGE_BYTES_VARIABLE = "AGENTWATCH_KAFKA_MAX_MESSAGE_BYTES"


def message_bytes(given: int | None) -> int:
    """The largest message the exporter writes: `given`, else AGENTWATCH_KAFKA_MAX_MESSAGE_BYTES, else the
    default; ValueError naming the variable when it is not a positive integer."""
    if given is not None:
        return max(1, int(given))
    raw = os.environ.get(MAX_MESSAGE_BYTES_VARIABLE, "").strip()
    if not raw:
        return _MAX_MESSAGE_BYTES
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{MAX_MESSAGE_BYTES_VARIABLE} must be a positive integer (bytes), got {raw!r}")
    return int(raw)


def conversation_key(span: ReadableSpan) -> str:
    """The Kafka key of a span: its conversation id, else its trace id (32 hex)."""
    attrs = span.attributes or {}
    value = attrs.get(CONVERSATION_ID)
    if value:
        return str(value)
    ctx = span.context
    return f"{ctx.trace_id:032x}" if ctx is not None else "unknown"


def encode_messages(
    spans: Sequence[ReadableSpan], max_bytes: int = _MAX_MESSAGE_BYTES
) -> list[tuple[str, bytes, int]]:
    """(key, OTLP TracesData bytes, span count) per conversation; a conversation too big for one message is split."""
    # imported here: protobuf and the OTLP classes are a sixth of `import agentwatch.sdk`, and only export needs them
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    groups: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        groups.setdefault(conversation_key(span), []).append(span)
    out: list[tuple[str, bytes, int]] = []
    for key, group in groups.items():
        todo = [group]
        while todo:
            part = todo.pop()
            payload = encode_spans(part).SerializeToString()
            if len(payload) > max_bytes and len(part) > 1:
                half = len(part) // 2
                todo.extend([part[half:], part[:half]])
            else:
                out.append((key, payload, len(part)))
    return out
