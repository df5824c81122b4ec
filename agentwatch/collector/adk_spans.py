"""Google ADK's own span attributes (`gcp.vertex.agent.*`) folded into the GenAI attributes the collector reads.

ADK before its spans followed the GenAI conventions (1.x, and 2.x with `ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1`)
logs a model call's request and response as JSON on its `call_llm` span (`gcp.vertex.agent.llm_request`: the
model, `config.system_instruction`, the Gemini `contents`; `gcp.vertex.agent.llm_response`: the `content`
answered) and a tool call's arguments and result on its `execute_tool` span (`gcp.vertex.agent.tool_call_args`,
`gcp.vertex.agent.tool_response`). The decoders keep these keys and fold them here; a GenAI attribute the span
has wins. With content capture off ADK writes `{}` there, which folds into nothing.
"""

from __future__ import annotations

from typing import Any

from agentwatch.collector.foreign_messages import bounded, genai_message, genai_messages
from agentwatch.collector.messages import system_text
from agentwatch.wire import attributes as A
from agentwatch.wire.json_text import value_of

_REQUEST = "gcp.vertex.agent.llm_request"
_RESPONSE = "gcp.vertex.agent.llm_response"
_TOOL_ARGUMENTS = "gcp.vertex.agent.tool_call_args"
_TOOL_RESULT = "gcp.vertex.agent.tool_response"
KEYS: frozenset[str] = frozenset({_REQUEST, _RESPONSE, _TOOL_ARGUMENTS, _TOOL_RESULT})


def _object(value: Any) -> dict[str, Any]:
    """A JSON object attribute's value ({} when it is not one: cut at the attribute limit, say)."""
    if isinstance(value, str):
        try:
            value = value_of(value)
        except (ValueError, RecursionError):
            return {}
    return value if isinstance(value, dict) else {}


def _text(instruction: Any) -> str | None:
    """A system instruction's text: a string, or the text parts of a Gemini content (or a list of them)."""
    if isinstance(instruction, str):
        return instruction
    if isinstance(instruction, (dict, list)):
        # every message of it is the instruction, whatever role Gemini's content names
        return system_text([{**m, "role": "system"} for m in genai_messages(instruction, "system")])
    return None


def _unset(attrs: dict[str, Any], key: str) -> bool:
    return attrs.get(key) in (None, "")


def fold(attrs: dict[str, Any], limit: int) -> None:
    """Replace one span's ADK keys with the GenAI attributes they stand for."""
    arguments, result = attrs.pop(_TOOL_ARGUMENTS, None), attrs.pop(_TOOL_RESULT, None)
    request, response = _object(attrs.pop(_REQUEST, None)), _object(attrs.pop(_RESPONSE, None))
    if arguments is not None and _unset(attrs, A.TOOL_ARGUMENTS):
        attrs[A.TOOL_ARGUMENTS] = arguments
    if result is not None and _unset(attrs, A.TOOL_RESULT):
        attrs[A.TOOL_RESULT] = result
    contents = request.get("contents")
    if isinstance(contents, list) and contents and _unset(attrs, A.INPUT_MESSAGES):
        attrs[A.INPUT_MESSAGES] = bounded(genai_messages(contents, "user"), limit)
    config = request.get("config")
    system = _text(config.get("system_instruction")) if isinstance(config, dict) else None
    if system and _unset(attrs, A.SYSTEM_INSTRUCTIONS):
        attrs[A.SYSTEM_INSTRUCTIONS] = system
    answered = genai_message(response.get("content"), "assistant")
    if answered is not None and answered["parts"] and _unset(attrs, A.OUTPUT_MESSAGES):
        attrs[A.OUTPUT_MESSAGES] = bounded([answered], limit)
