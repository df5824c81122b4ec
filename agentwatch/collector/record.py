"""A consumed Kafka record's parts, read once from confluent-kafka's `Message`."""

from __future__ import annotations

from dataclasses import dataclass
from operator import methodcaller

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
    header_error: str | None = None  # why the headers could not be read (then `headers` is empty)

    @classmethod
    def of(cls, message: Message) -> Record:
        """The record of a message that is not an error event (its position is then always set)."""
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        if topic is None or partition is None or offset is None:
            raise ValueError("a consumer error event has no record")
        try:
            pairs = _header_pairs(message)
        except Exception as exc:  # noqa: BLE001 - e.g. a header name that is not UTF-8 (SystemError)
            # one producer's bad header must not stop the collector on this record at every restart
            cause = exc.__cause__ or exc.__context__ or exc
            error = f"headers unreadable ({type(cause).__name__}: {cause}); not forwarded"
            return cls(topic, partition, offset, message.key(), message.value(), [], error)
        return cls(
            topic,
            partition,
            offset,
            message.key(),
            message.value(),
            [(k, v.encode() if isinstance(v, str) else v) for k, v in pairs if v is not None],
        )


# confluent-kafka's `headers()` returns a list holding a NULL, with the decode error set, for a header name
# that is not UTF-8. Called through C (`methodcaller`) the error is raised; a plain `message.headers()` that
# the interpreter has specialised returns the list, and touching it kills the process (SIGSEGV).
_HEADERS = methodcaller("headers")


def _header_pairs(message: Message) -> list[tuple[str, str | bytes | None]]:
    """The message's headers as pairs; raises (SystemError) when the client cannot read them."""
    headers = _HEADERS(message)
    if headers is None:
        return []
    return list(headers.items()) if isinstance(headers, dict) else headers
