"""Read GenAI message attributes (`gen_ai.input.messages`, `gen_ai.output.messages`): text and tool-call parts."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic_core import from_json

from agentwatch.collector import conventions as cv
from agentwatch.collector.decode import SpanRecord
from agentwatch.wire.values import read_structured

_loads = from_json  # Rust JSON parser shipped with pydantic; ~3x json.loads on short messages


def as_text(value: Any) -> str | None:
    """A value as text: strings unchanged, anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def json_or_text(value: Any) -> Any:
    """Parse an attribute value that is JSON (or an object or array logged as a Python literal, read safely by
    `agentwatch.wire.values`), else keep the value as is."""
    if isinstance(value, str):
        try:
            return _loads(value)
        except (ValueError, RecursionError):
            return read_structured(value)[0]
    return value


def messages(value: Any) -> list[dict] | None:
    """Messages of a `gen_ai.*.messages` attribute (JSON string or structured); None if absent or unreadable."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = _loads(value)
        except (ValueError, RecursionError):
            return None
    if isinstance(value, dict):
        return [value]
    if not isinstance(value, list):
        return None
    return [m for m in value if isinstance(m, dict)]


def parts(message: dict) -> list[dict]:
    """Parts of one message; the older flat `{"role", "content": "..."}` form reads as one text part."""
    found = message.get("parts")
    if isinstance(found, list):
        return [p for p in found if isinstance(p, dict)]
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    return []


def message_text(message: dict) -> str | None:
    """Text parts of one message joined by newlines; None if it has none."""
    found = message.get("parts")
    if isinstance(found, list):
        texts = [
            p["content"]
            for p in found
            if isinstance(p, dict) and p.get("type") == "text" and p.get("content") is not None
        ]
    else:  # the older flat form: `content` as one text part (what `parts` reads)
        content = message.get("content")
        texts = [content] if isinstance(content, str) else []
    if not texts:
        return None
    first = texts[0]
    if len(texts) == 1 and isinstance(first, str):  # the usual case
        return first
    return "\n".join(as_text(t) or "" for t in texts)


def instructions_text(value: Any) -> str | None:
    """The agent's instructions from `gen_ai.system_instructions` (JSON parts, a message, or plain text)."""
    if value is None:
        return None
    parsed = json_or_text(value)
    if isinstance(parsed, list):
        texts = [p.get("content") for p in parsed if isinstance(p, dict) and p.get("type", "text") == "text"]
        texts += [p for p in parsed if isinstance(p, str)]
        joined = "\n".join(t for t in texts if isinstance(t, str) and t)
        return joined or None
    if isinstance(parsed, dict):
        return message_text(parsed)
    return parsed if isinstance(parsed, str) and parsed else as_text(parsed)


def system_text(found: list[dict] | None) -> str | None:
    """Text of the system (or developer) messages among input messages, joined; None if there are none."""
    if not found:
        return None
    texts = [message_text(m) for m in found if m.get("role") in ("system", "developer")]
    joined = "\n".join(t for t in texts if t)
    return joined or None


def last_user_text(found: list[dict] | None) -> str | None:
    """Text of the last user message that has text."""
    if found:
        for message in reversed(found):
            if message.get("role") == "user":
                text = message_text(message)
                if text is not None:
                    return text
    return None


def output_text(found: list[dict] | None) -> str | None:
    """Text parts of all non-user output messages, joined by newlines."""
    if not found:
        return None
    texts = []
    for message in found:
        if message.get("role", "assistant") != "user":
            text = message_text(message)
            if text:
                texts.append(text)
    if not texts:
        return None
    return texts[0] if len(texts) == 1 else "\n".join(texts)


def _parts_by_call(models: list[SpanRecord], keys: tuple[str, ...], kind: str) -> dict[str, dict[str, Any]]:
    """The parts of one kind (`tool_call`, `tool_call_response`) of the model spans' messages attribute `keys`,
    by call id."""
    found: dict[str, dict[str, Any]] = {}
    for span in models:
        for message in messages(cv.first(span.attrs, keys)) or []:
            for part in parts(message):
                if part.get("type") == kind and part.get("id") is not None:
                    found[str(part["id"])] = part
    return found


def _responses(models: list[SpanRecord]) -> dict[str, Any]:
    """The results of the `tool_call_response` parts of the model spans' input messages, by call id."""
    found = _parts_by_call(models, cv.INPUT_MESSAGES_KEYS, "tool_call_response")
    return {call: part.get("response", part.get("result")) for call, part in found.items()}


