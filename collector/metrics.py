"""Pipeline-health metrics of the collector, yielded fresh on every scrape by a prometheus-client Collector."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry


@dataclass(slots=True)
class PipelineStats:
    """Counters and gauges the consumer loop updates; read by `PipelineMetrics` on each scrape."""

    messages_consumed: int = 0
    spans_consumed: int = 0
    rejected_by_reason: dict[str, int] = field(default_factory=dict)
    open_conversations: int = 0
    late_spans: int = 0
    duplicate_spans: int = 0
    dropped_spans: int = 0
    finished_by_reason: dict[str, int] = field(default_factory=dict)
    lag: dict[tuple[str, int], int] = field(default_factory=dict)
    scores_produced: int = 0
    spans_rekeyed: int = 0
    last_commit_timestamp: float | None = None
    late_labels: dict[str, int] = field(default_factory=dict)  # result -> count
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count_label(self, result: str) -> None:
        """Count one late label by what became of it (revised, unchanged, or a dead-letter reason)."""
        with self.lock:
            self.late_labels[result] = self.late_labels.get(result, 0) + 1

    def reject(self, reason: str) -> None:
        """Count one message rejected (dead-lettered) for `reason`."""
        with self.lock:
            self.rejected_by_reason[reason] = self.rejected_by_reason.get(reason, 0) + 1


class PipelineMetrics(Collector):
    """Yields the `agentwatch_*` pipeline-health families from a `PipelineStats`."""

    def __init__(self, stats: PipelineStats) -> None:
        self._stats = stats

    def collect(self) -> Iterator[Metric]:
        """Fresh metric families built from the current stats."""
        s = self._stats
        with s.lock:
            rejected = dict(s.rejected_by_reason)
            finished = dict(s.finished_by_reason)
            lag = dict(s.lag)
            labels = dict(s.late_labels)
        yield _counter("agentwatch_spans_consumed", "Spans decoded from the input topics.", s.spans_consumed)
        fam = CounterMetricFamily(
            "agentwatch_messages_rejected",
            "Messages sent to the dead-letter topic, by reason.",
            labels=["reason"],
        )
        for reason, n in sorted(rejected.items()):
            fam.add_metric([reason], n)
        yield fam
        yield GaugeMetricFamily(
            "agentwatch_open_conversations", "Conversations being assembled.", value=s.open_conversations
        )
        yield _counter(
            "agentwatch_late_spans", "Spans that arrived after their conversation finished.", s.late_spans
        )
        yield _counter(
            "agentwatch_duplicate_spans", "Spans seen twice (same span id), ignored.", s.duplicate_spans
        )
        yield _counter(
            "agentwatch_dropped_spans", "Spans dropped by the per-conversation cap.", s.dropped_spans
        )
        fam = CounterMetricFamily(
            "agentwatch_conversations_finished",
            "Conversations finished, by reason (end, idle, cap, shutdown).",
            labels=["reason"],
        )
        for reason, n in sorted(finished.items()):
            fam.add_metric([reason], n)
        yield fam
        gauge = GaugeMetricFamily(
            "agentwatch_consumer_lag",
            "Fetch high watermark minus the next offset to consume.",
            labels=["topic", "partition"],
        )
        for (topic, partition), n in sorted(lag.items()):
            gauge.add_metric([topic, str(partition)], n)
        yield gauge
        yield _counter("agentwatch_scores_produced", "Conversation scores written.", s.scores_produced)
        yield _counter("agentwatch_spans_rekeyed", "Spans re-published by conversation id.", s.spans_rekeyed)
        fam = CounterMetricFamily(
            "agentwatch_late_labels",
            "Labels that arrived after their conversation was scored, by result (revised, unchanged, "
            "label_unknown_conversation, label_ambiguous_conversation).",
            labels=["result"],
        )
        for result, n in sorted(labels.items()):
            fam.add_metric([result], n)
        yield fam
        if s.last_commit_timestamp is not None:
            yield GaugeMetricFamily(
                "agentwatch_last_commit_timestamp_seconds",
                "Unix time of the last successful offset commit.",
                value=s.last_commit_timestamp,
            )


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=value)


def register(stats: PipelineStats, registry: CollectorRegistry) -> PipelineMetrics:
    """Register the pipeline metrics of `stats` on `registry` and return the collector."""
    collector = PipelineMetrics(stats)
    registry.register(collector)
    return collector
