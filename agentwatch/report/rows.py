"""The compact record `agentwatch score` keeps of each conversation until its report is written (`ScoreRow`).

A `ConversationScore` is a pydantic model with a set of the fields given per instance and one model per turn
and per tool score: 12 KB for a conversation of three turns, 15-27 KB for a τ-bench one. The report and its
gate read a few dozen of its attributes (`agentwatch.wire.score_view.ScoreView`), and of the turns only each
one's loop flag and tool dimensions. A row holds those attributes and nothing else, in slots, and `RowMaker`
shares the values conversations repeat (names, tags, graded_by, reasons, rates, turns, automated verdicts)
instead of keeping a copy per conversation.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from agentwatch.wire.schema import AutomatedVerdict, ConversationScore, Outcome, OutcomeSource, ToolScore
from agentwatch.wire.scores import unit_of

T = TypeVar("T")
MAX_SHARED = (
    1 << 16
)  # values remembered per kind: a value seen once costs a dict entry, so the table is bounded


@dataclass(frozen=True, slots=True, eq=False)  # one object per distinct value: identity is equality
class ToolRow:
    """The tool dimensions of one turn (`ToolScore`'s, without its pass flags)."""

    selection: float
    parameters: float
    sequence: float
    utilization: float | None
    overall: float
    binary: bool


@dataclass(frozen=True, slots=True, eq=False)
class TurnRow:
    """What the report reads of a turn: its loop flag and tool dimensions."""

    loop: bool
    tool: ToolRow | None


@dataclass(slots=True)
class ScoreRow:
    """What the report reads of one conversation's score, as `ConversationScore` names it (a `ScoreView`)."""

    conversation_id: str
    agent: str
    version: str
    task: str
    instance: str | None
    attempt: int | None
    tags: Mapping[str, str]
    passed: bool | None
    outcome: Outcome
    outcome_source: OutcomeSource
    reasons: tuple[str, ...]
    turn_scores: tuple[TurnRow, ...]
    cost_usd: float | None
    budget_usd: float | None
    cost_penalty: float
    asr_credit: float | None
    graded_by: tuple[str, ...]
    evidence: tuple[str, ...]
    judge_sampled: bool
    review_sampled: bool
    label: Outcome | None
    revision: int
    automated: AutomatedVerdict | None
    judge_rate: float | None
    review_rate: float | None

    @property
    def scored(self) -> bool:
        """Whether it is in the graded sample (a grader decided success)."""
        return self.passed is not None

    @property
    def identity(self) -> tuple[str, str]:
        """(agent, conversation id): what makes two scores the same conversation."""
        return (self.agent, self.conversation_id)

    @property
    def unit(self) -> tuple[str, str | None] | None:
        """What repeated attempts are attempts at, as `ConversationScore.unit`."""
        return unit_of(self.task, self.instance, self.attempt)


def _key(value: object) -> Hashable:
    """A key equal only for interchangeable values: 1 and 1.0 and True, 0.0 and -0.0 are told apart (each
    prints differently)."""
    if isinstance(value, float):
        return (float, value, math.copysign(1.0, value))
    if isinstance(value, tuple):
        return (tuple, *map(_key, value))
    return (type(value), value)


class _Shared:
    """One copy of each distinct value, up to `MAX_SHARED` of them (later new values are kept unshared)."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[Hashable, object] = {}

    def get(self, key: Hashable, value: T) -> T:
        found = self._seen.get(key)
        if found is not None:
            return found  # type: ignore[return-value]  # stored under this key: the same kind of value
        if len(self._seen) < MAX_SHARED:
            self._seen[key] = value
        return value

    def value(self, value: T) -> T:
        if value is None:
            return value
        return self.get(_key(value), value)


class RowMaker:
    """Builds each conversation's `ScoreRow` once, sharing what conversations repeat."""

    def __init__(self) -> None:
        self._names = _Shared()  # agents, versions, tasks, instances, graders, evidence, tags
        self._reasons = _Shared()
        self._numbers = _Shared()
        self._turns = _Shared()
        self._verdicts = _Shared()

    def row(self, score: ConversationScore) -> ScoreRow:
        """The row of `score`."""
        names, numbers = self._names, self._numbers
        return ScoreRow(
            conversation_id=score.conversation_id,
            agent=names.value(score.agent),
            version=names.value(score.version),
            task=names.value(score.task),
            instance=names.value(score.instance),
            attempt=score.attempt,
            tags=names.get((dict, *score.tags.items()), score.tags),
            passed=score.passed,
            outcome=score.outcome,
            outcome_source=score.outcome_source,
            reasons=self._reasons.value(tuple(map(self._reasons.value, score.reasons))),
            turn_scores=self._turns.value(tuple(self._turn(t.loop, t.tool) for t in score.turn_scores)),
            cost_usd=numbers.value(score.cost_usd),
            budget_usd=numbers.value(score.budget_usd),
            cost_penalty=numbers.value(score.cost_penalty),
            asr_credit=numbers.value(score.asr_credit),
            graded_by=names.value(tuple(map(names.value, score.graded_by))),
            evidence=names.value(tuple(map(names.value, score.evidence))),
            judge_sampled=score.judge_sampled,
            review_sampled=score.review_sampled,
            label=score.label,
            revision=score.revision,
            automated=self._verdict(score.automated),
            judge_rate=numbers.value(score.judge_rate),
            review_rate=numbers.value(score.review_rate),
        )

    def _turn(self, loop: bool, tool: ToolScore | None) -> TurnRow:
        if tool is None:
            return self._turns.get((TurnRow, loop), TurnRow(loop, None))
        dims = (tool.selection, tool.parameters, tool.sequence, tool.utilization, tool.overall, tool.binary)
        return self._turns.get((TurnRow, loop, _key(dims)), TurnRow(loop, ToolRow(*dims)))

    def _verdict(self, automated: AutomatedVerdict | None) -> AutomatedVerdict | None:
        if automated is None:
            return None
        key = (tuple(automated.graded_by), automated.outcome, automated.passed, _key(automated.asr_credit))
        # Shared among rows: nothing reads a verdict to change it.
        return self._verdicts.get(key, automated)