class ToolResponses:
    """The tool results every model call of a conversation was given, by call id: read on first use.

    Without agent spans model calls are turns of their own unless they are joined as one tool loop
    (`answers_calls_of`), and the result of a call one of them asked for is in a later one's input messages."""

    __slots__ = ("_found", "_models")

    def __init__(self, models: Callable[[], list[SpanRecord]]) -> None:
        self._models = models  # called on first use: most conversations never need it
        self._found: dict[str, Any] | None = None

    def get(self, call_id: str) -> tuple[bool, Any]:
        """(whether a result was given for the call, the result)."""
        if self._found is None:
            self._found = _responses(self._models())
        return call_id in self._found, self._found.get(call_id)


def _part_ids(value: Any, kind: str) -> set[str]:
    """The ids of the parts of one kind (`tool_call`, `tool_call_response`) in a messages attribute."""
    return {
        str(part["id"])
        for message in messages(value) or []
        for part in parts(message)
        if part.get("type") == kind and part.get("id") is not None
    }


def langchain_tool_message(value: Any) -> tuple[Any, str | None] | None:
    """(content, tool call id) of a LangChain `ToolMessage` logged as a tool span's `output.value`
    (`{"type": "tool", "data": {...}}` or LangChain-serialised); None for any other value."""
    if not isinstance(value, str) or '"tool' not in value:  # both forms name the type "tool" / "ToolMessage"
        return None
    body = json_or_text(value)
    if not isinstance(body, dict):
        return None
    if body.get("type") == "tool" and isinstance(body.get("data"), dict):
        data = body["data"]
    elif "lc" in body and isinstance(body.get("kwargs"), dict) and "ToolMessage" in str(body.get("id")):
        data = body["kwargs"]
    else:
        return None
    call_id = data.get("tool_call_id")
    return json_or_text(data.get("content")), None if call_id is None else str(call_id)


def arguments_by_call(models: list[SpanRecord]) -> dict[str, Any]:
    """The arguments of the `tool_call` parts of model output messages, by call id."""
    found = _parts_by_call(models, cv.OUTPUT_MESSAGES_KEYS, "tool_call")
    return {call: json_or_text(part.get("arguments")) for call, part in found.items()}


def may_ask_for_tools(model: SpanRecord) -> bool:
    """Whether a model call's output messages may hold a `tool_call` part (False when they are JSON text without
    one, or absent: most calls answer, and their messages need no parse)."""
    output = cv.first(model.attrs, cv.OUTPUT_MESSAGES_KEYS)
    return output is not None and (not isinstance(output, str) or '"tool_call"' in output)


def answers_calls_of(earlier: SpanRecord, later: SpanRecord) -> bool:
    """Whether model call `later` is given the result of a tool call model call `earlier` asked for: the two
    are steps of one tool loop."""
    asked = _part_ids(cv.first(earlier.attrs, cv.OUTPUT_MESSAGES_KEYS), "tool_call")
    return bool(asked) and not asked.isdisjoint(
        _part_ids(cv.first(later.attrs, cv.INPUT_MESSAGES_KEYS), "tool_call_response")
    )


def tools_from_messages(
    models: list[SpanRecord], elsewhere: ToolResponses | None = None
) -> tuple[list[dict[str, Any]], int]:
    """Tool calls from `tool_call` parts of model output messages, results from `tool_call_response` parts of
    the input messages of `elsewhere` (the conversation's model calls), else of the same model calls.

    Returns the calls in order (as `ToolCall` fields) and how many of them have no result captured.
    """
    calls: list[dict[str, Any]] = []
    seen: set[str] = set()
    for span in models:
        for message in messages(cv.first(span.attrs, cv.OUTPUT_MESSAGES_KEYS)) or []:
            for part in parts(message):
                if part.get("type") != "tool_call":
                    continue
                call_id = None if part.get("id") is None else str(part["id"])
                if call_id is not None:
                    if call_id in seen:
                        continue
                    seen.add(call_id)
                calls.append(
                    {
                        "name": str(part.get("name") or "unknown"),
                        "arguments": json_or_text(part.get("arguments")),
                        "call_id": call_id,
                    }
                )
    missing = 0
    if not calls:
        return calls, missing
    responses = elsewhere if elsewhere is not None else ToolResponses(lambda: models)
    for call in calls:
        call_id = call["call_id"]
        given, result = responses.get(call_id) if call_id is not None else (False, None)
        if given:
            call["result"] = json_or_text(result)
        else:
            missing += 1
    return calls, missing


