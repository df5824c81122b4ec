"""The collector's intake: each consumed record decoded (spans, or a log topic's message events) and routed —
assembled when keyed by conversation (late labels taken aside), re-keyed by conversation id otherwise, joined
to its trace's conversation when its trace had named none, or dead-lettered with its reason when it cannot be
read. Its offset is counted, and marked done once nothing holds it."""

from __future__ import annotations

import logging

from confluent_kafka import Message

from agentwatch.collector.assembler import Assembler
from agentwatch.collector.deadletter import DeadLetterPublisher
from agentwatch.collector.decode import DecodeError, SpanRecord, decode_message
from agentwatch.collector.late_labels import LateLabels
from agentwatch.collector.log_records import decode_log_message
from agentwatch.collector.metrics import PipelineStats
from agentwatch.collector.offsets import OffsetBook
from agentwatch.collector.record import Record
from agentwatch.collector.rekey import CONTENT_TYPE_HEADER, Rekeyer, header, key_mode, keyed_by_conversation
from agentwatch.collector.trace_join import KEY_TRACE, KEY_TRACE_CONVERSATION, TraceJoin
from agentwatch.config import CollectorConfig
from agentwatch.kafka.consumer_events import ConsumerEvents

log = logging.getLogger(__name__)


class Intake:
    """Decodes and routes the records of one consumer (see module docstring); never raises on bad input."""

    def __init__(
        self,
        config: CollectorConfig,
        stats: PipelineStats,
        offsets: OffsetBook,
        join: TraceJoin,
        assembler: Assembler,
        labels: LateLabels,
        rekeyer: Rekeyer,
        dead: DeadLetterPublisher,
        events: ConsumerEvents,
    ) -> None:
        self.config = config
        self.stats = stats
        self.offsets = offsets
        self.join = join
        self.assembler = assembler
        self.labels = labels
        self.rekeyer = rekeyer
        self.dead = dead
        self.events = events
        self._log_topics = frozenset(config.log_topics)

    def handle(self, message: Message, now: float) -> None:
        """Decode one record and assemble, re-key or dead-letter it; never raises on bad input (a fatal consumer
        error is raised: the consumer is unusable)."""
        error = message.error()
        if error is not None:  # a consumer event, not a record
            self.events.record(error, message.topic())
            return
        record = Record.of(message)
        topic, offset, headers = record.topic, record.offset, record.headers
        tp = (topic, record.partition)
        vp = self.offsets.vpart(tp)
        self.stats.messages_consumed += 1
        self.offsets.consumed(tp, offset)
        if record.header_error is not None:  # its content type and key mode unknown: not to be guessed
            self._dead_letter(record, "invalid_headers", record.header_error)
            self.assembler.message_done(vp, offset)
            return
        hop = key_mode(headers) if topic == self.config.rekey_topic else None
        if hop == KEY_TRACE_CONVERSATION:  # the trace join: a trace's conversation, announced
            key, cid = record.key or b"", record.value or b""
            if key and cid:
                released = self.join.announce(
                    key.decode("ascii", "replace"), cid.decode("utf-8", "replace"), vp, offset, now
                )
                self.rejoin(released)
            else:  # not one the collector writes: kept where it can be read, not dropped unseen
                self._dead_letter(
                    record,
                    "invalid_announcement",
                    "a trace-conversation record needs the trace id as its key and the conversation id as its value",
                )
            self.assembler.message_done(vp, offset)
            return
        ct = header(headers, CONTENT_TYPE_HEADER)
        try:
            spans = self._decode(topic, record.value or b"", ct.decode("ascii", "replace") if ct else None)
        except DecodeError as exc:
            self._dead_letter(record, getattr(exc, "reason", "invalid"), str(exc))
        except Exception as exc:
            log.exception("decoder failed on %s[%d]@%d", topic, tp[1], offset)
            self._dead_letter(record, "decoder_error", f"{type(exc).__name__}: {exc}")
        else:
            if hop == KEY_TRACE:  # spans whose trace had not named its conversation: join, then re-key
                self.rejoin(self.join.add(spans, vp, offset, now))
            elif topic == self.config.rekey_topic or (
                keyed_by_conversation(headers) and not self._log_topics
            ):
                # with log topics, spans keyed by conversation take the re-key path too: their traces must be
                # announced for log records to join them, and they must be assembled where those arrive
                self.assembler.add_message(self.labels.take(spans, vp, record), vp, offset, now)
                return
            else:
                self.rekeyer.route(spans)
                self.stats.spans_rekeyed += len(spans)
        self.assembler.message_done(vp, offset)

    def _decode(self, topic: str, payload: bytes, content_type: str | None) -> list[SpanRecord]:
        """The span records of one record of `topic`, counted; of a log topic, the fragments its message events
        make (`log_records`), its records counted. Raises DecodeError."""
        limit = self.config.max_attribute_bytes
        if topic not in self._log_topics:
            spans = decode_message(payload, content_type, max_attribute_bytes=limit)
            self.stats.spans_consumed += len(spans)
            return spans
        batch = decode_log_message(payload, content_type, max_attribute_bytes=limit)
        self.stats.log_records_consumed += batch.records
        self.stats.log_records_skipped += batch.skipped
        return batch.fragments

    def rejoin(self, released: list[SpanRecord]) -> None:
        """Re-publish by conversation id the spans the trace join released (flushed before the next commit)."""
        if released:
            self.rekeyer.republish(released)
            self.stats.spans_rekeyed += len(released)

    def _dead_letter(self, record: Record, reason: str, detail: str) -> None:
        self.stats.reject(reason)
        self.dead.publish_or_stub(record, reason, detail)
