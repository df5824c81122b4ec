"""The failing conversations of a series in a window: what an alert's link opens in the review service.

Every stored conversation carries `failures`, the words of why its latest score failed, between spaces:
`failed` (a failed verdict), each kind of failure evidence (`error`, `no_answer`, `loop`, `hallucination`,
`over_budget`, `forbidden_tool`) and `abandoned` (its outcome class) — empty when it did not fail. An alert names
the one that fired it (`why`), so the list shows what the page is about. The store holds the review sample,
flagged conversations and, with `collector.failing_transcripts`, every failing one; the list reads them all.

A store written before the column existed gets it at start, filled from each row's latest score.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import String, and_, func, inspect, select, text, update
from sqlalchemy.engine import Engine

from agentwatch.review.rows import FailingItem
from agentwatch.review.tables import FAILURES_LENGTH, conversations, filter_values, same_series
from agentwatch.wire.json_text import model_from_json
from agentwatch.wire.schema import EVIDENCE, ConversationScore, Outcome

log = logging.getLogger(__name__)

WHY: tuple[str, ...] = ("failed", "abandoned", *EVIDENCE)  # the words a list may be filtered by
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_BACKFILL_BATCH = 500


def failures_of(score: ConversationScore) -> str:
    """The words of why `score` failed, space-separated with a space at each end ('' when it did not fail):
    those of `WHY`, then evidence of other names (a newer scorer's) while the column holds them."""
    found = set(score.evidence)
    words = (["failed"] if score.passed is False else []) + sorted(found.intersection(EVIDENCE))
    if score.outcome is Outcome.ABANDONED:
        words.append("abandoned")
    # The record is anyone's on the topic: a word that is not a plain name (space, NUL), or one past the
    # column's length, would make the database refuse the whole conversation.
    room = FAILURES_LENGTH - len(" ".join(words)) - 2
    for word in sorted(w for w in found.difference(EVIDENCE) if _PLAIN_WORD.fullmatch(w)):
        if len(word) + 1 <= room:
            words.append(word)
            room -= len(word) + 1
    return f" {' '.join(words)} " if words else ""


@dataclass(frozen=True, slots=True)
class FailingQuery:
    """Which failing conversations to list: a series (None matches all), a window [since, until] of end times
    (Unix seconds), and why (one word of `WHY`, None: any failure)."""

    agent: str | None = None
    version: str | None = None
    task: str | None = None
    since: float | None = None
    until: float | None = None
    why: str | None = None


def _where(q: FailingQuery) -> Any:
    t = conversations.c
    clauses = [t.failures.is_not(None), t.failures != "", *same_series(q.agent, q.version, q.task)]
    if q.since is not None:
        clauses.append(t.at >= q.since)
    if q.until is not None:
        clauses.append(t.at <= q.until)
    if q.why:
        clauses.append(t.failures.contains(f" {q.why} "))
    return and_(*clauses)


def failing(engine: Engine, q: FailingQuery, limit: int, offset: int = 0) -> tuple[list[FailingItem], int]:
    """The failing conversations matching `q`, the latest first, and how many there are in all."""
    t = conversations.c
    where = _where(q)
    with engine.connect() as c:
        total = c.execute(select(func.count()).select_from(conversations).where(where)).scalar_one()
        rows = c.execute(
            select(
                t.id,
                t.agent,
                t.version,
                t.task,
                t.sample,
                t.at,
                t.turns,
                t.preview,
                t.failures,
                t.labelled,
                t.latest_score,
            )
            .where(where)
            .order_by(t.at.desc(), t.id.desc())
            .limit(limit)
            .offset(offset)
        ).all()
    items = [
        FailingItem(
            r.id,
            r.agent,
            r.version,
            r.task,
            r.sample,
            r.at,
            r.turns,
            r.preview,
            r.failures,
            bool(r.labelled),
            model_from_json(ConversationScore, r.latest_score).reasons,
        )
        for r in rows
    ]
    return items, int(total)


def series_choices(engine: Engine) -> dict[str, list[str]]:
    """The agents, versions and tasks of the failing conversations held (for the list's filters, at most
    `MAX_CHOICES` each)."""
    t = conversations.c
    out: dict[str, list[str]] = {}
    with engine.connect() as c:
        for name, column in (("agent", t.agent), ("version", t.version), ("task", t.task)):
            out[name] = filter_values(c, column, t.failures != "")
    return out


def ensure_failures_column(engine: Engine) -> None:
    """Add `failures` (and its index) to a store made before them, filled from each row's latest score."""
    columns = {c["name"] for c in inspect(engine).get_columns(conversations.name)}
    if "failures" not in columns:
        kind = String(160).compile(dialect=engine.dialect)
        with engine.begin() as c:
            c.execute(text(f"ALTER TABLE {conversations.name} ADD COLUMN failures {kind}"))
        log.info("review store: column `failures` added to %s; filling it", conversations.name)
    for index in conversations.indexes:
        if index.name == "ix_review_failing":
            index.create(engine, checkfirst=True)
    _backfill(engine)


def _backfill(engine: Engine) -> None:
    """Fill `failures` where it is null, a batch at a time."""
    t = conversations.c
    filled = 0
    while True:
        with engine.begin() as c:
            rows = c.execute(
                select(t.id, t.latest_score).where(t.failures.is_(None)).limit(_BACKFILL_BATCH)
            ).all()
            for row_id, latest in rows:
                value = failures_of(model_from_json(ConversationScore, latest))
                c.execute(update(conversations).where(t.id == row_id).values(failures=value))
        filled += len(rows)
        if len(rows) < _BACKFILL_BATCH:
            break
    if filled:
        log.info("review store: `failures` filled on %d conversations", filled)
