"""Amounts an agent computed from grounded amounts: "$725 − $503 = $222", a total under itemised prices.

An amount in an answer that no input, tool call or instruction holds is still no hallucination when the agent
derived it from amounts it had put on the table. The operands are the amounts the agent stated so far in the
conversation that were grounded or themselves derived (the last `MAX_OPERANDS`), and the small whole numbers
(1–12: passengers, bags, nights) written in the same answer. An amount is derived when it is
- a + b, |a − b|, a × b or a ÷ b of two operands, within half a cent; or
- the sum of a run of two or more amounts stated just before it in the same answer (a total under its
  items); or
- the total of one field over the items of a list in a tool result (the legs of an itinerary, the flights of a
  reservation: `price` summed over `flights`), within half a cent.

Operands come from what the agent wrote, not from every number of every tool result: with hundreds of prices
in search results nearly any amount is the sum of two of them, and the check would never fire.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from agentwatch.scorers.text import AnswerText, is_number

MAX_OPERANDS = 64
_MAX_DEPTH = 16
SMALL_COUNTS = range(1, 13)
_CENT = 0.005


class Derivations:
    """The amounts stated so far in one conversation, answer by answer (`begin` at each answer)."""

    __slots__ = ("_answer", "_answer_start", "_read", "_totals", "results", "stated")

    def __init__(self) -> None:
        self.stated: list[float] = []  # grounded or derived amounts the agent stated, in order
        self.results: list[Any] = []  # successful tool results so far, for their list totals
        self._answer: AnswerText | None = None
        self._answer_start = 0
        self._totals: list[float] = []
        self._read = 0  # results whose list totals are in _totals

    def begin(self, answer: AnswerText) -> None:
        """Start reading a new answer: its small whole numbers become operands for its amounts."""
        self._answer_start = len(self.stated)
        self._answer = answer

    def _counts(self) -> list[float]:
        """The small whole numbers written in the current answer (read only when an amount needs them)."""
        if self._answer is None:
            return []
        return sorted({v for v, decimals in self._answer.numbers() if decimals == 0 and v in SMALL_COUNTS})

    def take(self, value: float) -> None:
        """Record an amount of the current answer that was grounded or derived."""
        self.stated.append(value)

    def explains(self, value: float) -> bool:
        """Whether `value` is derived from the operands (see the module docstring)."""
        return (
            self._sums_a_run(value)
            or _combines(value, [*self.stated[-MAX_OPERANDS:], *self._counts()])
            or any(abs(t - value) <= _CENT for t in self._list_totals())
        )

    def _list_totals(self) -> list[float]:
        """The list totals of every result so far (results read once, when a check first needs them)."""
        for result in self.results[self._read :]:
            self._totals.extend(list_totals(result))
        self._read = len(self.results)
        return self._totals

    def _sums_a_run(self, value: float) -> bool:
        """Whether `value` is the sum of the last two or more amounts stated in this answer."""
        this_answer = self.stated[self._answer_start :]
        total = 0.0
        for k, amount in enumerate(reversed(this_answer), start=1):
            total += amount
            if k >= 2 and abs(total - value) <= _CENT:
                return True
        return False


def _combines(value: float, operands: Sequence[float]) -> bool:
    """Whether `value` is a + b, |a − b|, a × b or a ÷ b of two of `operands`, within half a cent."""
    n = len(operands)
    for i in range(n):
        a = operands[i]
        for j in range(i, n):
            b = operands[j]
            if (
                abs(a + b - value) <= _CENT
                or abs(abs(a - b) - value) <= _CENT
                or abs(a * b - value) <= _CENT
                or (b and abs(a / b - value) <= _CENT)
                or (a and abs(b / a - value) <= _CENT)
            ):
                return True
    return False


def _numeric_leaves(value: Any, path: tuple[str, ...], depth: int) -> Iterator[tuple[tuple[str, ...], float]]:
    """(key path, number) of the numbers nested in objects (lists inside are not entered)."""
    if isinstance(value, dict) and depth < _MAX_DEPTH:
        for key, inner in value.items():
            yield from _numeric_leaves(inner, (*path, str(key)), depth + 1)
    elif is_number(value):
        yield path, float(value)


def list_totals(value: Any, depth: int = 0) -> Iterator[float]:
    """For every list of objects nested in a JSON value: the total of each numeric field found in two or more
    of its items (fields of nested objects included, by path)."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, dict):
        for inner in value.values():
            yield from list_totals(inner, depth + 1)
    elif isinstance(value, list):
        totals: dict[tuple[str, ...], list[float]] = {}
        for item in value:
            if isinstance(item, dict):
                for path, number in _numeric_leaves(item, (), depth):
                    totals.setdefault(path, []).append(number)
            yield from list_totals(item, depth + 1)
        for numbers in totals.values():
            if len(numbers) >= 2:
                yield sum(numbers)
