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
_MAX_DEPTH = 32


class _Search:
    """One search of an answer for tool-result values; numbers in the answer are read only when needed."""

    __slots__ = ("answer", "folded", "shown")

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.folded = answer.casefold()
        self.shown: list[tuple[float, int]] | None = None

    def number_shown(self, value: float) -> bool:
        if self.shown is None:
            self.shown = numbers_in(self.answer)
        return any(shown_matches(a, d, value) for a, d in self.shown)

    def found(self, value: Any, depth: int) -> bool:
        if isinstance(value, str):
            s = value.strip()
            if len(s) > 1 and s[0] in "{[":
                try:
                    parsed = json.loads(s)
                except ValueError:
                    pass
                else:
                    return self.found(parsed, depth + 1)
            if len(s) >= MIN_STRING and s.casefold() in self.folded:
                return True
            if s and s[0] in _NUMBER_START:
                number = parse_number(s)
                return number is not None and self.number_shown(number)
            return False
        if isinstance(value, dict):
            return depth < _MAX_DEPTH and any(self.found(v, depth + 1) for v in value.values())
        if isinstance(value, (list, tuple)):
            return depth < _MAX_DEPTH and any(self.found(v, depth + 1) for v in value)
        return is_number(value) and self.number_shown(float(value))


def answer_uses(answer: str | None, results: Iterable[Any]) -> bool:
    """Whether `answer` contains a salient value from any of `results`."""
    if not answer:
        return False
    search = _Search(answer)
    return any(search.found(r, 0) for r in results)


_NUMBER_START = frozenset("0123456789+-.")
