"""Utilization: does the final answer contain a salient value from a successful tool result?

Checked from the answer text and the tool results, never taken on the agent's word: strings of at least
three characters appear in the answer (case-insensitive), numbers appear however they are formatted
(42.5 reads as "42.50"; 3.14159 as "3.14"), and values nested in objects and lists count. JSON text results
are parsed first.

A value the agent already had before the tool answered — one that also appears in the turn's input or in the
call's own arguments (an order id echoed back by `lookup_order`) — is no evidence the result was used: only
result values *not* present there count.

For an expectation of the whole conversation (`conversation_uses_results`), every answer counts, each against
the results of its turn and the turns before: the answer is rarely in the closing "You're welcome!".

Every result value is searched for in the answer, so the work is the product of their sizes (a result of 10,000
values against a 60 kB answer: 0.4 s), and for the whole conversation that product summed over its turns and the
turns before. The checks of one conversation (or one check, alone) search at most `SEARCH_BUDGET` characters;
a check that has found none of the values by then has no answer (None): utilization is not graded rather than
failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from agentwatch.scorers.text import AnswerText, is_number, number_values, parse_number, shown_matches
from agentwatch.wire.json_text import value_of
from agentwatch.wire.schema import Turn

MIN_STRING = 3
# characters of answer one check may search (a result's number counts as the answer's numbers times 32: each is
# compared in Python)
SEARCH_BUDGET = 1 << 30
_MAX_DEPTH = 32
_NUMBER_START = frozenset("0123456789+-.")


def _leaves(value: Any, parse_json: bool = False) -> Iterator[Any]:
    """The strings and numbers nested in a JSON value (values, not keys), shallowest first (the usual salient
    values), down to _MAX_DEPTH levels; with `parse_json`, a string holding a JSON object or array is walked as
    the value it holds."""
    level, depth = [value], 0
    while level:
        deeper: list[Any] = []
        for v in level:
            if isinstance(v, str):
                held = _json_held(v) if parse_json else None
                if held is None:
                    yield v
                else:
                    deeper.append(held)
            elif isinstance(v, dict):
                if depth < _MAX_DEPTH:
                    deeper.extend(v.values())
            elif isinstance(v, (list, tuple)):
                if depth < _MAX_DEPTH:
                    deeper.extend(v)
            elif is_number(v):
                yield v
        level = deeper
        depth += 1


def _json_held(text: str) -> Any:
    """The JSON object or array a string holds, else None."""
    s = text.strip()
    if len(s) > 1 and s[0] in "{[":
        try:
            return value_of(s)  # nesting bounded alike compiled or not (the stdlib decoder's limit is not)
        except (ValueError, RecursionError):
            pass
    return None


@dataclass(slots=True)
class SearchBudget:
    """Characters of answer the checks sharing it may still search."""

    left: int = SEARCH_BUDGET


class _Search:
    """One search of an answer for tool-result values, and of what the agent knew before each call answered
    (the echo: the turn's input and the call's arguments).

    The echo is read lazily (most result values never appear in the answer, so most calls never need it),
    the input's numbers once per turn. One object per turn, switched from call to call with `call()`.
    """

    __slots__ = (
        "_arguments",
        "_echo_text",
        "_given",
        "_input",
        "_input_numbers",
        "_no_echo",
        "_string_numbers",
        "_strings",
        "answer",
        "budget",
    )

    def __init__(self, answer: AnswerText, turn_input: str | None, budget: SearchBudget) -> None:
        self.answer = answer
        self._input = turn_input
        self._input_numbers: list[float] | None = None  # the numbers written in the input
        self.budget = budget

    def call(self, arguments: Any) -> None:
        """Switch to the call with these arguments."""
        self._arguments = arguments
        self._no_echo = not (self._input or arguments)  # no input, no arguments: nothing can be an echo
        self._strings: list[str] | None = None  # the string values of the arguments
        self._given: set[float] = set()  # the numeric values of the arguments, once they are read
        self._echo_text: str | None = None  # the input and the argument strings joined, case-folded
        self._string_numbers: list[float] | None = None  # the numbers written in the argument strings

    def found(self, result: Any) -> bool | None:
        """Whether `result` (or a value nested in it) is in the answer and not an echo of what the agent knew;
        None when the search budget ran out first."""
        text_cost = len(self.answer.folded)
        number_cost = -1  # the answer's numbers are read only for a result that holds a number
        for value in _leaves(result, parse_json=True):
            if self.budget.left <= 0:
                return None
            if isinstance(value, str):
                self.budget.left -= text_cost
                if self._string_found(value.strip()):
                    return True
            else:
                if number_cost < 0:
                    number_cost = 32 * len(self.answer.numbers())
                self.budget.left -= number_cost
                if self._number_found(float(value)):
                    return True
        return False

    def _number_shown(self, value: float) -> bool:
        """Whether the answer shows `value`."""
        return any(shown_matches(shown, decimals, value) for shown, decimals in self.answer.numbers())

    def _number_found(self, value: float) -> bool:
        """Whether a result number is shown in the answer and is not an echo."""
        return self._number_shown(value) and (self._no_echo or not self._echoes_number(value))

    def _string_found(self, s: str) -> bool:
        """Whether a (stripped) result string is in the answer, as text or as a number, and is not an echo."""
        if len(s) >= MIN_STRING:
            folded = s.casefold()
            if folded in self.answer.folded and (self._no_echo or not self._echoes_text(folded)):
                return True
        if s and s[0] in _NUMBER_START:
            number = parse_number(s)
            return (
                number is not None
                and self._number_shown(number)
                and (self._no_echo or not (self._echoes_text(s.casefold()) or self._echoes_number(number)))
            )
        return False

    def _read_arguments(self) -> list[str]:
        """The argument strings (collecting the numeric argument values on the way), once per call."""
        if self._strings is None:
            self._strings = []
            for value in _leaves(self._arguments):
                if isinstance(value, str):
                    self._strings.append(value)
                else:
                    self._given.add(float(value))
        return self._strings

    def _echoes_text(self, folded: str) -> bool:
        """Whether a case-folded string occurs in the input or the arguments."""
        if self._echo_text is None:
            strings = self._read_arguments()
            self._echo_text = "\n".join([self._input, *strings] if self._input else strings).casefold()
        return folded in self._echo_text

    def _echoes_number(self, value: float) -> bool:
        """Whether a number is written in the input or the argument texts, or is an argument value."""
        # Checked source by source, reading each once (usually asked once per call: no set of all of them).
        # A text without "." writes only whole numbers: a value with a fraction cannot be among them, and the
        # text need not be scanned (the usual case: an amount from a result against an input with an order id).
        whole = value.is_integer()
        strings = self._read_arguments()
        if value in self._given:
            return True
        text = self._input
        if text and (whole or "." in text):
            if self._input_numbers is None:
                self._input_numbers = number_values(text)
            if value in self._input_numbers:
                return True
        if self._string_numbers is None:
            if not whole and not (strings and any("." in s for s in strings)):
                return False
            self._string_numbers = [v for s in strings for v in number_values(s)]
        return value in self._string_numbers


def answer_uses(
    answer: str | None,
    results: Iterable[Any],
    turn_input: str | None = None,
    arguments: Sequence[Any] | None = None,
) -> bool | None:
    """Whether `answer` contains a salient value from any of `results` that the agent did not already have
    (None: the search budget ran out before one was found).

    `arguments[i]`, when given, are the arguments of the call that returned `results[i]`; values also found
    in `turn_input` or in those arguments do not count.
    """
    if not answer:
        return False
    return uses_results(AnswerText(answer), results, turn_input, arguments)


def uses_results(
    answer: AnswerText,
    results: Iterable[Any],
    turn_input: str | None,
    arguments: Sequence[Any] | None,
    budget: SearchBudget | None = None,
) -> bool | None:
    """`answer_uses` for an answer already read (non-empty); `budget`: when several checks share one."""
    search = _Search(answer, turn_input, SearchBudget() if budget is None else budget)
    for i, result in enumerate(results):
        search.call(arguments[i] if arguments is not None else None)
        outcome = search.found(result)
        if outcome is not False:
            return outcome
    return False


def conversation_uses_results(turns: Sequence[Turn]) -> bool | None:
    """Whether some answer of the conversation contains a salient value from a successful tool result of that
    turn or an earlier one, echoes of the answer's turn input and of the call's arguments left out.

    None when calls were made but no successful result was captured (nothing could be used), or when the
    search budget ran out first; False when no tool was called at all."""
    results: list[Any] = []
    arguments: list[Any] = []
    called = False
    budget = SearchBudget()  # one for the whole conversation: each answer searches every result before it
    for turn in turns:
        for call in turn.tool_calls:
            called = True
            if call.error is None and call.result is not None:
                results.append(call.result)
                arguments.append(call.arguments)
        answer = turn.answer
        if not (results and answer and answer.strip()):
            continue
        used = uses_results(AnswerText(answer), results, turn.input, arguments, budget)
        if used is not False:
            return used
    if called and not results:
        return None
    return False
