"""Whether the exporter's numbers are whole: 0 while it replays the scores topic after a start or a rebalance.

After every assignment the exporter rebuilds its windows by replaying its partitions from the start of the
longest window; until each has been read to its end, every window holds only part of its scores (window counts
116 → 966 → 1000 in a restart that was measured) and an alert statistic computed from them is wrong.
`agentwatch_exporter_ready` says so (1 only once every assigned partition was read to its end), the quality
alert rules evaluate only where it is 1 (`and on (job, instance) agentwatch_exporter_ready == 1`), and
`/ready` answers 503 meanwhile (for readiness probes).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector


class Readiness(Collector):
    """The partitions still replaying, and the `agentwatch_exporter_*` readiness gauges."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._replaying: set[tuple[str, int]] = set()
        self._assigned = False
        self.replayed = threading.Event()  # set once every assigned partition was read to its end

    def assigned(self, partitions: Iterable[tuple[str, int]]) -> None:
        """A new assignment: every partition is replayed from the start (none assigned: ready at once)."""
        with self._lock:
            self._replaying = set(partitions)
            self._assigned = True
            if self._replaying:
                self.replayed.clear()
            else:
                self.replayed.set()

    def revoked(self) -> None:
        """The assignment is gone: not ready until the next one is replayed."""
        with self._lock:
            self._replaying = set()
            self._assigned = False
            self.replayed.clear()

    def reached_end(self, topic: str, partition: int) -> None:
        """A partition was read to its end (an EOF event)."""
        with self._lock:
            self._replaying.discard((topic, partition))
            if self._assigned and not self._replaying:
                self.replayed.set()

    @property
    def ready(self) -> bool:
        """Whether every assigned partition has been replayed."""
        return self.replayed.is_set()

    def collect(self) -> Iterator[Metric]:
        """The readiness gauges."""
        with self._lock:
            replaying = len(self._replaying)
        yield GaugeMetricFamily(
            "agentwatch_exporter_ready",
            "1 once every assigned partition of the scores topic was replayed to its end, else 0 (windows "
            "partial: quality alerts do not evaluate).",
            value=1.0 if self.ready else 0.0,
        )
        yield GaugeMetricFamily(
            "agentwatch_exporter_replaying_partitions",
            "Assigned partitions of the scores topic not yet replayed to their end.",
            value=replaying,
        )
