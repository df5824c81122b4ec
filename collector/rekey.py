"""Re-keying: spans of messages not keyed by conversation are re-published to the rekey topic by conversation id."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from agentwatch.collector.decode import SpanRecord, encode_spans_otlp

log = logging.getLogger(__name__)

KEY_HEADER = "agentwatch-key"
KEY_CONVERSATION = b"conversation"
CONTENT_TYPE_HEADER = "content-type"
PROTOBUF = b"application/x-protobuf"

REKEY_HEADERS = [(CONTENT_TYPE_HEADER, PROTOBUF), (KEY_HEADER, KEY_CONVERSATION)]


def header(headers: Sequence[tuple[str, bytes]] | None, name: str) -> bytes | None:
    """Value of the first record header called `name` (case-insensitive), or None."""
    for key, value in headers or ():
        if key.lower() == name:
            return value
    return None


def keyed_by_conversation(headers: Sequence[tuple[str, bytes]] | None) -> bool:
    """Whether a message says its key is already the conversation id (`agentwatch-key: conversation`)."""
    value = header(headers, KEY_HEADER)
    return value is not None and value.strip().lower() == KEY_CONVERSATION


class Rekeyer:
    """Groups decoded spans by conversation id and queues one message per conversation on the rekey topic."""

    def __init__(self, producer: Any, topic: str) -> None:
        self._producer = producer
        self._topic = topic

    def republish(self, spans: list[SpanRecord]) -> int:
        """Queue `spans` on the rekey topic, one message per conversation; returns messages queued (not flushed)."""
        groups: dict[str, list[SpanRecord]] = {}
        for span in spans:
            groups.setdefault(span.conversation_id, []).append(span)
        for conversation_id, group in groups.items():
            self._producer.send(
                self._topic,
                value=encode_spans_otlp(group),
                key=conversation_id.encode("utf-8"),
                headers=REKEY_HEADERS,
            )
        return len(groups)
