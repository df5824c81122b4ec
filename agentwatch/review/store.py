"""The review store: transcripts to review, their scores, the labels people saved, and the records to publish.

One SQL layer (SQLAlchemy Core) for an embedded SQLite file (the default) and a shared PostgreSQL database;
the tables are in `review.tables`. A label and the records it publishes (revised score, label record) are
written in one transaction to the outbox; a publisher sends the outbox and marks what Kafka acknowledged, so a
crash or a Kafka outage delays a revision, never loses it (and a record sent twice is a duplicate consumers
drop).

`Store` opens the database, expires and counts; what it writes is in `review.revisions` (records taken in,
labels saved, revisions kept monotone), what it reads in `review.queries` and `review.failing`, and the records
to publish in `review.outbox`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from sqlalchemy import and_, create_engine, delete, event, false, func, or_, select
from sqlalchemy.engine import Engine, make_url

from agentwatch import wire
from agentwatch.config import OutcomeCredits
from agentwatch.report.ordering import natural_key
from agentwatch.review import outbox as outbox_records
from agentwatch.review import queries, revisions
from agentwatch.review.failing import (
    FailingItem,
    FailingQuery,
    ensure_failures_column,
    failing,
    series_choices,
)
from agentwatch.review.outbox import OutboxRecord
from agentwatch.review.queries import NO_FILTERS, Filters, Stored
from agentwatch.review.revisions import RevisionConflict
from agentwatch.review.rows import QueueItem
from agentwatch.review.tables import conversations, labels, metadata, outbox
from agentwatch.review.wide_ids import widen_row_ids
from agentwatch.wire.review_records import LabelRecord, TranscriptRecord
from agentwatch.wire.schema import Conversation, Outcome

log = logging.getLogger(__name__)


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
        widen_row_ids(self.engine)
        ensure_failures_column(self.engine)
        with self.engine.begin() as c:  # a write that changes nothing: a read-only store fails here, at start
            c.execute(delete(outbox).where(false()))

    def close(self) -> None:
        """Release the connections."""
        self.engine.dispose()

    # ------------------------------------------------------------------ writing (review.revisions)

    def ingest(
        self,
        record: TranscriptRecord,
        now: float,
        retention_s: float,
        failing_retention_s: float | None = None,
    ) -> str:
        """Store a transcript record, or apply a revision record; what was done (STORED, DUPLICATE, …). A
        conversation held only because it failed expires after `failing_retention_s` (when given)."""
        return revisions.ingest(
            self.engine,
            record,
            now,
            retention_s,
            failing_retention_s,
            scores_topic=self.scores_topic,
            credits=self.credits,
        )

    def save_label(
        self, row_id: int, reviewer: str, outcome: Outcome, note: str, blind: bool, now: float
    ) -> LabelRecord:
        """Save a label and queue what it publishes (revised score, label record) in one transaction."""
        # Each round one of the concurrent savers wins, so a saver retries at most once per other saver.
        for _ in range(50):
            try:
                return revisions.save_label_once(
                    self.engine,
                    row_id,
                    reviewer,
                    outcome,
                    note,
                    blind,
                    now,
                    scores_topic=self.scores_topic,
                    labels_topic=self.labels_topic,
                    credits=self.credits,
                )
            except RevisionConflict:
                log.info("revision of conversation row %d changed while saving a label; trying again", row_id)
        raise RevisionConflict(f"conversation row {row_id}: the revision kept changing")

    # ------------------------------------------------------------------ the queue (review.queries)

    def queue(
        self, filters: Filters = NO_FILTERS, limit: int = 100, offset: int = 0
    ) -> tuple[list[QueueItem], int]:
        """Unlabelled conversations, oldest first, and how many there are in all."""
        return queries.queue(self.engine, filters, limit, offset)

    def choices(self) -> dict[str, list[str]]:
        """The agents, versions and tasks of the conversations in the queue (for the filters; numbers in
        their order: task 2 before task 10)."""
        return queries.choices(self.engine)

    def failing(
        self, query: FailingQuery, limit: int = 100, offset: int = 0
    ) -> tuple[list[FailingItem], int]:
        """The failing conversations of a series in a window, the latest first, and how many in all."""
        return failing(self.engine, query, limit, offset)

    def failing_choices(self) -> dict[str, list[str]]:
        """The agents, versions and tasks that have failing conversations held (numbers in their order)."""
        return {k: sorted(v, key=natural_key) for k, v in series_choices(self.engine).items()}

    def neighbours(self, row_id: int, filters: Filters = NO_FILTERS) -> tuple[int | None, int | None]:
        """The unlabelled conversations before and after `row_id` in queue order (previous, next)."""
        return queries.neighbours(self.engine, row_id, filters)

    def queue_sizes(self) -> list[tuple[str, str, str, str, int]]:
        """(agent, version, task, sample, unlabelled conversations), for the queue-size gauge."""
        return queries.queue_sizes(self.engine)

    def get(self, row_id: int) -> Stored | None:
        """A stored conversation with its labels, or None."""
        return queries.get(self.engine, row_id)

    # ------------------------------------------------------------------ labels read back (review.queries)

    def blind_labels(self, limit: int | None = None) -> list[tuple[Conversation, Outcome]]:
        """Conversations held with their transcript and a blind label (the latest one of each), most recently
        labelled first: the candidates of an anchor set (`agentwatch judge anchors freeze`)."""
        return queries.blind_labels(self.engine, limit)

    def judge_pairs(self) -> list[tuple[str, str, str, str, int]]:
        """(judge, sample, the person's outcome, the judge's outcome, labels) over the labels of conversations
        a judge graded (its outcome known), for the agreement gauges."""
        return queries.judge_pairs(self.engine)

    def labels_of(self, since: float = 0.0) -> Iterator[dict[str, Any]]:
        """Every label saved at or after `since` (Unix seconds), with its judge fields, oldest first."""
        return queries.labels_of(self.engine, since)

    # ------------------------------------------------------------------ the outbox (review.outbox)

    def unsent(self, limit: int = 500) -> list[OutboxRecord]:
        """Records not yet acknowledged by Kafka, oldest first."""
        return outbox_records.unsent(self.engine, limit)

    def mark_sent(self, ids: list[int], now: float) -> None:
        """Note that Kafka acknowledged the records `ids`."""
        outbox_records.mark_sent(self.engine, ids, now)

    def pending(self) -> int:
        """Records waiting for Kafka."""
        return outbox_records.pending(self.engine)

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


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """WAL (pages read while the consumer writes) and a busy timeout instead of 'database is locked'."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()
