"""Results: `ConversationScore`, what the scorers produce and the payload of the `agentwatch.scores` topic.

With its parts (`TurnScore`, `ToolScore`, `ArgumentDifference`, `AutomatedVerdict`), where an outcome came
from (`OutcomeSource`) and the grader and evidence names. Versioned by `schema_version`; new optional fields
may be added, existing fields keep their meaning.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import Field

from agentwatch import wire
from agentwatch.wire.conversation import SCHEMA_VERSION, Outcome, WireModel

EVIDENCE = wire.EVIDENCE  # failure evidence: found on any conversation, reported as rates over all of them
# Graders that decide success by a rule blind to the outcome (`ConversationScore.graded_by`).
GRADERS: tuple[str, ...] = ("expectations", "judge_score", "policy", "judge", "label")
# The automated graders that grade every conversation they apply to (not a hashed sample of them).
EVERY_CONVERSATION_GRADERS: tuple[str, ...] = ("expectations", "judge_score", "policy")


class OutcomeSource(str, Enum):
    """Where an outcome came from: a human/feedback label, the deterministic rules, or a judge."""

    LABEL = "label"
    RULES = "rules"
    JUDGE = "judge"


class ToolScore(WireModel):
    """Tool correctness of one turn: four dimensions, weighted overall, and Galtea's binary set match."""

    selection: float = Field(description="Jaccard similarity of unique expected and used tool names.")
    parameters: float = Field(description="Mean argument agreement of expected calls matched to used calls.")
    sequence: float = Field(
        description="LCS of expected and used names / expected count (1 if order not graded)."
    )
    utilization: float | None = Field(
        description="1 if the answer uses a successful tool result; null if not graded."
    )
    overall: float = Field(description="Weighted mean of the graded dimensions (weights normalised).")
    binary: bool = Field(description="Set of used tool names equals the set expected (names normalised).")
    passed: bool = Field(description="overall >= tool threshold (with tolerance).")


def unit_of(task: str, instance: str | None, attempt: int | None) -> tuple[str, str | None] | None:
    """What repeated attempts are attempts at: (task, instance) when the instance is known, (task, None) when
    only the attempt is; None when neither (the conversation is a unit of its own)."""
    if instance is not None:
        return (task, instance)
    if attempt is not None:
        return (task, None)
    return None


class TurnScore(WireModel):
    """Grades of one turn."""

    index: int = Field(description="Turn index, from 0.")
    answer_score: float | None = Field(
        default=None, description="Answer correctness in [0,1]; null if ungraded."
    )
    answer_passed: bool | None = Field(
        default=None, description="answer_score >= threshold; null if ungraded."
    )
    tool: ToolScore | None = Field(
        default=None, description="Tool correctness; null when no tools are expected."
    )
    loop: bool = Field(
        default=False, description="Same tool called with identical arguments >= loop threshold."
    )
    forbidden_tools: list[str] = Field(default_factory=list, description="Forbidden tools that were called.")
    error: str | None = Field(default=None, description="Turn error, if any.")
    passed: bool | None = Field(
        default=None, description="Turn passed every grader that applies; null if none."
    )
    reasons: list[str] = Field(
        default_factory=list, description="Why this turn failed, as `code: text` (see docs/scoring.md)."
    )


class ArgumentDifference(WireModel):
    """Where an expected call and the closest call the agent made differ: one value's path and both values."""

    reason: str = Field(description="The code of the reason it explains (policy_tools, expected_tools).")
    tool: str = Field(description="The expected tool, as the expectation names it.")
    path: str = Field(
        description="Where the values differ: `flights[1].flight_number`, `item_ids (any order)`."
    )
    expected: Any = Field(default=None, description="The expected value (or constraint).")
    got: Any = Field(
        default=None,
        description="The value of the closest call (`<absent>` when the call lacks the argument; null when "
        "no call of the tool was made).",
    )


class AutomatedVerdict(WireModel):
    """What the automated graders decided about a conversation, before any label: the prediction a person's
    label corrects (a label never changes it)."""

    graded_by: list[str] = Field(
        description="The automated graders that decided (expectations, judge_score, policy, judge)."
    )
    outcome: Outcome = Field(description="The outcome class they gave (never unscored).")
    passed: bool = Field(description="Whether it passed every automated grader (outcome complete).")
    asr_credit: float = Field(description="max(0, credit of that outcome - cost_penalty).")


