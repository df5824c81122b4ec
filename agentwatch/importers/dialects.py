"""Messages as other APIs and loggers write them, as OpenAI chat messages.

The chat importer reads OpenAI chat messages (`role`, `content`, `tool_calls`, `tool` results). Logs of agents
on other APIs hold the same conversation in other shapes; each is rewritten here, message by message:

- Anthropic Messages: content blocks `text`, `tool_use` (`id`, `name`, `input`) on the assistant's messages,
  `tool_result` (`tool_use_id`, `content`, `is_error`) on the user's; `thinking` blocks are left out;
- OpenAI Responses items: `{"type": "message", "role", "content"}`, `function_call` (`call_id`, `name`,
  `arguments`), `function_call_output` (`call_id`, `output`); `reasoning` items are left out, other items
  (built-in tools) too, with a note;
- Gemini contents: `{"role": "user" | "model", "parts": [...]}` with `text`, `functionCall` (`name`, `args`)
  and `functionResponse` (`name`, `response`) parts (snake_case too); a response holding only `result`,
  `output` or `content` is that value, one holding only `error` is the call's error;
- τ²-bench's `MultiToolMessage` (`{"role": "tool", "tool_messages": [...]}`): its tool messages, in order;
- LangChain messages: `{"type": "human" | "ai" | "system" | "tool", ...}` as `model_dump()` writes them, or
  wrapped in `{"type", "data"}` as `messages_to_dict` does; `tool_calls` with `args`, tool messages with
  `status: "error"`;
- ShareGPT messages (`{"from", "value"}`, as LLaMA-Factory and tool-use datasets write them): `human`, `gpt`,
  `system`, `function_call` (its value one call `{"name", "arguments"}` or a list of them, as JSON) and
  `observation` (a result). The observations right after a `function_call` answer its calls, in order: one
  observation after several calls holding a JSON list as long as the calls (ToolACE) is one result per call;
  one observation after each call is its result, a list or not. A call they leave without a result (one
  observation that is no such list, given whole to the first call) gets none, with a note: no later
  observation answers it, as none answers another `function_call`'s calls.

A message already in chat format passes through unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

_LANGCHAIN_ROLES = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "function",
}
# `type`s that make a dict with no `role` a message (a bare list of them is one chat conversation)
MESSAGE_TYPES = frozenset(
    {*_LANGCHAIN_ROLES, "message", "function_call", "function_call_output", "reasoning"}
)
_SKIPPED_ITEMS = frozenset({"reasoning", "thinking", "redacted_thinking"})
_RESPONSE_VALUE_KEYS = ("result", "output", "content")


def chat_messages(messages: Sequence[Any], notes: list[str]) -> Iterator[tuple[int, Any]]:
    """(position, message) for each message as one or more chat-format messages (items of no chat meaning are
    left out, counted in `notes`); anything not a dict is passed on for the reader to report."""
    skipped: dict[str, int] = {}
    calls = _Answered([], 0)  # the last ShareGPT `function_call`'s calls, and the observations after it
    unanswered: list[str] = []  # ShareGPT calls that their observations leave without a result, said
    for position, message in enumerate(messages):
        if not isinstance(message, dict):
            yield position, message
            continue
        if _is_sharegpt(message):
            # counted for a call only: counted for each observation, a run of them was walked once per message
            after = _results_after(messages, position) if message["from"] == "function_call" else 0
            converted, calls = _sharegpt(message, calls, after, unanswered)
        else:
            converted = _chat(message, skipped)
        for one in converted:
            yield position, one
    notes.extend(unanswered[:_MAX_UNANSWERED_NOTES])
    if len(unanswered) > _MAX_UNANSWERED_NOTES:
        notes.append(
            f"{len(unanswered) - _MAX_UNANSWERED_NOTES} more sets of parallel calls with calls left without a "
            "result"
        )
    for kind, n in skipped.items():
        notes.append(f"{n} item(s) of type {kind!r} left out (no chat message)")


def _chat(message: dict[str, Any], skipped: dict[str, int]) -> list[dict[str, Any]]:
    role = message.get("role")
    if role is None:
        kind = message.get("type")
        if not isinstance(kind, str):  # no type either (or one that is not a name): the reader reports it
            return [message]
        if kind in _LANGCHAIN_ROLES:
            return _langchain(message)
        if kind == "function_call":
            call = {
                "id": message.get("call_id"),
                "function": {"name": message.get("name"), "arguments": message.get("arguments")},
            }
            return [{"role": "assistant", "content": None, "tool_calls": [call]}]
        if kind == "function_call_output":
            return [
                {"role": "tool", "tool_call_id": message.get("call_id"), "content": message.get("output")}
            ]
        if kind not in _SKIPPED_ITEMS:
            skipped[kind] = skipped.get(kind, 0) + 1
        return []
    grouped = message.get("tool_messages")
    if role == "tool" and isinstance(grouped, list):  # τ²-bench's MultiToolMessage: one result per call
        return [m for m in grouped if isinstance(m, dict)]
    parts = message.get("parts")
    if isinstance(parts, list) and "content" not in message:
        return _gemini(role, parts)
    content = message.get("content")
    if isinstance(content, list) and any(_block_type(b) in ("tool_use", "tool_result") for b in content):
        return _anthropic(role, content, message)
    return [message]


def _block_type(block: Any) -> Any:
    return block.get("type") if isinstance(block, dict) else None


def _texts(blocks: list[Any]) -> list[dict[str, Any]]:
    return [b for b in blocks if isinstance(b, str) or _block_type(b) == "text"]


def _anthropic(role: Any, content: list[Any], message: dict[str, Any]) -> list[dict[str, Any]]:
    """An Anthropic message with `tool_use` or `tool_result` blocks: calls on the assistant's message, results
    as tool messages before the words the user said beside them."""
    out: list[dict[str, Any]] = []
    calls = []
    for block in content:
        kind = _block_type(block)
        if kind == "tool_use":
            calls.append(
                {
                    "id": block.get("id"),
                    "function": {"name": block.get("name"), "arguments": block.get("input")},
                }
            )
        elif kind == "tool_result":
            result = {
                "role": "tool",
                "tool_call_id": block.get("tool_use_id"),
                "content": block.get("content"),
            }
            out.append(result | ({"error": True} if block.get("is_error") is True else {}))
    texts = _texts(content)
    if role in ("assistant", "model"):
        return [{**message, "content": texts or None, "tool_calls": calls}]
    if texts:
        out.append({**message, "content": texts})
    return out


def _gemini(role: Any, parts: list[Any]) -> list[dict[str, Any]]:
    """A Gemini content: text parts as the message, `functionCall` parts as its calls, `functionResponse` parts
    as tool messages."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
        call = part.get("functionCall", part.get("function_call"))
        if isinstance(call, dict):
            calls.append(
                {"id": call.get("id"), "function": {"name": call.get("name"), "arguments": call.get("args")}}
            )
        response = part.get("functionResponse", part.get("function_response"))
        if isinstance(response, dict):
            results.append(_gemini_result(response))
    if role in ("model", "assistant"):
        return [{"role": "assistant", "content": "\n".join(texts) or None, "tool_calls": calls}]
    out = results
    if texts:
        out.append({"role": "user" if role == "function" else role, "content": "\n".join(texts)})
    return out


