"""The collector service: span topics in, one `ConversationScore` per conversation out, at least once.

One thread, one consumer, one producer. Poll → decode → (re-key | assemble) → finished conversations →
reconstruct → score → produce. Every `commit_interval_s`, and before partitions are given away, the producer
is flushed and only then are offsets committed, each below the lowest offset still held by an open
conversation on its partition. A crash therefore replays what was not yet scored: nothing is lost, and
duplicates are scores written after the last commit (downstream de-duplicates by conversation id). The
commits and rebalances are `consumer_group.Committer`'s; pausing while the judge is behind `JudgeBackpressure`'s;
decoding and routing each record (assemble, re-key, join, dead-letter) `intake.Intake`'s. This module holds the
loop, and what follows a finished conversation: rebuilding, grading (with the judge or not) and publishing.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from confluent_kafka import Consumer, TopicPartition

from agentwatch import wire
from agentwatch.build_info import build_line
from agentwatch.collector.assembler import Assembler, FinishedConversation
from agentwatch.collector.consumer_group import Committer, consumer_config, traffic_share
from agentwatch.collector.deadletter import DeadLetterPublisher
from agentwatch.collector.evaluation_events import EvaluationEvents, last_turn_ids
from agentwatch.collector.intake import Intake
from agentwatch.collector.judging import JudgeBackpressure, PendingVerdicts
from agentwatch.collector.labels import ScoreMemory, label_of
from agentwatch.collector.late_labels import LateLabels
from agentwatch.collector.loop_join import LoopJoin
from agentwatch.collector.metrics import PipelineStats
from agentwatch.collector.offsets import OffsetBook
from agentwatch.collector.reconstruct import build_conversation, split_by_agent
from agentwatch.collector.record import Record
from agentwatch.collector.record_limits import RecordLimits, fit_record_limits
from agentwatch.collector.rekey import Rekeyer
from agentwatch.collector.review_feed import ReviewFeed
from agentwatch.collector.score_fit import REVISION_ROOM, score_payload
from agentwatch.collector.span_fragments import attach
from agentwatch.collector.span_tree import setup_only
from agentwatch.collector.trace_join import TraceJoin
from agentwatch.config import Settings
from agentwatch.judge.runner import JudgeRunner
from agentwatch.judge.verdict import JudgeVerdict
from agentwatch.kafka.consumer_events import ConsumerEvents
from agentwatch.kafka.producer import ProduceError, RecordProducer, headers_bytes, producer_config
from agentwatch.kafka.security import service_settings
from agentwatch.kafka.topics import ensure_pipeline_topics
from agentwatch.scorers import ConversationScorer, unscored
from agentwatch.wire.schema import Conversation, ConversationScore

log = logging.getLogger(__name__)

Scorer = Callable[[Conversation], ConversationScore]


__all__ = ["CollectorService", "ProduceError", "default_scorer", "series_key"]

_POLL_TIMEOUT_S = 0.2


class _ToGrade(NamedTuple):
    """A rebuilt conversation and what scoring it needs: where its offsets start, its size, its last turn's ids."""

    conversation: Conversation
    partition: int
    min_offset: int
    nbytes: int
    ids: tuple[str | None, str | None]


def series_key(score: ConversationScore) -> bytes:
    """Kafka key of a score: `agent|version|task`, so one estimator instance owns each series."""
    return wire.score_key(score.agent, score.version, score.task)


def default_scorer(settings: Settings) -> Scorer:
    """The scorers' `ConversationScorer(settings).score`."""
    return ConversationScorer(settings).score


