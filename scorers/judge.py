"""The `Judge` interface an LLM judge plugs into, and the guard that turns judge failures into reasons."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agentwatch.schema import Conversation, Turn

log = logging.getLogger(__name__)


@dataclass(slots=True, frozen=True)
class JudgeVerdict:
    """A judge's answer for one turn: a score in [0, 1], or the reason it could not give one."""

    score: float | None = None
    reason: str | None = None

    @classmethod
    def ok(cls, score: float, reason: str | None = None) -> JudgeVerdict:
        """A verdict with a score."""
        return cls(score=score, reason=reason)

    @classmethod
    def failed(cls, reason: str) -> JudgeVerdict:
        """A verdict saying the judge could not score (timeout, bad JSON, refusal...)."""
        return cls(score=None, reason=reason)


@runtime_checkable
class Judge(Protocol):
    """Scores the answer of one turn in [0, 1]; may use the whole conversation (and `turn.expected`)."""

    def score(self, turn: Turn, conversation: Conversation) -> JudgeVerdict:
        """Verdict for `turn`'s answer. Raise or return `JudgeVerdict.failed(...)` when it cannot score."""
        ...


def run_judge(judge: Judge, turn: Turn, conversation: Conversation) -> JudgeVerdict:
    """Call the judge and validate its verdict; any exception or invalid score becomes a failed verdict."""
    try:
        verdict = judge.score(turn, conversation)
    except Exception as exc:  # noqa: BLE001 — a judge failure must never crash scoring
        log.warning("judge %r failed: %s: %s", type(judge).__name__, type(exc).__name__, exc)
        return JudgeVerdict.failed(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    if not isinstance(verdict, JudgeVerdict):
        return JudgeVerdict.failed(f"judge returned {type(verdict).__name__}, not a JudgeVerdict")
    score = verdict.score
    if score is None:
        return JudgeVerdict.failed(verdict.reason or "judge gave no score")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        return JudgeVerdict.failed(f"judge score {score!r} is not a number")
    if not 0.0 <= score <= 1.0:
        return JudgeVerdict.failed(f"judge score {score!r} outside [0, 1]")
    return verdict
