"""The data agentwatch reads and writes: transcripts (`Conversation`) and results (`ConversationScore`).

`Conversation` is the offline input format (one JSON object per line of a `.jsonl` file) and what the
collector rebuilds from spans. `ConversationScore` is what the scorers produce and the payload of the
`agentwatch.scores` Kafka topic. Both are versioned by `schema_version`; new optional fields may be added,
existing fields keep their meaning.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentwatch import wire

SCHEMA_VERSION = wire.SCORE_FORMAT_VERSION
EVIDENCE = wire.EVIDENCE  # failure evidence: found on any conversation, reported as rates over all of them
# Graders that decide success by a rule blind to the outcome (`ConversationScore.graded_by`).
GRADERS: tuple[str, ...] = ("expectations", "judge_score", "policy", "judge", "label")
# The automated graders that grade every conversation they apply to (not a hashed sample of them).
EVERY_CONVERSATION_GRADERS: tuple[str, ...] = ("expectations", "judge_score", "policy")


class Outcome(str, Enum):
    """Outcome class of a conversation (Agent Success Rate)."""

    COMPLETE = "complete"
    PARTIAL_CORRECT = "partial_correct"
    PARTIAL_INCORRECT = "partial_incorrect"
    HALLUCINATED = "hallucinated"
    ABANDONED = "abandoned"
    UNSCORED = "unscored"


class OutcomeSource(str, Enum):
    """Where an outcome came from: a human/feedback label, the deterministic rules, or a judge."""

    LABEL = "label"
    RULES = "rules"
    JUDGE = "judge"


def instance_text(value: Any) -> Any:
    """A task instance as text: benchmark task ids are often numbers (7 -> "7"); an empty one is none."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return str(int(value)) if float(value).is_integer() else str(value)
    if isinstance(value, str) and not value.strip():
        return None
    return value


def normalize_outcome(value: Any) -> Any:
    """Accept `partial-correct`, `Partial Correct` etc. as spellings of an outcome class."""
    if isinstance(value, str):
        return value.strip().lower().replace("-", "_").replace(" ", "_")
    return value


