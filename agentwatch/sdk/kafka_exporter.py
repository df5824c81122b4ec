"""`KafkaSpanExporter`: OTLP protobuf `TracesData` to a Kafka topic, one message per conversation per batch.

A plain OpenTelemetry `SpanExporter`, meant to run under the standard `BatchSpanProcessor`, whose worker thread
calls `export()`: the agent's threads only append finished spans to that processor's queue. `export()` hands
the encoded messages to kafka-python's producer and returns without waiting for the broker; acknowledgements
and failures are counted as they arrive. While the broker is unreachable, `export()` drops batches at once
(counted) and tries to connect again at most every `retry_interval_s`; the producer reconnects by itself. A send
that times out waiting for the topic's metadata drops the rest of its batch, and the batches of the next
`retry_interval_s`, at once (counted).
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from agentwatch import wire
from agentwatch.kafka.refusals import kafka_python_messages
from agentwatch.kafka.security import KafkaSecurity
from agentwatch.sdk.kafka_messages import HEADERS, encode_messages, message_bytes
from agentwatch.sdk.kafka_producer import (
    abandon_in_child,
    check_producer_config,
    checked_compression,
    close_abandoning,
    close_all,
    close_with_exporter,
    recording,
    timed_out,
)

log = logging.getLogger(__name__)

DEFAULT_TOPIC = wire.SPANS_TOPIC
MAX_IN_FLIGHT_BYTES = 32 * 1024 * 1024  # the Java producer's buffer.memory default


def _after_fork(exporter: KafkaSpanExporter) -> None:
    """In a child process (gunicorn's preload, Celery's prefork, multiprocessing), forget the parent's producer:
    its sender thread does not exist there, and every span the child sent was dropped. The child connects
    again at its first export."""
    if not hasattr(os, "register_at_fork"):
        return
    ref = weakref.ref(exporter)

    def forget() -> None:
        child = ref()
        if child is not None:
            child._reset_after_fork()

    os.register_at_fork(after_in_child=forget)


class KafkaSpanExporter(SpanExporter):
    """An OpenTelemetry SpanExporter writing to Kafka; it never raises, and drops (counted) what it cannot send."""

    def __init__(
        self,
        bootstrap_servers: str | list[str] = "127.0.0.1:9092",
        topic: str = DEFAULT_TOPIC,
        compression: str | None = None,
        max_in_flight_spans: int = 20_000,
        producer_config: dict[str, Any] | None = None,
        *,
        security: KafkaSecurity | dict[str, Any] | None = None,
        warn_interval_s: float = 30.0,
        retry_interval_s: float = 1.0,
        shutdown_timeout_s: float = 5.0,
        max_message_bytes: int | None = None,
        max_in_flight_bytes: int = MAX_IN_FLIGHT_BYTES,
    ) -> None:
        """`max_message_bytes`: a conversation's spans of one batch are split into messages of at most this many
        bytes (a larger span is sent alone); keep it under the topic's `max.message.bytes` and the producer's
        `max_request_size`. Default: AGENTWATCH_KAFKA_MAX_MESSAGE_BYTES, else 900,000 (ValueError if invalid).
        `max_in_flight_spans`, `max_in_flight_bytes`: what awaits the broker's acknowledgement; beyond, dropped.
        A `compression` or `producer_config` key kafka-python would refuse is a ValueError here, not every span
        dropped later."""
        compression = checked_compression(compression)
        check_producer_config(producer_config or {})
        self.topic = topic
        self.max_message_bytes = message_bytes(max_message_bytes)
        self.max_in_flight_spans = max(1, int(max_in_flight_spans))
        self.max_in_flight_bytes = max(1, int(max_in_flight_bytes))
        self.shutdown_timeout_s = shutdown_timeout_s
        self.dropped_spans = 0
        self.sent_spans = 0
        self.sent_messages = 0
        self.last_error: str | None = None
        # TLS/SASL: the arguments, else AGENTWATCH_KAFKA_* variables (docs/collector_service.md)
        self._security = (
            security if isinstance(security, KafkaSecurity) else KafkaSecurity.from_env(**(security or {}))
        )
        self._refused: str | None = None  # why the settings cannot work; logged once, spans dropped
        self._explained: str | None = None  # the last refusal by the broker that was logged
        problems = self._security.problems()
        if problems:
            self._refused = "invalid Kafka security settings: " + "; ".join(
                f"AGENTWATCH_KAFKA_{name.upper()}: {msg}" for name, msg in problems
            )
            log.error("agentwatch: %s; spans are dropped", self._refused)
        self._config: dict[str, Any] = {
            **self._security.client_settings("kafka-python", bootstrap_servers, "agentwatch-sdk"),
            "linger_ms": 20,
            "batch_size": 1_000_000,
            "acks": "all",
            # Spans are de-duplicated by span id downstream; an idempotent producer's id does not survive a
            # memory-only broker (Tansu) restarting, after which every send fails fatally.
            "enable_idempotence": False,
            "compression_type": compression,
            "max_block_ms": 1000,
            "bootstrap_timeout_ms": 2000,
            "request_timeout_ms": 5000,
            "delivery_timeout_ms": 15000,
            "reconnect_backoff_max_ms": 1000,
            **(producer_config or {}),
        }
        self._warn_interval_s = warn_interval_s
        self._retry_interval_s = retry_interval_s
        self._lock = threading.Lock()  # the counters: callbacks run on kafka-python's sender thread
        self._connect_lock = threading.Lock()
        self._in_flight = 0
        self._in_flight_bytes = 0
        self._closed = False
        self._next_attempt = 0.0
        self._paused_until = 0.0  # after a send that timed out: batches are dropped at once until then
        self._last_warning = 0.0
        self._producer: Any = None
        _after_fork(self)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Send a batch without waiting for the broker; drop it (counted) when Kafka is unreachable or backed up."""
        n = len(spans)
        if n == 0:
            return SpanExportResult.SUCCESS
        try:
            producer = None if self._closed or self._paused() else self._connect()
            with self._lock:
                accepted = producer is not None and self._in_flight + n <= self.max_in_flight_spans
                if accepted:
                    self._in_flight += n
                else:
                    self.dropped_spans += n
            if not accepted:
                self._warn_dropped()
                return SpanExportResult.FAILURE
            self._send(producer, spans)
        except Exception:  # whatever happens here must not reach the agent
            log.exception("agentwatch: could not export %d spans", n)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Wait until every span handed to Kafka is acknowledged or dropped; False on timeout."""
        deadline = time.monotonic() + timeout_millis / 1000
        producer = self._producer
        if producer is not None:
            try:
                producer.flush(timeout=max(0.0, deadline - time.monotonic()))
            except Exception:  # a flush timeout: the spans stay in flight
                log.debug("agentwatch: Kafka flush did not finish", exc_info=True)
        while True:  # the acknowledgement callbacks run just after flush returns
            with self._lock:
                if self._in_flight == 0:
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    def shutdown(self, timeout_millis: float | None = None) -> None:
        """Wait up to `shutdown_timeout_s` for acknowledgements, log what was not sent, and close the producer."""
        if self._closed:
            return
        self._closed = True
        wait_s = (
            self.shutdown_timeout_s
            if timeout_millis is None
            else min(self.shutdown_timeout_s, timeout_millis / 1000)
        )
        self.force_flush(int(wait_s * 1000))
        with self._lock:
            lost, self._in_flight, self._in_flight_bytes = self._in_flight, 0, 0
            self.dropped_spans += lost
            dropped = self.dropped_spans
        producer, self._producer = self._producer, None
        if producer is not None:
            close_abandoning(producer, min(2.0, wait_s))
        if dropped:
            log.warning(
                "agentwatch: %d spans not sent: Kafka at %s was unreachable or refused them (at exit the exporter "
                "waited %.1f s, its shutdown_timeout_s); last error: %s",
                dropped,
                self._servers(),
                wait_s,
                self.last_error or "none",
            )

    def stats(self) -> dict[str, Any]:
        """Counters: spans sent, dropped and awaiting acknowledgement, messages sent, connection, last error."""
        with self._lock:
            return {
                "sent_spans": self.sent_spans,
                "sent_messages": self.sent_messages,
                "dropped_spans": self.dropped_spans,
                "in_flight_spans": self._in_flight,
                "in_flight_bytes": self._in_flight_bytes,
                "connected": self._producer is not None,
                "last_error": self.last_error,
            }

    def _servers(self) -> str:
        servers = self._config["bootstrap_servers"]
        return servers if isinstance(servers, str) else ",".join(servers)

    def _warn_dropped(self) -> None:
        now = time.monotonic()
        if now - self._last_warning < self._warn_interval_s:
            return
        self._last_warning = now
        log.warning(
            "agentwatch: dropped %d spans so far: Kafka at %s unreachable or slow (%d spans, %d bytes awaiting "
            "acknowledgement, limits %d, %d); last error: %s",
            self.dropped_spans,
            self._servers(),
            self._in_flight,
            self._in_flight_bytes,
            self.max_in_flight_spans,
            self.max_in_flight_bytes,
            self.last_error,
        )

    def _reset_after_fork(self) -> None:
        if self._producer is not None:
            abandon_in_child(self._producer)
        self._producer = None
        self._lock = threading.Lock()  # a lock held by a parent thread at the fork stays held in the child
        self._connect_lock = threading.Lock()
        self._in_flight = 0
        self._in_flight_bytes = 0
        self._next_attempt = 0.0
        self._paused_until = 0.0

    def _paused(self) -> bool:
        """Whether a send timed out less than `retry_interval_s` ago (batches are then dropped at once)."""
        return time.monotonic() < self._paused_until

    def _connect(self) -> Any:
        """The producer; else None, after at most one connection attempt per `retry_interval_s`."""
        if self._producer is not None:
            return self._producer
        with self._connect_lock:
            if self._producer is not None or time.monotonic() < self._next_attempt:
                return self._producer
            try:
                producer = self._create_producer()
            finally:  # counted from the end of the attempt: creating a producer waits for the bootstrap
                self._next_attempt = time.monotonic() + self._retry_interval_s
            if producer is None:
                # kafka-python (3.0) does not close a socket whose connection was refused: the error's
                # traceback holds it, in a reference cycle made during this attempt, garbage once the attempt
                # has returned. Collecting the young generations frees it (a few ms, at most once a retry
                # interval while Kafka is down); left to the next full collection, which a process with a
                # large heap runs rarely, 2 descriptors an attempt piled up.
                gc.collect(1)
            return producer

    def _create_producer(self) -> Any:
        if self._refused is not None:
            self.last_error = self._refused
            return None
        messages: list[str] = []
        clients: list[Any] = []
        try:
            from kafka import KafkaProducer

            config = {**self._config, "kafka_client": recording(clients, self._config, KafkaProducer)}
            if self._security.protocol == "PLAINTEXT":
                producer = KafkaProducer(**config)
            else:  # kafka-python only logs why a secured bootstrap failed: collect that to explain it
                with kafka_python_messages() as messages:
                    producer = KafkaProducer(**config)
            close_with_exporter(producer)
            # kafka-python 3.0 forgets a topic whose partitions it already knew at first send; a later
            # metadata refresh then drops it and its batches expire. Track the topic explicitly.
            metadata = getattr(producer, "_metadata", None)
            if metadata is not None and hasattr(metadata, "add_topic"):
                metadata.add_topic(self.topic)
        except Exception as exc:  # noqa: BLE001 - broker down, bad config: keep the agent running
            close_all(clients)
            self.last_error = error_text(exc)
            found = self._security.diagnose_connection(
                [*messages, self.last_error], self._servers(), prefix="AGENTWATCH_KAFKA_"
            )
            if found is not None:
                self.last_error = str(found)
                if (
                    self._explained != self.last_error
                ):  # one clear line per distinct refusal, then counted drops
                    log.error("agentwatch: %s; spans are dropped until it connects", self.last_error)
                self._explained = self.last_error
            return None
        log.info("agentwatch: connected to Kafka at %s", self._servers())
        self._producer = producer
        return producer

    def _send(self, producer: Any, spans: Sequence[ReadableSpan]) -> None:
        """Encode and send; each message settles its spans as sent or dropped when the broker answers."""
        try:
            messages = encode_messages(spans, self.max_message_bytes)
        except Exception as exc:
            log.exception("agentwatch: could not encode %d spans", len(spans))
            self._settle(len(spans), 0, ok=False, error=exc)
            return
        for i, (key, payload, count) in enumerate(messages):
            size = len(payload)
            with self._lock:  # kafka-python 3.0's producer has no bound of its own (no buffer_memory)
                room = self._in_flight_bytes + size <= self.max_in_flight_bytes
                if room:
                    self._in_flight_bytes += size
            if not room:
                full = BufferError(f"over {self.max_in_flight_bytes} bytes awaiting acknowledgement")
                self._settle(count, 0, ok=False, error=full)
                continue
            try:
                future = producer.send(self.topic, key=key.encode("utf-8"), value=payload, headers=HEADERS)
            except Exception as exc:  # noqa: BLE001 - metadata timeout, producer closed, too large
                if not timed_out(exc):
                    self._settle(count, size, ok=False, error=exc)
                    continue
                # The send waited `max_block_ms` for the topic's metadata (a broker advertising an address nobody
                # listens on, a topic it will not create), and every other message would wait as long, in
                # turn: 20 conversations held `shutdown()` on the agent's thread for 20 s.
                self._paused_until = time.monotonic() + self._retry_interval_s
                self._settle(sum(c for _, _, c in messages[i:]), size, ok=False, error=exc)
                return
            future.add_callback(self._on_sent, count, size)
            future.add_errback(self._on_failed, count, size)

    def _on_sent(self, count: int, size: int, _metadata: Any = None) -> None:
        self._settle(count, size, ok=True)

    def _on_failed(self, count: int, size: int, exc: BaseException) -> None:
        self._settle(count, size, ok=False, error=exc)

    def _settle(self, count: int, size: int, *, ok: bool, error: BaseException | None = None) -> None:
        """Spans of one message acknowledged (`ok`) or lost; `size`: its bytes counted as awaiting the broker."""
        with self._lock:
            if self._in_flight < count:  # already counted as lost by shutdown
                return
            self._in_flight -= count
            self._in_flight_bytes -= size
            if ok:
                self.sent_spans += count
                self.sent_messages += 1
            else:
                self.dropped_spans += count
                self.last_error = error_text(error)
        if not ok:
            self._warn_dropped()


def error_text(exc: BaseException | None) -> str:
    """`Type: message`, without the type twice when the message already starts with it (kafka-python's do)."""
    if exc is None:
        return "unknown error"
    name, text = type(exc).__name__, str(exc)
    if not text:
        return name
    return text if text.startswith(name) else f"{name}: {text}"
