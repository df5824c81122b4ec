"""What chain, agent and tool spans log as `input.value` / `output.value` (OpenInference, LangChain, LlamaIndex,
smolagents, `@trace` chains), read as the text said: a messages state's latest message, an agent call's question
or answer, a LangChain `ToolMessage`'s content; a body that is no text said is told apart (`is_body`)."""

from __future__ import annotations

import re
from typing import Any

from agentwatch.collector.messages import as_text, json_or_text
from agentwatch.wire.json_text import value_of

# `input.value` / `output.value` of chain and agent spans often hold the call's JSON body: LangChain's and
# LangGraph's `{"messages": [...]}` state or `{"input": "..."}` / `{"output": "..."}`, our `@trace` chains'
# arguments by name. The text said is read out of those forms; any other value is kept as it is.
_USER_ROLES = frozenset({"user", "human"})
_AGENT_ROLES = frozenset({"assistant", "ai", "model"})
_LC_CLASSES = {"HumanMessage": "human", "AIMessage": "ai", "SystemMessage": "system", "ToolMessage": "tool"}
# the arguments or results naming what was said, of agent and chain calls (smolagents' `task`, LlamaIndex's
# `user_msg`, ...), in the order they are looked for
_INPUT_KEYS = ("input", "task", "question", "query", "user_msg", "message", "prompt")
_OUTPUT_KEYS = ("output", "answer", "final_answer", "response", "result")
_REPR = re.compile(r"[A-Za-z_][\w.]*\([A-Za-z_]\w*=")  # `Name(field=`: a dataclass's or model's repr


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
        if isinstance(only, dict):  # the call's arguments under one key (DSPy's `input_args`)
            body = only
    for key in _INPUT_KEYS if said_by_user else _OUTPUT_KEYS:  # an agent's call: its question or its answer
        said = body.get(key)
        if isinstance(said, str) and said:
            return said
    return value


def is_body(text: str) -> bool:
    """Whether a chain's `input.value` / `output.value`, as `value_text` read it, is a body rather than text
    said: a JSON object or array, or a Python object's repr (`StopEvent(result=...)`)."""
    if text[:1] in ("{", "["):
        try:
            return isinstance(value_of(text), (dict, list))
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
        body = value_of(value)
    except (ValueError, RecursionError):
        return None
    return body if isinstance(body, dict) else None


def _said(found: list[Any], said_by_user: bool) -> str | None:
    """The text of the last user (`said_by_user`) or agent message with text of a messages state."""
    wanted = _USER_ROLES if said_by_user else _AGENT_ROLES
    for item in found[::-1]:  # not reversed(): mypyc 2.4 stops with an internal error on it here
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
        named = item.get("role") or item.get("type")  # any JSON value: `role` holds only text
        role = named.lower() if isinstance(named, str) else None
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


def langchain_tool_message(value: Any) -> tuple[Any, str | None] | None:
    """(content, tool call id) of a LangChain `ToolMessage` logged as a tool span's `output.value`
    (`{"type": "tool", "data": {...}}`, its `model_dump()`, or LangChain-serialised); None for any other value."""
    if not isinstance(value, str) or '"tool' not in value:  # both forms name the type "tool" / "ToolMessage"
        return None
    body = json_or_text(value)
    if not isinstance(body, dict):
        return None
    if body.get("type") == "tool" and isinstance(body.get("data"), dict):
        data = body["data"]
    elif body.get("type") == "tool" and "content" in body and "tool_call_id" in body:  # `model_dump()`'s form
        data = body
    elif "lc" in body and isinstance(body.get("kwargs"), dict) and "ToolMessage" in str(body.get("id")):
        data = body["kwargs"]
    else:
        return None
    call_id = data.get("tool_call_id")
    return json_or_text(data.get("content")), None if call_id is None else str(call_id)
