"""kafka-python's producer as the span exporter uses it: what it leaves open or waiting, and how it times out."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


def close_abandoning(producer: Any, timeout_s: float) -> None:
    """Close a producer, giving up the records it still holds (already counted as dropped).

    kafka-python's `close()` flushes first and, a record still unacknowledged, raises before closing anything:
    the producer's network thread went on reconnecting to a lost broker for the life of the process, and its
    `__del__` flushed again, 1 s and an "Exception ignored" on whichever thread freed it. Its sender, closed
    forcibly first, fails those records at once, and the flush inside `close()` returns."""
    sender = getattr(producer, "_sender", None)
    try:
        if sender is not None:
            sender.force_close()
        producer.close(timeout=max(0.2, timeout_s))  # the floor: time for the sender to fail its records
    except Exception:  # noqa: BLE001 - closing what is lost: nothing more to do
        log.debug("agentwatch: error closing the Kafka producer", exc_info=True)


def close_with_exporter(producer: Any) -> None:
    """Leave the closing of a new producer to the exporter's `shutdown` (run by the TracerProvider at exit).

    kafka-python registers an exit hook of its own when a producer is made, after the provider registered its
    own (at `configure`): run first, it closed the producer, and the provider's flush at exit then handed the
    spans still queued in the `BatchSpanProcessor` to a closed producer (all dropped, "KafkaProducer already
    closed")."""
    unregister = getattr(producer, "_unregister_cleanup", None)
    if callable(unregister):
        unregister()


def abandon_in_child(producer: Any) -> None:
    """Mark the parent's producer closed in a forked child, so that freeing it there does nothing.

    Its `__del__` closes it, flushing first: in the child, whose copy has no sender thread, the records the parent
    had not yet seen acknowledged never complete, so `os.fork()` returned 1 s late in the child, with an
    "Exception ignored" traceback (KafkaTimeoutError)."""
    unregister = getattr(producer, "_unregister_cleanup", None)
    if callable(unregister):
        unregister()  # its exit hook would flush it in the child too
    if hasattr(producer, "_closed"):
        producer._closed = True


def timed_out(exc: BaseException) -> bool:
    """Whether a send failed after waiting `max_block_ms` (kafka-python's KafkaTimeoutError)."""
    from kafka.errors import KafkaTimeoutError

    return isinstance(exc, KafkaTimeoutError)


def recording(clients: list[Any], config: dict[str, Any], producer_class: Any) -> Any:
    """The producer's network client class (`kafka_client`), wrapped to put each client it makes in `clients`.

    A producer whose constructor fails (no broker to bootstrap from) is never returned, and its client's
    sockets and selector stayed open until a full garbage collection (7 descriptors an attempt): the caller
    closes the clients recorded here instead."""
    make = config.get("kafka_client") or producer_class.DEFAULT_CONFIG["kafka_client"]

    def recorded(**kwargs: Any) -> Any:
        client = make(**kwargs)
        clients.append(client)
        return client

    return recorded


def close_all(clients: list[Any]) -> None:
    """Close the network clients of a producer that was never made."""
    for client in clients:
        try:
            client.close()
        except Exception:  # noqa: BLE001 - closing what failed to open: nothing more to do
            log.debug("agentwatch: could not close a Kafka client", exc_info=True)


CODECS = ("gzip", "snappy", "lz4", "zstd")


def checked_compression(codec: str | None) -> str | None:
    """kafka-python's `compression_type` for `codec` ("none" or None: none); a ValueError naming the codec when
    it is not one or its library is not installed (else every span was dropped, from the first connection on)."""
    if codec is None or codec.lower() == "none":
        return None
    name = codec.lower()
    if name not in CODECS:
        raise ValueError(f"compression {codec!r} is not one of {(*CODECS, 'none')}")
    try:
        from kafka import codec as codecs
    except ImportError:  # kafka-python missing: the exporter says so when it connects
        return name
    if not getattr(codecs, f"has_{name}")():
        raise ValueError(f"compression {codec!r}: its library is not installed (kafka-python needs it)")
    return name


def check_producer_config(config: dict[str, Any]) -> None:
    """A ValueError naming the keys of `config` that kafka-python's producer does not know (it refused them only
    at the first connection, and every span was dropped)."""
    try:
        from kafka import KafkaProducer
    except ImportError:
        return
    unknown = sorted(str(key) for key in config if key not in KafkaProducer.DEFAULT_CONFIG)
    if unknown:
        raise ValueError(f"producer_config: kafka-python's producer has no setting {', '.join(unknown)}")