# How an expected argument is compared with the one the agent passed (see docs/scoring.md, "Arguments").
ArgumentMode = Literal["exact", "ignore", "numeric", "subset", "unordered"]
ARGUMENT_MODES: tuple[str, ...] = ("exact", "ignore", "numeric", "subset", "unordered")
# Which calls nobody expected are allowed: read-only ones (lookups, handoffs), none, or any.
ExtraCalls = Literal["read_only", "none", "any"]
# How a conversation must end: with a handoff to a person, or without one.
Ending = Literal["handoff", "answer"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


# --------------------------------------------------------------------------- transcript


class ToolCall(_Model):
    """One tool call the agent made during a turn."""

    name: str = Field(description="Tool name as the agent called it.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Arguments, as a JSON object.")
    result: Any = Field(default=None, description="What the tool returned (any JSON), if captured.")
    error: str | None = Field(default=None, description="Error message if the call failed; null on success.")
    call_id: str | None = Field(default=None, description="Tool call id (gen_ai.tool.call.id), if known.")
    read_only: bool | None = Field(
        default=None,
        description="True when the tool changes nothing (a lookup), false when it has effects; null: decided "
        "by the tool-name patterns of the configuration.",
    )

    @field_validator("arguments", mode="before")
    @classmethod
    def _arguments_object(cls, v: Any) -> Any:
        if v is None:
            return {}
        if not isinstance(v, dict):
            return {"value": v}
        return v


class ExpectedTool(_Model):
    """A tool call the agent is expected to make."""

    name: str = Field(description="Expected tool name.")
    arguments: dict[str, Any] | None = Field(
        default=None,
        description="Expected arguments. Null means parameters of this call are not checked.",
    )
    match: dict[str, ArgumentMode] = Field(
        default_factory=dict,
        description="How each argument is compared: exact, ignore (free text), numeric (within the numeric "
        "tolerance, arithmetic evaluated), subset (extra keys allowed), unordered (a list in any order). "
        "Arguments not named here: nested objects as subsets, lists in order, values equal.",
    )
    required: bool | None = Field(
        default=None,
        description="Whether the call must happen. Null: in a turn's expectation, yes; in a conversation's "
        "expectation or a policy, only when the tool has effects (a lookup or a handoff may be skipped).",
    )


class Expectation(_Model):
    """What a correct turn looks like. Every field is optional; graders apply only where it says something."""

    tools: list[ExpectedTool] = Field(default_factory=list, description="Tool calls expected, in order.")
    sequence_matters: bool = Field(
        default=True, description="Whether the relative order of `tools` is graded."
    )
    uses_tool_results: bool | None = Field(
        default=None,
        description="Whether the answer must use a tool result (utilization). Default: true when tools are expected.",
    )
    forbidden_tools: list[str] = Field(default_factory=list, description="Tools that must not be called.")
    reference_answer: str | None = Field(default=None, description="Reference answer for the answer grader.")
    extra_calls: ExtraCalls = Field(
        default="read_only",
        description="Calls nobody expected that are allowed: read_only (lookups and handoffs are free, a "
        "call with effects fails), none (every call must be expected), any.",
    )
    outputs: list[str] = Field(
        default_factory=list, description="Values some answer of the agent must contain (e.g. an amount)."
    )
    end: Ending | None = Field(
        default=None,
        description="How the conversation must end: handoff (to a person) or answer (no handoff); null: "
        "either.",
    )

    @property
    def utilization_required(self) -> bool:
        """Whether utilization is graded for this turn."""
        if self.uses_tool_results is None:
            return bool(self.tools)
        return self.uses_tool_results


# Plausibility caps (docs/collector.md, "Plausibility caps"): a value past them is a bug or an attack, not a
# measurement. Model context windows are ~2M tokens at most; the dearest price per million tokens is ~$150.
MAX_TOKENS_PER_CALL = 10_000_000
MAX_COST_USD_PER_CALL = 10_000.0
MAX_COST_USD_PER_TURN = 100_000.0
MAX_ATTEMPT = 1_000_000


class Usage(_Model):
    """Token usage of one model call."""

    model: str | None = Field(default=None, description="Model name (response model if known, else request).")
    input_tokens: int = Field(
        default=0, ge=0, le=MAX_TOKENS_PER_CALL, description="Prompt/input tokens (at most 10,000,000)."
    )
    output_tokens: int = Field(
        default=0, ge=0, le=MAX_TOKENS_PER_CALL, description="Completion/output tokens (at most 10,000,000)."
    )
    cost_usd: float | None = Field(
        default=None,
        ge=0,
        le=MAX_COST_USD_PER_CALL,
        description="Cost of this call if the source reported it (at most 10,000 USD).",
    )


class Turn(_Model):
    """One turn: user input, then tool and model calls, then the agent's final answer."""

    input: str | None = Field(default=None, description="The user's input for this turn (text).")
    answer: str | None = Field(default=None, description="The agent's final answer; null or empty if none.")
    tool_calls: list[ToolCall] = Field(
        default_factory=list, description="Tool calls made in this turn, in order."
    )
    expected: Expectation | None = Field(default=None, description="Expectation for this turn, if any.")
    judge_score: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Answer score in [0,1] from a person or an external judge."
    )
    usage: list[Usage] = Field(default_factory=list, description="Model calls' token usage.")
    cost_usd: float | None = Field(
        default=None,
        ge=0,
        le=MAX_COST_USD_PER_TURN,
        description="Cost of the turn; else computed from usage (at most 100,000 USD).",
    )
    duration_ms: float | None = Field(
        default=None, ge=0, description="Wall time of the turn in milliseconds."
    )
    error: str | None = Field(
        default=None, description="Error that ended the turn (exception type or message)."
    )
    started_at: datetime | None = Field(default=None, description="Start time of the turn, if known.")

    @field_validator("input", "answer", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        if v is None or isinstance(v, str):
            return v
        import json

        return json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)


