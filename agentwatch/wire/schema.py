"""The data agentwatch reads and writes: transcripts (`Conversation`) and results (`ConversationScore`).

The public import path of both: the transcript models live in `agentwatch.wire.conversation`, the result
models in `agentwatch.wire.scores`; every name of either is importable from here, and `json_schema` gives
the JSON Schema of each. Both are versioned by `schema_version`; new optional fields may be added, existing
fields keep their meaning.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agentwatch.wire.conversation import (
    ARGUMENT_MODES,
    MAX_ATTEMPT,
    MAX_COST_USD_PER_CALL,
    MAX_COST_USD_PER_TURN,
    MAX_TOKENS_PER_CALL,
    SCHEMA_VERSION,
    ArgumentMode,
    Captured,
    Conversation,
    Ending,
    Expectation,
    ExpectedTool,
    ExtraCalls,
    Outcome,
    ToolCall,
    Turn,
    Usage,
    attempt_number,
    instance_text,
    normalize_outcome,
)
from agentwatch.wire.scores import (
    EVERY_CONVERSATION_GRADERS,
    EVIDENCE,
    GRADERS,
    ArgumentDifference,
    AutomatedVerdict,
    ConversationScore,
    OutcomeSource,
    ToolScore,
    TurnScore,
)

__all__ = [
    "ARGUMENT_MODES",
    "EVERY_CONVERSATION_GRADERS",
    "EVIDENCE",
    "GRADERS",
    "MAX_ATTEMPT",
    "MAX_COST_USD_PER_CALL",
    "MAX_COST_USD_PER_TURN",
    "MAX_TOKENS_PER_CALL",
    "SCHEMA_VERSION",
    "ArgumentDifference",
    "ArgumentMode",
    "AutomatedVerdict",
    "Captured",
    "Conversation",
    "ConversationScore",
    "Ending",
    "Expectation",
    "ExpectedTool",
    "ExtraCalls",
    "Outcome",
    "OutcomeSource",
    "ToolCall",
    "ToolScore",
    "Turn",
    "TurnScore",
    "Usage",
    "attempt_number",
    "instance_text",
    "json_schema",
    "normalize_outcome",
]


def json_schema(kind: str) -> dict[str, Any]:
    """JSON Schema of `conversation` or `score`."""
    models: dict[str, type[BaseModel]] = {"conversation": Conversation, "score": ConversationScore}
    if kind not in models:
        raise ValueError(f"unknown schema {kind!r}; choose one of {sorted(models)}")
    return models[kind].model_json_schema()
