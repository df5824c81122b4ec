"""Failure-evidence graders of one turn: forbidden tools, tool loops, errors."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentwatch.config.policies import PolicyTool
from agentwatch.scorers.names import NameNormalizer
from agentwatch.wire.schema import ToolCall


def canonical_json(value: Any) -> str:
    """JSON text with sorted keys and no spaces, so equal arguments give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def forbidden_called(
    calls: Sequence[ToolCall],
    forbidden: Sequence[str],
    names: NameNormalizer,
    used_names: Sequence[str] | None = None,
) -> list[str]:
    """Names (as called, first occurrence order, unique) of calls to a forbidden tool (`used_names`: the
    normalised names of `calls`, if already known)."""
    if not forbidden or not calls:
        return []
    banned = set(names.all(forbidden))
    if used_names is None:
        used_names = names.of(calls)
    out: list[str] = []
    for call, name in zip(calls, used_names, strict=True):
        if name in banned and call.name not in out:
            out.append(call.name)
    return out


def loops(
    calls: Sequence[ToolCall],
    threshold: int,
    names: NameNormalizer,
    used_names: Sequence[str] | None = None,
    repeats: Mapping[str, int] | None = None,
    changed: Callable[[ToolCall, str], bool] | None = None,
) -> list[tuple[str, int, ToolCall, bool]]:
    """(tool name, count, first call, whether one of them returned an error) of every tool called with identical
    arguments at least `threshold` times with nothing changed between them, not counting the identical calls the
    task expects beyond the first (`repeats`: normalised name -> how many identical calls of it the task expects,
    `expected_repeats`; `used_names`: the normalised names of `calls`, if known).

    `changed(call, name)`: whether a call changed something (succeeded, and has effects). The same call made
    again after another call changed something is a check of the new state, not a loop: a coding agent runs its
    test again after each edit. The count of a call is its most repeats between two such changes by other calls.
    """
    if len(calls) < threshold:
        return []
    if used_names is None:
        used_names = names.of(calls)
    keys = [(name, canonical_json(c.arguments)) for c, name in zip(calls, used_names, strict=True)]
    allowed = repeats or {}
    candidates = {key for key, n in Counter(keys).items() if n - allowed.get(key[0], 1) + 1 >= threshold}
    if not candidates:
        return []
    counts: Counter[tuple[str, str]] = Counter()  # of each key since the last change by another call
    most: Counter[tuple[str, str]] = Counter()
    first: dict[tuple[str, str], ToolCall] = {}
    refused: set[tuple[str, str]] = set()
    for c, key in zip(calls, keys, strict=True):
        if key in candidates:
            counts[key] += 1
            most[key] = max(most[key], counts[key])
            first.setdefault(key, c)
            if c.error is not None:
                refused.add(key)
        if changed is not None and changed(c, key[0]):
            for other in counts:
                if other != key:
                    counts[other] = 0
    return [
        (key[0], n, first[key], key in refused)
        for key, n in most.items()
        if n - allowed.get(key[0], 1) + 1 >= threshold
    ]


def expected_repeats(tools: Sequence[PolicyTool], names: NameNormalizer) -> dict[str, int]:
    """Normalised tool name -> the most identical expectations a policy holds of it, where it holds two or more:
    a task that requires the same call several times (a transfer tool called three times) asks for them, and
    that many identical calls are no loop."""
    named = Counter(names(t.name) for t in tools)
    if all(n < 2 for n in named.values()):
        return {}
    same = Counter(
        (names(t.name), canonical_json(t.model_dump(mode="json", exclude={"name"})))
        for t in tools
        if named[names(t.name)] >= 2
    )
    out: dict[str, int] = {}
    for (name, _), n in same.items():
        if n >= 2:
            out[name] = max(n, out.get(name, 0))
    return out
