"""What changes a conversation's latest score in the review store: a record taken from Kafka (`ingest`) and a
label a person saves (`save_label`). Each writes the records it publishes to the outbox in its own transaction.

Revisions stay monotone: a label revises the latest score the store knows (`relabel`, revision + 1), under an
optimistic check on that revision; a revision made elsewhere (the collector, for a late feedback label) that
does not carry the reviewer's label is answered with the reviewer's label applied on top of it (revision + 1),
so the person's decision is the latest revision everywhere.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection, Engine

from agentwatch import wire
from agentwatch.config import OutcomeCredits
from agentwatch.review.failing import failures_of
from agentwatch.review.outbox import enqueue
from agentwatch.review.tables import conversations, fitted, labels, storable
from agentwatch.scorers.relabel import relabel
from agentwatch.wire.json_text import model_from_json
from agentwatch.wire.review_records import LabelRecord, TranscriptRecord
from agentwatch.wire.schema import ConversationScore, Outcome

log = logging.getLogger(__name__)

# LabelRecord fields that are not columns of `review_labels` (they are on the conversation's row)
_NOT_IN_LABELS = {"format_version", "conversation_id", "agent", "version", "task", "labelled_at"}

# what `ingest` did with a record
STORED, DUPLICATE, REVISED, ANSWERED, UNKNOWN, EXPIRED = (
    "stored",
    "duplicate",
    "revised",
    "answered",
    "unknown",
    "expired",
)


class RevisionConflict(RuntimeError):
    """The latest revision changed while a label was being saved; the caller tries again."""


# ---------------------------------------------------------------------- records from Kafka


def ingest(
    engine: Engine,
    record: TranscriptRecord,
    now: float,
    retention_s: float,
    failing_retention_s: float | None,
    *,
    scores_topic: str,
    credits: OutcomeCredits,
) -> str:
    """Store a transcript record, or apply a revision record; what was done (STORED, DUPLICATE, …). A
    conversation held only because it failed expires after `failing_retention_s` (when given)."""
    score = record.score
    at = _epoch(score.ended_at) if score.ended_at is not None else now
    if record.sample == wire.FAILING and failing_retention_s is not None:
        retention_s = min(retention_s, failing_retention_s)
    if at < now - retention_s:
        return EXPIRED
    t = conversations.c
    agent, conversation_id = fitted(t.agent, score.agent), fitted(t.conversation_id, score.conversation_id)
    with engine.begin() as c:
        query = select(t.id, t.latest_score, t.latest_revision, t.transcript)
        row = c.execute(query.where(t.agent == agent, t.conversation_id == conversation_id)).one_or_none()
        if row is None:
            if record.conversation is None:
                return UNKNOWN  # a revision of a conversation this store never held (or has deleted)
            conv = record.conversation
            payload = score.model_dump_json()
            first_input = next((t.input for t in conv.turns if t.input), "") or ""
            c.execute(
                insert(conversations).values(
                    agent=agent,
                    conversation_id=conversation_id,
                    version=fitted(t.version, score.version),
                    task=fitted(t.task, score.task),
                    sample=record.sample,
                    at=at,
                    received_at=now,
                    turns=len(conv.turns),
                    preview=fitted(t.preview, first_input[:200]),
                    transcript=conv.model_dump_json(),
                    first_score=payload,
                    latest_score=payload,
                    latest_revision=score.revision,
                    labelled=False,
                    failures=failures_of(score),
                )
            )
            return STORED
        if row.transcript is None and record.conversation is not None:
            c.execute(
                update(conversations)
                .where(t.id == row.id)
                .values(transcript=record.conversation.model_dump_json())
            )
        latest = model_from_json(ConversationScore, row.latest_score)
        return _apply_revision(c, row.id, latest, score, now, scores_topic, credits)


def _apply_revision(
    c: Connection,
    row_id: int,
    latest: ConversationScore,
    incoming: ConversationScore,
    now: float,
    scores_topic: str,
    credits: OutcomeCredits,
) -> str:
    """Take a score revision made elsewhere; answer it with the reviewer's label when it lacks it."""
    if incoming.revision < latest.revision or (
        incoming.revision == latest.revision and incoming.label == latest.label
    ):
        return DUPLICATE
    outcome = c.execute(
        select(labels.c.outcome).where(labels.c.conversation == row_id).order_by(labels.c.id.desc()).limit(1)
    ).scalar_one_or_none()
    answer = relabel(incoming, Outcome(outcome), credits) if outcome is not None else None
    if answer is None:
        if incoming.revision > latest.revision:
            c.execute(
                update(conversations)
                .where(conversations.c.id == row_id)
                .values(
                    latest_score=incoming.model_dump_json(),
                    latest_revision=incoming.revision,
                    failures=failures_of(incoming),
                )
            )
            return REVISED
        return DUPLICATE
    answer = answer.model_copy(update={"revision": max(incoming.revision, latest.revision) + 1})
    payload = answer.model_dump_json()
    c.execute(
        update(conversations)
        .where(conversations.c.id == row_id)
        .values(latest_score=payload, latest_revision=answer.revision, failures=failures_of(answer))
    )
    _queue_score(c, row_id, scores_topic, answer, payload, now)
    log.info(
        "revision %d of %s came without the reviewer's label %s: answered with revision %d",
        incoming.revision,
        incoming.conversation_id,
        outcome,
        answer.revision,
    )
    return ANSWERED


