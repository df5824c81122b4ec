"""The exporter service: consume `agentwatch.scores` in a consumer group, fold into the estimator, serve /metrics.

Restart safety: the estimator's state is a pure fold over the scores of the partitions this instance owns. On
every assignment the service starts a fresh estimator and replays each assigned partition from the first
record whose timestamp is at or after `now − longest window` (`consumer.offsets_for_times`). Tansu 0.6 answers
ListOffsets-by-time with the partition's first offset whatever the time asked, so on Tansu the replay starts at
the beginning; it stays correct because the estimator drops too-old scores. No offsets are committed: the
group only decides which instance owns which partition.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from agentwatch.exporters.estimator import Estimator
from agentwatch.exporters.exposition import Exposition
from kafka import ConsumerRebalanceListener
from prometheus_client import CollectorRegistry
from pydantic import ValidationError

from agentwatch.config import Settings
from agentwatch.kafka_security import KafkaSecurity, probe_kafka_python
from agentwatch.metrics_http import MetricsServer
from agentwatch.schema import ConversationScore

log = logging.getLogger(__name__)


class _Rebalance(ConsumerRebalanceListener):
    """Consumer rebalance listener: rebuild the estimator and rewind the assigned partitions."""

    def __init__(self, service: ExporterService) -> None:
        self._service = service

    def on_partitions_revoked(self, revoked: Any) -> None:
        log.info("partitions revoked: %s", sorted((tp.topic, tp.partition) for tp in revoked))

    def on_partitions_assigned(self, assigned: Any) -> None:
        self._service._on_assigned(list(assigned))


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
        # /metrics: the estimator, then whatever else is registered on `registry`
        self.exposition = Exposition(lambda: self.estimator, self.registry)
        self.port: int | None = None
        self._http: MetricsServer | None = None
        self._consumer: Any = None
        self._assigned: list[Any] = []
        self._pending: list[Any] = []
        self.replayed = threading.Event()  # set once every assigned partition is read up to its high watermark

    # ------------------------------------------------------------------ HTTP

    def start_http(self, port: int | None = None, host: str | None = None) -> int:
        """Serve /metrics (port 0 picks a free one); return the port."""
        cfg = self.settings.exporter
        port = cfg.metrics_port if port is None else port
        host = host or cfg.metrics_host
        self._http = MetricsServer(self.exposition.render, port, host, "agentwatch exporter")
        self.port = self._http.port
        return self.port

    def stop_http(self) -> None:
        """Stop serving /metrics."""
        if self._http is not None:
            self._http.stop()
            self._http = None

    # ------------------------------------------------------------------ consuming

    def _new_consumer(self) -> Any:
        from kafka import KafkaConsumer

        cfg = self.settings.exporter
        probe_kafka_python(self.settings.kafka.bootstrap_servers, security := KafkaSecurity.from_config(self.settings.kafka))
        return KafkaConsumer(
            **security.kafka_python(),
            bootstrap_servers=self.settings.kafka.bootstrap_servers,
            client_id=f"{self.settings.kafka.client_id}-exporter",
            group_id=cfg.group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=cfg.session_timeout_ms,
            heartbeat_interval_ms=cfg.heartbeat_interval_ms,
            max_poll_records=cfg.max_poll_records,
        )

    def _on_assigned(self, assigned: list[Any]) -> None:
        """Fresh estimator; pause the assigned partitions until `_rewind` runs (listeners must not block)."""
        estimator = Estimator(self.settings, self._clock)
        self.estimator = estimator
        self._assigned = assigned
        self.replayed.clear()
        if assigned:
            self._consumer.pause(*assigned)
            self._pending = assigned

    def _rewind(self, consumer: Any) -> None:
        """Seek every newly assigned partition to the start of the longest window, then resume it."""
        from kafka.errors import KafkaError

        assigned, self._pending = self._pending, []
        since_ms = int((self._clock() - self.estimator.longest_window_s) * 1000)
        try:
            found = consumer.offsets_for_times({tp: since_ms for tp in assigned})
        except KafkaError as exc:  # broker without ListOffsets by time: replay from the beginning
            log.warning("offsets_for_times failed (%s); replaying from the beginning", exc)
            found = {}
        for tp in assigned:
            hit = found.get(tp)
            if hit is None and tp in found:
                consumer.seek_to_end(tp)
            elif hit is None:
                consumer.seek_to_beginning(tp)
            else:
                consumer.seek(tp, hit.offset)
        consumer.resume(*assigned)
        log.info("assigned %d partition(s); replaying scores since %.0f", len(assigned), since_ms / 1000)

    def feed(self, value: bytes | None, where: str = "") -> bool:
        """Decode one record and add it to the estimator; bad records are counted as invalid, never raised."""
        if value is None:
            self.estimator.reject_invalid()
            log.warning("empty score record %s", where)
            return False
        try:
            score = ConversationScore.model_validate_json(value)
        except (ValidationError, ValueError) as exc:
            self.estimator.reject_invalid()
            first = exc.errors()[0] if isinstance(exc, ValidationError) else {"msg": str(exc), "loc": ()}
            key = ".".join(str(p) for p in first.get("loc", ())) or "<record>"
            log.warning("invalid score record %s: %s: %s", where, key, first.get("msg"))
            return False
        return self.estimator.add(score)

    def _check_replayed(self, consumer: Any) -> None:
        for tp in self._assigned:
            hw = consumer.highwater(tp)
            if hw is None or consumer.position(tp) < hw:
                return
        if self._assigned:
            self.replayed.set()

    def run(self, stop_event: threading.Event) -> None:
        """Consume until `stop_event` is set (serves /metrics meanwhile if `start_http` was called)."""
        cfg = self.settings.exporter
        self._consumer = consumer = self._new_consumer()
        consumer.subscribe([cfg.scores_topic], listener=_Rebalance(self))
        log.info("consuming %s as group %s", cfg.scores_topic, cfg.group_id)
        try:
            while not stop_event.is_set():
                batches = consumer.poll(timeout_ms=cfg.poll_timeout_ms)
                if self._pending:
                    self._rewind(consumer)
                for tp, records in batches.items():
                    for r in records:
                        self.feed(r.value, f"at {tp.topic}[{tp.partition}]@{r.offset}")
                if not self.replayed.is_set() and not self._pending:
                    self._check_replayed(consumer)
        finally:
            self._consumer = None
            self._assigned = []
            consumer.close(autocommit=False)
            log.info("exporter consumer closed")
