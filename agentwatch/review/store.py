"""The review store: transcripts to review, their scores, the labels people saved, and the records to publish.

One SQL layer (SQLAlchemy Core) for an embedded SQLite file (the default) and a shared PostgreSQL database;
the tables are in `review.tables`. A label and the records it publishes (revised score, label record) are
written in one transaction to the outbox; a publisher sends the outbox and marks what Kafka acknowledged, so a
crash or a Kafka outage delays a revision, never loses it (and a record sent twice is a duplicate consumers
drop).

Revisions stay monotone: a label revises the latest score the store knows (`relabel`, revision + 1), under an
optimistic check on that revision; a revision made elsewhere (the collector, for a late feedback label) that
does not carry the reviewer's label is answered with the reviewer's label applied on top of it (revision + 1),
so the person's decision is the latest revision everywhere.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    and_,
    create_engine,
    delete,
    event,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.sql.elements import ColumnElement

from agentwatch import wire
from agentwatch.config import OutcomeCredits
from agentwatch.report.ordering import natural_key
from agentwatch.review.failing import (
    FailingItem,
    FailingQuery,
    ensure_failures_column,
    failing,
    failures_of,
    series_choices,
)
from agentwatch.review.rows import QueueItem
from agentwatch.review.tables import conversations, labels, metadata, outbox
from agentwatch.scorers.relabel import relabel
from agentwatch.wire.review_records import LabelRecord, TranscriptRecord
from agentwatch.wire.schema import Conversation, ConversationScore, Outcome

log = logging.getLogger(__name__)

# LabelRecord fields that are not columns of `review_labels` (they are on the conversation's row)
_NOT_IN_LABELS = {"format_version", "conversation_id", "agent", "version", "task", "labelled_at"}

OUTCOMES: tuple[str, ...] = ("complete", "partial_correct", "partial_incorrect", "hallucinated", "abandoned")

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


@dataclass(frozen=True, slots=True)
class Filters:
    """Queue filters; None matches everything."""

    agent: str | None = None
    version: str | None = None
    task: str | None = None


@dataclass(frozen=True, slots=True)
class Label:
    """A label as stored."""

    label_id: str
    reviewer: str
    labelled_at: float
    outcome: str
    note: str
    sample: str
    blind: bool
    revision: int | None


@dataclass(frozen=True, slots=True)
class Stored:
    """A conversation as stored: transcript JSON, first and latest score, labels oldest first."""

    id: int
    agent: str
    conversation_id: str
    sample: str
    at: float
    transcript: str | None
    first_score: ConversationScore
    latest_score: ConversationScore
    labels: list[Label]


@dataclass(frozen=True, slots=True)
class OutboxRecord:
    """A record waiting to be written to Kafka."""

    id: int
    topic: str
    key: bytes
    value: bytes


def engine_url(url: str) -> str:
    """The SQLAlchemy URL of a configured database URL (PostgreSQL through psycopg 3)."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