def _gemini_result(response: dict[str, Any]) -> dict[str, Any]:
    value = response.get("response")
    message: dict[str, Any] = {
        "role": "tool",
        "tool_call_id": response.get("id"),
        "name": response.get("name"),
    }
    if isinstance(value, dict) and len(value) == 1:
        key, inner = next(iter(value.items()))
        if key == "error":
            return message | {"content": inner, "error": True}
        if key in _RESPONSE_VALUE_KEYS:
            value = inner
    return message | {"content": value}


def _langchain(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A LangChain message (flat, or `messages_to_dict`'s `{"type", "data"}`)."""
    wrapped = message.get("data")
    data: dict[str, Any] = wrapped if isinstance(wrapped, dict) else message
    role = _LANGCHAIN_ROLES[message["type"]]
    out: dict[str, Any] = {"role": role, "content": data.get("content")}
    if role == "assistant":
        calls = data.get("tool_calls") or []
        out["tool_calls"] = (  # calls of another shape are passed on for the reader to report
            [
                {"id": c.get("id"), "function": {"name": c.get("name"), "arguments": c.get("args")}}
                for c in calls
                if isinstance(c, dict)
            ]
            if isinstance(calls, list)
            else calls
        )
        return _chat(out, {}) if isinstance(out["content"], list) else [out]
    if role == "tool":
        out["tool_call_id"] = data.get("tool_call_id")
        out["name"] = data.get("name")
        if data.get("status") == "error":
            out["error"] = True
    return [out]


_SHAREGPT_ROLES = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "system": "system",
}
_SHAREGPT_RESULTS = frozenset({"observation", "function_response", "tool"})
# a note each for the first `function_call`s that leave calls without a result; the rest are counted in one
_MAX_UNANSWERED_NOTES = 5


@dataclass(slots=True)
class _Answered:
    """The calls of a ShareGPT `function_call` (their names) and how many observations follow it (`results`), with
    how many of those were read so far (`read`)."""

    names: list[str]
    results: int
    read: int = 0


def _is_sharegpt(message: dict[str, Any]) -> bool:
    """Whether a message is ShareGPT's `{"from", "value"}`."""
    return "role" not in message and "from" in message and "value" in message


def _speaker(message: dict[str, Any]) -> str | None:
    """Who speaks a ShareGPT message (None when `from` is no name: the reader reports the message)."""
    speaker = message.get("from")
    return speaker if isinstance(speaker, str) else None


def _results_after(messages: Sequence[Any], position: int) -> int:
    """How many ShareGPT result messages follow the message at `position`, one after another."""
    end = position + 1  # walked by index: a slice would copy the rest of the conversation at every call
    while end < len(messages):
        message = messages[end]
        if not (
            isinstance(message, dict) and _is_sharegpt(message) and _speaker(message) in _SHAREGPT_RESULTS
        ):
            break
        end += 1
    return end - position - 1


def _sharegpt(
    message: dict[str, Any], calls: _Answered, after: int, notes: list[str]
) -> tuple[list[dict[str, Any]], _Answered]:
    """A ShareGPT message as chat messages, and the calls its next observations answer (`calls`: before it;
    `after`: how many result messages follow it). A message of another speaker, or a call that is no JSON, is
    passed on for the reader to report."""
    speaker, value = _speaker(message), message.get("value")
    none = _Answered([], 0)
    if speaker in _SHAREGPT_ROLES:
        return [{"role": _SHAREGPT_ROLES[speaker], "content": value}], none
    if speaker == "function_call":
        made = _json(value)
        listed = made if isinstance(made, list) else [made]
        if not listed or not all(isinstance(c, dict) for c in listed):
            return [message], none
        tool_calls = [
            {"function": {"name": c.get("name"), "arguments": c.get("arguments", c.get("parameters"))}}
            for c in listed
        ]
        return [{"role": "assistant", "content": None, "tool_calls": tool_calls}], _Answered(
            [str(c.get("name"))[:40] for c in listed], after
        )
    if speaker in _SHAREGPT_RESULTS:
        n = len(calls.names)
        calls.read += 1
        if calls.results == 1 and n > 1:  # the one observation of several calls: a list of their results?
            results = _json(value)
            if isinstance(results, list) and len(results) == n:
                return [{"role": "tool", "content": r} for r in results], none
        out = [{"role": "tool", "content": value}]
        if calls.read < calls.results or calls.read >= n:
            return out, calls
        # the last observation of these calls, and some are left: they get none (the chat reader would give them
        # the observations of the calls made next, the oldest call waiting taking each)
        left = n - calls.read
        out.extend({"role": "tool", "content": None} for _ in range(left))
        named = ", ".join(calls.names[:5]) + (", …" if n > 5 else "")
        given = (
            "an observation that is not a JSON list of one result per call: given whole to the first"
            if calls.read == 1
            else f"{calls.read} observations: given to the first {calls.read}, in order"
        )
        notes.append(f"{n} parallel calls ({named}) answered by {given}; {left} left without a result")
        return out, none
    return [message], none


def _json(value: Any) -> Any:
    """`value` read as JSON when it is text (None when that text is no JSON), else `value` itself."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError):  # nested deeper than the parser goes: no JSON read here
        return None
