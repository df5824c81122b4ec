"""The collector's producer: scores, re-keyed spans and dead letters, with delivery failures kept for `flush`.

librdkafka (confluent-kafka) does the batching, partitioning and network I/O on its own threads, outside the
GIL, so a `send` leaves the collector's thread to decoding and scoring (see docs/collector.md, "Performance").
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

log = logging.getLogger(__name__)

_QUEUE_FULL_WAIT_S = 0.05


class ProduceError(RuntimeError):
    """A record could not be written; the service stops without committing so the input is replayed."""


def producer_config(connection: dict[str, Any]) -> dict[str, Any]:
    """librdkafka settings of the collector's producer (`connection`: `kafka_security.service_settings`)."""
    return {
        **connection,
        "acks": "all",
        # not idempotent: Tansu refuses InitProducerId after a restart (docs/collector.md); duplicates are
        # allowed by the at-least-once contract and removed downstream by conversation id
        "enable.idempotence": False,
        "linger.ms": 20,
        "batch.size": 1_000_000,
        "message.max.bytes": 16 * 1024 * 1024,
        "partitioner": "murmur2_random",  # the Java client's (and kafka-python's) partitions for keyed records
        "delivery.report.only.error": True,
    }


def headers_bytes(headers: Sequence[tuple[str, bytes]]) -> int:
    """Bytes the headers add to a record, as a broker's record limit counts them (names and values)."""
    return sum(len(k.encode()) + len(v) for k, v in headers)


class RecordProducer:
    """Queues records; remembers failed deliveries so that `flush` can refuse to let offsets be committed."""

    def __init__(self, config: dict[str, Any]) -> None:
        self._producer = Producer({**config, "on_delivery": self._delivered}, logger=log)
        self.errors: list[str] = []

    def send(
        self,
        topic: str,
        *,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes]] | None = None,
    ) -> None:
        """Queue one record (waits while librdkafka's local queue is full); raises KafkaException if it is refused."""
        pairs: list[tuple[str, str | bytes | None]] | None = None if headers is None else list(headers)
        while True:
            try:
                self._producer.produce(topic, value=value, key=key, headers=pairs)
                return
            except BufferError:
                self._producer.poll(_QUEUE_FULL_WAIT_S)

    def poll(self) -> None:
        """Serve delivery reports of records sent so far (without waiting)."""
        self._producer.poll(0)

    def flush(self) -> None:
        """Wait until every queued record is delivered or failed; raise ProduceError if any record failed."""
        self._producer.flush()
        if self.errors:  # sticky: nothing is committed after a lost record; the process must restart
            raise ProduceError(f"{len(self.errors)} record(s) could not be written, first: {self.errors[0]}")

    def close(self, timeout_s: float) -> None:
        """Deliver what is queued, waiting at most `timeout_s` (0: drop it)."""
        left = self._producer.flush(timeout_s)
        if left:
            log.warning("%d record(s) not delivered at close", left)

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            log.error("record for %s not delivered: %s", msg.topic(), err)
            self.errors.append(f"{msg.topic()}: {err}")
