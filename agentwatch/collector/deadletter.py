"""Dead letters: messages the collector cannot use, re-published unchanged with the reason in headers."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from agentwatch.collector.record import Record

log = logging.getLogger(__name__)

REASON_HEADER = "agentwatch-error-reason"
DETAIL_HEADER = "agentwatch-error-detail"
TOPIC_HEADER = "agentwatch-source-topic"
PARTITION_HEADER = "agentwatch-source-partition"
OFFSET_HEADER = "agentwatch-source-offset"

_MAX_DETAIL = 1024


class DeadLetterPublisher:
    """Sends an unusable message to the dead-letter topic: original key and value, reason and source in headers."""

    def __init__(self, producer: Any, topic: str) -> None:
        self._producer = producer
        self._topic = topic
        self.by_reason: Counter[str] = Counter()

    def publish(self, message: Any, reason: str, detail: str = "") -> None:
        """Queue `message` (a kafka ConsumerRecord) for the dead-letter topic; flushing is the caller's job."""
        self.by_reason[reason] += 1
        detail = detail[:_MAX_DETAIL]
        headers = [
            (REASON_HEADER, reason.encode("utf-8", "replace")),
            (DETAIL_HEADER, detail.encode("utf-8", "replace")),
            (TOPIC_HEADER, str(message.topic).encode()),
            (PARTITION_HEADER, str(message.partition).encode()),
            (OFFSET_HEADER, str(message.offset).encode()),
        ]
        headers.extend((k, v) for k, v in (message.headers or ()) if not k.startswith("agentwatch-error-"))
        log.warning(
            "dead letter %s[%d]@%d: %s %s", message.topic, message.partition, message.offset, reason, detail
        )
        self._producer.send(self._topic, value=message.value, key=message.key, headers=headers)

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
            stub = Record(record.topic, record.partition, record.offset, record.key, None, record.headers)
            self.publish(stub, reason, f"{detail} (value of {len(record.value or b'')} bytes not forwarded)")
