"""The collector's commits: a commit the broker refused is made again with the next one, though nothing moved."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from agentwatch.collector.assembler import Assembler
from agentwatch.collector.consumer_group import Committer
from agentwatch.collector.judging import PendingVerdicts
from agentwatch.collector.loop_join import LoopJoin
from agentwatch.collector.metrics import PipelineStats
from agentwatch.collector.offsets import OffsetBook
from agentwatch.collector.trace_join import TraceJoin
from agentwatch.config import CollectorConfig

SPANS = ("spans", 0)


class _Consumer:
    """A consumer that refuses its first `refuse` commits and records every commit asked of it."""

    def __init__(self, refuse: int) -> None:
        self.refuse = refuse
        self.asked: list[list[tuple[str, int, int]]] = []

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> None:
        self.asked.append([(tp.topic, tp.partition, tp.offset) for tp in offsets])
        if self.refuse:
            self.refuse -= 1
            raise KafkaException(KafkaError(KafkaError.REQUEST_TIMED_OUT))

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(*SPANS)]


class _Producer:
    def flush(self) -> None:
        """Nothing is ever waiting."""


def _committer(consumer: _Consumer) -> Committer:
    cfg = CollectorConfig()
    assembler = Assembler(cfg)
    join = TraceJoin(cfg.trace_join_timeout_s, cfg.max_held_spans, cfg.trace_memory, cfg.max_held_bytes)
    loops: LoopJoin[object] = LoopJoin(cfg.loop_join_timeout_s, cfg.max_parked_bytes)
    offsets = OffsetBook()
    committer = Committer(
        consumer,  # type: ignore[arg-type]
        _Producer(),  # type: ignore[arg-type]
        offsets,
        assembler,
        join,
        (PendingVerdicts(), loops),
        PipelineStats(),
    )
    for offset in range(3):  # three messages read and done: offset 3 is safe to commit
        offsets.consumed(SPANS, offset)
        assembler.add_message([], offsets.vpart(SPANS), offset, 0.0)
    return committer


def test_a_refused_commit_is_made_again_with_the_next_one_though_nothing_moved() -> None:
    consumer = _Consumer(refuse=2)
    committer = _committer(consumer)
    committer.commit()
    committer.commit()
    assert committer.stats.commit_failures == 2
    committer.commit()  # nothing read since: the refused offset is asked again, and taken
    committer.commit()  # taken: nothing more to ask
    assert consumer.asked == [[("spans", 0, 3)]] * 3
    assert committer.stats.last_commit_timestamp is not None


def test_a_refused_commit_of_a_partition_gone_is_not_made_again() -> None:
    consumer = _Consumer(refuse=1)
    committer = _committer(consumer)
    committer.commit()
    committer.forget([SPANS])
    committer.commit_offsets([SPANS])  # still assigned on the consumer's side, but forgotten: nothing held
    assert consumer.asked == [[("spans", 0, 3)]]
