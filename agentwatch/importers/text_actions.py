"""Agents that act in text: τ-bench's `react` and `act` strategies (`ChatReActAgent`).

Such an agent makes no tool calls of the model's API. Each step is an assistant message whose text ends in
`Action:` and a JSON object `{"name": ..., "arguments": {...}}` (`react` writes a `Thought:` line before it);
the action `respond` with `{"content": ...}` speaks to the user, any other name calls that tool, and the tool's
answer comes back as a *user* message starting `API output: `. As τ-bench itself reads a step, the action is
the text after the last `Action:`, and text that is not such a JSON object is said to the user as it is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

ACTION_MARK = "Action:"
RESULT_PREFIX = "API output: "
RESPOND = "respond"  # τ-bench's RESPOND_ACTION_NAME; its one argument is RESPOND_FIELD
RESPOND_FIELD = "content"


@dataclass(frozen=True, slots=True)
class TextAction:
    """One step of a text-acting agent: a tool call (`name`, `arguments`), or words to the user (`said`)."""

    name: str | None = None
    arguments: dict[str, Any] | None = None
    said: str | None = None


def _parsed(text: str) -> tuple[str, dict[str, Any]] | None:
    """The (name, arguments) of the JSON object after the last `Action:`, if it is one."""
    try:
        value = json.loads(text.split(ACTION_MARK)[-1].strip())
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or "arguments" not in value:
        return None
    arguments = value["arguments"]
    return value["name"], arguments if isinstance(arguments, dict) else {"value": arguments}


def read_action(text: str) -> TextAction:
    """The step an assistant message's text takes, read as τ-bench reads it."""
    parsed = _parsed(text)
    if parsed is None:
        return TextAction(said=text.split(ACTION_MARK)[-1].strip())
    name, arguments = parsed
    if name == RESPOND:
        content = arguments.get(RESPOND_FIELD, "")
        return TextAction(
            said=content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        )
    return TextAction(name=name, arguments=arguments)


def acts_in_text(messages: Sequence[Any]) -> bool:
    """Whether a trajectory is a text-acting agent's: no assistant message has API tool calls, and some
    assistant message's text ends in an action."""
    acted = False
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        if message.get("tool_calls") or message.get("function_call"):
            return False
        content = message.get("content")
        if not acted and isinstance(content, str) and ACTION_MARK in content:
            acted = _parsed(content) is not None
    return acted
