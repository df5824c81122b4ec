"""The collector service: span topics in, one `ConversationScore` per conversation out, at least once.

One thread, one consumer, one producer. Poll → decode → (re-key | assemble) → finished conversations →
reconstruct → score → produce. Every `commit_interval_s`, and before partitions are given away, the producer
is flushed and only then are offsets committed, each below the lowest offset still held by an open
conversation on its partition. A crash therefore replays what was not yet scored: nothing is lost, and
duplicates are scores written after the last commit (downstream de-duplicates by conversation id).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from agentwatch.collector.assembler import Assembler, FinishedConversation
from agentwatch.collector.deadletter import DeadLetterPublisher
from agentwatch.collector.decode import DecodeError, decode_message
from agentwatch.collector.metrics import PipelineStats
from agentwatch.collector.partitioner import CachedKeyPartitioner
from agentwatch.collector.reconstruct import build_conversation
from agentwatch.collector.rekey import CONTENT_TYPE_HEADER, Rekeyer, header, keyed_by_conversation
from agentwatch.collector.topics import ensure_topics, track_topics
from agentwatch.scorers import unscored
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.consumer.subscription_state import AsyncConsumerRebalanceListener
from kafka.structs import OffsetAndMetadata

from agentwatch.config import Settings
from agentwatch.schema import Conversation, ConversationScore

log = logging.getLogger(__name__)

Scorer = Callable[[Conversation], ConversationScore]

# per partition and fetch; kafka-python's default (1 MiB) is ~180 SDK messages of a conversation each
_PARTITION_FETCH_BYTES = 8 * 1024 * 1024


class ProduceError(RuntimeError):
    """A record could not be written; the service stops without committing so the input is replayed."""


def series_key(score: ConversationScore) -> bytes:
    """Kafka key of a score: `agent|version|task`, so one estimator instance owns each series."""
    return f"{score.agent}|{score.version}|{score.task}".encode()


def default_scorer(settings: Settings) -> Scorer:
    """The scorers' `ConversationScorer(settings).score`."""
    from agentwatch.scorers import ConversationScorer

    return ConversationScorer(settings).score


class _Tracked:
    """A producer facade that records asynchronous send failures."""

    def __init__(self, producer: KafkaProducer) -> None:
        self._producer = producer
        self.errors: list[BaseException] = []

    def send(self, topic: str, **kwargs: Any) -> Any:
        future = self._producer.send(topic, **kwargs)
        future.add_errback(self.errors.append)
        return future


class _Listener(AsyncConsumerRebalanceListener):
    def __init__(self, service: CollectorService) -> None:
        self._service = service

    async def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        await self._service._on_revoked(list(revoked))

    async def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        log.info("assigned %s", sorted(f"{tp.topic}[{tp.partition}]" for tp in assigned))


