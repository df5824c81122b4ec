"""The review store's reads: the queue (listed, stepped through, counted per series), a conversation opened with
its labels, and the labels read back (anchor candidates, the judge's agreement, the labels export).

The failing conversations an alert links to are read in `review.failing`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, or_, select
from sqlalchemy.engine import Engine
from sqlalchemy.sql.elements import ColumnElement

from agentwatch import wire
from agentwatch.report.ordering import natural_key
from agentwatch.review.rows import QueueItem
from agentwatch.review.tables import conversations, filter_values, labels, same_series
from agentwatch.wire.json_text import model_from_json
from agentwatch.wire.schema import Conversation, ConversationScore, Outcome

OUTCOMES: tuple[str, ...] = ("complete", "partial_correct", "partial_incorrect", "hallucinated", "abandoned")
# Series (agent, version, task, sample) the queue-size gauge names at most, the largest; a series is named by span
# attributes, so a producer writing new names made the gauge, and each scrape, as large as the store's series.
MAX_QUEUE_SERIES = 2_000
OTHER = "other"


@dataclass(frozen=True, slots=True)
class Filters:
    """Queue filters; None matches everything."""

    agent: str | None = None
    version: str | None = None
    task: str | None = None


NO_FILTERS = Filters()  # the whole queue


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


# ---------------------------------------------------------------------- the queue


def _queue_where(filters: Filters) -> Any:
    t = conversations.c
    # failing conversations are listed with their series (`failing`), not queued: not a sample to label
    clauses: list[ColumnElement[bool]] = [t.labelled.is_(False), t.sample != wire.FAILING]
    return and_(*clauses, *same_series(filters.agent, filters.version, filters.task))


def queue(engine: Engine, filters: Filters, limit: int, offset: int) -> tuple[list[QueueItem], int]:
    """Unlabelled conversations, oldest first, and how many there are in all."""
    t = conversations.c
    where = _queue_where(filters)
    with engine.connect() as c:
        total = c.execute(select(func.count()).select_from(conversations).where(where)).scalar_one()
        rows = c.execute(
            select(t.id, t.agent, t.version, t.task, t.sample, t.at, t.turns, t.preview)
            .where(where)
            .order_by(t.at, t.id)
            .limit(limit)
            .offset(offset)
        ).all()
    return [QueueItem(*row) for row in rows], int(total)


def choices(engine: Engine) -> dict[str, list[str]]:
    """The agents, versions and tasks of the conversations in the queue (for the filters, at most `MAX_CHOICES`
    each; numbers in their order: task 2 before task 10)."""
    t = conversations.c
    out: dict[str, list[str]] = {}
    queued = (t.labelled.is_(False), t.sample != wire.FAILING)
    with engine.connect() as c:
        for name, column in (("agent", t.agent), ("version", t.version), ("task", t.task)):
            out[name] = sorted(filter_values(c, column, *queued), key=natural_key)
    return out


def neighbours(engine: Engine, row_id: int, filters: Filters) -> tuple[int | None, int | None]:
    """The unlabelled conversations before and after `row_id` in queue order (previous, next)."""
    t = conversations.c
    with engine.connect() as c:
        at = c.execute(select(t.at).where(t.id == row_id)).scalar_one_or_none()
        if at is None:
            return None, None
        where = _queue_where(filters)
        before = or_(t.at < at, and_(t.at == at, t.id < row_id))
        after = or_(t.at > at, and_(t.at == at, t.id > row_id))
        prev = c.execute(select(t.id).where(where, before).order_by(t.at.desc(), t.id.desc()).limit(1))
        nxt = c.execute(select(t.id).where(where, after).order_by(t.at, t.id).limit(1))
        return prev.scalar_one_or_none(), nxt.scalar_one_or_none()


def queue_sizes(engine: Engine) -> list[tuple[str, str, str, str, int]]:
    """(agent, version, task, sample, unlabelled conversations), for the queue-size gauge: the
    `MAX_QUEUE_SERIES` largest series, the conversations of the others summed per sample under agent, version
    and task `other`."""
    t = conversations.c
    with engine.connect() as c:
        series = (t.agent, t.version, t.task, t.sample)
        queued = (t.labelled.is_(False), t.sample != wire.FAILING)
        n = func.count()
        query = (
            select(*series, n).where(*queued).group_by(*series).order_by(n.desc()).limit(MAX_QUEUE_SERIES + 1)
        )
        rows = [(a, v, k, s, int(m)) for a, v, k, s, m in c.execute(query)]
        if len(rows) <= MAX_QUEUE_SERIES:
            return sorted(rows)
        rows = sorted(rows[:MAX_QUEUE_SERIES])
        per_sample = c.execute(select(t.sample, n).where(*queued).group_by(t.sample)).all()
    for sample, total in per_sample:
        rest = int(total) - sum(r[4] for r in rows if r[3] == sample)
        if rest:
            rows.append((OTHER, OTHER, OTHER, sample, rest))
    return rows


def get(engine: Engine, row_id: int) -> Stored | None:
    """A stored conversation with its labels, or None."""
    t = conversations.c
    with engine.connect() as c:
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
        model_from_json(ConversationScore, row.first_score),
        model_from_json(ConversationScore, row.latest_score),
        [Label(*r) for r in found],
    )


# ---------------------------------------------------------------------- the labels read back


def blind_labels(engine: Engine, limit: int | None) -> list[tuple[Conversation, Outcome]]:
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
    with engine.connect() as c:
        for row_id, transcript, outcome in c.execute(query):
            if row_id in seen:
                continue
            seen.add(row_id)
            out.append((model_from_json(Conversation, transcript), Outcome(outcome)))
            if limit is not None and len(out) >= limit:
                break
    return out


def judge_pairs(engine: Engine) -> list[tuple[str, str, str, str, int]]:
    """(judge, sample, the person's outcome, the judge's outcome, conversations) over the conversations a judge
    graded (its outcome known) and a person labelled, for the agreement gauges: each conversation counts once,
    by its first label — on the review sample its first blind one (a label given after seeing the verdicts, or a
    second look, is no independent judgement of the judge)."""
    x = labels.c
    keys = (x.judge, x.sample, x.outcome, x.judge_outcome)
    graded = (x.judge.is_not(None), x.judge_outcome.is_not(None))
    independent = or_(x.sample != wire.REVIEW_SAMPLE, x.blind.is_(True))
    first = select(func.min(x.id)).where(*graded, independent).group_by(x.conversation)
    query = select(*keys, func.count()).where(x.id.in_(first)).group_by(*keys)
    with engine.connect() as c:
        rows = c.execute(query).all()
    return [(j, s, o, jo, int(n)) for j, s, o, jo, n in rows]


def labels_of(engine: Engine, since: float) -> Iterator[dict[str, Any]]:
    """Every label saved at or after `since` (Unix seconds), with its judge fields, oldest first."""
    with engine.connect() as c:
        for row in c.execute(select(labels).where(labels.c.labelled_at >= since).order_by(labels.c.id)):
            yield dict(row._mapping)
