"""`agentwatch review`: the transcripts topic into the store, the pages, the outbox to Kafka, and retention.

Threads: the page server (uvicorn), the ingest loop (a consumer in group `review.group_id`; offsets committed
after the store has the records, so a crash replays them and the store ignores what it already holds), the
publisher (the outbox to Kafka, woken at once by a saved label; rows are marked sent only once Kafka
acknowledged them), and retention (expired rows deleted every `review.retention_interval_s`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, cast

import uvicorn
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from prometheus_client.registry import CollectorRegistry
from pydantic import ValidationError
from sqlalchemy.exc import DataError

from agentwatch.config import Settings
from agentwatch.kafka.consumer_events import ConsumerEvents
from agentwatch.kafka.producer import producer_config
from agentwatch.kafka.security import KafkaSecurity, service_settings
from agentwatch.kafka.topics import ensure_topics
from agentwatch.metrics_http import MetricsServer, render_families, where
from agentwatch.review.connection_guard import GuardedProtocol, TrustedProxies
from agentwatch.review.metrics import ReviewMetrics, ReviewStats
from agentwatch.review.outage import STORE_DOWN
from agentwatch.review.store import Store
from agentwatch.review.web import ReviewApp
from agentwatch.wire.json_text import model_from_json
from agentwatch.wire.review_records import TranscriptRecord

log = logging.getLogger(__name__)

_POLL_S = 0.5
_SEND_TIMEOUT_S = 15.0


class ReviewService:
    """The review service over `settings` (`review`, `kafka`, `scoring.credits` and `alerts.window` sections)."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.config = settings.review
        self._clock = clock
        self.store = Store(
            self.config.database_url,
            scores_topic=self.config.scores_topic,
            labels_topic=self.config.labels_topic,
            credits=settings.scoring.credits,
        )
        self.stats = ReviewStats()
        self.consumer_events = ConsumerEvents("agentwatch_review_consumer_errors", "transcripts topic")
        self._wake = threading.Event()
        self.web = ReviewApp(
            self.store,
            self.config,
            self.stats,
            clock=clock,
            on_saved=self._wake.set,
            failing_window=settings.alerts.window,  # the alerts' links name no window: it is theirs
            failing_per_minute=settings.collector.failing_transcripts_per_minute,
        )
        self.port: int | None = None
        self.metrics_port: int | None = None
        self.started = threading.Event()  # the page is served
        self._server: uvicorn.Server | None = None
        self._metrics: MetricsServer | None = None
        self.errors: list[BaseException] = []

    # ------------------------------------------------------------------ lifecycle

    def run(self, stop: threading.Event) -> None:
        """Serve until `stop` is set (ingest, publisher and retention on their own threads)."""
        kafka = self.settings.kafka
        cfg = self.config
        topics = [cfg.transcripts_topic, cfg.scores_topic, *([cfg.labels_topic] if cfg.labels_topic else [])]
        ensure_topics(
            kafka.bootstrap_servers,
            topics,
            partitions=self.settings.collector.topic_partitions,
            replication_factor=self.settings.collector.topic_replication_factor,
            client_id=kafka.client_id,
            security=KafkaSecurity.from_config(kafka),
        )
        sock = socket.socket(socket.AF_INET6 if ":" in cfg.host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((cfg.host, cfg.port))
        sock.listen(128)  # connections wait in the backlog until uvicorn serves them: reachable once started
        self.port = int(sock.getsockname()[1])
        if cfg.metrics_port is not None:
            self.start_metrics(cfg.metrics_port)
        config = uvicorn.Config(
            self.web.app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            proxy_headers=bool(cfg.forwarded_allow_ips),
            forwarded_allow_ips=cfg.forwarded_allow_ips or None,
            limit_concurrency=cfg.max_connections,
            http=cast(
                "type[asyncio.Protocol]",
                functools.partial(
                    GuardedProtocol,
                    per_client=cfg.max_connections_per_client,
                    proxies=TrustedProxies(cfg.forwarded_allow_ips),
                    on_close=self.stats.count_closed,
                ),
            ),
        )
        server = self._server = uvicorn.Server(config)
        loops = [
            ("review-ingest", self._ingest),
            ("review-publish", self._publish),
            ("review-retention", self._retention),
        ]
        threads = [
            threading.Thread(target=self._guard, args=(name, target, stop), name=name, daemon=True)
            for name, target in loops
        ]
        for thread in threads:
            thread.start()
        watcher = threading.Thread(target=self._stop_server_on, args=(stop,), daemon=True)
        watcher.start()
        log.info(
            "review page on %s (%d reviewers), store %s",
            where(cfg.host, self.port, "/"),
            len(self.web.reviewers),
            _safe_url(self.store),
        )
        try:
            self.started.set()
            server.run(sockets=[sock])
        finally:
            stop.set()
            self._wake.set()
            for thread in threads:
                thread.join(30)
            if self._metrics is not None:
                self._metrics.stop()
            self.store.close()
            log.info("review service stopped")
        if self.errors:
            raise self.errors[0]

    def start_metrics(self, port: int) -> int:
        """Serve /metrics on `port` (0: any free port); the port."""
        registry = CollectorRegistry()
        registry.register(ReviewMetrics(self.store, self.stats, self.web.sessions.active))
        registry.register(self.consumer_events)
        self._metrics = MetricsServer(
            lambda: render_families(registry.collect()).encode(),
            port,
            self.config.metrics_host,
            "agentwatch review",
        )
        self.metrics_port = self._metrics.port
        return self.metrics_port

    def _stop_server_on(self, stop: threading.Event) -> None:
        stop.wait()
        if self._server is not None:
            self._server.should_exit = True

    def _guard(self, name: str, target: Callable[[threading.Event], None], stop: threading.Event) -> None:
        try:
            target(stop)
        except BaseException as exc:  # a dead loop must stop the service, loudly
            log.exception("%s stopped with an error", name)
            self.errors.append(exc)
            stop.set()

    # ------------------------------------------------------------------ ingest

    def _consumer(self) -> Consumer:
        cfg, kafka = self.config, self.settings.kafka
        return Consumer(
            {
                **service_settings(kafka, "review"),
                "group.id": cfg.group_id,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,  # an offset is stored once its record is in the store
                "auto.offset.reset": "earliest",
                "session.timeout.ms": cfg.session_timeout_ms,
                "heartbeat.interval.ms": cfg.heartbeat_interval_ms,
                "error_cb": self.consumer_events.record,  # a broker down: counted, not only logged
            },
            logger=log,
        )

    def _ingest(self, stop: threading.Event) -> None:
        """Transcript records into the store; commit what is stored; on a store error, replay from there."""
        consumer = self._consumer()
        consumer.subscribe([self.config.transcripts_topic])
        try:
            while not stop.is_set():
                messages = consumer.consume(500, _POLL_S)
                done = self._store_batch(consumer, messages)
                if done:
                    try:
                        consumer.commit(asynchronous=False)
                    except KafkaException as exc:  # a rebalance: the new owner replays; repeats are skipped
                        log.warning("offset commit failed (records will be replayed): %s", exc)
        finally:
            consumer.close()

    def _store_batch(self, consumer: Consumer, messages: list[Message]) -> int:
        """Store the records of a batch in order and their offsets; the number of records done. On a store
        error, seek back to the record that failed and wait (its offset and those after it are not stored)."""
        stored = 0
        retention_s = self.config.retention_days * 86400
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    self.consumer_events.record(error, message.topic())
                continue
            try:
                record = model_from_json(TranscriptRecord, message.value() or b"")
            except (ValidationError, ValueError) as exc:
                self.stats.count_ingest("invalid")
                log.warning(
                    "invalid transcript record at %s[%s]@%s: %s",
                    message.topic(),
                    message.partition(),
                    message.offset(),
                    str(exc)[:300],
                )
                stored += _store_offset(consumer, message)
                continue
            try:
                result = self.store.ingest(
                    record, self._clock(), retention_s, self.config.failing_retention_days * 86400
                )
            except DataError as exc:  # content this database cannot hold: retrying would stop the partition
                self.stats.count_ingest("invalid")
                log.error(
                    "transcript record at %s[%s]@%s not stored, the database refuses its content: %s",
                    message.topic(),
                    message.partition(),
                    message.offset(),
                    str(exc).splitlines()[0][:300],
                )
                stored += _store_offset(consumer, message)
                continue
            except Exception as exc:  # the database is away: replay from this record once it is back
                if isinstance(exc, STORE_DOWN):
                    self.stats.store.failed("ingest", exc)
                else:
                    log.exception(
                        "storing a transcript failed; retrying in %g s", self.config.publish_retry_s
                    )
                self._seek_back(consumer, messages, message)
                time.sleep(self.config.publish_retry_s)
                return stored
            self.stats.store.ok("ingest")
            self.stats.count_ingest(result)
            if result == "answered":
                self._wake.set()
            stored += _store_offset(consumer, message)
        return stored

    @staticmethod
    def _seek_back(consumer: Consumer, messages: list[Message], failed: Message) -> None:
        """Seek every partition of the batch back to its first record not stored (from `failed` on)."""
        first: dict[tuple[str, int], int] = {}
        after = False
        for message in messages:
            after = after or message is failed
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            if (
                after
                and message.error() is None
                and topic is not None
                and partition is not None
                and offset is not None
            ):
                first.setdefault((topic, partition), offset)
        for (topic, partition), offset in first.items():
            consumer.seek(TopicPartition(topic, partition, offset))

    # ------------------------------------------------------------------ publisher

    def _producer(self) -> Producer:
        config: dict[str, Any] = {
            **producer_config(service_settings(self.settings.kafka, "review")),
            "delivery.report.only.error": False,
        }  # acknowledgements mark the outbox
        return Producer(config, logger=log)

    def _publish(self, stop: threading.Event) -> None:
        """Send the outbox, oldest first; mark what Kafka acknowledged; retry the rest after a pause."""
        producer = self._producer()
        kinds = {self.config.scores_topic: "scores", self.config.labels_topic: "labels"}
        try:
            while not stop.is_set():
                self._wake.wait(1.0)
                self._wake.clear()
                while not stop.is_set():
                    try:  # a record Kafka acknowledged but not marked (store away) is sent again: a duplicate
                        batch = self.store.unsent()
                        acked = self._send(producer, batch) if batch else set()
                        self.store.mark_sent([r.id for r in batch if r.id in acked], self._clock())
                    except STORE_DOWN as exc:
                        self.stats.store.failed("publish", exc)
                        stop.wait(self.config.publish_retry_s)
                        continue
                    self.stats.store.ok("publish")
                    if not batch:
                        break
                    for topic, kind in kinds.items():
                        n = sum(1 for r in batch if r.topic == topic and r.id in acked)
                        if n:
                            self.stats.count_published(kind, n)
                    if len(acked) < len(batch):
                        with self.stats.lock:
                            self.stats.publish_failures += 1
                        stop.wait(self.config.publish_retry_s)
        finally:
            producer.flush(5)

    @staticmethod
    def _send(producer: Producer, batch: list[Any]) -> set[int]:
        """Produce `batch` and wait for the acknowledgements; the ids Kafka acknowledged."""
        acked: set[int] = set()

        def delivered(row_id: int) -> Callable[[KafkaError | None, Message], None]:
            def report(err: KafkaError | None, msg: Message) -> None:
                if err is None:
                    acked.add(row_id)
                else:
                    log.warning("record for %s not written (will retry): %s", msg.topic(), err)

            return report

        for row in batch:
            try:
                producer.produce(row.topic, value=row.value, key=row.key, on_delivery=delivered(row.id))
            except (BufferError, KafkaException) as exc:
                log.warning("record for %s refused by the producer (will retry): %s", row.topic, exc)
                break
        producer.flush(_SEND_TIMEOUT_S)
        return acked

    # ------------------------------------------------------------------ retention

    def _retention(self, stop: threading.Event) -> None:
        """Delete expired rows now and every `retention_interval_s`."""
        cfg = self.config
        while not stop.is_set():
            try:
                gone = self.store.expire(
                    self._clock(), cfg.retention_days * 86400, cfg.failing_retention_days * 86400
                )
                ended = self.web.sessions.expire()
            except STORE_DOWN as exc:  # the database is away: try at the next interval
                self.stats.store.failed("retention", exc, retried=False)
            except Exception:  # noqa: BLE001 - e.g. a label saved meanwhile on a row being deleted
                log.exception("retention failed")
            else:
                if ended:
                    log.info("retention: %d expired sessions deleted", ended)
                if gone:
                    log.info(
                        "retention: %d conversations older than %g days deleted", gone, cfg.retention_days
                    )
                    with self.stats.lock:
                        self.stats.expired += gone
            stop.wait(cfg.retention_interval_s)


def _store_offset(consumer: Consumer, message: Message) -> int:
    """Mark `message` done for the next commit; 1, or 0 when its partition was taken away meanwhile."""
    try:
        consumer.store_offsets(message)
    except KafkaException as exc:  # revoked: the new owner reads it again, the store ignores the repeat
        log.info(
            "offset of %s[%s]@%s not stored: %s", message.topic(), message.partition(), message.offset(), exc
        )
        return 0
    return 1


def _safe_url(store: Store) -> str:
    from sqlalchemy.engine import make_url

    return make_url(store.url).render_as_string(hide_password=True)
