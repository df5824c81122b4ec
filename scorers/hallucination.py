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

import json
import re
from collections.abc import Iterable

from agentwatch.scorers.text import numbers_in, parse_number

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_ID = re.compile(r"(?<![\w-])(?:[A-Z]{2,}[-_#]?\d{3,}(?:[-_][A-Z0-9]+)*|#\d{3,})(?![\w-])")
_LONG_NUMBER = re.compile(r"(?<![\w.,$€£-])\d{5,}(?![\w]|[.,]\d)")
_AMOUNT = re.compile(
    r"[$€£]\s?(\d[\d,]*(?:\.\d+)?)|(\d[\d,]*(?:\.\d+)?)\s?(?:USD|EUR|GBP|dollars|euros|pounds)\b",
    re.IGNORECASE,
)

# Past-tense action verb → stems of tool names that perform it.
ACTION_STEMS: dict[str, tuple[str, ...]] = {
    "cancelled": ("cancel",),
    "canceled": ("cancel",),
    "refunded": ("refund",),
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
    "issued": ("issue", "refund", "create"),
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
    """What the agent could legitimately know so far in a conversation: inputs, tool arguments and results."""

    __slots__ = ("_folded", "_numbers", "_texts", "complete", "tool_names")

    def __init__(self) -> None:
        self._texts: list[str] = []
        self._folded: str | None = None
        self._numbers: list[float] | None = None
        self.complete = True  # False once an input or a successful tool result was not captured
        self.tool_names: list[str] = []  # normalised names of successful tool calls so far

    def add_text(self, text: str | None) -> None:
        """Add a text the agent saw (an input, a tool result, an error)."""
        if text:
            self._texts.append(text)
            self._folded = None
            self._numbers = None

    def add_value(self, value: object) -> None:
        """Add any JSON value the agent saw (tool arguments or result)."""
        if value is None:
            return
        self.add_text(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str))

    def folded(self, extra: str | None = None) -> str:
        """All evidence text, case-folded (plus `extra`, e.g. the reference answer)."""
        if self._folded is None:
            self._folded = "\n".join(self._texts).casefold()
        return self._folded + ("\n" + extra.casefold() if extra else "")

    def numbers(self) -> list[float]:
        """All numbers written in the evidence."""
        if self._numbers is None:
            self._numbers = [v for v, _ in numbers_in("\n".join(self._texts))]
        return self._numbers


def claimed_actions(answer: str) -> list[str]:
    """Past-tense action verbs the answer claims were performed, lower-case, unique."""
    out: list[str] = []
    for m in _CLAIM.finditer(answer):
        verb = (m.group(1) or m.group(2) or m.group(3)).lower()
        if verb not in out:
            out.append(verb)
    return out


def unsupported_claims(answer: str, tool_names: Iterable[str]) -> list[str]:
    """Claimed actions with no successful tool call whose (normalised) name contains the action's stem."""
    names = list(tool_names)
    return [
        verb
        for verb in claimed_actions(answer)
        if not any(stem in name for stem in ACTION_STEMS[verb] for name in names)
    ]


def unsupported_identifiers(answer: str, evidence: Evidence, reference: str | None = None) -> list[str]:
    """Identifiers and amounts in `answer` found nowhere in the evidence or the reference."""
    out: list[str] = []
    haystack: str | None = None
    for regex in (_EMAIL, _ID, _LONG_NUMBER):
        for m in regex.finditer(answer):
            token = m.group()
            if haystack is None:
                haystack = evidence.folded(reference)
            if token.casefold() not in haystack and token not in out:
                out.append(token)
    amounts = _AMOUNT.findall(answer)
    if amounts:
        known = evidence.numbers() + ([v for v, _ in numbers_in(reference)] if reference else [])
        for a, b in amounts:
            text = a or b
            value = parse_number(text)
            if value is None or any(abs(value - k) <= 0.005 for k in known):
                continue
            if text not in out:
                out.append(text)
    return out


def find_hallucinations(answer: str | None, evidence: Evidence, reference: str | None = None) -> list[str]:
    """Reason texts for every hallucination found in `answer` (empty list when none)."""
    if not answer:
        return []
    reasons = [
        f"claims the action '{verb}' but no successful tool call performed it"
        for verb in unsupported_claims(answer, evidence.tool_names)
    ]
    if evidence.complete:
        reasons.extend(
            f"'{token}' appears in neither the inputs, the tool calls nor the reference"
            for token in unsupported_identifiers(answer, evidence, reference)
        )
    return reasons