class Conversation(_Model):
    """A transcript: all turns sharing a conversation id. One per line in the offline JSONL format."""

    schema_version: int = Field(default=SCHEMA_VERSION, description="Format version of this record.")
    conversation_id: str = Field(min_length=1, description="Conversation id (gen_ai.conversation.id).")
    agent: str = Field(default="unknown", description="Agent name.")
    version: str = Field(default="unknown", description="Agent version.")
    task: str = Field(default="default", description="Task family (agentwatch.task).")
    instance: str | None = Field(
        default=None,
        description="Which instance of the task family this conversation works on "
        "(agentwatch.task.instance), e.g. a benchmark's task id or a replayed request's id. Conversations of "
        "the same task and instance are repeated attempts at it: the unit of pass^k. Never a metric label.",
    )
    attempt: int | None = Field(
        default=None,
        ge=0,
        le=MAX_ATTEMPT,
        description="Which attempt at that instance this is, from 0 (agentwatch.attempt; a benchmark's "
        "trial). With an attempt but no instance, the task itself is the unit that is attempted repeatedly.",
    )
    tags: dict[str, str] = Field(default_factory=dict, description="Free labels, e.g. difficulty, category.")
    budget_usd: float | None = Field(default=None, ge=0, description="Cost ceiling for this conversation.")
    outcome: Outcome | None = Field(
        default=None, description="Outcome label from a person or feedback; wins."
    )
    system: str | None = Field(
        default=None, description="The agent's instructions (system prompt): a source for grounding."
    )
    expected: Expectation | None = Field(
        default=None, description="Expectation for the whole conversation, matched anywhere in it."
    )
    turns: list[Turn] = Field(default_factory=list, description="Turns in order.")
    ended_at: datetime | None = Field(default=None, description="When the conversation ended (event time).")
    incomplete: bool = Field(
        default=False, description="True when the collector had to finish it early (a cap was hit)."
    )
    notes: list[str] = Field(
        default_factory=list,
        description="What could not be seen (e.g. content capture off), from the collector.",
    )

    @field_validator("outcome", mode="before")
    @classmethod
    def _outcome(cls, v: Any) -> Any:
        return normalize_outcome(v)

    @field_validator("system", mode="before")
    @classmethod
    def _system_text(cls, v: Any) -> Any:
        return Turn._text(v)

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return {str(k): str(x) for k, x in v.items()}
        return v

    @field_validator("instance", mode="before")
    @classmethod
    def _instance(cls, v: Any) -> Any:
        return instance_text(v)


# --------------------------------------------------------------------------- results


class ToolScore(_Model):
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


class TurnScore(_Model):
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


class ArgumentDifference(_Model):
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


class AutomatedVerdict(_Model):
    """What the automated graders decided about a conversation, before any label: the prediction a person's
    label corrects (a label never changes it)."""

    graded_by: list[str] = Field(
        description="The automated graders that decided (expectations, judge_score, policy, judge)."
    )
    outcome: Outcome = Field(description="The outcome class they gave (never unscored).")
    passed: bool = Field(description="Whether it passed every automated grader (outcome complete).")
    asr_credit: float = Field(description="max(0, credit of that outcome - cost_penalty).")


class ConversationScore(_Model):
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
        if self.instance is not None:
            return (self.task, self.instance)
        if self.attempt is not None:
            return (self.task, None)
        return None


def json_schema(kind: str) -> dict[str, Any]:
    """JSON Schema of `conversation` or `score`."""
    models: dict[str, type[BaseModel]] = {"conversation": Conversation, "score": ConversationScore}
    if kind not in models:
        raise ValueError(f"unknown schema {kind!r}; choose one of {sorted(models)}")
    return models[kind].model_json_schema()
