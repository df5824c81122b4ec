"""Transcripts, the input agentwatch scores: `Conversation` with its turns, tool calls, usage and expectations.

`Conversation` is the offline input format (one JSON object per line of a `.jsonl` file) and what the
collector rebuilds from spans. The outcome classes (`Outcome`) and `WireModel`, the base of every model here
and in `agentwatch.wire.scores`, are here too. Versioned by `schema_version`; new optional fields may be
added, existing fields keep their meaning.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentwatch import wire

SCHEMA_VERSION = wire.SCORE_FORMAT_VERSION


class Outcome(str, Enum):
    """Outcome class of a conversation (Agent Success Rate)."""

    COMPLETE = "complete"
    PARTIAL_CORRECT = "partial_correct"
    PARTIAL_INCORRECT = "partial_incorrect"
    HALLUCINATED = "hallucinated"
    ABANDONED = "abandoned"
    UNSCORED = "unscored"


def instance_text(value: Any) -> Any:
    """A task instance as text: benchmark task ids are often numbers (7 -> "7"); an empty one is none."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value)  # exact, however long (a float of 400 digits would overflow)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else str(value)
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
Captured = Literal["messages", "answers", "arguments", "results", "steps"]  # content a source may not record


class WireModel(BaseModel):
    """Base of the transcript and result models: unknown fields ignored, fields settable by name or alias."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class ToolCall(WireModel):
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


class ExpectedTool(WireModel):
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


class Expectation(WireModel):
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


def attempt_number(value: Any) -> int | None:
    """An attempt number read from any JSON value: an integer from 0 to MAX_ATTEMPT, or those ASCII digits as
    text; None for anything else (absent, negative, fractional, too large, a boolean, other text)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_ATTEMPT:
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.isascii() and text.isdigit() and len(text) <= 7 and int(text) <= MAX_ATTEMPT:
            return int(text)
    return None


class Usage(WireModel):
    """Token usage of one model call."""

    model: str | None = Field(default=None, description="Model name (response model if known, else request).")
    input_tokens: int = Field(
        default=0, ge=0, le=MAX_TOKENS_PER_CALL, description="Prompt/input tokens (at most 10,000,000)."
    )
    output_tokens: int = Field(
        default=0, ge=0, le=MAX_TOKENS_PER_CALL, description="Completion/output tokens (at most 10,000,000)."
    )
    cache_read_input_tokens: int = Field(
        default=0,
        ge=0,
        le=MAX_TOKENS_PER_CALL,
        description="Of the input tokens, those read from the provider's prompt cache (billed at its cache-read "
        "price).",
    )
    cache_creation_input_tokens: int = Field(
        default=0,
        ge=0,
        le=MAX_TOKENS_PER_CALL,
        description="Of the input tokens, those written to the provider's prompt cache (billed at its "
        "cache-write price).",
    )
    cost_usd: float | None = Field(
        default=None,
        ge=0,
        le=MAX_COST_USD_PER_CALL,
        description="Cost of this call if the source reported it (at most 10,000 USD).",
    )


class Turn(WireModel):
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


class Conversation(WireModel):
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
    not_captured: list[Captured] = Field(
        default_factory=list,
        description="Content the source recorded for no turn or call (OpenTelemetry content capture off): "
        "messages (inputs and answers), answers (the inputs were recorded, no model output), arguments, results "
        "of tool calls, steps (what the agent did after its last call seen: its loop went on in traces of their "
        "own). Graders and detectors that need it are not applied; without the steps, no grader of the outcome.",
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
