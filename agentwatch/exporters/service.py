"""The exporter service: consume `agentwatch.scores` in a consumer group, fold into the estimator, serve /metrics.

Restart safety: the estimator's state is a pure fold over the scores of the partitions this instance owns. On
every assignment (the group's eager protocol hands out the whole assignment each time) the service starts a
fresh estimator and replays each assigned partition from the first record whose timestamp is at or after
`now − longest window` (`consumer.offsets_for_times`). Tansu 0.6 answers ListOffsets-by-time with the
partition's first offset whatever the time asked, so on Tansu the replay starts at the beginning; it stays
correct because the estimator drops too-old scores. No offsets are committed: the group only decides which
instance owns which partition. Until every assigned partition has been replayed to its end, the windows are
partial: `agentwatch_exporter_ready` is 0 and `/ready` answers 503 (`readiness`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError, KafkaException, TopicPartition
from prometheus_client import CollectorRegistry
from pydantic import ValidationError

from agentwatch.config import Settings
from agentwatch.exporters.estimator import Estimator
from agentwatch.exporters.exposition import Exposition
from agentwatch.exporters.readiness import Readiness
from agentwatch.kafka.consumer_events import ConsumerEvents
from agentwatch.kafka.security import KafkaSecurity, service_settings
from agentwatch.kafka.topics import ensure_topics
from agentwatch.metrics_http import MetricsServer
from agentwatch.wire.json_text import model_from_json
from agentwatch.wire.schema import ConversationScore

log = logging.getLogger(__name__)


def replay_start(found: TopicPartition) -> int:
    """Where to replay a partition from, given what `offsets_for_times` answered for it."""
    if found.error is not None:
        return OFFSET_BEGINNING
    if found.offset == OFFSET_END:  # no score is that recent
        return OFFSET_END
    return found.offset if found.offset >= 0 else OFFSET_BEGINNING


class ExporterService:
    """Consumes scores into an `Estimator` and serves its metrics; `run(stop_event)` until the event is set."""

    def __init__(
        self,
        settings: Settings,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.registry = registry if registry is not None else CollectorRegistry()
        self._clock = clock
        self.estimator = Estimator(settings, clock)
        self.readiness = Readiness()
        self.registry.register(self.readiness)
        self.consumer_events = ConsumerEvents("agentwatch_exporter_consumer_errors", "scores topic")
        self.registry.register(self.consumer_events)
        # /metrics: the estimator, then whatever else is registered on `registry`
        self.exposition = Exposition(lambda: self.estimator, self.registry)
        self.port: int | None = None
        self._http: MetricsServer | None = None
        # set once every assigned partition is read up to its high watermark
        self.replayed: threading.Event = self.readiness.replayed

    # ------------------------------------------------------------------ HTTP

    def start_http(self, port: int | None = None, host: str | None = None) -> int:
        """Serve /metrics (port 0 picks a free one); return the port."""
        cfg = self.settings.exporter
        port = cfg.metrics_port if port is None else port
        host = host or cfg.metrics_host
        self._http = MetricsServer(
            self.exposition.render, port, host, "agentwatch exporter", ready=lambda: self.readiness.ready
        )
        self.port = self._http.port
        return self.port

    def stop_http(self) -> None:
        """Stop serving /metrics."""
        if self._http is not None:
            self._http.stop()
            self._http = None

    # ------------------------------------------------------------------ consuming

    def _new_consumer(self) -> Consumer:
        """The scores consumer, once Kafka has accepted the connection settings (else one error naming them) and
        the scores topic exists: a consumer subscribed to a topic not there yet finds it only at the next metadata
        refresh, minutes later, and in one process the collector's thread may not have created it yet."""
        cfg, kafka, collector = self.settings.exporter, self.settings.kafka, self.settings.collector
        ensure_topics(
            kafka.bootstrap_servers,
            [cfg.scores_topic],
            partitions=collector.topic_partitions,
            replication_factor=collector.topic_replication_factor,
            client_id=kafka.client_id,
            security=KafkaSecurity.from_config(kafka),
        )
        return Consumer(
            {
                **service_settings(kafka, "exporter"),
                "group.id": cfg.group_id,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "enable.partition.eof": True,  # says when the replay of a partition has reached its end
                "session.timeout.ms": cfg.session_timeout_ms,
                "heartbeat.interval.ms": cfg.heartbeat_interval_ms,
                "error_cb": self.consumer_events.record,  # a broker down: counted, not only logged
            },
            logger=log,
        )

    def _on_assigned(self, consumer: Consumer, assigned: list[TopicPartition]) -> None:
        """Fresh estimator; start every assigned partition at the beginning of the longest window."""
        estimator = Estimator(self.settings, self._clock)
        # Not ready first, then the empty estimator: a scrape reads the estimator before the readiness gauge, so
        # none reads the new, partial windows beside a ready of 1 (the quality alerts evaluate only at 1).
        self.readiness.assigned((tp.topic, tp.partition) for tp in assigned)
        self.estimator = estimator
        consumer.assign(self._rewind(consumer, assigned))

    def _rewind(self, consumer: Consumer, assigned: list[TopicPartition]) -> list[TopicPartition]:
        """The assigned partitions with the offset of their first score inside the longest window."""
        since_ms = int((self._clock() - self.estimator.longest_window_s) * 1000)
        log.info("assigned %d partition(s); replaying scores since %.0f", len(assigned), since_ms / 1000)
        if not assigned:
            return []
        try:
            found = consumer.offsets_for_times(
                [TopicPartition(tp.topic, tp.partition, since_ms) for tp in assigned], timeout=10
            )
        except KafkaException as exc:  # broker without ListOffsets by time: replay from the beginning
            log.warning("offsets_for_times failed (%s); replaying from the beginning", exc)
            return [TopicPartition(tp.topic, tp.partition, OFFSET_BEGINNING) for tp in assigned]
        return [TopicPartition(tp.topic, tp.partition, replay_start(tp)) for tp in found]

    def _on_revoked(self, consumer: Consumer, revoked: list[TopicPartition]) -> None:
        log.info("partitions revoked: %s", sorted((tp.topic, tp.partition) for tp in revoked))
        self.readiness.revoked()
        consumer.unassign()

    def feed(self, value: bytes | None, where: str = "") -> bool:
        """Decode one record and add it to the estimator; bad records are counted as invalid, never raised."""
        if value is None:
            self.estimator.reject_invalid()
            log.warning("empty score record %s", where)
            return False
        try:
            score = model_from_json(ConversationScore, value)
        except (ValidationError, ValueError) as exc:
            self.estimator.reject_invalid()
            first = exc.errors()[0] if isinstance(exc, ValidationError) else {"msg": str(exc), "loc": ()}
            key = ".".join(str(p) for p in first.get("loc", ())) or "<record>"
            log.warning("invalid score record %s: %s: %s", where, key, first.get("msg"))
            return False
        return self.estimator.add(score)

    def _check_replayed(self, topic: str, partition: int) -> None:
        """Note that a partition was read to its end; `replayed` once all assigned partitions were."""
        was = self.readiness.ready
        self.readiness.reached_end(topic, partition)
        if self.readiness.ready and not was:
            log.info("replay done: every assigned partition read to its end; estimates complete")

    def run(self, stop_event: threading.Event) -> None:
        """Consume until `stop_event` is set (serves /metrics meanwhile if `start_http` was called)."""
        cfg = self.settings.exporter
        consumer = self._new_consumer()
        consumer.subscribe(
            [cfg.scores_topic],
            on_assign=self._on_assigned,
            on_revoke=self._on_revoked,
            on_lost=self._on_revoked,
        )
        log.info("consuming %s as group %s", cfg.scores_topic, cfg.group_id)
        timeout_s = cfg.poll_timeout_ms / 1000
        try:
            while not stop_event.is_set():
                for message in consumer.consume(cfg.max_poll_records, timeout_s):
                    error = message.error()
                    if error is None:
                        self.feed(
                            message.value(), f"at {message.topic()}[{message.partition()}]@{message.offset()}"
                        )
                    elif error.code() == KafkaError._PARTITION_EOF:  # an EOF event names its partition
                        topic, partition = message.topic(), message.partition()
                        if topic is not None and partition is not None:
                            self._check_replayed(topic, partition)
                    else:
                        self.consumer_events.record(error, message.topic())
        finally:
            self.readiness.revoked()
            consumer.close()
            log.info("exporter consumer closed")
