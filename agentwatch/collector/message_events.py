"""Messages logged as span events, folded into the GenAI message attributes of their span.

Before the GenAI conventions put messages in attributes (`gen_ai.input.messages`), they were events, and
deployments still send them so:
- one event per message: `gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`,
  `gen_ai.tool.message` (the input) and `gen_ai.choice` (the output), the body in the event's attributes
  (`content`, `role`, `tool_calls`, `id`; `message` of a choice) or as JSON in `gen_ai.event.content` (Azure AI
  Inference); Strands writes Bedrock content blocks there as JSON;
- one event for all of a side: `gen_ai.content.prompt` (`gen_ai.prompt`) and `gen_ai.content.completion`
  (`gen_ai.completion`), OpenAI-style messages as JSON or a text (Semantic Kernel, Spring AI);
- `gen_ai.client.inference.operation.details`, with the very attributes the collector reads.
On a tool span (Strands) the two events `gen_ai.tool.message` and `gen_ai.choice` are the call's arguments and
result, and are read so.
The decoders hand the events with these names here; the messages become the span's `gen_ai.input.messages` /
`gen_ai.output.messages` unless it has them, in event order, bounded like the attributes (`foreign_messages`).
"""

from __future__ import annotations

from typing import Any

from agentwatch.collector.foreign_messages import (
    ENCODE,
    bounded,
    genai_message,
    genai_messages,
    result_content,
)
from agentwatch.collector.span_record import truncate
from agentwatch.wire import attributes as A
from agentwatch.wire.json_text import value_of

_PER_MESSAGE = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_CHOICE = "gen_ai.choice"
_PROMPT, _COMPLETION = "gen_ai.content.prompt", "gen_ai.content.completion"
_DETAILS = "gen_ai.client.inference.operation.details"
NAMES: frozenset[str] = frozenset({*_PER_MESSAGE, _CHOICE, _PROMPT, _COMPLETION, _DETAILS})
_BODY_KEY = "gen_ai.event.content"
_DETAIL_KEYS = (A.INPUT_MESSAGES, A.OUTPUT_MESSAGES, A.SYSTEM_INSTRUCTIONS)
_MESSAGE_LISTS = (A.INPUT_MESSAGES, A.OUTPUT_MESSAGES)
# how deep the decoders read a message event's values: an OpenAI tool call's arguments sit four levels down a
# message body, the parts of a structured `gen_ai.input.messages` three
DEPTH = 8


def structured(value: Any) -> Any:
    """A JSON object or list written as text, parsed; any other value as it is."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            parsed = value_of(value)
        except (ValueError, RecursionError):
            return value
        if isinstance(parsed, dict) or (
            isinstance(parsed, list) and all(isinstance(x, dict) for x in parsed)
        ):
            return parsed
    return value


def _body(attributes: dict[str, Any]) -> dict[str, Any]:
    """The body of a per-message event: its `gen_ai.event.content` JSON, else its attributes, JSON fields read."""
    body = structured(attributes.get(_BODY_KEY))
    if isinstance(body, dict):
        return body
    return {key: structured(value) for key, value in attributes.items()}


_MESSAGE_FIELDS = frozenset({"role", "content", "tool_calls", "parts"})


def _choice(attributes: dict[str, Any]) -> dict[str, Any] | None:
    """The assistant message of a `gen_ai.choice` event."""
    body = _body(attributes)
    message = body.get("message")
    if isinstance(message, dict) and "tool_calls" not in message and isinstance(body.get("tool_calls"), list):
        message = {**message, "tool_calls": body["tool_calls"]}  # OpenLLMetry logs them beside the message
    if isinstance(message, dict):
        if _MESSAGE_FIELDS.isdisjoint(message):  # an answer that is a JSON object, not a message
            return genai_message({"role": "assistant", "content": attributes.get("message")})
        return genai_message(message, "assistant")
    if isinstance(message, (list, str)):  # Strands: the content blocks, or text
        return genai_message({"role": "assistant", "content": message})
    return genai_message(body, "assistant")


def _answer_calls(messages: list[dict[str, Any]]) -> None:
    """Tool messages logged without the id of the call they answer (OpenLLMetry's) answer the calls the
    assistant message before them asked for, in order."""
    pending: list[str] = []
    for message in messages:
        parts = message["parts"]
        if message["role"] == "assistant":
            pending = [
                str(p["id"]) for p in parts if p.get("type") == "tool_call" and p.get("id") is not None
            ]
        elif message["role"] == "tool" and pending:
            if parts and all(p.get("type") == "text" for p in parts):
                text = "\n".join(str(p.get("content", "")) for p in parts)
                parts = message["parts"] = [{"type": "tool_call_response", "id": None, "response": text}]
            for part in parts:
                if part.get("type") != "tool_call_response":
                    continue
                if part.get("id") is None and pending:
                    part["id"] = pending.pop(0)
                elif part.get("id") in pending:
                    pending.remove(part["id"])


def _fold_tool(attrs: dict[str, Any], events: list[tuple[str, dict[str, Any]]]) -> None:
    """A tool span's events (Strands): `gen_ai.tool.message` holds the call's arguments and id, `gen_ai.choice`
    its result."""
    for name, attributes in events:
        if name == "gen_ai.tool.message":
            found = {A.TOOL_ARGUMENTS: attributes.get("content"), A.TOOL_CALL_ID: attributes.get("id")}
        elif name == _CHOICE:
            found = {A.TOOL_RESULT: result_content(structured(attributes.get("message")))}
        else:
            continue
        for key, value in found.items():
            if value not in (None, "") and attrs.get(key) in (None, ""):
                attrs[key] = value


def _as_text(key: str, value: Any, limit: int) -> Any:
    """A structured message key of the inference details event as JSON text, as spans carry it (and as it
    survives re-keying, which re-reads attributes only three levels deep)."""
    if key in _MESSAGE_LISTS and isinstance(value, list):
        return bounded([m for m in value if isinstance(m, dict)], limit)
    if isinstance(value, (list, dict)):
        return truncate(ENCODE(value), limit)
    return value


def fold(attrs: dict[str, Any], events: list[tuple[str, dict[str, Any]]], limit: int) -> None:
    """Set one span's GenAI message attributes from its message events (`(name, attributes)`, in order); on a
    tool span, its arguments and result."""
    if attrs.get(A.OPERATION) == A.EXECUTE_TOOL:
        _fold_tool(attrs, events)
        return
    sides: dict[str, list[dict[str, Any]]] = {A.INPUT_MESSAGES: [], A.OUTPUT_MESSAGES: []}
    for name, attributes in events:
        if name == _DETAILS:
            for key in _DETAIL_KEYS:
                if attributes.get(key) not in (None, "") and attrs.get(key) in (None, ""):
                    attrs[key] = _as_text(key, attributes[key], limit)
        elif name in _PER_MESSAGE:
            message = genai_message(_body(attributes), _PER_MESSAGE[name])
            if message is not None:
                sides[A.INPUT_MESSAGES].append(message)
        elif name == _CHOICE:
            message = _choice(attributes)
            if message is not None:
                sides[A.OUTPUT_MESSAGES].append(message)
        elif name == _PROMPT:
            sides[A.INPUT_MESSAGES] += genai_messages(structured(attributes.get("gen_ai.prompt")), "user")
        elif name == _COMPLETION:
            sides[A.OUTPUT_MESSAGES] += genai_messages(
                structured(attributes.get("gen_ai.completion")), "assistant"
            )
    _answer_calls(sides[A.INPUT_MESSAGES])
    for key, found in sides.items():
        if found and attrs.get(key) in (None, ""):
            attrs[key] = bounded(found, limit)
