"""Chat messages in the shapes other loggers write, as GenAI messages (`{role, parts}`), bounded like an attribute.

Span events and other SDKs' attributes carry a model call's messages in the shape of the API they came from:
OpenAI chat (`content` text or parts, `tool_calls[].function`, `tool_call_id`), Anthropic (`tool_use`,
`tool_result` parts), Bedrock Converse as Strands logs it (`{"text"}`, `{"toolUse"}`, `{"toolResult"}`), Gemini
(`function_call`, `function_response` parts), the Vercel AI SDK (`tool-call`, `tool-result` parts), or the GenAI
form itself. `genai_message` reads any of them
into the GenAI form the rest of the collector reads (`text`, `tool_call`, `tool_call_response` parts); a part it
does not know is left out, never guessed at. `bounded` writes a list of them as the JSON text of one attribute.
"""

from __future__ import annotations

import json
from typing import Any

from agentwatch.wire import json_text

# json.dumps with options makes an encoder on every call
ENCODE = json.JSONEncoder(ensure_ascii=False, default=str).encode
_SYSTEM = ("system", "developer")
_ROLES = {"human": "user", "ai": "assistant", "model": "assistant"}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ENCODE(value)


def _call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "id": None if call_id is None else str(call_id),
        "name": str(name or "unknown"),
        "arguments": arguments,
    }


def _response(call_id: Any, response: Any) -> dict[str, Any]:
    return {
        "type": "tool_call_response",
        "id": None if call_id is None else str(call_id),
        "response": response,
    }


def result_content(value: Any) -> Any:
    """A tool result as logged beside its call id: text parts joined, a `{type, value}` output unwrapped."""
    if isinstance(value, list):
        texts = [_part_text(p) for p in value]
        if texts and all(t is not None for t in texts):
            return "\n".join(t for t in texts if t is not None)
        return value
    if isinstance(value, dict) and "value" in value and set(value) <= {"type", "value"}:
        return value["value"]  # the Vercel AI SDK's `{type: "json" | "text", value}`
    return value


def _part_text(part: Any) -> str | None:
    """The text of a text part in any of the shapes (a string, `{type: text, text|content}`, `{text}`)."""
    if isinstance(part, str):
        return part
    if isinstance(part, dict):
        kind = part.get("type")
        if kind in (None, "text", "input_text", "output_text"):
            text = part.get("text", part.get("content") if kind is not None else None)
            if isinstance(text, str):
                return text
        if "json" in part and len(part) == 1:  # Bedrock's `{"json": ...}` content block
            return _text(part["json"])
    return None


def _parts_of(item: Any) -> list[dict[str, Any]]:
    """GenAI parts of one content item in any of the shapes; [] for one it does not know."""
    text = _part_text(item)
    if text is not None:
        return [{"type": "text", "content": text}]
    if not isinstance(item, dict):
        return []
    kind = item.get("type")
    if kind in ("tool_call", "tool_call_response"):  # already the GenAI form
        return [item]
    if kind in ("tool-call", "tool_use", "function_call"):  # Vercel AI SDK, Anthropic, OpenAI Responses
        arguments = item.get("args", item.get("input", item.get("arguments")))
        return [
            _call(
                # the Responses API's `function_call` has an item `id` and the `call_id` its output names
                item.get("toolCallId", item.get("call_id", item.get("id"))),
                item.get("toolName", item.get("name")),
                arguments,
            )
        ]
    if kind in ("tool-result", "tool_result", "function_call_output"):
        result = item.get("result", item.get("output", item.get("content")))
        return [
            _response(
                item.get("toolCallId", item.get("tool_use_id", item.get("call_id"))), result_content(result)
            )
        ]
    for key in ("function_call", "functionCall"):  # Gemini (its SDK's JSON, or the REST API's)
        call = item.get(key)
        if isinstance(call, dict):
            return [_call(call.get("id"), call.get("name"), call.get("args"))]
    for key in ("function_response", "functionResponse"):
        done = item.get(key)
        if isinstance(done, dict):
            return [_response(done.get("id"), done.get("response"))]
    use = item.get("toolUse")  # Bedrock Converse
    if isinstance(use, dict):
        return [_call(use.get("toolUseId"), use.get("name"), use.get("input"))]
    result = item.get("toolResult")
    if isinstance(result, dict):
        return [_response(result.get("toolUseId"), result_content(result.get("content")))]
    return []


def genai_message(body: Any, role: str | None = None) -> dict[str, Any] | None:
    """One message (`role`: what its event or place says, when the body does not) in the GenAI form; None when
    it is neither text nor a dict."""
    if isinstance(body, str):
        return {"role": role or "user", "parts": [{"type": "text", "content": body}]}
    if not isinstance(body, dict):
        return None
    said = body.get("role")
    said = _ROLES.get(said, said) if isinstance(said, str) else None
    who = said or role or "user"
    if isinstance(body.get("parts"), list):  # the GenAI form, or Gemini's content
        return {"role": who, "parts": [q for p in body["parts"] for q in _parts_of(p)]}
    content = body.get("content")
    parts: list[dict[str, Any]] = []
    call_id = body.get("tool_call_id", body.get("id") if who == "tool" else None)
    if who == "tool" and not _has_results(content):
        # a result of no known part shape (a JSON object a tool returned) is the response, with or without an id
        if call_id is not None or (isinstance(content, dict) and not _parts_of(content)):
            return {"role": who, "parts": [_response(call_id, result_content(content))]}
    if isinstance(content, list):
        for item in content:
            parts += _parts_of(item)
    elif content is not None:
        parts += _parts_of(content if isinstance(content, (str, dict)) else _text(content))
    calls = body.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict):
            function = call.get("function")
            function = function if isinstance(function, dict) else call
            parts.append(_call(call.get("id"), function.get("name"), function.get("arguments")))
    return {"role": who, "parts": parts}