# `input.value` / `output.value` of chain and agent spans often hold the call's JSON body: LangChain's and
# LangGraph's `{"messages": [...]}` state or `{"input": "..."}` / `{"output": "..."}`, our `@trace` chains'
# arguments by name. The text said is read out of those forms; any other value is kept as it is.
_USER_ROLES = frozenset({"user", "human"})
_AGENT_ROLES = frozenset({"assistant", "ai", "model"})
_LC_CLASSES = {"HumanMessage": "human", "AIMessage": "ai", "SystemMessage": "system", "ToolMessage": "tool"}


def value_text(value: Any, said_by_user: bool) -> str | None:
    """An `input.value` (`said_by_user`) or `output.value` as the text the user or the agent said."""
    if not isinstance(value, str):
        return as_text(value)
    body = _body(value)
    if body is None:
        return value
    found = body.get("messages")
    if isinstance(found, list):
        return _said(found, said_by_user)
    if len(body) == 1:
        (only,) = body.values()
        if isinstance(only, str):
            return only
    for key in _INPUT_KEYS if said_by_user else _OUTPUT_KEYS:  # an agent's call: its question or its answer
        said = body.get(key)
        if isinstance(said, str) and said:
            return said
    return value


# the arguments or results naming what was said, of agent and chain calls (smolagents' `task`, LlamaIndex's
# `user_msg`, ...), in the order they are looked for
_INPUT_KEYS = ("input", "task", "question", "query", "user_msg", "message", "prompt")
_OUTPUT_KEYS = ("output", "answer", "final_answer", "response", "result")
_REPR = re.compile(r"[A-Za-z_][\w.]*\([A-Za-z_]\w*=")  # `Name(field=`: a dataclass's or model's repr


def is_body(text: str) -> bool:
    """Whether a chain's `input.value` / `output.value`, as `value_text` read it, is a body rather than text
    said: a JSON object or array, or a Python object's repr (`StopEvent(result=...)`)."""
    if text[:1] in ("{", "["):
        try:
            return isinstance(_loads(text), (dict, list))
        except (ValueError, RecursionError):
            return False
    return _REPR.match(text) is not None


def state_text(value: Any, said_by_user: bool) -> str | None:
    """The latest user (`said_by_user`) or agent text of a chain's `{"messages": [...]}` state (LangGraph's), as
    `input.value` / `output.value` hold it; None for any other value."""
    if not isinstance(value, str) or '"messages"' not in value:  # most values are no state: no parse
        return None
    body = _body(value)
    found = body.get("messages") if body is not None else None
    return _said(found, said_by_user) if isinstance(found, list) else None


def _body(value: str) -> dict[str, Any] | None:
    """A JSON object written as text, parsed; None for any other text."""
    if not value.startswith("{"):
        return None
    try:
        body = _loads(value)
    except (ValueError, RecursionError):
        return None
    return body if isinstance(body, dict) else None


def _said(found: list[Any], said_by_user: bool) -> str | None:
    """The text of the last user (`said_by_user`) or agent message with text of a messages state."""
    wanted = _USER_ROLES if said_by_user else _AGENT_ROLES
    for item in reversed(found):
        role, text = _role_and_text(item)
        if role in wanted and text:
            return text
    return None


def _role_and_text(item: Any) -> tuple[str | None, str | None]:
    """(role, text) of one message of a chain's state: a `{role|type, content}` object, a `[role, text]` pair, a
    LangChain-serialised message (`{"lc": 1, "id": [..., "AIMessage"], "kwargs": {...}}`) or one in LangChain's
    `{"type", "data": {"content", ...}}` form (OpenInference's LangChain instrumentor writes the state so)."""
    if isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item):
        return item[0].lower(), item[1]
    if not isinstance(item, dict):
        return None, None
    if "lc" in item and isinstance(item.get("kwargs"), dict):
        ids = item.get("id")
        role = (
            _LC_CLASSES.get(ids[-1]) if isinstance(ids, list) and ids and isinstance(ids[-1], str) else None
        )
        item = item["kwargs"]
    else:
        role = item.get("role") or item.get("type")
        role = role.lower() if isinstance(role, str) else None
        if isinstance(item.get("data"), dict) and "content" not in item:  # LangChain's `message_to_dict` form
            item = item["data"]
    content = item.get("content")
    if isinstance(content, list):  # content parts: their texts
        texts: list[str] = []
        for part in content:
            text = part.get("text") if isinstance(part, dict) else part
            if isinstance(text, str):
                texts.append(text)
        content = "\n".join(texts)
    return role, content if isinstance(content, str) else None
