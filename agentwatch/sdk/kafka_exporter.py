"""`KafkaSpanExporter`: OTLP protobuf `TracesData` to a Kafka topic, one message per conversation per batch.

`export()` only appends the batch to a bounded queue and returns; a background thread owns the kafka-python
producer (creating it may block while the broker is down, so only that thread ever touches it), groups spans
by conversation, encodes and sends them. When the broker is unreachable the queue fills and new spans are
dropped and counted; the producer reconnects by itself when the broker is back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from agentwatch import wire
from agentwatch.kafka_security import KafkaSecurity, kafka_python_messages

log = logging.getLogger(__name__)

CONVERSATION_ID = "gen_ai.conversation.id"
HEADERS = [(wire.CONTENT_TYPE_HEADER, wire.PROTOBUF), (wire.KEY_HEADER, wire.KEY_CONVERSATION)]
DEFAULT_TOPIC = wire.SPANS_TOPIC
_MAX_MESSAGE_BYTES = 900_000  # under the 1 MiB default max.request.size / message.max.bytes


def conversation_key(span: ReadableSpan) -> str:
    """The Kafka key of a span: its conversation id, else its trace id (32 hex)."""
    attrs = span.attributes or {}
    value = attrs.get(CONVERSATION_ID)
    if value:
        return str(value)
    ctx = span.context
    return f"{ctx.trace_id:032x}" if ctx is not None else "unknown"


def encode_messages(spans: Sequence[ReadableSpan], max_bytes: int = _MAX_MESSAGE_BYTES) -> list[tuple[str, bytes, int]]:
    """(key, OTLP TracesData bytes, span count) per conversation; a conversation too big for one message is split."""
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


class KafkaSpanExporter(SpanExporter):
    """An OpenTelemetry SpanExporter writing to Kafka; never blocks the caller and never raises into it."""

    def __init__(
        self,
        bootstrap_servers: str | list[str] = "127.0.0.1:9092",
        topic: str = DEFAULT_TOPIC,
        compression: str | None = None,
        queue_size: int = 20_000,
        producer_config: dict[str, Any] | None = None,
        *,
        security: KafkaSecurity | dict[str, Any] | None = None,
        warn_interval_s: float = 30.0,
        retry_interval_s: float = 1.0,
        shutdown_timeout_s: float = 5.0,
    ) -> None:
        self.topic = topic
        self.queue_size = max(1, int(queue_size))
        self.dropped_spans = 0
        self.sent_spans = 0
        self.sent_messages = 0
        self.last_error: str | None = None
        # TLS/SASL: the arguments, else AGENTWATCH_KAFKA_* variables (docs/collector_service.md)
        self._security = security if isinstance(security, KafkaSecurity) else KafkaSecurity.from_env(**(security or {}))
        self._refused: str | None = None  # why the settings cannot work; logged once, spans dropped
        self._explained: str | None = None  # the last refusal by the broker that was logged
        problems = self._security.problems()
        if problems:
            self._refused = "invalid Kafka security settings: " + "; ".join(
                f"AGENTWATCH_KAFKA_{name.upper()}: {msg}" for name, msg in problems
            )
            log.error("agentwatch: %s; spans are dropped", self._refused)
        self._config: dict[str, Any] = {
            "bootstrap_servers": bootstrap_servers,
            "client_id": "agentwatch-sdk",
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
            **self._security.kafka_python(),
            **(producer_config or {}),
        }
        self.shutdown_timeout_s = shutdown_timeout_s
        self._warn_interval_s = warn_interval_s
        self._retry_interval_s = retry_interval_s
        self._lock = threading.Lock()
        self._queue: deque[Sequence[ReadableSpan]] = deque()
        self._queued = 0
        self._in_flight = 0
        self._wake = threading.Event()
        self._closing = False
        self._last_warning = 0.0
        self._producer: Any = None
        self._thread = threading.Thread(target=self._run, name="agentwatch-kafka-exporter", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ caller side

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Queue a batch for sending; drop it (counted) when the queue is full or the exporter is shut down."""
        n = len(spans)
        if n == 0:
            return SpanExportResult.SUCCESS
        with self._lock:
            if self._closing or self._queued + self._in_flight + n > self.queue_size:
                self.dropped_spans += n
                dropped = True
            else:
                self._queue.append(spans)
                self._queued += n
                dropped = False
        if dropped:
            self._warn_dropped()
            return SpanExportResult.FAILURE
        self._wake.set()
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Wait until every queued span is acknowledged or dropped; False on timeout."""
        deadline = time.monotonic() + timeout_millis / 1000
        while True:
            with self._lock:
                if self._queued == 0 and self._in_flight == 0:
                    return True
            if time.monotonic() >= deadline or not self._thread.is_alive():
                return False
            self._wake.set()
            time.sleep(0.01)

    def shutdown(self, timeout_s: float | None = None) -> None:  # type: ignore[override]
        """Flush within timeout_s (default `shutdown_timeout_s`), then stop the sender and close the producer."""
        if self._closing:
            return
        if timeout_s is None:
            timeout_s = self.shutdown_timeout_s
        start = time.monotonic()
        self.force_flush(int(timeout_s * 1000))
        with self._lock:
            self._closing = True
            lost = self._queued
            self._queued = 0
            self._queue.clear()
            self.dropped_spans += lost
        self._wake.set()
        self._thread.join(max(0.1, timeout_s - (time.monotonic() - start)))
        if lost:
            log.warning(
                "agentwatch: %d spans not sent: Kafka at %s was not reachable within the %.1f s the exporter waits "
                "at exit (shutdown(timeout_s=...)); last error: %s",
                lost, self._servers(), timeout_s, self.last_error or "none",
            )

    def stats(self) -> dict[str, Any]:
        """Counters: sent, dropped, queued and in-flight spans, messages sent, connection state, last error."""
        with self._lock:
            return {
                "sent_spans": self.sent_spans,
                "sent_messages": self.sent_messages,
                "dropped_spans": self.dropped_spans,
                "queued_spans": self._queued,
                "in_flight_spans": self._in_flight,
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
        waiting = self._queued + self._in_flight
        if self.dropped_spans:
            log.warning("agentwatch: dropped %d spans so far: Kafka at %s unreachable or slow (%d spans waiting, "
                        "limit %d); last error: %s", self.dropped_spans, self._servers(), waiting, self.queue_size,
                        self.last_error)
        else:
            log.warning("agentwatch: Kafka at %s unreachable; %d spans waiting (beyond %d they are dropped and "
                        "counted); last error: %s", self._servers(), waiting, self.queue_size, self.last_error)

    # ------------------------------------------------------------------ sender thread

    def _run(self) -> None:
        while True:
            self._wake.wait(0.5)
            self._wake.clear()
            if self._closing:
                break
            if not self._queue:
                continue
            producer = self._ensure_producer()
            if producer is None:
                time.sleep(self._retry_interval_s)  # batches stay queued; export() drops once it is full
                continue
            while True:
                with self._lock:
                    if not self._queue:
                        break
                    batch = self._queue.popleft()
                    self._queued -= len(batch)
                    self._in_flight += len(batch)
                self._send_batch(producer, batch)
        self._close_producer()

    def _ensure_producer(self) -> Any:
        if self._producer is not None:
            return self._producer
        if self._refused is not None:
            self.last_error = self._refused
            self._warn_dropped()
            return None
        messages: list[str] = []
        try:
            from kafka import KafkaProducer

            if self._security.protocol == "PLAINTEXT":
                self._producer = KafkaProducer(**self._config)
            else:  # kafka-python only logs why a secured bootstrap failed: collect that to explain it
                with kafka_python_messages() as messages:
                    self._producer = KafkaProducer(**self._config)
            # kafka-python 3.0 forgets a topic whose partitions it already knew at first send; a later
            # metadata refresh then drops it and its batches expire. Track the topic explicitly.
            metadata = getattr(self._producer, "_metadata", None)
            if metadata is not None and hasattr(metadata, "add_topic"):
                metadata.add_topic(self.topic)
            log.info("agentwatch: connected to Kafka at %s", self._config["bootstrap_servers"])
        except Exception as exc:  # noqa: BLE001 - broker down, bad config: keep the agent running
            self.last_error = error_text(exc)
            where = self._servers()
            found = self._security.diagnose_connection([*messages, self.last_error], where, prefix="AGENTWATCH_KAFKA_")
            if found is not None:
                self.last_error = str(found)
                if self._explained != self.last_error:  # one clear line per distinct refusal, then counted drops
                    log.error("agentwatch: %s; spans are dropped until it connects", self.last_error)
                self._explained = self.last_error
            self._warn_dropped()
        return self._producer

    def _send_batch(self, producer: Any, batch: Sequence[ReadableSpan]) -> None:
        try:
            messages = encode_messages(batch)
        except Exception as exc:
            log.exception("agentwatch: could not encode %d spans", len(batch))
            self._settle(len(batch), ok=False, error=exc)
            return
        for key, payload, count in messages:
            try:
                future = producer.send(self.topic, key=key.encode("utf-8"), value=payload, headers=HEADERS)
            except Exception as exc:  # noqa: BLE001 - metadata timeout, producer closed, too large
                self._settle(count, ok=False, error=exc)
                continue
            future.add_callback(self._on_sent, count)
            future.add_errback(self._on_failed, count)

    def _on_sent(self, count: int, _metadata: Any = None) -> None:
        self._settle(count, ok=True)

    def _on_failed(self, count: int, exc: BaseException) -> None:
        self._settle(count, ok=False, error=exc)

    def _settle(self, count: int, *, ok: bool, error: BaseException | None = None) -> None:
        with self._lock:
            self._in_flight -= count
            if ok:
                self.sent_spans += count
                self.sent_messages += 1
            else:
                self.dropped_spans += count
                self.last_error = error_text(error)
        if not ok:
            self._warn_dropped()

    def _close_producer(self) -> None:
        producer, self._producer = self._producer, None
        if producer is None:
            return
        try:
            producer.flush(timeout=2.0)
            producer.close(timeout=2.0)
        except Exception:
            log.debug("error closing the Kafka producer", exc_info=True)


def error_text(exc: BaseException | None) -> str:
    """`Type: message`, without the type twice when the message already starts with it (kafka-python's do)."""
    if exc is None:
        return "unknown error"
    name, text = type(exc).__name__, str(exc)
    if not text:
        return name
    return text if text.startswith(name) else f"{name}: {text}"

