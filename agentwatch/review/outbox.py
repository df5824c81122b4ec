"""The review store's outbox: records a label or a revision publishes, held until Kafka acknowledges them.

A record is written in the transaction of what it publishes (`enqueue`); the publisher reads what is unsent,
sends it and marks what Kafka acknowledged, so a crash or a Kafka outage delays a record, never loses it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import Connection, Engine

from agentwatch.review.tables import outbox


@dataclass(frozen=True, slots=True)
class OutboxRecord:
    """A record waiting to be written to Kafka."""

    id: int
    topic: str
    key: bytes
    value: bytes


def enqueue(c: Connection, row_id: int, topic: str, key: bytes, value: bytes, now: float) -> None:
    """Add a record of conversation row `row_id` to the outbox, in the caller's transaction `c`."""
    c.execute(insert(outbox).values(conversation=row_id, topic=topic, key=key, value=value, created_at=now))


def unsent(engine: Engine, limit: int = 500) -> list[OutboxRecord]:
    """Records not yet acknowledged by Kafka, oldest first."""
    o = outbox.c
    with engine.connect() as c:
        rows = c.execute(
            select(o.id, o.topic, o.key, o.value).where(o.sent_at.is_(None)).order_by(o.id).limit(limit)
        ).all()
    return [OutboxRecord(r.id, r.topic, bytes(r.key), bytes(r.value)) for r in rows]


def mark_sent(engine: Engine, ids: list[int], now: float) -> None:
    """Note that Kafka acknowledged the records `ids`."""
    if ids:
        with engine.begin() as c:
            c.execute(update(outbox).where(outbox.c.id.in_(ids)).values(sent_at=now))


def pending(engine: Engine) -> int:
    """Records waiting for Kafka."""
    with engine.connect() as c:
        query = select(func.count()).select_from(outbox).where(outbox.c.sent_at.is_(None))
        return int(c.execute(query).scalar_one())
