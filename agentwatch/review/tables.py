"""The review store's tables (SQLAlchemy Core): one schema for SQLite and PostgreSQL, created when missing.

- `review_conversations`: one row per (agent, conversation id): the transcript, the first score, the latest
  score known (revision), why it is held (`review_sample`, `flagged`, `evidence`, or `failing`: listed, not
  queued), whether it is labelled, and why its latest score failed (`failures`).
- `review_labels`: every label saved (who, when, outcome class, note, blind or not), with the judge's verdict,
  score and explanation and the first score's outcome beside it, and the revision it published.
- `review_outbox`: records to write to Kafka (revised scores, label records), marked once Kafka has them.
- `review_sessions`: the signed-in sessions (`review.sessions`).
"""

from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    select,
)
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

metadata = MetaData()

# Row ids are 64-bit: PostgreSQL's INTEGER (and the sequence SERIAL gives it) stops at 2**31 - 1, which a store
# keeping every failing conversation of a busy fleet reaches in weeks, ids of deleted rows never coming back.
# SQLite's INTEGER PRIMARY KEY is 64-bit already, and only that spelling numbers rows by itself.
ROW_ID = BigInteger().with_variant(Integer(), "sqlite")
MAX_ROW_ID = 2**63 - 1
FAILURES_LENGTH = 160  # conversations.failures: the words of why a conversation failed (review.failing)

conversations = Table(
    "review_conversations",
    metadata,
    Column("id", ROW_ID, primary_key=True, autoincrement=True),
    Column("agent", String(256), nullable=False),
    Column("conversation_id", String(512), nullable=False),
    Column("version", String(256), nullable=False),
    Column("task", String(256), nullable=False),
    Column("sample", String(16), nullable=False),
    Column("at", Float, nullable=False),  # end time (else arrival), Unix seconds: queue order and retention
    Column("received_at", Float, nullable=False),
    Column("turns", Integer, nullable=False),
    Column("preview", String(200), nullable=False),  # the first input, for the queue
    Column("transcript", Text, nullable=True),  # Conversation JSON
    Column("first_score", Text, nullable=False),
    Column("latest_score", Text, nullable=False),
    Column("latest_revision", Integer, nullable=False),
    Column("labelled", Boolean, nullable=False),
    # why the latest score failed, words between spaces (' failed error '), '' when it did not (review.failing)
    Column("failures", String(FAILURES_LENGTH), nullable=True),
    UniqueConstraint("agent", "conversation_id", name="uq_review_conversation"),
    Index("ix_review_queue", "labelled", "at", "id"),
    Index("ix_review_failing", "agent", "version", "task", "at"),
)

labels = Table(
    "review_labels",
    metadata,
    Column("id", ROW_ID, primary_key=True, autoincrement=True),
    Column("conversation", ROW_ID, ForeignKey("review_conversations.id"), nullable=False, index=True),
    Column("label_id", String(36), nullable=False, unique=True),
    Column("reviewer", String(64), nullable=False),
    Column("labelled_at", Float, nullable=False),
    Column("outcome", String(32), nullable=False),
    Column("note", Text, nullable=False),
    Column("sample", String(16), nullable=False),
    Column("blind", Boolean, nullable=False),
    Column("judge", String(256), nullable=True),
    Column("judge_outcome", String(32), nullable=True),
    Column("judge_score", Float, nullable=True),
    Column("judge_explanation", Text, nullable=True),
    Column("first_outcome", String(32), nullable=False),
    Column("first_outcome_source", String(16), nullable=False),
    Column("first_passed", Boolean, nullable=True),
    Column("revision", Integer, nullable=True),
)

outbox = Table(
    "review_outbox",
    metadata,
    Column("id", ROW_ID, primary_key=True, autoincrement=True),
    Column("conversation", ROW_ID, nullable=True),
    Column("topic", String(256), nullable=False),
    Column("key", LargeBinary, nullable=False),
    Column("value", LargeBinary, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("sent_at", Float, nullable=True),
    Index("ix_review_outbox_unsent", "sent_at", "id"),
)

# Server-side sessions of signed-in reviewers: the cookie carries a random token, the table its SHA-256. Signing
# out deletes the row, so a copied cookie stops working; rows past their expiry are refused and deleted.
sessions = Table(
    "review_sessions",
    metadata,
    Column("id", String(64), primary_key=True),  # hex SHA-256 of the session token
    Column("reviewer", String(64), nullable=False, index=True),
    Column("created_at", Float, nullable=False),
    Column("last_seen", Float, nullable=False),
    Column("expires_at", Float, nullable=False, index=True),
)


def fitted(column: Column[Any], value: str) -> str:
    """`value` as a text column of limited length holds it in every database: NUL (which PostgreSQL refuses in
    text) as U+FFFD, and a value longer than the column cut, ending in a hash of the whole so that two long values
    stay two keys. Values that fit and hold no NUL are themselves."""
    text = value.replace("\x00", "\ufffd")
    size = column.type.length if isinstance(column.type, String) else None
    if size is None or len(text) <= size:
        return text
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{text[: size - 17]}~{digest}"


def storable(table: Table, values: dict[str, Any]) -> dict[str, Any]:
    """`values` of a row of `table` as its text columns hold them in every database (`fitted`)."""
    return {
        key: fitted(table.c[key], value) if isinstance(value, str) else value for key, value in values.items()
    }


# Values a page's agent, version or task filter lists at most (the first in the column's order; the one chosen is
# shown too): a name comes from span attributes, so a producer writing a new one with every conversation made each
# page view read, and list, every name the store held for review.retention_days.
MAX_CHOICES = 1_000


def filter_values(c: Connection, column: Column[str], *where: ColumnElement[bool]) -> list[str]:
    """The distinct values of `column` in the rows matching `where`, the first `MAX_CHOICES` in its order."""
    return list(
        c.execute(select(column).where(*where).distinct().order_by(column).limit(MAX_CHOICES)).scalars()
    )


def same_series(agent: str | None, version: str | None, task: str | None) -> list[ColumnElement[bool]]:
    """Conditions on the conversations' agent, version and task (None or "" matches any), each value compared
    as it was stored (`fitted`): a filter holding NUL or longer than its column finds the rows stored from it."""
    t = conversations.c
    pairs = ((t.agent, agent), (t.version, version), (t.task, task))
    return [column == fitted(column, value) for column, value in pairs if value]
