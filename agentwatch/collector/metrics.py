"""Pipeline-health metrics of the collector, built fresh on every scrape, and its /metrics server."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from agentwatch.collector.judge_metrics import JudgeMetrics
from agentwatch.metrics_http import MetricsServer, render_families

if TYPE_CHECKING:
    from agentwatch.collector.assembler import Assembler
    from agentwatch.collector.loop_join import LoopJoinStats
    from agentwatch.collector.review_feed import ReviewFeed
    from agentwatch.collector.trace_join import TraceJoinStats


@dataclass(slots=True)
class PipelineStats:
    """Counters and gauges the consumer loop updates; read by `PipelineMetrics` on each scrape."""

    messages_consumed: int = 0
    spans_consumed: int = 0
    log_records_consumed: int = 0  # OTLP log records read from the log topics
    log_records_skipped: int = 0  # of them, no GenAI message event of a span
    orphan_fragments: int = 0  # logged messages whose span was not in their conversation
    setup_only: int = 0  # finished "conversations" that only created agents or embedded: left out
    rejected_by_reason: dict[str, int] = field(default_factory=dict)
    open_conversations: int = 0
    open_bytes: int = 0  # estimated bytes of the open conversations' spans
    open_bytes_limit: int | None = None  # collector.max_open_bytes
    oldest_open_s: float = 0.0  # how long the oldest open conversation has been open
    late_spans: int = 0
    duplicate_spans: int = 0
    dropped_spans: int = 0
    finished_by_reason: dict[str, int] = field(default_factory=dict)
    lag: dict[tuple[str, int], int] = field(default_factory=dict)
    scores_produced: int = 0
    spans_rekeyed: int = 0
    trace_join: dict[str, int] = field(default_factory=dict)  # held, held_bytes, joined, timed_out, evicted
    loop_join: dict[str, int] = field(default_factory=dict)  # parked, parked_bytes, continued, alone, evicted
    last_commit_timestamp: float | None = None
    commit_failures: int = 0  # offset commits the broker refused (each tried again with the next commit)
    late_labels: dict[str, int] = field(default_factory=dict)  # result -> count
    judge_pauses: int = 0
    judge_pending: int = 0
    transcripts_published: dict[str, int] = field(default_factory=dict)  # sample -> records for review
    transcripts_cut: int = 0
    transcripts_skipped: int = 0  # transcripts over collector.failing_transcripts_per_minute
    judge_rates: dict[tuple[str, str, str], float] = field(default_factory=dict)  # adaptive rate per series
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count_label(self, result: str) -> None:
        """Count one late label by what became of it (revised, unchanged, or a dead-letter reason)."""
        with self.lock:
            self.late_labels[result] = self.late_labels.get(result, 0) + 1

    def reject(self, reason: str) -> None:
        """Count one message rejected (dead-lettered) for `reason`."""
        with self.lock:
            self.rejected_by_reason[reason] = self.rejected_by_reason.get(reason, 0) + 1

    def copy_state(
        self,
        assembler: Assembler,
        join: TraceJoinStats,
        loops: LoopJoinStats,
        judge_pending: int,
        review: ReviewFeed | None,
        judge_rates: dict[tuple[str, str, str], float] | None,
        now: float,
    ) -> None:
        """Copy what a scrape reads of the assembler, the trace join, the loop join, the judge queue and the
        review feed (and the judge rates, when given), under the lock."""
        a = assembler.stats
        with self.lock:
            self.open_conversations = a.open_conversations
            self.open_bytes = a.open_bytes
            self.oldest_open_s = assembler.oldest_open_age(now)
            self.late_spans = a.late_spans
            self.duplicate_spans = a.duplicate_spans
            self.dropped_spans = a.dropped_spans
            self.finished_by_reason = dict(a.finished_by_reason)
            self.judge_pending = judge_pending
            if review is not None:
                self.transcripts_published = dict(review.published)
                self.transcripts_cut = review.trimmed
                self.transcripts_skipped = review.failing_skipped
            self.trace_join = {
                "held": join.held_spans,
                "held_bytes": join.held_bytes,
                "joined": join.joined_spans,
                "timed_out": join.timed_out_spans,
                "evicted": join.evicted_spans,
            }
            self.loop_join = {
                "parked": loops.parked,
                "parked_bytes": loops.parked_bytes,
                "continued": loops.continued,
                "alone": loops.alone - loops.evicted,
                "evicted": loops.evicted,
            }
            if judge_rates is not None:
                self.judge_rates = judge_rates


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
            transcripts = dict(s.transcripts_published)
        yield _counter("agentwatch_spans_consumed", "Spans decoded from the input topics.", s.spans_consumed)
        yield _counter(
            "agentwatch_log_records_consumed",
            "OTLP log records read from the log topics.",
            s.log_records_consumed,
        )
        yield _counter(
            "agentwatch_log_records_skipped",
            "Log records that are no GenAI message event of a span (application logs, other events): skipped.",
            s.log_records_skipped,
        )
        yield _counter(
            "agentwatch_orphan_message_fragments",
            "Messages logged as log records whose span was not in their conversation (late, or the span never "
            "came): left out.",
            s.orphan_fragments,
        )
        yield _counter(
            "agentwatch_setup_only_traces",
            "Finished conversations whose spans only set an agent up (create_agent, embeddings) and ran none: "
            "no conversation, left out.",
            s.setup_only,
        )
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
        yield GaugeMetricFamily(
            "agentwatch_open_conversation_bytes",
            "Estimated bytes of the decoded spans of the conversations being assembled.",
            value=s.open_bytes,
        )
        if s.open_bytes_limit is not None:
            yield GaugeMetricFamily(
                "agentwatch_open_conversation_bytes_limit",
                "Byte budget of the open conversations (collector.max_open_bytes).",
                value=s.open_bytes_limit,
            )
        yield GaugeMetricFamily(
            "agentwatch_oldest_open_conversation_seconds",
            "How long the oldest conversation being assembled has been open (at most collector.max_open_age_s).",
            value=s.oldest_open_s,
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
            "Conversations finished, by reason (end, idle, age, cap, budget, shutdown).",
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
        join = dict(s.trace_join)
        yield GaugeMetricFamily(
            "agentwatch_trace_join_held_spans",
            "Spans without a conversation key waiting for their trace to name one.",
            value=join.get("held", 0),
        )
        yield GaugeMetricFamily(
            "agentwatch_trace_join_held_bytes",
            "Estimated bytes of the spans the trace join holds (at most collector.max_held_bytes).",
            value=join.get("held_bytes", 0),
        )
        yield _by_result(
            "agentwatch_trace_join_spans",
            "Spans of the trace join by result: joined (given their trace's conversation), timed_out (keyed by "
            "trace id after trace_join_timeout_s), evicted (keyed by trace id early, a memory bound).",
            join,
            ("joined", "timed_out", "evicted"),
        )
        loops = dict(s.loop_join)
        yield GaugeMetricFamily(
            "agentwatch_loop_fragments_parked",
            "Loop fragments (a bare model call's trace asking for a tool) waiting for the conversation that "
            "continues them.",
            value=loops.get("parked", 0),
        )
        yield GaugeMetricFamily(
            "agentwatch_loop_fragments_parked_bytes",
            "Estimated bytes of the loop fragments waiting (at most collector.max_parked_bytes).",
            value=loops.get("parked_bytes", 0),
        )
        yield _by_result(
            "agentwatch_loop_fragments",
            "Loop fragments by result: continued (a later trace's conversation holds them: left out, not "
            "counted as conversations), alone (nothing continued them within loop_join_timeout_s, or at "
            "shutdown: scored as they are), evicted (scored alone early, a memory bound).",
            loops,
            ("continued", "alone", "evicted"),
        )
        fam = CounterMetricFamily(
            "agentwatch_late_labels",
            "Labels that arrived after their conversation was scored, by result (revised, unchanged, "
            "label_unknown_conversation, label_ambiguous_conversation).",
            labels=["result"],
        )
        for result, n in sorted(labels.items()):
            fam.add_metric([result], n)
        yield fam
        fam = CounterMetricFamily(
            "agentwatch_transcripts_published",
            "Transcript and revision records sent to the transcripts topic for review, by sample "
            "(review_sample: the blind review sample; flagged: labelled by a person when scored; evidence: a "
            "detector of sampling.review_evidence found something; failing: failed, for the list of its series' "
            "failing conversations).",
            labels=["sample"],
        )
        for sample in ("review_sample", "flagged", "evidence", "failing"):
            fam.add_metric([sample], transcripts.get(sample, 0))
        yield fam
        yield _counter(
            "agentwatch_transcripts_cut",
            "Transcripts cut to fit collector.max_transcript_bytes.",
            s.transcripts_cut,
        )
        yield _counter(
            "agentwatch_transcripts_skipped",
            "Failing conversations (listed, or queued for evidence) whose transcripts were not published: over "
            "collector.failing_transcripts_per_minute for their series in the minute they ended.",
            s.transcripts_skipped,
        )
        yield _counter(
            "agentwatch_offset_commit_failures",
            "Offset commits the broker refused; each is tried again with the next commit.",
            s.commit_failures,
        )
        if s.last_commit_timestamp is not None:
            yield GaugeMetricFamily(
                "agentwatch_last_commit_timestamp_seconds",
                "Unix time of the last successful offset commit.",
                value=s.last_commit_timestamp,
            )


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=value)


def _by_result(name: str, doc: str, counts: dict[str, int], results: tuple[str, ...]) -> CounterMetricFamily:
    """A counter family labelled `result`, every one of `results` exported (zeros included)."""
    fam = CounterMetricFamily(name, doc, labels=["result"])
    for result in results:
        fam.add_metric([result], counts.get(result, 0))
    return fam


def register(stats: PipelineStats, registry: CollectorRegistry, service: Any = None) -> PipelineMetrics:
    """Register the pipeline metrics of `stats` (and of `service`'s consumer and judge) on `registry`."""
    collector = PipelineMetrics(stats)
    registry.register(collector)
    events = getattr(service, "consumer_events", None)
    if events is not None:
        registry.register(events)
    if service is not None and getattr(service, "judge", None) is not None:
        registry.register(JudgeMetrics(service.judge, stats, service.settings.sampling.judge_rate))
    return collector


def serve(stats: PipelineStats, service: Any, port: int, host: str = "127.0.0.1") -> MetricsServer:
    """Serve the pipeline metrics of `stats` and `service`'s judge on http://host:port/metrics."""
    registry = CollectorRegistry()
    register(stats, registry, service)

    def body() -> bytes:
        return render_families(registry.collect()).encode()

    return MetricsServer(body, port, host, "agentwatch collector")
