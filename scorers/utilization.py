"""Utilization: does the final answer contain a salient value from a successful tool result?

Checked from the answer text and the tool results, never taken on the agent's word: strings of at least
three characters appear in the answer (case-insensitive), numbers appear however they are formatted
(42.5 reads as "42.50"; 3.14159 as "3.14"), and values nested in objects and lists count. JSON text results
are parsed first.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from agentwatch.scorers.text import is_number, numbers_in, parse_number, shown_matches

MIN_STRING = 3
_MAX_LEAVES = 2_000


def _leaves(value: Any, depth: int = 0) -> Iterator[Any]:
    if isinstance(value, dict):
        if depth < 32:
            for v in value.values():
                yield from _leaves(v, depth + 1)
    elif isinstance(value, (list, tuple)):
        if depth < 32:
            for v in value:
                yield from _leaves(v, depth + 1)
    elif isinstance(value, str):
        s = value.strip()
        if s[:1] in "{[" and len(s) > 1:
            try:
                parsed = json.loads(s)
            except ValueError:
                yield s
            else:
                yield from _leaves(parsed, depth + 1)
        else:
            yield s
    elif value is not None and not isinstance(value, bool):
        yield value


def answer_uses(answer: str | None, results: Iterable[Any]) -> bool:
    """Whether `answer` contains a salient value from any of `results`."""
    if not answer:
        return False
    folded = answer.casefold()
    shown: list[tuple[float, int]] | None = None
    count = 0
    for result in results:
        for leaf in _leaves(result):
            count += 1
            if count > _MAX_LEAVES:
                return False
            if isinstance(leaf, str):
                if len(leaf) >= MIN_STRING and leaf.casefold() in folded:
                    return True
                value = parse_number(leaf)
                if value is None:
                    continue
            elif is_number(leaf):
                value = float(leaf)
            else:
                continue
            if shown is None:
                shown = numbers_in(answer)
            if any(shown_matches(s, d, value) for s, d in shown):
                return True
    return False
