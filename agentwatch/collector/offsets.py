"""Offsets of the partitions a collector reads: what was consumed, what was committed, what is safe to commit.

A record's offset may be committed only once nothing read at or below it is still needed: no open
conversation, span held for the trace join or conversation waiting for its judge holds it. The service says,
per partition, the lowest offset still held (`low`); this book turns that into the commits to make, never
repeating one already made, and forgets a partition when it goes.

Each topic-partition also gets a small number of its own for the assembler (its "vpart"), stable for the life of
the process, so that per-partition state elsewhere is indexed by an integer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from confluent_kafka import TopicPartition

Partition = tuple[str, int]


class OffsetBook:
    """Consumed and committed offsets per topic-partition, and the assembler's number of each."""

    __slots__ = ("_committed", "_consumed", "_vparts")

    def __init__(self) -> None:
        self._vparts: dict[Partition, int] = {}
        self._committed: dict[Partition, int] = {}
        self._consumed: dict[Partition, int] = {}

    def vpart(self, tp: Partition) -> int:
        """The assembler's number of a topic-partition (given on first sight, kept for the process's life)."""
        vp = self._vparts.get(tp)
        if vp is None:
            vp = self._vparts[tp] = len(self._vparts)
        return vp

    def consumed(self, tp: Partition, offset: int) -> None:
        """Record that the record at `offset` of `tp` was read."""
        self._consumed[tp] = offset

    def to_commit(self, tps: Iterable[Partition], low: Callable[[int], int | None]) -> list[TopicPartition]:
        """The commits to make on `tps`: for each, the offset `low(vpart)` says is safe, when it is new."""
        offsets: list[TopicPartition] = []
        for tp in tps:
            vp = self._vparts.get(tp)
            offset = low(vp) if vp is not None else None
            if offset is not None and offset != self._committed.get(tp):
                offsets.append(TopicPartition(tp[0], tp[1], offset))
        return offsets

    def committed(self, offsets: Iterable[TopicPartition]) -> None:
        """Record commits the broker accepted."""
        for tp in offsets:
            self._committed[(tp.topic, tp.partition)] = tp.offset

    def forget(self, gone: Iterable[Partition]) -> list[int]:
        """Forget partitions that went to another consumer; the assembler's numbers they had."""
        vps = []
        for tp in gone:
            if tp in self._vparts:
                vps.append(self._vparts[tp])
            self._committed.pop(tp, None)
            self._consumed.pop(tp, None)
        return vps

    def lag(self, high_watermark: Callable[[Partition], int | None]) -> dict[Partition, int]:
        """Records behind the high watermark per partition read (partitions without a watermark left out)."""
        lag: dict[Partition, int] = {}
        for tp, last in list(self._consumed.items()):
            high = high_watermark(tp)
            if high is not None and high >= 0:
                lag[tp] = max(0, high - last - 1)
        return lag


def lowest(a: int | None, b: int | None) -> int | None:
    """The lower of two offsets, either of which may be unknown (None)."""
    if a is None:
        return b
    return a if b is None else min(a, b)
