"""The cached key partitioner picks exactly the partitions of kafka-python's default partitioner."""

from __future__ import annotations

from agentwatch.collector.partitioner import CachedKeyPartitioner
from kafka.partitioner.default import DefaultPartitioner


class _Cluster:
    """The two ClusterMetadata calls a partitioner makes."""

    def __init__(self, partitions: int) -> None:
        self._partitions = set(range(partitions))

    def topics(self) -> set[str]:
        return {"scores"}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return self._partitions

    def available_partitions_for_topic(self, topic: str) -> set[int]:
        return self._partitions


def test_same_partitions_as_the_default_partitioner() -> None:
    cached, default = CachedKeyPartitioner(), DefaultPartitioner()
    keys = [f"agent-{i % 7}|v{i % 3}|task-{i}".encode() for i in range(5000)] + [b"", "ü|é|ß".encode()]
    for partitions in (1, 4, 12):
        cluster = _Cluster(partitions)
        for key in keys * 2:  # the second pass is served from the cache (emptied when full)
            args = ("scores", key, key, b"v", b"v", cluster)
            assert cached.partition(*args) == default.partition(*args)


def test_unkeyed_records_go_to_an_available_partition() -> None:
    assert CachedKeyPartitioner().partition("scores", None, None, b"v", b"v", _Cluster(4)) in range(4)
