"""Failure-evidence graders of one turn: forbidden tools, tool loops, errors."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

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
    calls: Sequence[ToolCall], threshold: int, names: NameNormalizer, used_names: Sequence[str] | None = None
) -> list[tuple[str, int]]:
    """(tool name, count) of every tool called with identical arguments at least `threshold` times
    (`used_names`: the normalised names of `calls`, if already known)."""
    if len(calls) < threshold:
        return []
    if used_names is None:
        used_names = names.of(calls)
    counts = Counter((name, canonical_json(c.arguments)) for c, name in zip(calls, used_names, strict=True))
    return [(name, n) for (name, _), n in counts.items() if n >= threshold]
