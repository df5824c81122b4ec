"""What an answer may be grounded in: the inputs, tool arguments and results its conversation showed so far.

The hallucination checks (`scorers.hallucination`) search it for an answer's identifiers and amounts. Its values
are read as text lazily and searched within a budget of characters per conversation (`SEARCH_BUDGET`), so that
the work of a long conversation stays bounded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentwatch.scorers.claims import verb_forms, word_in
from agentwatch.scorers.derived_numbers import Derivations
from agentwatch.scorers.utilization import SearchBudget
from agentwatch.wire.schema import ToolCall

SEARCH_BUDGET = 1 << 30  # characters of evidence one conversation's identifier checks may search
_PENDING_TEXTS = 64  # texts read since the last join searched one by one at most
# Numbers in the evidence: a plain scan (JSON numbers, numbers in texts, digits inside ids all count as seen).
_EVIDENCE_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")


class Evidence:
    """What the agent could legitimately know so far in a conversation: inputs, tool arguments and results.

    Values are read (as case-folded text) one at a time, in order, and only as far as a check needs: the
    identifiers of an answer are usually found in the first values searched, so most JSON values are never
    turned into text (their `repr` is the costly part of a check).
    """

    __slots__ = (
        "_joined",
        "_joined_texts",
        "_pending_chars",
        "_left",
        "_numbered",
        "_numbers",
        "_results",
        "_texts",
        "_values",
        "acted",
        "complete",
        "derived",
        "results_search",
        "unchecked",
    )

    def __init__(self, search_budget: int = SEARCH_BUDGET) -> None:
        self._values: list[object] = []  # every value added, in order
        self._texts: list[str] = []  # case-folded texts of the first len(_texts) values
        self._numbers: list[float] = []
        self._numbered = 0  # texts whose numbers are in _numbers
        self.complete = True  # False once an input or a successful tool result was not captured
        self.acted = False  # a successful call with effects (or a handoff) was made so far
        self._results: list[str] = []  # case-folded texts of successful tool results, read on demand
        self.derived = Derivations()  # amounts the agent stated, to derive further amounts from
        self._left = search_budget  # characters the checks may still search
        # the first _joined_texts texts, one a line: searched in one call (ids hold no line break); the texts
        # read after them are searched one by one until they are as long as it, or many
        self._joined = ""
        self._joined_texts = 0
        self._pending_chars = 0
        self.unchecked = 0  # identifiers of answers left unchecked once the budget was spent
        self.results_search = SearchBudget()  # the utilization checks' (answers searched for result values)

    def add(self, value: object) -> None:
        """Add a text or JSON value the agent saw (an input, tool arguments, a result, an error)."""
        if value is not None and value != "":
            self._values.append(value)

    def add_turn(self, turn_input: str | None, calls: Sequence[ToolCall], acts: Sequence[bool]) -> None:
        """Add what one turn showed the agent: its input, then each call's arguments and result or error text
        (`acts[i]`: whether `calls[i]` is a call with effects or a handoff, not a lookup)."""
        if turn_input is None:
            self.complete = False
        else:
            self.add(turn_input)
        for call, acts_ in zip(calls, acts, strict=True):
            if call.error is None:
                self.add(call.arguments)
                if call.result is None:
                    self.complete = False
                else:
                    self.derived.results.append(call.result)
                self.add(call.result)
                self.acted = self.acted or acts_
            else:
                self.add(call.error)

    def results_state(self, word: str) -> bool:
        """Whether a successful tool result so far holds `word` (case-folded) as a word: a status read back."""
        results = self.derived.results
        for value in results[len(self._results) :]:
            self._results.append((value if isinstance(value, str) else repr(value)).casefold())
        stems = verb_forms(word)
        return any(word_in(text, form) for text in self._results for form in stems)

    def _read(self) -> str | None:
        """Case-folded text of the next unread value (JSON values as their Python repr); None once all are read."""
        texts = self._texts
        i = len(texts)
        if i == len(self._values):
            return None
        value = self._values[i]
        text = (value if isinstance(value, str) else repr(value)).casefold()
        texts.append(text)
        self._pending_chars += len(text)
        return text

    @property
    def spent(self) -> bool:
        """Whether the checks have searched `SEARCH_BUDGET` characters: no more identifiers are checked."""
        return self._left <= 0

    def charge(self, characters: int) -> None:
        """Count work done outside `has_text` and `has_number_written` against the budget."""
        self._left -= characters

    def _read_so_far(self) -> list[str]:
        """The texts read so far, as few texts to search (most of them joined, a line a value), counted against
        the budget as searched. They are joined again only when those read since are as long as the join, or
        many: copying is then linear in what is read, not in the checks."""
        texts = self._texts
        pending = len(texts) - self._joined_texts
        if pending > _PENDING_TEXTS or (pending and self._pending_chars >= len(self._joined)):
            self._joined = "\n".join(texts)
            self._joined_texts = len(texts)
            self._pending_chars = 0
            self._left -= len(self._joined)  # the copy
        self._left -= len(self._joined) + self._pending_chars
        return [self._joined, *texts[self._joined_texts :]]

    def has_text(self, folded: str) -> bool:
        """Whether a case-folded text (holding no line break) occurs in one of the values."""
        for text in self._read_so_far():
            if folded in text:
                return True
        while (more := self._read()) is not None:
            self._left -= len(more)
            if folded in more:
                return True
        return False

    def has_number_written(self, forms: Sequence[str]) -> bool:
        """Whether a number is written, in one of `forms`, in one of the values (see `number_written`; a line
        break beside a number bounds it as the end of a value does)."""
        for text in self._read_so_far():
            if written_in(text, forms):
                return True
        while (more := self._read()) is not None:
            self._left -= len(more)
            if written_in(more, forms):
                return True
        return False

    def numbers(self) -> list[float]:
        """All numbers in the evidence (JSON numbers and numbers written in texts)."""
        while self._read() is not None:
            pass
        for text in self._texts[self._numbered :]:
            self._numbers.extend(float(t.replace(",", "")) for t in _EVIDENCE_NUMBER.findall(text))
        self._numbered = len(self._texts)
        return self._numbers


def number_written(text: str, form: str) -> bool:
    """Whether `form` occurs in `text` as a whole number (no digit, "." or "," glued to either side)."""
    start = text.find(form)
    while start >= 0:
        end = start + len(form)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not (before.isdigit() or before in ".,") and not (
            after.isdigit() or (after in ".," and text[end + 1 : end + 2].isdigit())
        ):
            return True
        start = text.find(form, start + 1)
    return False


def written_in(text: str, forms: Sequence[str]) -> bool:
    """Whether one of `forms` is written in `text` as a whole number."""
    for form in forms:
        if form in text and number_written(text, form):
            return True
    return False
