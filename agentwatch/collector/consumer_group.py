"""The collector as a consumer-group member: its consumer's configuration, offset commits, rebalances, lag.

Commits flush the producer first, then commit below every record still held: one an open conversation, the
trace join, a conversation waiting for its judge or a loop fragment waiting for its continuation needs. Before
partitions are revoked what is safe is committed and their held records forgotten; lost partitions are
forgotten without a commit. Also here: the consumer lag of what was read, and this instance's share of the
traffic on an assignment.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from agentwatch.collector.assembler import Assembler
from agentwatch.collector.judging import PendingVerdicts
from agentwatch.collector.loop_join import LoopJoin
from agentwatch.collector.metrics import PipelineStats
from agentwatch.collector.offsets import OffsetBook, Partition, lowest
from agentwatch.collector.trace_join import TraceJoin
from agentwatch.config import CollectorConfig
from agentwatch.kafka.producer import RecordProducer

log = logging.getLogger(__name__)

# per partition and fetch; ~1,400 SDK messages of a conversation each
_PARTITION_FETCH_BYTES = 8 * 1024 * 1024


def consumer_config(connection: dict[str, Any], cfg: CollectorConfig) -> dict[str, Any]:
    """The collector's consumer settings: `connection` (servers, TLS, SASL) and the group's from `cfg`."""
    return {
        **connection,
        "group.id": cfg.group_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": cfg.session_timeout_ms,
        "heartbeat.interval.ms": cfg.heartbeat_interval_ms,
        "max.poll.interval.ms": max(cfg.max_poll_interval_ms, cfg.session_timeout_ms),
        "max.partition.fetch.bytes": _PARTITION_FETCH_BYTES,
        "queued.max.messages.kbytes": cfg.fetch_queue_kbytes,
        "topic.metadata.refresh.interval.ms": 10_000,  # input topics created later are found quickly
    }


class Committer:
    """Commits, on the consumer's thread, the offsets below which the collector holds nothing, and forgets
    the partitions that go."""

    def __init__(
        self,
        consumer: Consumer,
        producer: RecordProducer,
        offsets: OffsetBook,
        assembler: Assembler,
        join: TraceJoin,
        waiting: tuple[PendingVerdicts, LoopJoin[Any]],
        stats: PipelineStats,
    ) -> None:
        self._consumer = consumer
        self._out = producer
        self.offsets = offsets
        self.assembler = assembler
        self.join = join
        self.pending, self.loops = waiting  # conversations waiting for the judge, loop fragments waiting
        self.stats = stats
        self.closing = False  # set while the service closes: the revoke callback run by close() does nothing
        # Commits the broker refused, tried again with the next commit: the assembler hands each offset out
        # once, so without them a partition that moves no further would keep its old commit for good.
        self._refused: dict[Partition, TopicPartition] = {}

    def _safe_offsets(self, tps: Iterable[Partition]) -> list[TopicPartition]:
        """Flush, then the offsets below which nothing is held by an open conversation (new ones only)."""
        self._out.flush()  # raises ProduceError if a record was lost: then nothing is committed
        return self.offsets.to_commit(tps, self._lowest_held)

    def _lowest_held(self, vp: int) -> int | None:
        """The offset to commit on a partition: below every record still held (open, joining, judged, parked)."""
        waiting = lowest(self.pending.low_offset(vp), self.loops.low_offset(vp))
        return self.assembler.committable(vp, lowest(waiting, self.join.low_offset(vp)))

    def commit_offsets(self, tps: Iterable[Partition]) -> list[TopicPartition]:
        """Flush, then commit (synchronously) what no open conversation holds on `tps`; the offsets committed."""
        tps = list(tps)
        fresh = {(tp.topic, tp.partition): tp for tp in self._safe_offsets(tps)}
        for tp in tps:
            refused = self._refused.pop(tp, None)
            if refused is not None and tp not in fresh:
                fresh[tp] = refused
        offsets = list(fresh.values())
        if not offsets:
            return []
        try:
            self._consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:  # e.g. a rebalance or a broker away: tried again with the next commit
            log.warning("offset commit failed (tried again with the next commit): %s", exc)
            with self.stats.lock:
                self.stats.commit_failures += 1
            self._refused.update(fresh)
            return []
        self.offsets.committed(offsets)
        with self.stats.lock:
            self.stats.last_commit_timestamp = time.time()
        return offsets

    def commit(self) -> None:
        """Flush, then commit what no open conversation holds on the assigned partitions."""
        self.commit_offsets((tp.topic, tp.partition) for tp in self._consumer.assignment())

    def on_revoked(self, consumer: Consumer, revoked: list[TopicPartition]) -> None:
        """Before partitions go (called inside `consume`, on the service's thread): flush, commit what is safe,
        forget their open conversations. A ProduceError propagates out of `consume`: nothing is committed."""
        gone = [(tp.topic, tp.partition) for tp in revoked]
        log.info("revoked %s", sorted(f"{t}[{p}]" for t, p in gone))
        if self.closing:
            return
        committed = self.commit_offsets(gone)
        if committed:
            log.info(
                "committed %s before the rebalance",
                {f"{t.topic}[{t.partition}]": t.offset for t in committed},
            )
        self.forget(gone)

    def on_lost(self, consumer: Consumer, lost: list[TopicPartition]) -> None:
        """Partitions taken away without a revoke (session lost): forget them, commit nothing."""
        gone = [(tp.topic, tp.partition) for tp in lost]
        log.warning(
            "lost %s; their records will be replayed by the new owner", sorted(f"{t}[{p}]" for t, p in gone)
        )
        self.forget(gone)

    def forget(self, gone: list[Partition]) -> None:
        """Drop what is held on the partitions `gone` (their new owner replays it) and their lag."""
        vps = self.offsets.forget(gone)
        for tp in gone:
            self._refused.pop(tp, None)
        self.assembler.revoke(vps)
        self.join.revoke(vps)
        self.pending.forget(vps)
        self.loops.forget(vps)
        with self.stats.lock:
            for tp in gone:
                self.stats.lag.pop(tp, None)

    def refresh_lag(self) -> None:
        """Consumer lag per partition from the high watermark of the last fetch (ListOffsets is wrong on Tansu)."""
        lag = self.offsets.lag(self._high_watermark)
        with self.stats.lock:
            self.stats.lag = lag

    def _high_watermark(self, tp: Partition) -> int | None:
        """The high watermark of the last fetch of `tp` (cached by the client), or None when unknown."""
        try:
            _, high = self._consumer.get_watermark_offsets(TopicPartition(tp[0], tp[1]), cached=True)
        except KafkaException as exc:
            log.debug("no high watermark for %s[%d]: %s", tp[0], tp[1], exc)
            return None
        return int(high)


def traffic_share(consumer: Consumer, assigned: list[TopicPartition]) -> float:
    """This instance's share of the conversations: its partitions over those of the topics it reads
    (conversations are keyed by id, so they spread evenly); 1 when the metadata cannot be read."""
    topics = {tp.topic for tp in assigned}
    try:
        metadata = consumer.list_topics(timeout=5)
        total = sum(len(metadata.topics[t].partitions) for t in topics if t in metadata.topics)
    except Exception:  # noqa: BLE001 - a guess of the share must never stop consuming
        log.warning(
            "could not read the partitions of %s: the adaptive judge rate assumes all traffic", topics
        )
        return 1.0
    share = min(1.0, len(assigned) / total) if total else 1.0
    log.info(
        "this collector reads %d of %d partitions: share %.3f of each series' traffic",
        len(assigned),
        total,
        share,
    )
    return share