class CollectorService:
    """Consumes span topics in a consumer group and writes conversation scores (see module docstring)."""

    def __init__(
        self,
        settings: Settings,
        *,
        scorer: ConversationScorer | Scorer | None = None,
        judge_runner: JudgeRunner | None = None,
    ) -> None:
        self.settings = settings
        self.config = settings.collector
        if scorer is None:
            scorer = ConversationScorer(settings)
        # The full scorer takes verdicts, reloads policies and says what the judge samples; a plain function
        # (tests, custom scoring) only scores.
        self._scorer = scorer if isinstance(scorer, ConversationScorer) else None
        self._score: Scorer = scorer.score if isinstance(scorer, ConversationScorer) else scorer
        self._pending_settings: Settings | None = None
        self.stats = PipelineStats(open_bytes_limit=self.config.max_open_bytes)
        self.consumer_events = ConsumerEvents("agentwatch_consumer_errors", "input topic")
        self.assembler = Assembler(self.config)
        self.join = TraceJoin(
            self.config.trace_join_timeout_s,
            self.config.max_held_spans,
            self.config.trace_memory,
            self.config.max_held_bytes,
        )
        # what a late label revises: the scores remembered, a revision published, unknown labels dead-lettered
        self.labels = LateLabels(
            ScoreMemory(self.config.label_memory, self.config.label_memory_bytes),
            settings.scoring.credits,
            self.stats,
            self.assembler.is_open,
            self._publish,
            self._dead_letter_record,
        )
        if judge_runner is None and settings.judge.enabled:
            judge_runner = JudgeRunner.from_settings(settings)
        self.judge = judge_runner  # a JudgeRunner, or None: no judge
        self.pending = PendingVerdicts()
        self.loops: LoopJoin[_ToGrade] = LoopJoin(
            self.config.loop_join_timeout_s, self.config.max_parked_bytes
        )
        self.backpressure = JudgeBackpressure(
            self.pending, self.config.max_pending_verdicts, self.config.max_pending_bytes, self.stats
        )
        self.events = EvaluationEvents.from_settings(settings)  # verdicts as OTel log records, if configured
        self._rates_refresh = 0.0  # next refresh of the adaptive judge rates in the stats
        self._dead: DeadLetterPublisher | None = None
        self._stop = threading.Event()
        self.offsets = OffsetBook()
        self.commits: Committer | None = None  # offset commits and rebalances, once the consumer exists
        self._consumer: Consumer | None = None
        self._out: RecordProducer | None = None
        self.review: ReviewFeed | None = None  # transcripts of the review sample and flagged conversations
        self.instance = f"{socket.gethostname()}:{os.getpid()}"
        self._score_headers = [
            ("content-type", b"application/json"),
            ("agentwatch-producer", self.instance.encode()),
        ]
        self._score_header_bytes = headers_bytes(self._score_headers)
        # the record bounds, lowered at start to what the broker's topics take
        self.limits = RecordLimits(
            self.config.max_score_bytes, self.config.max_transcript_bytes, self.config.max_dead_letter_bytes
        )

    # ----------------------------------------------------------------------------------------- lifecycle

    def reload(self, settings: Settings) -> None:
        """Grade with the task policies and sample rates of `settings` from the next poll on (any thread)."""
        self._pending_settings = settings

    def _apply_reload(self) -> None:
        settings, self._pending_settings = self._pending_settings, None
        if settings is not None and self._scorer is not None:
            self._scorer.reload_policies(settings)
            self.settings.policies, self.settings.sampling = settings.policies, settings.sampling

    def stop(self) -> None:
        """Ask `run` to shut down gracefully (safe from signal handlers and other threads)."""
        self._stop.set()

    def run(self, stop_event: threading.Event | None = None) -> None:
        """Consume until `stop_event` (or `stop()`) is set, then flush, commit and leave the group."""
        stop = stop_event or self._stop
        cfg, kafka = self.config, self.settings.kafka
        _, largest = ensure_pipeline_topics(self.settings)
        limits = self.limits = fit_record_limits(cfg, largest)
        connection = service_settings(kafka, "collector")
        self._out = RecordProducer(producer_config(connection))
        rekeyer = Rekeyer(self._out, cfg.rekey_topic)
        dead = self._dead = DeadLetterPublisher(self._out, cfg.dead_letter_topic, limits.dead_letter)
        intake = Intake(
            cfg,
            self.stats,
            self.offsets,
            self.join,
            self.assembler,
            self.labels,
            rekeyer,
            dead,
            self.consumer_events,
        )
        if cfg.transcripts_topic:
            self.review = ReviewFeed(
                self._out,
                cfg.transcripts_topic,
                limits.transcript,
                self._score_headers[1:],
                frozenset(self.settings.sampling.review_evidence),
                failing=cfg.failing_transcripts,
                failing_per_minute=cfg.failing_transcripts_per_minute,
            )
        topics = list(dict.fromkeys([*cfg.input_topics, cfg.rekey_topic, *cfg.log_topics]))
        # a broker down is counted (`error_cb`), not only logged
        self._consumer = Consumer(
            {**consumer_config(connection, cfg), "error_cb": self.consumer_events.record}, logger=log
        )
        commits = self.commits = Committer(
            self._consumer,
            self._out,
            self.offsets,
            self.assembler,
            self.join,
            (self.pending, self.loops),
            self.stats,
        )
        self._consumer.subscribe(
            topics, on_assign=self._on_assigned, on_revoke=commits.on_revoked, on_lost=commits.on_lost
        )
        log.info("collector consuming %s in group %s (%s)", topics, cfg.group_id, build_line())
        last_commit = time.monotonic()
        clean = False
        try:
            while not stop.is_set() and not self._stop.is_set():
                if self._pending_settings is not None:
                    self._apply_reload()
                messages = self._consumer.consume(cfg.max_poll_records, _POLL_TIMEOUT_S)
                now = time.monotonic()
                for message in messages:
                    intake.handle(message, now)
                intake.rejoin(self.join.poll(time.monotonic()))
                for finished in self.assembler.poll(time.monotonic()):
                    self._emit(finished)
                for graded in self.loops.due(time.monotonic()):
                    self._grade(graded)
                self._score_verdicts()
                self._out.poll()
                self._refresh_stats()
                if time.monotonic() - last_commit >= cfg.commit_interval_s:
                    commits.commit()
                    commits.refresh_lag()
                    last_commit = time.monotonic()
            if cfg.drain_on_shutdown:
                for finished in self.assembler.drain():
                    self._emit(finished)
                for graded in self.loops.drain():
                    self._grade(graded)
            self._wait_for_verdicts(cfg.verdict_wait_on_shutdown_s)
            commits.commit()
            clean = True
        finally:
            self._close(clean)

    def _close(self, clean: bool) -> None:
        if self.commits is not None:  # the revoke callback run by close() must not flush or commit again
            self.commits.closing = True
        if self.judge is not None:
            self.judge.close()
        if self.events is not None:
            self.events.shutdown()
        if self._consumer is not None:
            try:
                self._consumer.close()  # leaves the group
            except Exception:
                log.exception("closing the consumer failed")
        if self._out is not None:
            try:
                self._out.close(10 if clean else 0)
            except Exception:
                log.exception("closing the producer failed")
        log.info("collector stopped (%s)", "clean" if clean else "after an error")

    # ----------------------------------------------------------------------------------------- records

    def _dead_letter_record(self, record: Record, reason: str, detail: str) -> None:
        """Send `record` to the dead-letter topic with its reason (once the service runs)."""
        assert self._dead is not None
        self._dead.publish(record, reason, detail)

    def _emit(self, finished: FinishedConversation) -> None:
        """Reconstruct, score and queue the score of one finished conversation. Whatever its spans hold, a
        failure here is that conversation's (published unscored, the error its reason), never the collector's:
        it would stop on the same spans at every restart."""
        ids: tuple[str | None, str | None] = (None, None)
        try:
            spans, orphans = attach(finished.spans, self.config.max_attribute_bytes)
            if orphans:
                self.stats.orphan_fragments += orphans
                if not spans:  # messages logged after their conversation finished, or of spans never seen
                    return
            finished.spans = spans
            parts = split_by_agent(finished)  # one conversation per (agent, conversation id)
            if len(parts) > 1:
                for part in parts:
                    self._emit(part)
                return
            spans = finished.spans
            # nothing but labels: for a conversation this collector does not remember (a turn span ends it)
            if spans and all(label_of(span) is not None for span in spans):
                last = label_of(max(spans, key=lambda span: span.end_ns))
                if last is not None:  # always: every span is a label
                    self.labels.apply(last, None)
                return
            if setup_only(spans):  # an agent created, documents embedded: nothing ran, no conversation
                self.stats.setup_only += 1
                return
            ids = last_turn_ids(finished) if self.events is not None else (None, None)
            conv = build_conversation(finished)
        except Exception as exc:
            log.exception("reconstruction of %s failed", finished.conversation_id)
            conv = Conversation(conversation_id=finished.conversation_id or "unknown", incomplete=True)
            self._publish(unscored(conv, f"reconstruct_error: {type(exc).__name__}: {exc}"), ids, conv)
            return
        now = time.monotonic()
        self.loops.claim(
            conv, now
        )  # the earlier traces of a loop the caller runs: parts of this conversation
        graded = _ToGrade(conv, finished.partition, finished.min_offset, finished.nbytes, ids)
        if not self.loops.take(conv, graded, finished.partition, finished.min_offset, finished.nbytes, now):
            self._grade(graded)

    def _grade(self, graded: _ToGrade) -> None:
        """Score and queue one rebuilt conversation, or hand it to the judge first."""
        conv, partition, min_offset, nbytes, ids = graded
        if self.judge is not None and self._wants_judge(conv):
            self.pending.add(conv, partition, min_offset, self.judge.submit(conv), ids, nbytes)
            self.backpressure.pause_if_full(self._consumer)
            return
        self._publish(self._score_safely(conv), ids, conv)

    def _score_safely(self, conv: Conversation, verdict: JudgeVerdict | None = None) -> ConversationScore:
        try:
            if verdict is None or self._scorer is None:
                return self._score(conv)
            return self._scorer.score(conv, verdict)
        except Exception as exc:
            log.exception("scoring of %s failed", conv.conversation_id)
            return unscored(conv, f"scorer_error: {type(exc).__name__}: {exc}")

    # ----------------------------------------------------------------------------------------- the judge

    def _wants_judge(self, conv: Conversation) -> bool:
        return self._scorer is not None and self._scorer.wants_judge(conv)

    def _score_verdicts(self) -> None:
        """Score and queue the conversations whose verdict came back; resume consuming when below the limit."""
        for conv, verdict, ids in self.pending.ready():
            self._publish(self._score_safely(conv, verdict), ids, conv)
        self.backpressure.resume_if_drained(self._consumer)

    def _wait_for_verdicts(self, timeout_s: float) -> None:
        """At shutdown: score what the judge returns within `timeout_s`; the rest stays uncommitted (replayed)."""
        deadline = time.monotonic() + timeout_s
        while len(self.pending) and time.monotonic() < deadline:
            self._score_verdicts()
            time.sleep(0.05)
        self._score_verdicts()
        if len(self.pending):
            log.warning("%d conversations still wait for the judge; they will be replayed", len(self.pending))

    def _publish(
        self,
        score: ConversationScore,
        ids: tuple[str | None, str | None] = (None, None),
        conv: Conversation | None = None,
    ) -> None:
        """Queue one score for the scores topic (and, with its transcript `conv` or as a revision, for
        review), remember it for late labels, and emit it as evaluation events (parented to the last turn
        `ids`, trace and span id) when configured."""
        assert self._out is not None
        key = series_key(score)
        room = self.limits.score - len(key) - self._score_header_bytes - REVISION_ROOM
        score, payload = score_payload(score, conv, room)
        self._out.send(self.config.scores_topic, value=payload, key=key, headers=self._score_headers)
        if self.review is not None and conv is not None:
            self.review.transcript(score, conv)
        elif self.review is not None:
            self.review.revision(score)
        self.labels.remember(score, payload)
        self.stats.scores_produced += 1
        if self.events is not None:
            self.events.emit(score, *ids)

    # ----------------------------------------------------------------------------------------- partitions

    def _on_assigned(self, consumer: Consumer, assigned: list[TopicPartition]) -> None:
        log.info("assigned %s", sorted(f"{tp.topic}[{tp.partition}]" for tp in assigned))
        if self.backpressure.paused and assigned:  # still waiting for the judge: new partitions wait too
            consumer.pause(assigned)
        if assigned and self._scorer is not None:
            self._scorer.sampler.targets.share = traffic_share(consumer, assigned)

    # ----------------------------------------------------------------------------------------- stats

    def _refresh_stats(self) -> None:
        now = time.monotonic()
        rates = None
        if self._scorer is not None and now >= self._rates_refresh:
            self._rates_refresh = now + 1.0
            rates = self._scorer.sampler.targets.current()
        self.stats.copy_state(
            self.assembler, self.join.stats, self.loops.stats, len(self.pending), self.review, rates, now
        )
