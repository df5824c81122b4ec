"""Builds `ConversationScore`s for the estimator and exporter tests."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from agentwatch.wire.schema import ConversationScore

T0 = 1_800_000_000.0  # a minute-aligned instant (1_800_000_000 / 60 is an integer)


class Clock:
    """A clock the test sets: `clock.t` is now (the estimator's and exporter's `clock`)."""

    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


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


def score_record(cid: str, ended_at: float | None = T0, **fields: Any) -> bytes:
    """A score record as the scores topic carries it, `fields` written over a `make_score` (NaN and infinities
    written as JSON5 does, which pydantic reads)."""
    doc = json.loads(make_score(cid, ended_at=ended_at).model_dump_json())
    doc.update(fields)
    return json.dumps(doc, allow_nan=True).encode()


def judged_record(
    cid: str, rate: float, passed: bool, verdict: bool, labelled: bool, ended_at: float | None = T0
) -> bytes:
    """A judge-graded score record sampled at `rate`, the judge's verdict `verdict`, a review-sample label (the
    outcome `passed` says) when `labelled`."""
    outcome = "complete" if passed else "partial_incorrect"
    judged = "complete" if verdict else "partial_incorrect"
    return score_record(
        cid,
        ended_at,
        agent="judged",
        passed=passed,
        outcome=outcome,
        outcome_source="label" if labelled else "judge",
        asr_credit=float(passed),
        graded_by=["judge", "label"] if labelled else ["judge"],
        judge="j1",
        judge_sampled=True,
        judge_rate=rate,
        judge_outcome=judged,
        automated={
            "graded_by": ["judge"],
            "outcome": judged,
            "passed": verdict,
            "asr_credit": float(verdict),
        },
        label=outcome if labelled else None,
        review_sampled=labelled,
        review_rate=min(rate, 0.25),
    )
