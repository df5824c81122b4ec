"""Tool calls a model output logged as a Python repr rather than as message parts: the official OpenAI Agents
instrumentation writes the Responses API's function call object (`ResponseFunctionToolCall(arguments=…,
call_id=…, name=…)`), or the Chat Completions message as a dict, as its output's text. Read by `ast` literals
only (`wire.values`): nothing is looked up or called."""

from __future__ import annotations

from typing import Any

from agentwatch.wire.values import read_object_repr, read_structured

# what a tool call logged as a Python repr holds (JSON text holds neither): an object's `arguments=` field, a
# Chat Completions message dict's 'tool_calls' key
REPR_MARKS = ("arguments=", "'tool_calls'")


def with_repr_calls(message: dict) -> dict:
    """`message` (the model's) with each text part that is a Python repr of tool calls replaced by the parts it
    stands for; other messages as they are."""
    found = message.get("parts")
    if not isinstance(found, list) or message.get("role") not in ("assistant", "model"):
        return message
    out: list[Any] = []
    for part in found:
        content = part.get("content") if isinstance(part, dict) and part.get("type") == "text" else None
        read = _repr_parts(content) if isinstance(content, str) else None
        out.extend([part] if read is None else read)
    return {**message, "parts": out}


def _repr_parts(text: str) -> list[dict] | None:
    """The parts a model output logged as a Python repr stands for (the official OpenAI Agents instrumentation
    writes the Responses API's function call object, `ResponseFunctionToolCall(arguments=…, call_id=…, name=…)`,
    or the Chat Completions message as a dict, as its output's text): its tool calls, and its text; None when
    `text` is no such repr."""
    found = read_object_repr(text)
    if found is not None:
        fields = found[1]
        if "name" not in fields or "arguments" not in fields:
            return None
        return [_call_part(fields.get("call_id") or fields.get("id"), fields["name"], fields["arguments"])]
    value, how = read_structured(text)
    if how != "python" or not isinstance(value, dict) or not isinstance(value.get("tool_calls"), list):
        return None
    content = value.get("content")
    out = [{"type": "text", "content": content}] if isinstance(content, str) and content else []
    for call in value["tool_calls"]:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            out.append(_call_part(call.get("id"), function.get("name"), function.get("arguments")))
    return out


def _call_part(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}
