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

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from agentwatch import wire
from agentwatch.collector.assembler import Assembler, FinishedConversation
from agentwatch.collector.deadletter import DeadLetterPublisher
from agentwatch.collector.decode import DecodeError, SpanRecord, decode_message
from agentwatch.collector.evaluation_events import EvaluationEvents, last_turn_ids
from agentwatch.collector.judging import PendingVerdicts
from agentwatch.collector.labels import ScoreMemory, label_of
from agentwatch.collector.late_labels import LateLabels
from agentwatch.collector.metrics import PipelineStats
from agentwatch.collector.offsets import OffsetBook, Partition, lowest
from agentwatch.collector.reconstruct import build_conversation, split_by_agent
from agentwatch.collector.record import Record
from agentwatch.collector.rekey import CONTENT_TYPE_HEADER, Rekeyer, header, key_mode, keyed_by_conversation
from agentwatch.collector.review_feed import ReviewFeed
from agentwatch.collector.trace_join import KEY_TRACE, KEY_TRACE_CONVERSATION, TraceJoin
from agentwatch.config import Settings
from agentwatch.judge.runner import JudgeRunner
from agentwatch.judge.verdict import JudgeVerdict
from agentwatch.kafka.producer import ProduceError, RecordProducer, producer_config
from agentwatch.kafka.security import service_settings
from agentwatch.kafka.topics import ensure_pipeline_topics
from agentwatch.scorers import ConversationScorer, unscored
from agentwatch.wire.schema import Conversation, ConversationScore

log = logging.getLogger(__name__)

Scorer = Callable[[Conversation], ConversationScore]


__all__ = ["CollectorService", "ProduceError", "default_scorer", "series_key"]