# OpenAI's fields of a message in a `gen_ai.*.messages` string: what `with_openai_fields` reads
OPENAI_MARK = '"tool_call'  # of `"tool_calls"` and `"tool_call_id"` (and of the GenAI `"tool_call"` parts)


def with_openai_fields(message: dict[str, Any]) -> dict[str, Any]:
    """A message carrying OpenAI's `tool_calls` (an assistant's) or `tool_call_id` (a tool's), beside GenAI parts
    as LiteLLM's OpenTelemetry callback writes them or without any: the calls as `tool_call` parts, a tool
    message's text as the response to its call. Other messages as they are."""
    calls, call_id = message.get("tool_calls"), message.get("tool_call_id")
    if not isinstance(calls, list) and call_id is None:
        return message
    found = message.get("parts")
    if not isinstance(found, list):
        return genai_message(message) or message
    kept = [p for p in found if isinstance(p, dict) and p.get("content") != ""]  # LiteLLM's empty text part
    if call_id is not None and message.get("role") == "tool":
        if not any(p.get("type") == "tool_call_response" for p in kept):
            texts = [
                p["content"] for p in kept if p.get("type") == "text" and isinstance(p.get("content"), str)
            ]
            kept = [_response(call_id, "\n".join(texts) if texts else None)]
    if isinstance(calls, list):
        known = {p.get("id") for p in kept if p.get("type") == "tool_call"}
        asked = genai_message({"role": "assistant", "tool_calls": calls}) or {"parts": []}
        kept += [p for p in asked["parts"] if p["id"] is None or p["id"] not in known]
    return {**message, "parts": kept}


def response_of(part: dict[str, Any]) -> Any:
    """The result a `tool_call_response` part gives (`response`, or `result` as some loggers write it), as the
    value the tool returned (`tool_value`)."""
    return tool_value(part.get("response", part.get("result")))


_MCP_BLOCK = frozenset({"type", "text", "annotations", "_meta", "meta"})
_MCP_RESULT = frozenset({"content", "isError", "structuredContent", "_meta", "meta"})


def tool_value(value: Any) -> Any:
    """A tool's result as the value it returned, where a logger wrapped it: Bedrock's content blocks
    (`[{"json": value}]`, `[{"text": text}]`, as OpenLLMetry logs a `toolResult`), MCP's text content blocks
    (`{"type": "text", "text": …}`, as the OpenAI Agents SDK returns an MCP tool's result) or an MCP
    `CallToolResult` (its `structuredContent`, else its content); JSON text as the value it encodes. Any
    other value as it is."""
    found = _json_or(value, value) if isinstance(value, str) else value
    if isinstance(found, dict) and found.keys() <= _MCP_RESULT and isinstance(found.get("content"), list):
        structured = found.get("structuredContent")
        if isinstance(structured, dict):
            return structured
        return tool_value(found["content"]) if found["content"] else value
    unwrapped = _from_blocks([found] if isinstance(found, dict) else found)
    return value if unwrapped is None else unwrapped


def _from_blocks(blocks: Any) -> Any:
    """The value a list of Bedrock or MCP text content blocks holds; None for anything else."""
    if not isinstance(blocks, list) or not blocks or not all(isinstance(b, dict) for b in blocks):
        return None
    if all(len(b) == 1 and ("json" in b or "text" in b) for b in blocks):  # Bedrock's
        if len(blocks) == 1 and "json" in blocks[0]:
            return blocks[0]["json"]
        return "\n".join(b["text"] if "text" in b else _text(b["json"]) for b in blocks)
    if all(
        b.get("type") == "text" and isinstance(b.get("text"), str) and b.keys() <= _MCP_BLOCK for b in blocks
    ):
        text = "\n".join(b["text"] for b in blocks)
        return _json_or(text, text)
    return None


def _json_or(text: str, default: Any) -> Any:
    """`text` as the JSON object or array it encodes, else `default`."""
    if text.lstrip()[:1] not in ("{", "["):
        return default
    try:
        return json_text.value_of(text)
    except (ValueError, RecursionError):
        return default


def _has_results(content: Any) -> bool:
    """Whether a tool message's content is a list of result parts carrying their own call ids."""
    return isinstance(content, list) and any(
        isinstance(p, dict) and (p.get("type") in ("tool-result", "tool_result") or "toolResult" in p)
        for p in content
    )


def genai_messages(value: Any, role: str | None = None) -> list[dict[str, Any]]:
    """A list of messages (or one) in any of the shapes, in the GenAI form; what is not a message is left out."""
    items = value if isinstance(value, list) else [value]
    found = (genai_message(item, role) for item in items)
    return [m for m in found if m is not None]


def bounded(messages: list[dict[str, Any]], limit: int) -> str:
    """The messages as JSON of at most `limit` characters where one message fits: the oldest left out first,
    the system messages last."""
    whole = ENCODE(messages)
    if len(whole) <= limit:  # the common case
        return whole
    texts = [ENCODE(m) for m in messages]
    size = sum(len(t) + 1 for t in texts) + 1
    last = len(messages) - 1  # the latest message is always kept
    order = [i for i, m in enumerate(messages) if i != last and m["role"] not in _SYSTEM]
    order += [i for i, m in enumerate(messages) if i != last and m["role"] in _SYSTEM]
    dropped: set[int] = set()
    for i in order:
        if size <= limit:
            break
        dropped.add(i)
        size -= len(texts[i]) + 1
    return "[" + ",".join(t for i, t in enumerate(texts) if i not in dropped) + "]"
