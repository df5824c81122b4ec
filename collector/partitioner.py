"""The producer's key partitioner with the key hash cached: kafka-python's murmur2 is pure Python (~10 µs a key).

Scores are keyed by `agent|version|task`, a handful of distinct keys, so the hash of each is computed once.
Partitions are exactly those of kafka-python's `DefaultPartitioner` (the Java client's murmur2 mapping).
"""

from __future__ import annotations

from typing import Any

from kafka.partitioner.default import DefaultPartitioner, murmur2

_MAX_CACHED = 4096  # keys; the cache is emptied when full (re-keyed conversation ids are mostly unique)


class CachedKeyPartitioner(DefaultPartitioner):
    """`DefaultPartitioner` with murmur2 of each serialized key remembered."""

    def __init__(self) -> None:
        self._hashes: dict[bytes, int] = {}

    def partition(
        self, topic: str, key: Any, serialized_key: bytes | None, value: Any, serialized_value: Any, cluster: Any
    ) -> int:
        """The partition for one record (random among available ones when it has no key)."""
        if serialized_key is None:
            return super().partition(topic, key, serialized_key, value, serialized_value, cluster)
        if topic not in cluster.topics():
            raise ValueError(f"Topic {topic} not found in ClusterMetadata")
        hashed = self._hashes.get(serialized_key)
        if hashed is None:
            if len(self._hashes) >= _MAX_CACHED:
                self._hashes.clear()
            hashed = self._hashes[serialized_key] = murmur2(serialized_key) & 0x7FFFFFFF
        all_partitions = sorted(cluster.partitions_for_topic(topic))
        return all_partitions[hashed % len(all_partitions)]