# per partition and fetch; ~1,400 SDK messages of a conversation each
_PARTITION_FETCH_BYTES = 8 * 1024 * 1024
_POLL_TIMEOUT_S = 0.2


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
        self.assembler = Assembler(self.config)
        self.join = TraceJoin(
            self.config.trace_join_timeout_s,
            self.config.max_held_spans,
            self.config.trace_memory,
            self.config.max_held_bytes,
        )
        # what a late label revises: the scores remembered, a revision published, unknown labels dead-lettered
        self.labels = LateLabels(
            ScoreMemory(self.config.label_memory),
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
        self.events = EvaluationEvents.from_settings(settings)  # verdicts as OTel log records, if configured
        self._max_pending = max(1, self.config.max_pending_verdicts)
        self._rates_refresh = 0.0  # next refresh of the adaptive judge rates in the stats
        self._paused = False
        self._dead: DeadLetterPublisher | None = None
        self._stop = threading.Event()
        self.offsets = OffsetBook()
        self._consumer: Consumer | None = None
        self._out: RecordProducer | None = None
        self.review: ReviewFeed | None = None  # transcripts of the review sample and flagged conversations
        self._closing = False
        self.instance = f"{socket.gethostname()}:{os.getpid()}"
        self._score_headers = [
            ("content-type", b"application/json"),
            ("agentwatch-producer", self.instance.encode()),
        ]

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
        ensure_pipeline_topics(self.settings)
        connection = service_settings(kafka, "collector")
        self._out = RecordProducer(producer_config(connection))
        rekeyer = Rekeyer(self._out, cfg.rekey_topic)
        dead = self._dead = DeadLetterPublisher(self._out, cfg.dead_letter_topic)
        if cfg.transcripts_topic:
            self.review = ReviewFeed(
                self._out,
                cfg.transcripts_topic,
                cfg.max_transcript_bytes,
                self._score_headers[1:],
                frozenset(self.settings.sampling.review_evidence),
                failing=cfg.failing_transcripts,
            )
        topics = list(dict.fromkeys([*cfg.input_topics, cfg.rekey_topic]))
        self._consumer = Consumer(
            {
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
            },
            logger=log,
        )
        self._consumer.subscribe(
            topics, on_assign=self._on_assigned, on_revoke=self._on_revoked, on_lost=self._on_lost
        )
        log.info("collector consuming %s in group %s", topics, cfg.group_id)
        last_commit = time.monotonic()
        clean = False
        try:
            while not stop.is_set() and not self._stop.is_set():
                if self._pending_settings is not None:
                    self._apply_reload()
                messages = self._consumer.consume(cfg.max_poll_records, _POLL_TIMEOUT_S)
                now = time.monotonic()
                for message in messages:
                    self._handle(message, now, rekeyer, dead)
                self._rejoin(rekeyer, self.join.poll(time.monotonic()))
                for finished in self.assembler.poll(time.monotonic()):
                    self._emit(finished)
                self._score_verdicts()
                self._out.poll()
                self._refresh_stats()
                if time.monotonic() - last_commit >= cfg.commit_interval_s:
                    self._commit()
                    self._refresh_lag()
                    last_commit = time.monotonic()
            if cfg.drain_on_shutdown:
                for finished in self.assembler.drain():
                    self._emit(finished)
            self._wait_for_verdicts(cfg.verdict_wait_on_shutdown_s)
            self._commit()
            clean = True
        finally:
            self._close(clean)

    def _close(self, clean: bool) -> None:
        self._closing = True  # the revoke callback run by close() must not flush or commit again
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

    def _handle(self, message: Message, now: float, rekeyer: Rekeyer, dead: DeadLetterPublisher) -> None:
        """Decode one record and assemble, re-key or dead-letter it; never raises on bad input."""
        error = message.error()
        if error is not None:  # a consumer event, not a record
            if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:  # the first producer creates it: not a fault
                log.info("input topic %s does not exist yet; consuming it once it does", message.topic())
            else:
                log.warning("consumer: %s", error)
            return
        record = Record.of(message)
        topic, offset, headers = record.topic, record.offset, record.headers
        tp = (topic, record.partition)
        vp = self.offsets.vpart(tp)
        self.stats.messages_consumed += 1
        self.offsets.consumed(tp, offset)
        hop = key_mode(headers) if topic == self.config.rekey_topic else None
        if hop == KEY_TRACE_CONVERSATION:  # the trace join: a trace's conversation, announced
            key, cid = record.key or b"", record.value or b""
            if key and cid:
                released = self.join.announce(
                    key.decode("ascii", "replace"), cid.decode("utf-8", "replace"), vp, offset, now
                )
                self._rejoin(rekeyer, released)
            self.assembler.message_done(vp, offset)
            return
        ct = header(headers, CONTENT_TYPE_HEADER)
        try:
            spans = decode_message(
                record.value or b"",
                ct.decode("ascii", "replace") if ct else None,
                max_attribute_bytes=self.config.max_attribute_bytes,
            )
        except DecodeError as exc:
            self._dead_letter(dead, record, getattr(exc, "reason", "invalid"), str(exc))
        except Exception as exc:
            log.exception("decoder failed on %s[%d]@%d", topic, tp[1], offset)
            self._dead_letter(dead, record, "decoder_error", f"{type(exc).__name__}: {exc}")
        else:
            self.stats.spans_consumed += len(spans)
            if hop == KEY_TRACE:  # spans whose trace had not named its conversation: join, then re-key
                self._rejoin(rekeyer, self.join.add(spans, vp, offset, now))
            elif topic == self.config.rekey_topic or keyed_by_conversation(headers):
                self.assembler.add_message(self.labels.take(spans, vp, record), vp, offset, now)
                return
            else:
                rekeyer.route(spans)
                self.stats.spans_rekeyed += len(spans)
        self.assembler.message_done(vp, offset)

    def _rejoin(self, rekeyer: Rekeyer, released: list[SpanRecord]) -> None:
        """Re-publish by conversation id the spans the trace join released (flushed before the next commit)."""
        if released:
            rekeyer.republish(released)
            self.stats.spans_rekeyed += len(released)

    def _dead_letter_record(self, record: Record, reason: str, detail: str) -> None:
        """Send `record` to the dead-letter topic with its reason (once the service runs)."""
        assert self._dead is not None
        self._dead.publish(record, reason, detail)

    def _dead_letter(self, dead: DeadLetterPublisher, record: Record, reason: str, detail: str) -> None:
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
            stub = Record(record.topic, record.partition, record.offset, record.key, None, record.headers)
            dead.publish(stub, reason, f"{detail} (value of {len(record.value or b'')} bytes not forwarded)")

    def _emit(self, finished: FinishedConversation) -> None:
        """Reconstruct, score and queue the score of one finished conversation."""
        parts = split_by_agent(finished)  # one conversation per (agent, conversation id)
        if len(parts) > 1:
            for part in parts:
                self._emit(part)
            return
        spans = finished.spans
        # nothing but labels: for a conversation this collector does not remember (a turn span ends the check)
        if spans and all(label_of(span) is not None for span in spans):
            last = label_of(max(spans, key=lambda span: span.end_ns))
            if last is not None:  # always: every span is a label
                self.labels.apply(last, None)
            return
        try:
            conv = build_conversation(finished)
        except Exception as exc:
            log.exception("reconstruction of %s failed", finished.conversation_id)
            conv = Conversation(conversation_id=finished.conversation_id or "unknown", incomplete=True)
            score = unscored(conv, f"reconstruct_error: {type(exc).__name__}: {exc}")
        else:
            if self.judge is not None and self._wants_judge(conv):
                ids = last_turn_ids(finished) if self.events is not None else (None, None)
                self.pending.add(
                    conv,
                    finished.partition,
                    finished.min_offset,
                    self.judge.submit(conv),
                    ids,
                    finished.nbytes,
                )
                self._pause_if_full()
                return
            score = self._score_safely(conv)
        self._publish(score, last_turn_ids(finished) if self.events is not None else (None, None), conv)

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
        max_bytes = self.config.max_pending_bytes
        if (
            self._paused
            and len(self.pending) <= self._max_pending // 2
            and self.pending.nbytes <= max_bytes // 2
        ):
            self._set_paused(False)

    def _pause_if_full(self) -> None:
        full = len(self.pending) >= self._max_pending or self.pending.nbytes >= self.config.max_pending_bytes
        if not self._paused and full:
            self._set_paused(True)

    def _set_paused(self, paused: bool) -> None:
        """Pause (or resume) every assigned partition: the judge is the bottleneck, memory must not grow."""
        assert self._consumer is not None
        assignment = self._consumer.assignment()
        if paused:
            self._consumer.pause(assignment)
            self.stats.judge_pauses += 1
            log.info("%d conversations wait for the judge: consumption paused", len(self.pending))
        else:
            self._consumer.resume(assignment)
            log.info("consumption resumed (%d conversations wait for the judge)", len(self.pending))
        self._paused = paused

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
        payload = score.model_dump_json().encode()
        self._out.send(
            self.config.scores_topic, value=payload, key=series_key(score), headers=self._score_headers
        )
        if self.review is not None and conv is not None:
            self.review.transcript(score, conv)
        elif self.review is not None:
            self.review.revision(score)
        self.labels.remember(score, payload)
        self.stats.scores_produced += 1
        if self.events is not None:
            self.events.emit(score, *ids)

    # ----------------------------------------------------------------------------------------- offsets

    def _safe_offsets(self, tps: Iterable[Partition]) -> list[TopicPartition]:
        """Flush, then the offsets below which nothing is held by an open conversation (new ones only)."""
        assert self._out is not None
        self._out.flush()  # raises ProduceError if a record was lost: then nothing is committed
        return self.offsets.to_commit(tps, self._lowest_held)

    def _lowest_held(self, vp: int) -> int | None:
        """The offset to commit on a partition: below every record still held (open, joining, judged)."""
        return self.assembler.committable(vp, lowest(self.pending.low_offset(vp), self.join.low_offset(vp)))

    def _commit_offsets(self, tps: Iterable[Partition]) -> list[TopicPartition]:
        """Flush, then commit (synchronously) what no open conversation holds on `tps`; the offsets committed."""
        assert self._consumer is not None
        offsets = self._safe_offsets(tps)
        if not offsets:
            return []
        try:
            self._consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:  # e.g. a rebalance; the new owner replays
            log.warning("offset commit failed (the records will be replayed): %s", exc)
            return []
        self.offsets.committed(offsets)
        with self.stats.lock:
            self.stats.last_commit_timestamp = time.time()
        return offsets

    def _commit(self) -> None:
        """Flush, then commit what no open conversation holds on the assigned partitions."""
        assert self._consumer is not None
        self._commit_offsets((tp.topic, tp.partition) for tp in self._consumer.assignment())

    def _on_assigned(self, consumer: Consumer, assigned: list[TopicPartition]) -> None:
        log.info("assigned %s", sorted(f"{tp.topic}[{tp.partition}]" for tp in assigned))
        if self._paused and assigned:  # still waiting for the judge: new partitions wait too
            consumer.pause(assigned)
        if assigned and self._scorer is not None:
            self._scorer.sampler.targets.share = self._traffic_share(consumer, assigned)

    def _traffic_share(self, consumer: Consumer, assigned: list[TopicPartition]) -> float:
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

    def _on_revoked(self, consumer: Consumer, revoked: list[TopicPartition]) -> None:
        """Before partitions go (called inside `consume`, on the service's thread): flush, commit what is safe,
        forget their open conversations. A ProduceError propagates out of `consume`: nothing is committed."""
        gone = [(tp.topic, tp.partition) for tp in revoked]
        log.info("revoked %s", sorted(f"{t}[{p}]" for t, p in gone))
        if self._closing:
            return
        committed = self._commit_offsets(gone)
        if committed:
            log.info(
                "committed %s before the rebalance",
                {f"{t.topic}[{t.partition}]": t.offset for t in committed},
            )
        self._forget(gone)

    def _on_lost(self, consumer: Consumer, lost: list[TopicPartition]) -> None:
        """Partitions taken away without a revoke (session lost): forget them, commit nothing."""
        gone = [(tp.topic, tp.partition) for tp in lost]
        log.warning(
            "lost %s; their records will be replayed by the new owner", sorted(f"{t}[{p}]" for t, p in gone)
        )
        self._forget(gone)

    def _forget(self, gone: list[Partition]) -> None:
        vps = self.offsets.forget(gone)
        self.assembler.revoke(vps)
        self.join.revoke(vps)
        self.pending.forget(vps)
        with self.stats.lock:
            for tp in gone:
                self.stats.lag.pop(tp, None)

    # ----------------------------------------------------------------------------------------- stats

    def _refresh_lag(self) -> None:
        """Consumer lag per partition from the high watermark of the last fetch (ListOffsets is wrong on Tansu)."""
        lag = self.offsets.lag(self._high_watermark)
        with self.stats.lock:
            self.stats.lag = lag

    def _high_watermark(self, tp: Partition) -> int | None:
        """The high watermark of the last fetch of `tp` (cached by the client), or None when unknown."""
        assert self._consumer is not None
        try:
            _, high = self._consumer.get_watermark_offsets(TopicPartition(tp[0], tp[1]), cached=True)
        except KafkaException as exc:
            log.debug("no high watermark for %s[%d]: %s", tp[0], tp[1], exc)
            return None
        return int(high)

    def _refresh_stats(self) -> None:
        a = self.assembler.stats
        s = self.stats
        with s.lock:
            s.open_conversations = a.open_conversations
            s.open_bytes = a.open_bytes
            s.oldest_open_s = self.assembler.oldest_open_age(time.monotonic())
            s.late_spans = a.late_spans
            s.duplicate_spans = a.duplicate_spans
            s.dropped_spans = a.dropped_spans
            s.finished_by_reason = dict(a.finished_by_reason)
            s.judge_pending = len(self.pending)
            if self.review is not None:
                s.transcripts_published = dict(self.review.published)
                s.transcripts_cut = self.review.trimmed
            j = self.join.stats
            s.trace_join = {
                "held": j.held_spans,
                "held_bytes": j.held_bytes,
                "joined": j.joined_spans,
                "timed_out": j.timed_out_spans,
                "evicted": j.evicted_spans,
            }
            if self._scorer is not None and time.monotonic() >= self._rates_refresh:
                self._rates_refresh = time.monotonic() + 1.0
                s.judge_rates = self._scorer.sampler.targets.current()
