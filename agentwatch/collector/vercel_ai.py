"""The Vercel AI SDK's telemetry (`ai.*` attributes) folded into the GenAI attributes the collector reads.

With `experimental_telemetry` on, the AI SDK (TypeScript) writes one span per `generateText` / `streamText` call
(`ai.operationId` "ai.generateText": the whole tool loop), one per model call below it ("….doGenerate",
"….doStream") and one per tool call ("ai.toolCall"). Its own keys carry what the GenAI conventions name
otherwise: `ai.prompt` (`{system, prompt, messages}`), `ai.prompt.messages`, `ai.response.text`,
`ai.response.object`, `ai.response.toolCalls`, `ai.toolCall.name|id|args|result`, `ai.telemetry.functionId`.
The decoders keep these keys on spans that have an `ai.operationId` and fold them here: a generateText call
becomes an agent invocation (a turn: its prompt's last user message is the input, its text the answer), a model
call a `chat`, a tool call an `execute_tool`. A GenAI attribute the span already has is kept. The model calls'
`gen_ai.request.model` and `gen_ai.usage.*` the SDK writes itself.
"""

from __future__ import annotations

from typing import Any

from agentwatch.collector.foreign_messages import bounded, genai_message, genai_messages
from agentwatch.collector.messages import system_text
from agentwatch.wire import attributes as A
from agentwatch.wire.json_text import value_of

OPERATION_ID = "ai.operationId"
_PROMPT = "ai.prompt"
_PROMPT_MESSAGES = "ai.prompt.messages"
_TEXT = "ai.response.text"
_OBJECT = "ai.response.object"
_TOOL_CALLS = "ai.response.toolCalls"
_FUNCTION_ID = "ai.telemetry.functionId"
_TOOL_KEYS = {
    "ai.toolCall.name": A.TOOL_NAME,
    "ai.toolCall.id": A.TOOL_CALL_ID,
    "ai.toolCall.args": A.TOOL_ARGUMENTS,
    "ai.toolCall.result": A.TOOL_RESULT,
}
# every key the decoders keep for the fold (besides the GenAI ones they always keep)
KEYS: frozenset[str] = frozenset(
    {OPERATION_ID, _PROMPT, _PROMPT_MESSAGES, _TEXT, _OBJECT, _TOOL_CALLS, _FUNCTION_ID, *_TOOL_KEYS}
)
_CALLS = frozenset({"ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"})
_MODEL_SUFFIXES = (".doGenerate", ".doStream")


def _parsed(value: Any) -> Any:
    """A JSON attribute's value (None when it is not JSON: cut at the attribute limit, say)."""
    if not isinstance(value, str):
        return value
    try:
        return value_of(value)
    except (ValueError, RecursionError):
        return None


def _prompt_messages(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    """A call's input: a model call's `ai.prompt.messages`, else the `ai.prompt` of a generateText call."""
    found = _parsed(attrs.get(_PROMPT_MESSAGES))
    if isinstance(found, list):
        return genai_messages(found)
    prompt = _parsed(attrs.get(_PROMPT))
    if not isinstance(prompt, dict):
        return []
    out: list[dict[str, Any]] = []
    system = prompt.get("system")
    if isinstance(system, str) and system:
        out.append({"role": "system", "parts": [{"type": "text", "content": system}]})
    if isinstance(prompt.get("messages"), list):
        out += genai_messages(prompt["messages"])
    said = prompt.get("prompt")
    if isinstance(said, str):
        out.append({"role": "user", "parts": [{"type": "text", "content": said}]})
    elif isinstance(said, list):
        out += genai_messages(said)
    return out


def _response_message(attrs: dict[str, Any]) -> dict[str, Any] | None:
    """A call's output as one assistant message: its text (or object) and the tool calls it asked for."""
    text = attrs.get(_TEXT)
    if text is None and attrs.get(_OBJECT) is not None:
        text = attrs[_OBJECT]
    calls = _parsed(attrs.get(_TOOL_CALLS))
    if text is None and not calls:
        return None
    parts: list[dict[str, Any]] = []
    if text is not None and text != "":
        parts.append({"type": "text", "content": text if isinstance(text, str) else str(text)})
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict):
            message = genai_message({"role": "assistant", "content": [{**call, "type": "tool-call"}]})
            parts += message["parts"] if message else []
    return {"role": "assistant", "parts": parts}


def fold(attrs: dict[str, Any], limit: int) -> None:
    """Replace one span's AI SDK keys (it has an `ai.operationId`) with the GenAI attributes they stand for."""
    op = attrs.pop(OPERATION_ID, None)
    function = attrs.pop(_FUNCTION_ID, None)
    operation = None
    if op == "ai.toolCall":
        operation = A.EXECUTE_TOOL
    elif isinstance(op, str) and op.endswith(_MODEL_SUFFIXES):
        operation = A.CHAT
    elif isinstance(op, str) and op in _CALLS:  # an operation id that is a list or a map names no operation
        operation = A.INVOKE_AGENT
        if function is not None and attrs.get(A.AGENT_NAME) in (None, ""):
            attrs[A.AGENT_NAME] = function
    if operation is not None and attrs.get(A.OPERATION) in (None, ""):
        attrs[A.OPERATION] = operation
    for key, target in _TOOL_KEYS.items():
        value = attrs.pop(key, None)
        if value is not None and attrs.get(target) in (None, ""):
            attrs[target] = value
    if operation in (A.CHAT, A.INVOKE_AGENT):
        if attrs.get(A.INPUT_MESSAGES) in (None, ""):
            found = _prompt_messages(attrs)
            if found:
                attrs[A.INPUT_MESSAGES] = bounded(found, limit)
            system = system_text(found)
            if operation == A.INVOKE_AGENT and system and attrs.get(A.SYSTEM_INSTRUCTIONS) in (None, ""):
                # an agent span's instructions are read from this key (model calls', from their messages)
                attrs[A.SYSTEM_INSTRUCTIONS] = system
        if attrs.get(A.OUTPUT_MESSAGES) in (None, ""):
            answer = _response_message(attrs)
            if answer is not None:
                attrs[A.OUTPUT_MESSAGES] = bounded([answer], limit)
    for key in (_PROMPT, _PROMPT_MESSAGES, _TEXT, _OBJECT, _TOOL_CALLS):
        attrs.pop(key, None)
