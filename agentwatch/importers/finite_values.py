"""Numbers JSON cannot write, in the tool calls an import read: NaN and ±Infinity (Python's json module writes
and reads them back, and τ-bench's runner saves its results with it) and numbers too large for a double (`1e400`,
a Python literal's `1e999`), read as infinity. A transcript line is JSON: each is written there as null, as it
always was. The conversation's notes say which call held one, where, and that null was kept in its place.

Turns and calls are counted from 0, as the graders' reasons count turns.
"""

from __future__ import annotations

import math
from typing import Any

from agentwatch.wire.schema import Conversation

MAX_NOTED_CALLS = 5  # a note each for the first calls that hold one; the rest are counted in one note
_MAX_KEY = 40
_MAX_PATH = 200


def _shown(value: float) -> str:
    """A number that is not finite, as Python's json module writes it."""
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _path(link: tuple[Any, Any] | None) -> str:
    """The path of an item from its links to the value's root (`(parent link, key)`), a list index in brackets, a
    key after a dot; at most about `_MAX_PATH` characters, its middle cut (a value nests hundreds deep)."""
    keys: list[Any] = []
    while link is not None:
        link, key = link
        keys.append(key)
    parts: list[str] = []
    written = False  # whether the path so far has a character (a key after none is written without its dot)
    for key in reversed(keys):
        if isinstance(key, int):
            part = f"[{key}]"
        else:
            part = f".{str(key)[:_MAX_KEY]}" if written else str(key)[:_MAX_KEY]
        parts.append(part)
        written = written or bool(part)
    path = "".join(parts)
    if len(path) > _MAX_PATH:
        path = f"{path[: _MAX_PATH // 2]}…{path[-_MAX_PATH // 2 :]}"
    return path


def non_finite(value: Any) -> tuple[str, float, int] | None:
    """The first number of `value` that is not finite (its path, itself) and how many it holds; None when every
    number is finite. Walked without recursion: a value read from a results file may nest deeper than the stack;
    the path is written for the first only (written for each item, a deep value took time and memory squared)."""
    first: tuple[tuple[Any, Any] | None, float] | None = None
    count = 0
    stack: list[tuple[tuple[Any, Any] | None, Any]] = [(None, value)]
    while stack:
        link, item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                count += 1
                first = first or (link, item)
        elif isinstance(item, dict):
            stack.extend(((link, k), v) for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend(((link, i), v) for i, v in reversed(list(enumerate(item))))
    return None if first is None else (_path(first[0]), first[1], count)


def _finding(part: str, found: tuple[str, float, int]) -> str:
    """What `non_finite` found in a call's `part` (its arguments or result), in words."""
    path, value, count = found
    where = f" at `{path}`" if path else ""
    more = f" and {count - 1} more" if count > 1 else ""
    return f"{_shown(value)} in its {part}{where}{more}"


def non_finite_notes(conv: Conversation) -> list[str]:
    """A note for each tool call whose arguments or result hold a number that is not finite (the first
    `MAX_NOTED_CALLS`, the rest counted): the transcript line holds null in its place."""
    notes: list[str] = []
    left = 0
    for t, turn in enumerate(conv.turns):
        for c, call in enumerate(turn.tool_calls):
            found = [
                _finding(part, hit)
                for part, value in (("arguments", call.arguments), ("result", call.result))
                if (hit := non_finite(value)) is not None
            ]
            if not found:
                continue
            if len(notes) == MAX_NOTED_CALLS:
                left += 1
                continue
            named = (
                f"{call.name[:_MAX_KEY]}, id {call.call_id[:_MAX_KEY]}"
                if call.call_id
                else call.name[:_MAX_KEY]
            )
            notes.append(
                f"turn {t}, call {c} ({named}): {'; '.join(found)}: a number that is not finite has no JSON "
                "form; kept as null"
            )
    if left:
        notes.append(f"{left} more tool call(s) hold a number that is not finite: kept as null")
    return notes