class ConversationScore(WireModel):
    """Result of scoring one conversation; the payload of the `agentwatch.scores` topic."""

    schema_version: int = Field(default=SCHEMA_VERSION, description="Format version of this record.")
    conversation_id: str = Field(description="Conversation id.")
    agent: str = Field(description="Agent name.")
    version: str = Field(description="Agent version.")
    task: str = Field(description="Task family.")
    instance: str | None = Field(default=None, description="Task instance, copied from the conversation.")
    attempt: int | None = Field(
        default=None, ge=0, description="Attempt at that instance, copied from the conversation."
    )
    tags: dict[str, str] = Field(default_factory=dict, description="Tags copied from the conversation.")
    turns: int = Field(description="Number of turns.")
    passed: bool | None = Field(description="Every turn passed every applicable grader; null when unscored.")
    outcome: Outcome = Field(description="Outcome class.")
    outcome_source: OutcomeSource = Field(description="label, rules or judge.")
    reasons: list[str] = Field(
        default_factory=list, description="Why it failed / why unscored, short codes + text."
    )
    turn_scores: list[TurnScore] = Field(default_factory=list, description="Per-turn grades.")
    differences: list[ArgumentDifference] = Field(
        default_factory=list,
        description="For each expected call that did not happen: where the closest call made differs from it.",
    )
    cost_usd: float | None = Field(
        default=None, description="Total cost; null if neither cost nor priced usage."
    )
    budget_usd: float | None = Field(
        default=None, description="Cost ceiling applied (conversation, else task)."
    )
    cost_penalty: float = Field(default=0.0, description="min(1, max(0, (cost - ceiling) / ceiling)).")
    asr_credit: float | None = Field(
        default=None, description="max(0, outcome credit - cost_penalty); null when unscored."
    )
    duration_s: float | None = Field(default=None, description="Sum of turn durations in seconds.")
    input_tokens: int = Field(default=0, description="Total input tokens.")
    output_tokens: int = Field(default=0, description="Total output tokens.")
    cache_read_input_tokens: int = Field(
        default=0, description="Of the input tokens, those read from the providers' prompt caches."
    )
    ended_at: datetime | None = Field(default=None, description="Conversation end (event time for windows).")
    incomplete: bool = Field(default=False, description="Collector finished it early because a cap was hit.")
    graded_by: list[str] = Field(
        default_factory=list,
        description="Graders that decided success (expectations, judge_score, policy, judge, label); empty when "
        "the conversation is not in the graded sample.",
    )
    evidence: list[str] = Field(
        default_factory=list,
        description="Failure evidence found (error, no_answer, loop, hallucination, over_budget, forbidden_tool), "
        "graded or not: counted as rates over all conversations.",
    )
    policy: str | None = Field(default=None, description="`id@version` of the task policy that graded it.")
    judge: str | None = Field(
        default=None, description="Id of the judge that graded it (name, model, prompt)."
    )
    judge_score: float | None = Field(
        default=None, description="The judge's answer-correctness score in [0, 1], when a verdict graded it."
    )
    judge_explanation: str | None = Field(default=None, description="The judge's short explanation.")
    judge_outcome: Outcome | None = Field(
        default=None,
        description="The outcome class the judge returned (before failure evidence or other graders "
        "changed the conversation's outcome), when a verdict graded it.",
    )
    judge_sampled: bool = Field(
        default=False, description="In the judge sample (sample_point(id) < judge rate)."
    )
    review_sampled: bool = Field(
        default=False,
        description="In the review sample: a label on it is its truth (sample_point(id) < rate).",
    )
    label: Outcome | None = Field(
        default=None, description="Outcome label from a person or feedback, whether or not it graded."
    )
    revision: int = Field(
        default=0, ge=0, description="0 for the first score; a later label or verdict publishes revision + 1."
    )
    automated: AutomatedVerdict | None = Field(
        default=None,
        description="The automated graders' verdict before any label (a label overwrites passed, outcome and "
        "asr_credit, never this); null when no automated grader decided (a judge that failed, a conversation "
        "graded by a label alone or by nothing).",
    )
    judge_rate: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="The judge sample rate in force when the conversation was sampled (judge_sampled: "
        "sample_point(id) < judge_rate); null in scores written before rates were recorded.",
    )
    review_rate: float | None = Field(
        default=None, ge=0, le=1, description="The review sample rate in force when it was sampled."
    )

    @property
    def scored(self) -> bool:
        """Whether it is in the graded sample (a grader decided success)."""
        return self.passed is not None

    @property
    def identity(self) -> tuple[str, str]:
        """(agent, conversation id): what makes two scores the same conversation."""
        return (self.agent, self.conversation_id)

    @property
    def series(self) -> tuple[str, str, str]:
        """The (agent, version, task) series this score belongs to."""
        return (self.agent, self.version, self.task)

    @property
    def unit(self) -> tuple[str, str | None] | None:
        """What repeated attempts are attempts at: (task, instance) when the instance is known, (task, None)
        when only the attempt is; None when neither (the conversation is a unit of its own)."""
        return unit_of(self.task, self.instance, self.attempt)
