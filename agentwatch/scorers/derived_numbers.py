"""Amounts an agent computed from grounded numbers: a price difference, a total, a rounded value.

An amount in an answer that no input, tool call or instruction holds is still no hallucination when the agent
derived it. Real agents compute: differences of two looked-up prices, sums of legs, a refund after a fee,
rounding. Precision comes first (a finding that fails real successes is worse than one that misses a made-up
amount), so an amount is *derived* when it is, within half a cent:
- a + b, |a − b|, a × b or a ÷ b of two grounded numbers — the numbers of the evidence (inputs, tool
  arguments and results, the instructions) and the amounts the agent stated that were grounded or derived (the
  hallucination check asks again, once an answer is read, about an amount before the parts it sums) — or of one
  of them and a small whole number (1–12: passengers, bags, nights) written in the answer;
- a grounded number rounded (to whole units or tenths, up or down);
- the sum of a run of two or more amounts stated just before it in the same answer (a total under its items; a
  subtotal stands for the items it summed, so a grand total of subtotals is one too), or of the derived amounts
  among them (a total of price differences, each written beside the two prices it came from);
- the result of an arithmetic expression the answer writes out (`(126 + 139) * 3 = $795`) whose numbers are all
  grounded or small counts;
- the total of one field over the items of a list in a tool result (`price` summed over `flights`), or over the
  two or more of them the answer names by an id they hold (a refund for the items returned).

Every check is one arithmetic step from grounded numbers: an amount two unexplained steps away is still found.
The pairwise checks search a sorted array of the operands, so they cost O(n log n) per amount, not O(n²).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from agentwatch.scorers.arithmetic import evaluate
from agentwatch.scorers.text import AnswerText, is_number

MAX_OPERANDS = 20_000  # grounded numbers kept as operands (the most recent); the rest grounds by value only
_MAX_DEPTH = 16
SMALL_COUNTS = range(1, 13)
_CENT = 0.005
_ID_PUNCT = "\"'()[]{}<>.,;:!?*`~"  # around an id an answer names: quotes, brackets, markdown, punctuation
# "(126 + 139) * 3 = $795": an expression of numbers, operators and parentheses written before "=" (looked for
# in the `_EXPRESSION_REACH` characters before it), and the amount after it.
_EXPRESSION_REACH = 160
_EXPRESSION = re.compile(r"[\d.,+\-*/×÷()x$\s]*$")
_RESULT = re.compile(r"\s*\$?\s*(\d[\d,]*(?:\.\d+)?)")
_EXPRESSION_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


class Derivations:
    """The amounts stated so far in one conversation, answer by answer (`begin` at each answer)."""

    __slots__ = (
        "_answer",
        "_counted",
        "_derived",
        "_items",
        "_lists",
        "_named",
        "_read",
        "_run",
        "_totals",
        "results",
        "stated",
    )

    def __init__(self) -> None:
        self.stated: list[float] = []  # grounded or derived amounts the agent stated, in order
        self.results: list[Any] = []  # successful tool results so far, for their list totals
        self._answer: AnswerText | None = None
        self._counted: list[float] | None = None  # _counts() of the current answer, once read
        self._run: list[float] = []  # the current answer's amounts, each subtotal in place of its items
        self._derived: list[float] = []  # the same, of its derived amounts alone
        self._named: list[float] | None = None  # totals over the items the current answer names, once read
        self._totals: list[float] = []
        self._read = 0  # results whose list totals are in _totals and whose items are in _items
        # the items of the results' lists by the ids they hold: id -> (list, item, its numeric leaves)
        self._items: dict[str, list[tuple[int, int, list[tuple[tuple[str, ...], float]]]]] = {}
        self._lists = 0  # lists indexed so far

    def begin(self, answer: AnswerText) -> None:
        """Start reading a new answer: its small whole numbers become operands for its amounts."""
        self._run = []
        self._derived = []
        self._named = None
        self._answer = answer
        self._counted = None

    def _counts(self) -> list[float]:
        """The small whole numbers written in the current answer (read only when an amount needs them)."""
        if self._answer is None:
            return []
        if self._counted is None:  # once an answer: an answer of many amounts asks for each
            self._counted = sorted(
                {v for v, decimals in self._answer.numbers() if decimals == 0 and v in SMALL_COUNTS}
            )
        return self._counted

    def take(self, value: float, derived: bool = False) -> None:
        """Record an amount of the current answer that was grounded or `derived` (a sum of the amounts just before
        it takes their place in the answer's run, and of the derived ones in the run of those)."""
        self.stated.append(value)
        for run in (self._run, self._derived) if derived else (self._run,):
            summed = _summed(run, value)
            if summed:
                del run[-summed:]
            run.append(value)

    def explains(self, value: float, grounded: Sequence[float]) -> bool:
        """Whether `value` is derived (see the module docstring); `grounded`: the numbers of the evidence."""
        operands = _operands([*grounded[-MAX_OPERANDS:], *self.stated, *self._counts()])
        return (
            _summed(self._run, value) > 0
            or _summed(self._derived, value) > 0
            or _one_step(value, operands)
            or _rounds(value, operands)
            or self._written_out(value, operands)
            or any(abs(t - value) <= _CENT for t in self._list_totals())
            or any(abs(t - value) <= _CENT for t in self._named_totals())
        )

    def _named_totals(self) -> list[float]:
        """The totals of each numeric field over the two or more items of one of the results' lists that the
        current answer names by an id they hold (a refund for the items returned); read once an answer."""
        if self._named is None:
            self._read_results()
            words = self._answer.digit_words() if self._answer is not None else []
            named: dict[tuple[int, int], list[tuple[tuple[str, ...], float]]] = {}
            for word in words:
                token = word.strip(_ID_PUNCT)
                for key in {token, token.lstrip("#")}:
                    for in_list, at, leaves in self._items.get(key, ()):
                        named[(in_list, at)] = leaves
            by_list: dict[int, list[list[tuple[tuple[str, ...], float]]]] = {}
            for (in_list, _), leaves in named.items():
                by_list.setdefault(in_list, []).append(leaves)
            self._named = [total for items in by_list.values() for total in _field_totals(items)]
        return self._named

    def _list_totals(self) -> list[float]:
        """The list totals of every result so far (results read once, when a check first needs them)."""
        self._read_results()
        return self._totals

    def _read_results(self) -> None:
        """Read the results not read yet: their list totals, and their lists' items by the ids they hold."""
        for result in self.results[self._read :]:
            for depth, items in _object_lists(result, 0):
                leaves = [list(_numeric_leaves(item, (), depth)) for item in items]
                self._totals.extend(_field_totals(leaves))
                for at, (item, numbers) in enumerate(zip(items, leaves, strict=True)):
                    for value in item.values() if numbers else ():
                        if isinstance(value, str):
                            self._items.setdefault(value, []).append((self._lists, at, numbers))
                self._lists += 1
        self._read = len(self.results)

    def _written_out(self, value: float, operands: np.ndarray) -> bool:
        """Whether the answer writes `value` as the result of an expression of grounded numbers."""
        if self._answer is None or "=" not in self._answer.text:
            return False
        text = self._answer.text
        at = text.find("=")
        while at >= 0:
            before, after = text[max(0, at - _EXPRESSION_REACH) : at], _RESULT.match(text, at + 1)
            at = text.find("=", at + 1)
            if after is None or abs(float(after.group(1).replace(",", "")) - value) > _CENT:
                continue
            expression = _EXPRESSION.search(before)
            if expression is None:
                continue
            written = expression.group(0).replace("$", "").replace("x", "*").strip()
            computed = evaluate(written) if written else None
            numbers = [float(n.replace(",", "")) for n in _EXPRESSION_NUMBER.findall(written)]
            if (
                computed is not None
                and abs(computed - value) <= _CENT
                and len(numbers) >= 2
                and all(_has(operands, n) for n in numbers)
            ):
                return True
        return False


def _summed(run: list[float], value: float) -> int:
    """How many of the last amounts of `run` (two or more) sum to `value`; 0 when none do."""
    total = 0.0
    for k, amount in enumerate(reversed(run), start=1):
        total += amount
        if k >= 2 and abs(total - value) <= _CENT:
            return k
    return 0


def _operands(values: Sequence[float]) -> np.ndarray:
    """The distinct finite operands, sorted."""
    arr = np.asarray(values, dtype=np.float64)
    return np.unique(arr[np.isfinite(arr)])


def _has(sorted_values: np.ndarray, x: float) -> bool:
    """Whether `x` is in `sorted_values` within half a cent."""
    i = int(np.searchsorted(sorted_values, x - _CENT))
    return i < len(sorted_values) and bool(sorted_values[i] <= x + _CENT)


def _found_near(sorted_values: np.ndarray, targets: np.ndarray, tolerance: np.ndarray | float) -> bool:
    """Whether some target has a value of `sorted_values` within its tolerance."""
    if not len(sorted_values) or not len(targets):
        return False
    lo = np.searchsorted(sorted_values, targets - tolerance)
    inside = lo < len(sorted_values)
    return bool(
        np.any(sorted_values[np.minimum(lo, len(sorted_values) - 1)][inside] <= (targets + tolerance)[inside])
    )


def _one_step(value: float, operands: np.ndarray) -> bool:
    """Whether `value` is a + b, |a − b|, a × b or a ÷ b of two operands (either may be used twice)."""
    if not len(operands):
        return False
    if _found_near(operands, value - operands, _CENT):  # a + b
        return True
    if _found_near(operands, operands + value, _CENT) or _found_near(operands, operands - value, _CENT):
        return True  # |a − b|
    nonzero = operands[operands != 0]
    if not len(nonzero):
        return False
    size = np.abs(nonzero)
    # a × b = value: b within half a cent of value / a, scaled by |a|
    if _found_near(operands, value / nonzero, _CENT / size):
        return True
    # a ÷ b = value: a within half a cent times |b| of value × b
    return _found_near(operands, value * nonzero, _CENT * size)


def _rounds(value: float, operands: np.ndarray) -> bool:
    """Whether `value` is an operand rounded to whole units or tenths, either way."""
    if not math.isclose(value, round(value, 1), abs_tol=1e-9):
        return False
    near = operands[np.abs(operands - value) < 1.0]
    for a in near:
        for digits in (0, 1):
            scale = 10.0**digits
            if value in (round(a, digits), math.floor(a * scale) / scale, math.ceil(a * scale) / scale):
                return True
    return False


def _numeric_leaves(value: Any, path: tuple[str, ...], depth: int) -> Iterator[tuple[tuple[str, ...], float]]:
    """(key path, number) of the numbers nested in objects (lists inside are not entered)."""
    if isinstance(value, dict) and depth < _MAX_DEPTH:
        for key, inner in value.items():
            yield from _numeric_leaves(inner, (*path, str(key)), depth + 1)
    elif is_number(value):
        yield path, float(value)


def _object_lists(value: Any, depth: int) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """(depth, objects) of every list nested in a JSON value that holds objects, list by list."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, dict):
        for inner in value.values():
            yield from _object_lists(inner, depth + 1)
    elif isinstance(value, list):
        objects = [item for item in value if isinstance(item, dict)]
        if objects:
            yield depth, objects
        for item in value:
            yield from _object_lists(item, depth + 1)


def _field_totals(items: list[list[tuple[tuple[str, ...], float]]]) -> Iterator[float]:
    """The total of each numeric field (by path) two or more of the items hold, each item given by its leaves."""
    totals: dict[tuple[str, ...], list[float]] = {}
    for leaves in items:
        for path, number in leaves:
            totals.setdefault(path, []).append(number)
    for numbers in totals.values():
        if len(numbers) >= 2:
            yield sum(numbers)


def list_totals(value: Any) -> Iterator[float]:
    """For every list of objects nested in a JSON value: the total of each numeric field found in two or more
    of its items (fields of nested objects included, by path)."""
    for depth, items in _object_lists(value, 0):
        yield from _field_totals([list(_numeric_leaves(item, (), depth)) for item in items])
