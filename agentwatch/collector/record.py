"""A consumed Kafka record's parts, read once from confluent-kafka's `Message`."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import Message


@dataclass(frozen=True, slots=True)
class Record:
    """A consumed record's parts, read once from confluent-kafka's `Message` (whose getters may return None)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]

    @classmethod
    def of(cls, message: Message) -> Record:
        """The record of a message that is not an error event (its position is then always set)."""
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        if topic is None or partition is None or offset is None:
            raise ValueError("a consumer error event has no record")
        return cls(
            topic,
            partition,
            offset,
            message.key(),
            message.value(),
            [
                (k, v.encode() if isinstance(v, str) else v)
                for k, v in _header_pairs(message)
                if v is not None
            ],
        )


def _header_pairs(message: Message) -> list[tuple[str, str | bytes | None]]:
    headers = message.headers()
    if headers is None:
        return []
    return list(headers.items()) if isinstance(headers, dict) else headers