class Store:
    """The review store on `url` (`sqlite:///PATH` or `postgresql://…`); tables are created when missing."""

    def __init__(
        self,
        url: str,
        *,
        scores_topic: str = wire.SCORES_TOPIC,
        labels_topic: str | None = wire.LABELS_TOPIC,
        credits: OutcomeCredits | None = None,
    ) -> None:
        self.url = url
        self.credits = credits or OutcomeCredits()  # ASR credits of a relabelled score (scoring.credits)
        self.scores_topic = scores_topic
        self.labels_topic = labels_topic
        self.engine: Engine = create_engine(engine_url(url), pool_pre_ping=True)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        metadata.create_all(self.engine)
        ensure_failures_column(self.engine)

    def close(self) -> None:
        """Release the connections."""
        self.engine.dispose()

    # ------------------------------------------------------------------ ingest

    def ingest(
        self,
        record: TranscriptRecord,
        now: float,
        retention_s: float,
        failing_retention_s: float | None = None,
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
        with self.engine.begin() as c:
            query = select(t.id, t.latest_score, t.latest_revision, t.transcript)
            row = c.execute(
                query.where(t.agent == score.agent, t.conversation_id == score.conversation_id)
            ).one_or_none()
            if row is None:
                if record.conversation is None:
                    return UNKNOWN  # a revision of a conversation this store never held (or has deleted)
                conv = record.conversation
                payload = score.model_dump_json()
                first_input = next((t.input for t in conv.turns if t.input), "") or ""
                c.execute(
                    insert(conversations).values(
                        agent=score.agent,
                        conversation_id=score.conversation_id,
                        version=score.version,
                        task=score.task,
                        sample=record.sample,
                        at=at,
                        received_at=now,
                        turns=len(conv.turns),
                        preview=first_input[:200],
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
            latest = ConversationScore.model_validate_json(row.latest_score)
            return self._apply_revision(c, row.id, latest, score, now)

    def _apply_revision(
        self, c: Connection, row_id: int, latest: ConversationScore, incoming: ConversationScore, now: float
    ) -> str:
        """Take a score revision made elsewhere; answer it with the reviewer's label when it lacks it."""
        if incoming.revision < latest.revision or (
            incoming.revision == latest.revision and incoming.label == latest.label
        ):
            return DUPLICATE
        outcome = c.execute(
            select(labels.c.outcome)
            .where(labels.c.conversation == row_id)
            .order_by(labels.c.id.desc())
            .limit(1)
        ).scalar_one_or_none()
        answer = relabel(incoming, Outcome(outcome), self.credits) if outcome is not None else None
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
        self._queue_score(c, row_id, answer, payload, now)
        log.info(
            "revision %d of %s came without the reviewer's label %s: answered with revision %d",
            incoming.revision,
            incoming.conversation_id,
            outcome,
            answer.revision,
        )
        return ANSWERED

    # ------------------------------------------------------------------ the queue

    def _queue_where(self, filters: Filters) -> Any:
        t = conversations.c
        # failing conversations are listed with their series (`failing`), not queued: not a sample to label
        clauses: list[ColumnElement[bool]] = [t.labelled.is_(False), t.sample != wire.FAILING]
        for column, value in ((t.agent, filters.agent), (t.version, filters.version), (t.task, filters.task)):
            if value:
                clauses.append(column == value)
        return and_(*clauses)

    def queue(
        self, filters: Filters = Filters(), limit: int = 100, offset: int = 0
    ) -> tuple[list[QueueItem], int]:
        """Unlabelled conversations, oldest first, and how many there are in all."""
        t = conversations.c
        where = self._queue_where(filters)
        with self.engine.connect() as c:
            total = c.execute(select(func.count()).select_from(conversations).where(where)).scalar_one()
            rows = c.execute(
                select(t.id, t.agent, t.version, t.task, t.sample, t.at, t.turns, t.preview)
                .where(where)
                .order_by(t.at, t.id)
                .limit(limit)
                .offset(offset)
            ).all()
        return [QueueItem(*row) for row in rows], int(total)

    def choices(self) -> dict[str, list[str]]:
        """The agents, versions and tasks of the conversations in the queue (for the filters; numbers in
        their order: task 2 before task 10)."""
        t = conversations.c
        out: dict[str, list[str]] = {}
        queued = (t.labelled.is_(False), t.sample != wire.FAILING)
        with self.engine.connect() as c:
            for name, column in (("agent", t.agent), ("version", t.version), ("task", t.task)):
                query = select(column).where(*queued).distinct()
                out[name] = sorted(c.execute(query).scalars(), key=natural_key)
        return out

    def failing(
        self, query: FailingQuery, limit: int = 100, offset: int = 0
    ) -> tuple[list[FailingItem], int]:
        """The failing conversations of a series in a window, the latest first, and how many in all."""
        return failing(self.engine, query, limit, offset)

    def failing_choices(self) -> dict[str, list[str]]:
        """The agents, versions and tasks that have failing conversations held (numbers in their order)."""
        return {k: sorted(v, key=natural_key) for k, v in series_choices(self.engine).items()}

    def neighbours(self, row_id: int, filters: Filters = Filters()) -> tuple[int | None, int | None]:
        """The unlabelled conversations before and after `row_id` in queue order (previous, next)."""
        t = conversations.c
        with self.engine.connect() as c:
            at = c.execute(select(t.at).where(t.id == row_id)).scalar_one_or_none()
            if at is None:
                return None, None
            where = self._queue_where(filters)
            before = or_(t.at < at, and_(t.at == at, t.id < row_id))
            after = or_(t.at > at, and_(t.at == at, t.id > row_id))
            prev = c.execute(select(t.id).where(where, before).order_by(t.at.desc(), t.id.desc()).limit(1))
            nxt = c.execute(select(t.id).where(where, after).order_by(t.at, t.id).limit(1))
            return prev.scalar_one_or_none(), nxt.scalar_one_or_none()

    def queue_sizes(self) -> list[tuple[str, str, str, str, int]]:
        """(agent, version, task, sample, unlabelled conversations), for the queue-size gauge."""
        t = conversations.c
        with self.engine.connect() as c:
            series = (t.agent, t.version, t.task, t.sample)
            queued = (t.labelled.is_(False), t.sample != wire.FAILING)
            query = select(*series, func.count()).where(*queued).group_by(*series)
            rows = c.execute(query).all()
        return [(a, v, k, s, int(n)) for a, v, k, s, n in rows]

    def get(self, row_id: int) -> Stored | None:
        """A stored conversation with its labels, or None."""
        t = conversations.c
        with self.engine.connect() as c:
            row = c.execute(
                select(
                    t.id,
                    t.agent,
                    t.conversation_id,
                    t.sample,
                    t.at,
                    t.transcript,
                    t.first_score,
                    t.latest_score,
                ).where(t.id == row_id)
            ).one_or_none()
            if row is None:
                return None
            x = labels.c
            fields = (x.label_id, x.reviewer, x.labelled_at, x.outcome, x.note, x.sample, x.blind, x.revision)
            found = c.execute(select(*fields).where(x.conversation == row_id).order_by(x.id)).all()
        return Stored(
            row.id,
            row.agent,
            row.conversation_id,
            row.sample,
            row.at,
            row.transcript,
            ConversationScore.model_validate_json(row.first_score),
            ConversationScore.model_validate_json(row.latest_score),
            [Label(*r) for r in found],
        )

    # ------------------------------------------------------------------ labels

    def save_label(
        self, row_id: int, reviewer: str, outcome: Outcome, note: str, blind: bool, now: float
    ) -> LabelRecord:
        """Save a label and queue what it publishes (revised score, label record) in one transaction."""
        # Each round one of the concurrent savers wins, so a saver retries at most once per other saver.
        for _ in range(50):
            try:
                return self._save_label(row_id, reviewer, outcome, note, blind, now)
            except RevisionConflict:
                log.info("revision of conversation row %d changed while saving a label; trying again", row_id)
        raise RevisionConflict(f"conversation row {row_id}: the revision kept changing")

    def _save_label(
        self, row_id: int, reviewer: str, outcome: Outcome, note: str, blind: bool, now: float
    ) -> LabelRecord:
        t = conversations.c
        with self.engine.begin() as c:
            # FOR UPDATE: on PostgreSQL concurrent savers of one conversation wait for each other instead of
            # conflicting (SQLite writes one at a time; there the revision check below decides).
            row = c.execute(
                select(t.sample, t.first_score, t.latest_score, t.latest_revision)
                .where(t.id == row_id)
                .with_for_update()
            ).one_or_none()
            if row is None:
                raise KeyError(row_id)
            first = ConversationScore.model_validate_json(row.first_score)
            revised = relabel(ConversationScore.model_validate_json(row.latest_score), outcome, self.credits)
            values: dict[str, Any] = {"labelled": True}
            if revised is not None:
                values.update(
                    latest_score=revised.model_dump_json(),
                    latest_revision=revised.revision,
                    failures=failures_of(revised),
                )
            unchanged = (t.id == row_id) & (t.latest_revision == row.latest_revision)
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
            stored = record.model_dump(mode="json", exclude=_NOT_IN_LABELS)
            c.execute(insert(labels).values(conversation=row_id, labelled_at=now, **stored))
            if revised is not None:
                self._queue_score(c, row_id, revised, revised.model_dump_json(), now)
            if self.labels_topic:
                c.execute(
                    insert(outbox).values(
                        conversation=row_id,
                        topic=self.labels_topic,
                        key=first.conversation_id.encode(),
                        value=record.model_dump_json().encode(),
                        created_at=now,
                    )
                )
        return record

    def _queue_score(
        self, c: Connection, row_id: int, score: ConversationScore, payload: str, now: float
    ) -> None:
        c.execute(
            insert(outbox).values(
                conversation=row_id,
                topic=self.scores_topic,
                key=wire.score_key(score.agent, score.version, score.task),
                value=payload.encode(),
                created_at=now,
            )
        )

    def blind_labels(self, limit: int | None = None) -> list[tuple[Conversation, Outcome]]:
        """Conversations held with their transcript and a blind label (the latest one of each), most recently
        labelled first: the candidates of an anchor set (`agentwatch judge anchors freeze`)."""
        t, x = conversations.c, labels.c
        query = (
            select(t.id, t.transcript, x.outcome)
            .join(conversations, x.conversation == t.id)
            .where(x.blind.is_(True), t.transcript.is_not(None))
            .order_by(x.id.desc())
        )
        out: list[tuple[Conversation, Outcome]] = []
        seen: set[int] = set()
        with self.engine.connect() as c:
            for row_id, transcript, outcome in c.execute(query):
                if row_id in seen:
                    continue
                seen.add(row_id)
                out.append((Conversation.model_validate_json(transcript), Outcome(outcome)))
                if limit is not None and len(out) >= limit:
                    break
        return out

    def judge_pairs(self) -> list[tuple[str, str, str, str, int]]:
        """(judge, sample, the person's outcome, the judge's outcome, labels) over the labels of conversations
        a judge graded (its outcome known), for the agreement gauges."""
        x = labels.c
        keys = (x.judge, x.sample, x.outcome, x.judge_outcome)
        graded = (x.judge.is_not(None), x.judge_outcome.is_not(None))
        query = select(*keys, func.count()).where(*graded).group_by(*keys)
        with self.engine.connect() as c:
            rows = c.execute(query).all()
        return [(j, s, o, jo, int(n)) for j, s, o, jo, n in rows]

    def labels_of(self, since: float = 0.0) -> Iterator[dict[str, Any]]:
        """Every label saved at or after `since` (Unix seconds), with its judge fields, oldest first."""
        with self.engine.connect() as c:
            for row in c.execute(select(labels).where(labels.c.labelled_at >= since).order_by(labels.c.id)):
                yield dict(row._mapping)

    # ------------------------------------------------------------------ the outbox

    def unsent(self, limit: int = 500) -> list[OutboxRecord]:
        """Records not yet acknowledged by Kafka, oldest first."""
        o = outbox.c
        with self.engine.connect() as c:
            rows = c.execute(
                select(o.id, o.topic, o.key, o.value).where(o.sent_at.is_(None)).order_by(o.id).limit(limit)
            ).all()
        return [OutboxRecord(r.id, r.topic, bytes(r.key), bytes(r.value)) for r in rows]

    def mark_sent(self, ids: list[int], now: float) -> None:
        """Note that Kafka acknowledged the records `ids`."""
        if ids:
            with self.engine.begin() as c:
                c.execute(update(outbox).where(outbox.c.id.in_(ids)).values(sent_at=now))

    def pending(self) -> int:
        """Records waiting for Kafka."""
        with self.engine.connect() as c:
            query = select(func.count()).select_from(outbox).where(outbox.c.sent_at.is_(None))
            return int(c.execute(query).scalar_one())

    # ------------------------------------------------------------------ retention

    def expire(self, now: float, retention_s: float, failing_retention_s: float | None = None) -> int:
        """Delete conversations older than `retention_s` (those held only because they failed, unlabelled,
        older than `failing_retention_s`), their labels, and sent outbox records; how many conversations.
        Unsent records stay until Kafka has them."""
        cutoff = now - retention_s
        t = conversations.c
        old_rows = t.at < cutoff
        if failing_retention_s is not None:
            listed_only = and_(
                t.sample == wire.FAILING, t.labelled.is_(False), t.at < now - failing_retention_s
            )
            old_rows = or_(old_rows, listed_only)
        with self.engine.begin() as c:
            old = select(t.id).where(old_rows).scalar_subquery()
            c.execute(delete(labels).where(labels.c.conversation.in_(old)))
            gone = c.execute(delete(conversations).where(old_rows)).rowcount
            c.execute(delete(outbox).where(outbox.c.sent_at.is_not(None), outbox.c.sent_at < cutoff))
        return int(gone or 0)

    def counts(self) -> dict[str, int]:
        """Conversations stored, labelled, labels, and records waiting for Kafka."""
        t = conversations.c
        with self.engine.connect() as c:
            stored = c.execute(select(func.count()).select_from(conversations)).scalar_one()
            labelled = c.execute(
                select(func.count()).select_from(conversations).where(t.labelled.is_(True))
            ).scalar_one()
            saved = c.execute(select(func.count()).select_from(labels)).scalar_one()
        return {
            "conversations": int(stored),
            "labelled": int(labelled),
            "labels": int(saved),
            "pending": self.pending(),
        }


def _epoch(value: datetime) -> float:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """WAL (pages read while the consumer writes) and a busy timeout instead of 'database is locked'."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()
