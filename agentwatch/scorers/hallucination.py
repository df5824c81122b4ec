"""Hallucination evidence in an answer: made-up identifiers and claimed actions no tool performed.

- Identifiers — e-mail addresses, ids such as `ORD-1234` / `#48213`, numbers of five or more digits and
  currency amounts — that appear in the answer but in none of the conversation's inputs so far, the
  arguments and results (or error texts) of its tool calls so far, or the turn's reference answer.
  Amounts compare by value (`$42.5` matches a result of `42.50`). The check is skipped when an input or a
  successful tool result was not captured (content capture off): absence cannot be told from not seen.
- Claimed actions — "I have cancelled…", "your order has been refunded" — when no successful tool call so far
  has a name containing the action's stem (cancel, refund, book, send, update, …).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from agentwatch.scorers.derived_numbers import Derivations
from agentwatch.scorers.text import AnswerText, numbers_in, parse_number
from agentwatch.wire.schema import ToolCall

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_WORD_PUNCT = "\"'()[]{}<>.,;:!?"
# An id such as ORD-1234, INV_2024_001 or #48213, or a number of five or more digits
_ID_OR_LONG_NUMBER = re.compile(r"[A-Z]{2,}[-_#]?\d{3,}(?:[-_][A-Z0-9]+)*|#\d{3,}|\d{5,}")
_CURRENCY = frozenset("$€£")
# An amount with a currency word: "42.50 USD", "12 euros".
_UNIT_AMOUNT = re.compile(
    r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s?(?:USD|EUR|GBP|dollars|euros|pounds)\b", re.IGNORECASE
)
_CURRENCY_WORDS = ("usd", "eur", "gbp", "dollar", "euro", "pound")  # what _UNIT_AMOUNT needs, case-folded
# Numbers in the evidence: a plain scan (JSON numbers, numbers in texts, digits inside ids all count as seen).
_EVIDENCE_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")

# Past-tense action verb → stems of tool names that perform it.
ACTION_STEMS: dict[str, tuple[str, ...]] = {
    "cancelled": ("cancel",),
    "canceled": ("cancel",),
    # a refund follows a cancellation, a return or a change of a paid booking as often as a refund call
    "refunded": ("refund", "cancel", "return", "exchange", "update", "modify", "change"),
    "booked": ("book", "reserv", "schedul"),
    "reserved": ("reserv", "book"),
    "scheduled": ("schedul", "book", "calendar", "event"),
    "sent": ("send", "email", "mail", "message", "notify", "sms"),
    "emailed": ("email", "mail", "send"),
    "updated": ("update", "change", "modify", "edit", "set", "patch"),
    "changed": ("change", "update", "modify", "edit", "set", "patch"),
    "modified": ("modify", "update", "change", "edit", "patch"),
    "created": ("create", "add", "new", "open", "insert"),
    "deleted": ("delete", "remove"),
    "removed": ("remove", "delete"),
    "transferred": ("transfer",),
    "submitted": ("submit", "create", "file"),
    "issued": ("issue", "refund", "create", "send"),
    "reset": ("reset",),
}
_VERBS = "|".join(sorted(ACTION_STEMS, key=len, reverse=True))
_ADVERBS = r"(?:(?:just|now|already|successfully|also|gone\s+ahead\s+and)\s+)*"
_CLAIM = re.compile(
    rf"\b(?:I|we)(?:'ve|\s+have)?\s+{_ADVERBS}({_VERBS})\b"
    rf"|\b(?:has|have)\s+{_ADVERBS}been\s+{_ADVERBS}({_VERBS})\b"
    rf"|\b(?:was|were)\s+successfully\s+({_VERBS})\b",
    re.IGNORECASE,
)


class Evidence:
    """What the agent could legitimately know so far in a conversation: inputs, tool arguments and results.

    Values are read (as case-folded text) one at a time, in order, and only as far as a check needs: the
    identifiers of an answer are usually found in the first values searched, so most JSON values are never
    turned into text (their `repr` is the costly part of a check).
    """

    __slots__ = ("_numbered", "_numbers", "_texts", "_values", "complete", "derived", "tool_names")

    def __init__(self) -> None:
        self._values: list[object] = []  # every value added, in order
        self._texts: list[str] = []  # case-folded texts of the first len(_texts) values
        self._numbers: list[float] = []
        self._numbered = 0  # texts whose numbers are in _numbers
        self.complete = True  # False once an input or a successful tool result was not captured
        self.tool_names: list[str] = []  # normalised names of successful tool calls so far
        self.derived = Derivations()  # amounts the agent stated, to derive further amounts from

    def add(self, value: object) -> None:
        """Add a text or JSON value the agent saw (an input, tool arguments, a result, an error)."""
        if value is not None and value != "":
            self._values.append(value)

    def add_turn(self, turn_input: str | None, calls: Sequence[ToolCall], names: Sequence[str]) -> None:
        """Add what one turn showed the agent: its input, then each call's arguments and result or error text
        (`names[i]`: the normalised name of `calls[i]`)."""
        if turn_input is None:
            self.complete = False
        else:
            self.add(turn_input)
        for call, name in zip(calls, names, strict=True):
            if call.error is None:
                self.add(call.arguments)
                if call.result is None:
                    self.complete = False
                else:
                    self.derived.results.append(call.result)
                self.add(call.result)
                self.tool_names.append(name)
            else:
                self.add(call.error)

    def _read(self) -> str | None:
        """Case-folded text of the next unread value (JSON values as their Python repr); None once all are read."""
        texts = self._texts
        i = len(texts)
        if i == len(self._values):
            return None
        value = self._values[i]
        text = (value if isinstance(value, str) else repr(value)).casefold()
        texts.append(text)
        return text

    def has_text(self, folded: str) -> bool:
        """Whether a case-folded text (holding no line break) occurs in one of the values."""
        for text in self._texts:
            if folded in text:
                return True
        while (more := self._read()) is not None:
            if folded in more:
                return True
        return False

    def has_number_written(self, forms: Sequence[str]) -> bool:
        """Whether a number is written, in one of `forms`, in one of the values (see `_number_written`)."""
        for text in self._texts:
            for form in forms:
                if form in text and _number_written(text, form):
                    return True
        while (more := self._read()) is not None:
            if _written_in(more, forms):
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


def claimed_actions(answer: str, folded: str | None = None) -> list[str]:
    """Past-tense action verbs the answer claims were performed, lower-case, unique (`folded`: the answer
    case-folded, if already known)."""
    if folded is None:
        folded = answer.casefold()
    if not _mentions_action(folded):
        return []
    out: list[str] = []
    for m in _CLAIM.finditer(answer):
        verb = (m.group(1) or m.group(2) or m.group(3)).lower()
        if verb not in out:
            out.append(verb)
    return out


def _mentions_action(folded: str) -> bool:
    """Whether the case-folded answer contains one of the action verbs (most answers claim nothing)."""
    return any(verb in folded for verb in ACTION_STEMS)


def unsupported_claims(answer: str, tool_names: Iterable[str], folded: str | None = None) -> list[str]:
    """Claimed actions with no successful tool call whose (normalised) name contains the action's stem."""
    verbs = claimed_actions(answer, folded)
    if not verbs:
        return []
    names = list(tool_names)
    return [verb for verb in verbs if not any(stem in name for stem in ACTION_STEMS[verb] for name in names)]


