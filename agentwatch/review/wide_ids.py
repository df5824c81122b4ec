"""64-bit row ids in a PostgreSQL review store made when they were 32-bit: widened once, at start.

A store made before `review.tables.ROW_ID` numbered its rows with INTEGER columns and SERIAL sequences, which
stop at 2**31 - 1: inserts then fail ("nextval: reached maximum value of sequence") and the review service can
take in nothing more. Widening rewrites each table under an exclusive lock, once; the ids stay what they were.
SQLite's row ids are 64-bit already.
"""

from __future__ import annotations

import logging

from sqlalchemy import BigInteger, Table, inspect, text
from sqlalchemy.engine import Engine

from agentwatch.review.tables import conversations, labels, outbox

log = logging.getLogger(__name__)

# referencing columns first: each is widened before the key it refers to
_ID_COLUMNS: tuple[tuple[Table, str], ...] = (
    (labels, "conversation"),
    (outbox, "conversation"),
    (conversations, "id"),
    (labels, "id"),
    (outbox, "id"),
)


def narrow_id_columns(engine: Engine) -> list[tuple[Table, str]]:
    """The row id columns of the store that are not 64-bit (none outside PostgreSQL)."""
    if engine.dialect.name != "postgresql":
        return []
    inspector = inspect(engine)
    kinds: dict[tuple[str, str], object] = {}
    for table in {t for t, _ in _ID_COLUMNS}:
        for column in inspector.get_columns(table.name):
            kinds[(table.name, column["name"])] = column["type"]
    return [
        (table, name)
        for table, name in _ID_COLUMNS
        if (table.name, name) in kinds and not isinstance(kinds[(table.name, name)], BigInteger)
    ]


def widen_row_ids(engine: Engine) -> None:
    """Make every row id column, and the sequence numbering it, 64-bit where a store made them 32-bit."""
    narrow = narrow_id_columns(engine)
    if not narrow:
        return
    log.warning(
        "review store: widening %d row id columns to BIGINT (%s); each table is rewritten once, locked meanwhile",
        len(narrow),
        ", ".join(f"{t.name}.{c}" for t, c in narrow),
    )
    with engine.begin() as c:
        for table, name in narrow:
            c.execute(text(f"ALTER TABLE {table.name} ALTER COLUMN {name} TYPE BIGINT"))
            sequence = c.execute(
                text("SELECT pg_get_serial_sequence(:table, :column)"), {"table": table.name, "column": name}
            ).scalar()
            if sequence is not None:
                # the sequence's maximum follows its type while it was the old type's maximum
                c.execute(text(f"ALTER SEQUENCE {sequence} AS BIGINT"))
    log.info("review store: row ids are 64-bit")