# ---------------------------------------------------------------------- labels people save


def save_label_once(
    engine: Engine,
    row_id: int,
    reviewer: str,
    outcome: Outcome,
    note: str,
    blind: bool,
    now: float,
    *,
    scores_topic: str,
    labels_topic: str | None,
    credits: OutcomeCredits,
) -> LabelRecord:
    """Save a label and queue what it publishes (revised score, label record) in one transaction; raises
    RevisionConflict when the latest revision or whether it was labelled changed meanwhile (the caller tries
    again). `blind` is what the page says of its reader; the label is blind only if the conversation was also
    not held for its failure (its page says why at once) and had no label yet (decided here, so that of two
    labels saved at once one is blind)."""
    t = conversations.c
    with engine.begin() as c:
        # FOR UPDATE: on PostgreSQL concurrent savers of one conversation wait for each other instead of
        # conflicting (SQLite writes one at a time; there the checks of the update below decide).
        row = c.execute(
            select(t.sample, t.first_score, t.latest_score, t.latest_revision, t.labelled)
            .where(t.id == row_id)
            .with_for_update()
        ).one_or_none()
        if row is None:
            raise KeyError(row_id)
        first = model_from_json(ConversationScore, row.first_score)
        again = _same_label_again(c, row_id, reviewer, outcome, note)
        if again is not None:  # the form sent twice (its answer lost, a double click): saved once
            return LabelRecord.of(
                first,
                outcome,
                note=note,
                reviewer=reviewer,
                labelled_at=datetime.fromtimestamp(again.labelled_at, UTC),
                sample=again.sample,
                blind=again.blind,
                revision=again.revision,
                label_id=again.label_id,
            )
        blind = blind and row.sample != wire.FAILING and not row.labelled
        revised = relabel(model_from_json(ConversationScore, row.latest_score), outcome, credits)
        values: dict[str, Any] = {"labelled": True}
        if revised is not None:
            values.update(
                latest_score=revised.model_dump_json(),
                latest_revision=revised.revision,
                failures=failures_of(revised),
            )
        unchanged = (
            (t.id == row_id) & (t.latest_revision == row.latest_revision) & (t.labelled == row.labelled)
        )
        done = c.execute(update(conversations).where(unchanged).values(**values))
        if done.rowcount != 1:
            raise RevisionConflict(str(row_id))
        record = LabelRecord.of(
            first,
            outcome,
            note=note,
            reviewer=reviewer,
            labelled_at=datetime.fromtimestamp(now, UTC),
            sample=row.sample,
            blind=blind,
            revision=revised.revision if revised is not None else None,
            label_id=str(uuid.uuid4()),
        )
        # the record keeps every value as it was; the row what the database holds (a judge id past its column,
        # NUL in a note or a judge's explanation, which PostgreSQL refuses in text)
        stored = storable(labels, record.model_dump(mode="json", exclude=_NOT_IN_LABELS))
        c.execute(insert(labels).values(conversation=row_id, labelled_at=now, **stored))
        if revised is not None:
            _queue_score(c, row_id, scores_topic, revised, revised.model_dump_json(), now)
        if labels_topic:
            value = record.model_dump_json().encode()
            enqueue(c, row_id, labels_topic, first.conversation_id.encode(), value, now)
    return record


def _same_label_again(c: Connection, row_id: int, reviewer: str, outcome: Outcome, note: str) -> Any:
    """The conversation's latest label when it is this reviewer's with this outcome and note, else None.

    Saving it again would add nothing but a second record — one no longer blind, published again — as when a
    label's answer was lost after its commit and the reviewer sent the form once more."""
    x = labels.c
    last = c.execute(
        select(x.reviewer, x.outcome, x.note, x.labelled_at, x.sample, x.blind, x.revision, x.label_id)
        .where(x.conversation == row_id)
        .order_by(x.id.desc())
        .limit(1)
    ).one_or_none()
    stored = storable(labels, {"reviewer": reviewer, "note": note})  # as the row would hold them
    if (
        last is None
        or last.outcome != outcome.value
        or (last.reviewer, last.note) != (stored["reviewer"], stored["note"])
    ):
        return None
    return last


def _queue_score(
    c: Connection, row_id: int, topic: str, score: ConversationScore, payload: str, now: float
) -> None:
    enqueue(c, row_id, topic, wire.score_key(score.agent, score.version, score.task), payload.encode(), now)


def _epoch(value: datetime) -> float:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()