class CollectorService:
    """Consumes span topics in a consumer group and writes conversation scores (see module docstring)."""

    def __init__(self, settings: Settings, *, scorer: Scorer | Any | None = None) -> None:
        self.settings = settings
        self.config = settings.collector
        if scorer is None:
            scorer = default_scorer(settings)
        self._score: Scorer = scorer.score if hasattr(scorer, "score") else scorer
        self.stats = PipelineStats()
        self.assembler = Assembler(self.config)
        self._stop = threading.Event()
        self._vparts: dict[TopicPartition, int] = {}
        self._tps: dict[int, TopicPartition] = {}
        self._committed: dict[TopicPartition, int] = {}
        self._consumed: dict[TopicPartition, int] = {}
        self._consumer: KafkaConsumer | None = None
        self._producer: KafkaProducer | None = None
        self._out: _Tracked | None = None
        self._closing = False
        self.instance = f"{socket.gethostname()}:{os.getpid()}"
        self._score_headers = [
            ("content-type", b"application/json"),
            ("agentwatch-producer", self.instance.encode()),
        ]

    # ----------------------------------------------------------------------------------------- lifecycle

    def stop(self) -> None:
        """Ask `run` to shut down gracefully (safe from signal handlers and other threads)."""
        self._stop.set()

    def run(self, stop_event: threading.Event | None = None) -> None:
        """Consume until `stop_event` (or `stop()`) is set, then flush, commit and leave the group."""
        stop = stop_event or self._stop
        cfg, kafka = self.config, self.settings.kafka
        self._producer = KafkaProducer(
            bootstrap_servers=kafka.bootstrap_servers,
            client_id=f"{kafka.client_id}-collector",
            linger_ms=20,
            batch_size=1_000_000,
            max_request_size=16 * 1024 * 1024,
            partitioner=CachedKeyPartitioner(),  # same partitions as the default, without murmur2 per record
        )
        ensure_topics(
            kafka.bootstrap_servers,
            [cfg.rekey_topic, cfg.scores_topic, cfg.dead_letter_topic],
            partitions=cfg.topic_partitions,
            replication_factor=cfg.topic_replication_factor,
            client_id=kafka.client_id,
        )
        track_topics(self._producer, [cfg.rekey_topic, cfg.scores_topic, cfg.dead_letter_topic])
        self._out = _Tracked(self._producer)
        rekeyer = Rekeyer(self._out, cfg.rekey_topic)
        dead = DeadLetterPublisher(self._out, cfg.dead_letter_topic)
        topics = list(dict.fromkeys([*cfg.input_topics, cfg.rekey_topic]))
        self._consumer = KafkaConsumer(
            bootstrap_servers=kafka.bootstrap_servers,
            client_id=f"{kafka.client_id}-collector",
            group_id=cfg.group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=cfg.session_timeout_ms,
            heartbeat_interval_ms=cfg.heartbeat_interval_ms,
            max_poll_interval_ms=cfg.max_poll_interval_ms,
            max_poll_records=cfg.max_poll_records,
            max_partition_fetch_bytes=_PARTITION_FETCH_BYTES,
        )
        self._consumer.subscribe(topics=topics, listener=_Listener(self))
        log.info("collector consuming %s in group %s", topics, cfg.group_id)
        last_commit = time.monotonic()
        clean = False
        try:
            while not stop.is_set() and not self._stop.is_set():
                batches = self._consumer.poll(timeout_ms=200)
                now = time.monotonic()
                for tp, records in batches.items():
                    vp = self._vpart(tp)
                    for record in records:
                        self._handle(record, tp, vp, now, rekeyer, dead)
                for finished in self.assembler.poll(time.monotonic()):
                    self._emit(finished)
                self._refresh_stats()
                if time.monotonic() - last_commit >= cfg.commit_interval_s:
                    self._commit()
                    self._refresh_lag()
                    last_commit = time.monotonic()
            if cfg.drain_on_shutdown:
                for finished in self.assembler.drain():
                    self._emit(finished)
            self._commit()
            clean = True
        finally:
            self._close(clean)

    def _close(self, clean: bool) -> None:
        self._closing = True  # the revoke listener run by close() must not flush or commit again
        if self._consumer is not None:
            try:
                self._consumer.close(autocommit=False)  # leaves the group
            except Exception:
                log.exception("closing the consumer failed")
        if self._producer is not None:
            try:
                self._producer.close(timeout=10 if clean else 0)
            except Exception:
                log.exception("closing the producer failed")
        log.info("collector stopped (%s)", "clean" if clean else "after an error")

    # ----------------------------------------------------------------------------------------- records

    def _vpart(self, tp: TopicPartition) -> int:
        """The assembler's partition number of a topic-partition (stable for the life of the process)."""
        vp = self._vparts.get(tp)
        if vp is None:
            vp = self._vparts[tp] = len(self._vparts)
            self._tps[vp] = tp
        return vp

    def _handle(
        self,
        record: Any,
        tp: TopicPartition,
        vp: int,
        now: float,
        rekeyer: Rekeyer,
        dead: DeadLetterPublisher,
    ) -> None:
        """Decode one record and assemble, re-key or dead-letter it; never raises on bad input."""
        self.stats.messages_consumed += 1
        self._consumed[tp] = record.offset
        ct = header(record.headers, CONTENT_TYPE_HEADER)
        try:
            spans = decode_message(
                record.value or b"",
                ct.decode("ascii", "replace") if ct else None,
                max_attribute_bytes=self.config.max_attribute_bytes,
            )
        except DecodeError as exc:
            self._dead_letter(dead, record, getattr(exc, "reason", "invalid"), str(exc))
        except Exception as exc:
            log.exception("decoder failed on %s[%d]@%d", record.topic, record.partition, record.offset)
            self._dead_letter(dead, record, "decoder_error", f"{type(exc).__name__}: {exc}")
        else:
            self.stats.spans_consumed += len(spans)
            if record.topic == self.config.rekey_topic or keyed_by_conversation(record.headers):
                self.assembler.add_message(spans, vp, record.offset, now)
                return
            rekeyer.republish(spans)
            self.stats.spans_rekeyed += len(spans)
        self.assembler.message_done(vp, record.offset)

    def _dead_letter(self, dead: DeadLetterPublisher, record: Any, reason: str, detail: str) -> None:
        self.stats.reject(reason)
        try:
            dead.publish(record, reason, detail)
        except Exception as exc:  # noqa: BLE001 - e.g. a value larger than the producer accepts
            log.warning(
                "dead letter of %s[%d]@%d sent without its value: %s",
                record.topic,
                record.partition,
                record.offset,
                exc,
            )
            stub = _Stub(record.topic, record.partition, record.offset, record.key, None, record.headers)
            dead.publish(stub, reason, f"{detail} (value of {len(record.value or b'')} bytes not forwarded)")

    def _emit(self, finished: FinishedConversation) -> None:
        """Reconstruct, score and queue the score of one finished conversation."""
        try:
            conv = build_conversation(finished)
        except Exception as exc:
            log.exception("reconstruction of %s failed", finished.conversation_id)
            conv = Conversation(conversation_id=finished.conversation_id or "unknown", incomplete=True)
            score = unscored(conv, f"reconstruct_error: {type(exc).__name__}: {exc}")
        else:
            try:
                score = self._score(conv)
            except Exception as exc:
                log.exception("scoring of %s failed", conv.conversation_id)
                score = unscored(conv, f"scorer_error: {type(exc).__name__}: {exc}")
        assert self._out is not None
        self._out.send(
            self.config.scores_topic,
            value=score.model_dump_json().encode(),
            key=series_key(score),
            headers=self._score_headers,
        )
        self.stats.scores_produced += 1

    # ----------------------------------------------------------------------------------------- offsets

    def _flush(self) -> None:
        """Flush the producer; raise ProduceError if any record since the last flush failed."""
        assert self._producer is not None and self._out is not None
        self._producer.flush()
        if self._out.errors:  # sticky: nothing is committed after a lost record; the process must restart
            errors = self._out.errors
            raise ProduceError(f"{len(errors)} record(s) could not be written, first: {errors[0]!r}")

    def _safe_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        """Flush, then the offsets below which nothing is held by an open conversation (new ones only)."""
        self._flush()
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp in tps:
            vp = self._vparts.get(tp)
            offset = self.assembler.committable(vp) if vp is not None else None
            if offset is not None and offset != self._committed.get(tp):
                offsets[tp] = OffsetAndMetadata(offset, "", -1)
        return offsets

    def _committed_now(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        for tp, om in offsets.items():
            self._committed[tp] = om.offset
        with self.stats.lock:
            self.stats.last_commit_timestamp = time.time()

    def _commit(self) -> None:
        """Flush, then commit what no open conversation holds on the assigned partitions."""
        assert self._consumer is not None
        offsets = self._safe_offsets(self._consumer.assignment())
        if not offsets:
            return
        try:
            self._consumer.commit(offsets)
        except Exception as exc:  # noqa: BLE001 - e.g. a rebalance; the new owner replays
            log.warning("offset commit failed (the records will be replayed): %s", exc)
            return
        self._committed_now(offsets)

    async def _on_revoked(self, revoked: list[TopicPartition]) -> None:
        """Before partitions go: flush, commit what is safe, forget their open conversations.

        Runs on kafka-python's IO thread (an async listener), where the blocking `commit()` is refused; the
        asynchronous commit is awaited instead, and is sent before the JoinGroup that follows.
        """
        log.info("revoked %s", sorted(f"{tp.topic}[{tp.partition}]" for tp in revoked))
        if self._consumer is None or self._closing:
            return
        # a ProduceError propagates: poll() raises, nothing is committed
        offsets = self._safe_offsets(revoked)
        if offsets:
            try:
                await self._consumer.commit_async(offsets)
            except Exception as exc:  # noqa: BLE001 - the new owner replays from the last commit
                log.warning("offset commit on revoke failed (the records will be replayed): %s", exc)
            else:
                self._committed_now(offsets)
                log.info(
                    "committed %s before the rebalance",
                    {f"{t.topic}[{t.partition}]": o.offset for t, o in offsets.items()},
                )
        self.assembler.revoke([self._vparts[tp] for tp in revoked if tp in self._vparts])
        for tp in revoked:
            self._committed.pop(tp, None)
            self._consumed.pop(tp, None)
            with self.stats.lock:
                self.stats.lag.pop((tp.topic, tp.partition), None)

    # ----------------------------------------------------------------------------------------- stats

    def _refresh_lag(self) -> None:
        """Consumer lag per partition from the fetch high watermark (ListOffsets is wrong on Tansu)."""
        assert self._consumer is not None
        lag: dict[tuple[str, int], int] = {}
        for tp, last in list(self._consumed.items()):
            try:
                hw = self._consumer.highwater(tp)
            except Exception as exc:  # noqa: BLE001 - not assigned any more
                log.debug("no high watermark for %s: %s", tp, exc)
                continue
            if hw is not None:
                lag[(tp.topic, tp.partition)] = max(0, hw - last - 1)
        with self.stats.lock:
            self.stats.lag = lag

    def _refresh_stats(self) -> None:
        a = self.assembler.stats
        s = self.stats
        with s.lock:
            s.open_conversations = a.open_conversations
            s.late_spans = a.late_spans
            s.duplicate_spans = a.duplicate_spans
            s.dropped_spans = a.dropped_spans
            s.finished_by_reason = dict(a.finished_by_reason)


class _Stub:
    """A record stand-in for dead letters whose value cannot be forwarded."""

    __slots__ = ("headers", "key", "offset", "partition", "topic", "value")

    def __init__(self, topic: str, partition: int, offset: int, key: Any, value: Any, headers: Any) -> None:
        self.topic, self.partition, self.offset = topic, partition, offset
        self.key, self.value, self.headers = key, value, headers
