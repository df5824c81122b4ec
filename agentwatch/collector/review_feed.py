"""What the collector sends for review: transcripts of the review sample, of flagged conversations, of
conversations a detector of `sampling.review_evidence` found something in, and of failing conversations.

A conversation in the review sample (`sampling.review_rate`, the shared hash), carrying a person's label
when it was scored, or with evidence of a detector people should look at — and, with
`collector.failing_transcripts`, one that failed (a failed verdict or failure evidence: what an alert about its
series is about) — is published to the transcripts topic with its first score, keyed by conversation id; a
later revision of such a score (a late label) follows as a `revision` record, so the review service knows the
latest revision. Records go through the collector's producer, which is flushed before every offset commit, as
scores are: a crash replays them, never loses them. A transcript larger than `collector.max_transcript_bytes`
is cut (long texts first, then turns) and says so in its notes: a record the broker refuses would stop the
collector. Those sent for evidence or because they failed are at most `collector.failing_transcripts_per_minute`
a minute per series (`FailingLimit`): when an agent breaks, each of its conversations is one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from agentwatch.collector.failing_limit import FailingLimit
from agentwatch.kafka.producer import headers_bytes
from agentwatch.wire.review_records import Sample, TranscriptRecord, review_sample_of
from agentwatch.wire.schema import Conversation, ConversationScore

log = logging.getLogger(__name__)

_TEXT_CAPS = (4000, 1000, 200)  # characters kept per text, tried in turn until the record fits
# what an incident multiplies: conversations sent because they failed, or for a detector's evidence (the blind
# sample is a share of the traffic, flagged ones a person's)
_LIMITED: frozenset[Sample] = frozenset({"failing", "evidence"})


class ReviewFeed:
    """Publishes transcript and revision records for review through `producer` (a `RecordProducer`)."""

    def __init__(
        self,
        producer: Any,
        topic: str,
        max_bytes: int,
        headers: Sequence[tuple[str, bytes]] = (),
        evidence: frozenset[str] = frozenset(),
        failing: bool = False,
        failing_per_minute: int | None = None,
    ) -> None:
        self._producer = producer
        self._evidence = evidence  # detectors whose findings are sent for review (sampling.review_evidence)
        self._failing = (
            failing  # also the transcripts of failing conversations (`collector.failing_transcripts`)
        )
        self._limit = FailingLimit(failing_per_minute) if failing_per_minute is not None else None
        self._topic = topic
        self._max_bytes = max_bytes
        self._headers = [("content-type", b"application/json"), *headers]
        self._header_bytes = headers_bytes(self._headers)
        self.published: dict[str, int] = {}  # sample -> records
        self.trimmed = 0

    @property
    def failing_skipped(self) -> int:
        """Failing conversations (or with evidence) whose transcripts were not sent: over their series' limit for
        their minute."""
        return self._limit.skipped if self._limit is not None else 0

    def transcript(self, score: ConversationScore, conv: Conversation) -> None:
        """Queue the transcript of `conv` with its first `score`, when it is to be reviewed (or failed)."""
        sample = review_sample_of(score, self._evidence, self._failing)
        if sample is None:
            return
        if sample in _LIMITED and self._limit is not None:
            ended = score.ended_at.timestamp() if score.ended_at is not None else None
            if not self._limit.keep((score.agent, score.version, score.task), ended):
                return
        record = TranscriptRecord(
            kind="transcript",
            sample=sample,
            conversation=conv,
            score=score,
            published_at=datetime.now(UTC),
        )
        try:
            payload = record.model_dump_json().encode()
        except ValueError as exc:  # a value no JSON writer takes: raised here, it would stop the collector
            log.exception(
                "transcript of %s could not be written: sent without its turns", conv.conversation_id
            )
            why = f"review: the transcript could not be written ({type(exc).__name__}: {str(exc)[:200]})"
            bare = conv.model_copy(update={"turns": [], "notes": [*conv.notes, why]})
            payload = record.model_copy(update={"conversation": bare}).model_dump_json().encode()
        # the bound is the whole record's, as the broker counts it: the key (the conversation id, up to
        # collector.max_attribute_bytes characters) and headers too
        key_bytes = len(score.conversation_id.encode())
        room = self._max_bytes - key_bytes - self._header_bytes
        if len(payload) > room:
            payload = self._cut(record, conv, len(payload), room)
            if len(payload) > room:
                log.warning(
                    "transcript of %s not sent: no cut of it fits collector.max_transcript_bytes (%d) beside its "
                    "%d-byte conversation id",
                    conv.conversation_id,
                    self._max_bytes,
                    key_bytes,
                )
                return
        self._send(score, sample, payload)

    def revision(self, score: ConversationScore) -> None:
        """Queue a later revision of a score whose conversation was sent for review."""
        sample = review_sample_of(score, self._evidence, self._failing)
        if sample is None:
            return
        record = TranscriptRecord(kind="revision", sample=sample, score=score, published_at=datetime.now(UTC))
        self._send(score, sample, record.model_dump_json().encode())

    def _send(self, score: ConversationScore, sample: Sample, payload: bytes) -> None:
        self._producer.send(
            self._topic, value=payload, key=score.conversation_id.encode(), headers=self._headers
        )
        self.published[sample] = self.published.get(sample, 0) + 1

    def _cut(self, record: TranscriptRecord, conv: Conversation, size: int, room: int) -> bytes:
        """The record's value with its transcript cut to `room` bytes (texts shortened, then turns left out)."""
        self.trimmed += 1
        log.warning(
            "transcript of %s is %d bytes, over the %d its record has room for (collector.max_transcript_bytes "
            "%d, less key and headers): cut for review",
            conv.conversation_id,
            size,
            room,
            self._max_bytes,
        )
        payload = b""
        for cap in _TEXT_CAPS:
            cut = shortened(conv, cap, size, self._max_bytes)
            payload = record.model_copy(update={"conversation": cut}).model_dump_json().encode()
            if len(payload) <= room:
                return payload
        turns = list(cut.turns)
        while turns and len(payload) > room:
            turns = turns[: len(turns) // 2]
            notes = [*cut.notes, f"review: only the first {len(turns)} of {len(conv.turns)} turns are kept"]
            smaller = cut.model_copy(update={"turns": turns, "notes": notes})
            payload = record.model_copy(update={"conversation": smaller}).model_dump_json().encode()
        return payload


def shortened(conv: Conversation, cap: int, size: int, limit: int) -> Conversation:
    """`conv` with every input, answer, argument and result longer than `cap` characters cut, and a note."""
    turns = []
    for turn in conv.turns:
        calls = [
            call.model_copy(
                update={"arguments": _cut_value(call.arguments, cap), "result": _cut_value(call.result, cap)}
            )
            for call in turn.tool_calls
        ]
        turns.append(
            turn.model_copy(
                update={
                    "input": _cut_text(turn.input, cap),
                    "answer": _cut_text(turn.answer, cap),
                    "tool_calls": calls,
                }
            )
        )
    note = (
        f"review: the transcript was {size:,} bytes, over the {limit:,}-byte limit of its record (key and "
        f"headers included); texts, arguments and "
        f"results longer than {cap:,} characters are cut"
    )
    return conv.model_copy(update={"turns": turns, "notes": [*conv.notes, note]})


def _cut_text(text: str | None, cap: int) -> str | None:
    if text is None or len(text) <= cap:
        return text
    return f"{text[:cap]}… [{len(text) - cap:,} characters cut]"


def _cut_value(value: Any, cap: int) -> Any:
    """A JSON value left as it is when its text is short, else its JSON text cut (a string)."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= cap:
        return value
    cut = _cut_text(text, cap)
    return {"cut": cut} if isinstance(value, dict) else cut