def _number_forms(value: float) -> tuple[str, ...]:
    """Usual ways a number is written: 16.25 → "16.25", "16.25"; 42.5 → "42.5", "42.50"; 7 → "7", "7.0", "7.00"."""
    if value.is_integer():
        return (str(int(value)), f"{value:.1f}", f"{value:.2f}")
    return (repr(value), f"{value:.2f}")


def _number_written(text: str, form: str) -> bool:
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


def _written_in(text: str, forms: Sequence[str]) -> bool:
    """Whether one of `forms` is written in `text` as a whole number."""
    for form in forms:
        if form in text and _number_written(text, form):
            return True
    return False


def _identifiers(text: AnswerText) -> list[tuple[str, str, float | None]]:
    """(kind, text, value) of every identifier in an answer; kind is "text" (compare as text, value None) or
    "amount" (value: its number, None if it does not parse)."""
    answer = text.text
    found: list[tuple[str, str, float | None]] = []
    if "@" in answer:
        found.extend(("text", e, None) for e in _EMAIL.findall(answer))
    for word in text.digit_words():
        token = word.strip(_WORD_PUNCT)
        if not token or "@" in token:
            continue
        if token[0] in _CURRENCY:
            amount = token[1:].strip()
            value = parse_number(amount) if amount else None
            if value is not None:
                found.append(("amount", amount, value))
        elif _ID_OR_LONG_NUMBER.fullmatch(token):
            found.append(("text", token, None))
    if any(word in text.folded for word in _CURRENCY_WORDS):  # most answers name no currency
        for amount in _UNIT_AMOUNT.findall(answer):
            found.append(("amount", amount, parse_number(amount)))
    return found


def unsupported_identifiers(
    answer: str | AnswerText, evidence: Evidence, reference: str | None = None
) -> list[str]:
    """Identifiers and amounts in `answer` found nowhere in the evidence or the reference."""
    out: list[str] = []
    ref = reference.casefold() if reference else ""
    known: list[float] | None = None
    text_of = answer if isinstance(answer, AnswerText) else AnswerText(answer)
    derived = evidence.derived
    derived.begin(text_of)
    for kind, text, value in _identifiers(text_of):
        if kind == "amount":
            if value is None:
                continue
            forms = _number_forms(value)
            grounded = (ref and _written_in(ref, forms)) or evidence.has_number_written(forms)
            if not grounded:
                if known is None:
                    known = evidence.numbers() + ([v for v, _ in numbers_in(reference)] if reference else [])
                grounded = any(abs(value - k) <= 0.005 for k in known)
            if grounded or derived.explains(value):
                derived.take(value)
                continue
        else:
            token = text.casefold()
            if token in ref or evidence.has_text(token):
                continue
        if text not in out:
            out.append(text)
    return out


def find_hallucinations(
    answer: str | AnswerText | None, evidence: Evidence, reference: str | None = None
) -> list[str]:
    """Reason texts for every hallucination found in `answer` (empty list when none; an `AnswerText` when the
    answer was already read for other graders)."""
    if not answer:
        return []
    text = answer if isinstance(answer, AnswerText) else AnswerText(answer)
    reasons: list[str] = []  # loops, not comprehensions: usually nothing is found
    for verb in unsupported_claims(text.text, evidence.tool_names, text.folded):
        reasons.append(f"claims the action '{verb}' but no successful tool call performed it")
    if evidence.complete:
        for token in unsupported_identifiers(text, evidence, reference):
            reasons.append(f"'{token}' appears in neither the inputs, the tool calls nor the reference")
    return reasons
