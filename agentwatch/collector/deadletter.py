"""Dead letters: messages the collector cannot use, re-published unchanged with the reason in headers."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from agentwatch.collector.record import Record
from agentwatch.kafka.producer import headers_bytes

log = logging.getLogger(__name__)

REASON_HEADER = "agentwatch-error-reason"
DETAIL_HEADER = "agentwatch-error-detail"
TOPIC_HEADER = "agentwatch-source-topic"
PARTITION_HEADER = "agentwatch-source-partition"
OFFSET_HEADER = "agentwatch-source-offset"

_MAX_DETAIL = 1024
_NOTE_ROOM = 200  # bytes the detail may grow by when it says what was left out


class DeadLetterPublisher:
    """Sends an unusable message to the dead-letter topic: original key and value, reason and source in headers."""

    def __init__(self, producer: Any, topic: str, max_bytes: int = 1_000_000) -> None:
        self._producer = producer
        self._topic = topic
        self._max_bytes = max_bytes
        self.by_reason: Counter[str] = Counter()

    def publish(self, message: Any, reason: str, detail: str = "") -> None:
        """Queue `message` (a kafka ConsumerRecord) for the dead-letter topic; flushing is the caller's job.

        A record over `max_bytes` (key and headers counted) would be refused by the broker, and the collector
        would stop on this message at every restart: its value, then its own headers, then its key are left
        out until it fits, the detail saying so (the message stays at its source offset, in the headers)."""
        self.by_reason[reason] += 1
        detail = detail[:_MAX_DETAIL]
        value, key = message.value, message.key
        own = [(k, v) for k, v in (message.headers or ()) if not k.startswith("agentwatch-error-")]
        left_out: list[str] = []
        ours = headers_bytes(self._headers(message, reason, detail)) + _NOTE_ROOM
        if value and len(value) + len(key or b"") + headers_bytes(own) + ours > self._max_bytes:
            left_out.append(f"value of {len(value)} bytes")
            value = b""  # empty, not null: a null value is a tombstone, a deletion to Kafka
        if own and len(key or b"") + headers_bytes(own) + ours > self._max_bytes:
            left_out.append(f"{len(own)} headers of {headers_bytes(own)} bytes")
            own = []
        if key and len(key) + ours > self._max_bytes:
            left_out.append(f"key of {len(key)} bytes")
            key = None
        if left_out:
            detail = f"{detail} ({', '.join(left_out)} not forwarded: over {self._max_bytes} bytes)"
        log.warning(
            "dead letter %s[%d]@%d: %s %s", message.topic, message.partition, message.offset, reason, detail
        )
        headers = self._headers(message, reason, detail) + own
        self._producer.send(self._topic, value=value, key=key, headers=headers)

    @staticmethod
    def _headers(message: Any, reason: str, detail: str) -> list[tuple[str, bytes]]:
        """The dead letter's own headers: reason, detail and source."""
        return [
            (REASON_HEADER, reason.encode("utf-8", "replace")),
            (DETAIL_HEADER, detail.encode("utf-8", "replace")),
            (TOPIC_HEADER, str(message.topic).encode()),
            (PARTITION_HEADER, str(message.partition).encode()),
            (OFFSET_HEADER, str(message.offset).encode()),
        ]

    def publish_or_stub(self, record: Record, reason: str, detail: str) -> None:
        """Queue `record` for the dead-letter topic; when the producer refuses it (e.g. a value larger than it
        accepts), queue it without its value, the detail saying so."""
        try:
            self.publish(record, reason, detail)
        except Exception as exc:  # noqa: BLE001 - e.g. a value larger than the producer accepts
            log.warning(
                "dead letter of %s[%d]@%d sent without its value: %s",
                record.topic,
                record.partition,
                record.offset,
                exc,
            )
            stub = Record(record.topic, record.partition, record.offset, record.key, b"", record.headers)
            self.publish(stub, reason, f"{detail} (value of {len(record.value or b'')} bytes not forwarded)")
