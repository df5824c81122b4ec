"""Builds `ConversationScore`s for the estimator and exporter tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agentwatch.wire.schema import ConversationScore

T0 = 1_800_000_000.0  # a minute-aligned instant (1_800_000_000 / 60 is an integer)


def make_score(
    cid: str,
    passed: bool | None = True,
    *,
    agent: str = "bot",
    version: str = "v1",
    task: str = "refund",
    ended_at: float | None = T0,
    **extra: Any,
) -> ConversationScore:
    """A score; outcome and ASR credit follow `passed` unless given."""
    if passed is None:
        outcome, credit = "unscored", None
    elif passed:
        outcome, credit = "complete", 1.0
    else:
        outcome, credit = "partial_incorrect", 0.0
    fields: dict[str, Any] = {
        "conversation_id": cid,
        "agent": agent,
        "version": version,
        "task": task,
        "turns": 1,
        "passed": passed,
        "outcome": outcome,
        "outcome_source": "rules",
        "asr_credit": credit,
        "ended_at": None if ended_at is None else datetime.fromtimestamp(ended_at, UTC),
    }
    fields.update(extra)
    return ConversationScore(**fields)


def find(estimates: list, window: str = "1h", **series: str) -> Any:
    """The one estimate of `window` whose agent/version/task match `series`; None if absent."""
    hits = [e for e in estimates if e.window == window and all(getattr(e, k) == v for k, v in series.items())]
    assert len(hits) <= 1, hits
    return hits[0] if hits else None
