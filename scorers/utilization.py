"""Utilization: does the final answer contain a salient value from a successful tool result?

Checked from the answer text and the tool results, never taken on the agent's word: strings of at least
three characters appear in the answer (case-insensitive), numbers appear however they are formatted
(42.5 reads as "42.50"; 3.14159 as "3.14"), and values nested in objects and lists count. JSON text results
are parsed first.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from agentwatch.scorers.text import is_number, numbers_in, parse_number, shown_matches

MIN_STRING = 3
_MAX_LEAVES = 2_000
_MAX_DEPTH = 32


def answer_uses(answer: str | None, results: Iterable[Any]) -> bool:
    """Whether `answer` contains a salient value from any of `results`."""
    if not answer:
        return False
    folded = answer.casefold()
    shown: list[tuple[float, int]] | None = None
    stack: list[tuple[Any, int]] = [(r, 0) for r in reversed(list(results))]
    seen = 0
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            if depth < _MAX_DEPTH:
                stack.extend((v, depth + 1) for v in reversed(list(value.values())))
            continue
        if isinstance(value, (list, tuple)):
            if depth < _MAX_DEPTH:
                stack.extend((v, depth + 1) for v in reversed(value))
            continue
        seen += 1
        if seen > _MAX_LEAVES:
            return False
        if isinstance(value, str):
            s = value.strip()
            if s[:1] in ("{", "[") and len(s) > 1:
                try:
                    stack.append((json.loads(s), depth + 1))
                    continue
                except ValueError:
                    pass
            if len(s) >= MIN_STRING and s.casefold() in folded:
                return True
            number = parse_number(s) if s[:1] in _NUMBER_START else None
            if number is None:
                continue
        elif is_number(value):
            number = float(value)
        else:
            continue
        if shown is None:
            shown = numbers_in(answer)
        if any(shown_matches(a, d, number) for a, d in shown):
            return True
    return False


_NUMBER_START = frozenset("0123456789+-.")
