"""Hallucination evidence in an answer: made-up identifiers and amounts, and actions claimed while none was taken.

- Identifiers — e-mail addresses, ids such as `ORD-1234` / `#48213`, numbers of five or more digits and
  currency amounts (signed too: "+$16.23") — that appear in the answer but in none of the conversation's inputs
  so far, the arguments and results (or error texts) of its tool calls so far, or the turn's reference answer.
  Amounts compare by value (`$42.5` matches a result of `42.50`), and an amount one arithmetic step or a
  rounding away from grounded numbers is grounded (`scorers.derived_numbers`), a long number matches one
  written with separators (`50000`, `$50,000`), and an example of a format asserts nothing ("your order id,
  e.g. ORD-1234"; "(ej. MAT201)"). The check is skipped when an
  input or a successful tool result was not captured (content capture off): absence cannot be told from not
  seen. Each answer is searched for in everything before it, so the work grows with the square of a
  conversation's length: a conversation's checks search at most `grounding.SEARCH_BUDGET` characters of
  evidence (a number's look-up and a derivation counted alike; the published dev runs use at most 2.8 million);
  the identifiers left then are not checked, and the turn says how many (`python -m benchmarks.worst_case`).
- Claimed actions — "I have cancelled…", "your order has been refunded" (`scorers.claims`) — when the
  conversation so far holds no successful call with effects (or handoff) at all. Any such call grounds a claim:
  which tool performs which verb is the agent's business (a return is "submitted", an exchange "issued"), not a
  word list's. A verb a tool result states ("status": "cancelled") is a status read back, not a claim.
"""

from __future__ import annotations

import re

import numpy as np

from agentwatch.scorers.claims import claimed_actions
from agentwatch.scorers.derived_numbers import MAX_OPERANDS, Derivations
from agentwatch.scorers.grounding import Evidence, written_in
from agentwatch.scorers.text import AnswerText, numbers_in, parse_number

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_WORD_PUNCT = "\"'()[]{}<>.,;:!?*`~"  # "*" and "`": markdown's bold and code around an id or an amount
# An id such as ORD-1234, INV_2024_001 or #48213, or a number of five or more digits
_ID_OR_LONG_NUMBER = re.compile(r"[A-Z]{2,}[-_#]?\d{3,}(?:[-_][A-Z0-9]+)*|#\d{3,}|\d{5,}")
_CURRENCY = frozenset("$€£")
_SIGNS = frozenset("+-\u2212\u2013")  # plus, hyphen-minus, minus sign, en dash
# An amount with a currency word: "42.50 USD", "12 euros".
_UNIT_AMOUNT = re.compile(
    r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s?(?:USD|EUR|GBP|dollars|euros|pounds)\b", re.IGNORECASE
)
_CURRENCY_WORDS = ("usd", "eur", "gbp", "dollar", "euro", "pound")  # what _UNIT_AMOUNT needs, case-folded
# An example given as one ("e.g. ORD-1234", "(por ejemplo MAT201)", "(like 1008292230)"), to the end of its
# clause: it asserts nothing. The markers of the languages agents are seen answering in; "such as" is not one (it
# lists real items).
_EXAMPLE = re.compile(
    r"(?:\be\.\s?g\.|\b(?:for example|for instance|por ejemplo|p\.\s?ej\.|ej\.|par exemple|z\.\s?b\.|zum beispiel"
    r"|ad esempio|por exemplo)|\blike:?\s+(?=[\"'‘“`])|\(\s*like\s)[^.!?;\n)]*"
    # an amount marked as approximate ("~$2,460", "about $18"): an estimate, not a figure read from a result
    r"|(?:[~≈]|\b(?:about|approximately|approx\.|around|roughly|nearly|almost|circa)\s+)"
    r"[-+\u2212\u2013]?\$?\d[\d,]*(?:\.\d+)?",
    re.IGNORECASE,
)
# Words one of which `_EXAMPLE` needs in the case-folded answer: substring checks rule most answers out before
# the pattern, whose alternatives are tried at every position, has to run.
_EXAMPLE_HINTS = tuple(
    "e.g|e. g|example|instance|ejemplo|ej.|exemple|z.b|z. b|beispiel|esempio|exemplo|like|~|≈|about|approx|around"
    "|roughly|nearly|almost|circa".split("|")
)
MAX_LISTED = 20  # identifiers of one answer named one reason each; the rest in one reason
_LOOKUP = 64  # what a number's look-up is counted as, in characters searched
# what a derivation is counted as per operand: a few numpy passes over them, about 100 ns an operand where a
# character is searched in about 1 ns
_PER_OPERAND = 128


def unsupported_claims(answer: str, evidence: Evidence, folded: str | None = None) -> list[str]:
    """Claimed actions when no successful call with effects was made so far, statuses read back left out."""
    if evidence.acted:
        return []
    verbs = claimed_actions(answer, folded)
    return [verb for verb in verbs if not evidence.results_state(verb)]


def _number_forms(value: float) -> tuple[str, ...]:
    """Usual ways a number is written: 16.25 → "16.25", "16.25"; 42.5 → "42.5", "42.50"; 7 → "7", "7.0", "7.00"."""
    if value.is_integer():
        return (str(int(value)), f"{value:.1f}", f"{value:.2f}")
    return (repr(value), f"{value:.2f}")


def _identifiers(text: AnswerText) -> list[tuple[str, str, float | None]]:
    """(kind, text, value) of every identifier in an answer; kind is "text" (compare as text, value None) or
    "amount" (value: its number, None if it does not parse)."""
    folded = text.folded
    if any(hint in folded for hint in _EXAMPLE_HINTS) and _EXAMPLE.search(text.text):  # most answers: none
        text = AnswerText(_EXAMPLE.sub(" ", text.text))
    answer = text.text
    found: list[tuple[str, str, float | None]] = []
    if "@" in answer:
        found.extend(("text", e, None) for e in _EMAIL.findall(answer))
    for word in text.digit_words():
        token = word.strip(_WORD_PUNCT)
        if not token or "@" in token:
            continue
        if len(token) > 2 and token[0] in _SIGNS and token[1] in _CURRENCY:
            token = token[1:]  # a signed amount ("+$16.23", "-$94.55" a refund): its size is what is stated
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


class _Known:
    """The numbers of the evidence and of the reference answer, for one answer's checks: a list (what the
    derivations take) and, once a check needs it, a sorted array, so that a look-up costs a binary search, not a
    pass over every number (an answer of 100,000 amounts against as many numbers took seconds)."""

    __slots__ = ("_sorted", "values")

    def __init__(self, evidence: Evidence, reference: str | None) -> None:
        self.values = evidence.numbers() + ([v for v, _ in numbers_in(reference)] if reference else [])
        evidence.charge(len(self.values))
        self._sorted: np.ndarray | None = None

    def _array(self) -> np.ndarray:
        if self._sorted is None:
            self._sorted = np.unique(np.asarray(self.values, dtype=np.float64))
        return self._sorted

    def _around(self, value: float) -> list[float]:
        """The numbers within a cent of `value` (the exact tests are the callers')."""
        arr = self._array()
        i = int(np.searchsorted(arr, value - 0.01))
        j = int(np.searchsorted(arr, value + 0.01, side="right"))
        return [float(k) for k in arr[i:j]]

    def near(self, value: float) -> bool:
        """Whether `value` is one of the numbers within half a cent."""
        return any(abs(value - k) <= 0.005 for k in self._around(value))

    def holds(self, value: float) -> bool:
        """Whether `value` is one of the numbers exactly."""
        return value in self._around(value)


def _sums_what_follows(value: float, found: list[tuple[str, str, float | None]], known: _Known) -> bool:
    """Whether `value` is the sum of the two or more grounded amounts that follow it in the answer (a total
    stated before its breakdown: "$1,093.34 (Keyboard: $235.13, Headphones: $346.97, Chair: $511.24)")."""
    total, count = 0.0, 0
    for kind, _, amount in found:
        if kind != "amount":
            continue
        if amount is None or not known.near(amount):
            return False
        total += amount
        count += 1
        if count >= 2 and abs(total - value) <= 0.005:
            return True
    return False


def unsupported_identifiers(
    answer: str | AnswerText, evidence: Evidence, reference: str | None = None
) -> list[str]:
    """Identifiers and amounts in `answer` found nowhere in the evidence or the reference; those left once the
    evidence's search budget is spent are counted in `evidence.unchecked`, not checked."""
    flagged: list[tuple[int, str]] = []
    # amounts to try again once the whole answer is read, with how many amounts were stated when they were tried
    later: list[tuple[int, str, float, int]] = []
    ref = reference.casefold() if reference else ""
    known: _Known | None = None
    text_of = answer if isinstance(answer, AnswerText) else AnswerText(answer)
    derived = evidence.derived
    derived.begin(text_of)
    found = _identifiers(text_of)
    for i, (kind, text, value) in enumerate(found):
        if evidence.spent:
            evidence.unchecked += len(found) - i
            break
        if kind == "amount":
            if value is None:
                continue
            forms = _number_forms(value)
            grounded = (ref and written_in(ref, forms)) or evidence.has_number_written(forms)
            computed = False
            # the evidence's numbers are read only for an amount not written in it (most amounts are)
            if not grounded:
                if known is None:
                    known = _Known(evidence, reference)
                evidence.charge(_derivation_cost(known, derived))
                grounded = known.near(value)
                computed = not grounded and (
                    derived.explains(value, known.values) or _sums_what_follows(value, found[i + 1 :], known)
                )
            if grounded or computed:
                derived.take(value, computed)
            else:
                later.append((i, text, value, len(derived.stated)))
            continue
        else:
            token = text.casefold()
            if token in ref or evidence.has_text(token):
                continue
            # "item #1421289881" of an item_id 1421289881
            if token[0] == "#" and evidence.has_text(token[1:]):
                continue
            if token.isdecimal():  # a long number, grounded where it was written with separators ("50,000")
                if known is None:
                    known = _Known(evidence, reference)
                evidence.charge(_LOOKUP)
                if known.holds(float(token)):
                    continue
        flagged.append((i, text))
    # a total stated before the parts it sums, parts the agent derived ("$41.92 ($8.28 for the shoes + $33.64
    # for the keyboard)", each a price difference): derived from what the answer states after it
    for i, text, value, stated in later:
        if len(derived.stated) == stated:  # nothing stated after it: nothing new to derive it from
            flagged.append((i, text))
            continue
        if evidence.spent:
            evidence.unchecked += 1
            continue
        if known is not None:
            evidence.charge(_derivation_cost(known, derived))
            if derived.explains(value, known.values):
                derived.take(value, True)
                continue
        flagged.append((i, text))
    return list(dict.fromkeys(text for _, text in sorted(flagged)))


def _derivation_cost(known: _Known, derived: Derivations) -> int:
    """What looking an amount up among the evidence's numbers and derivations is counted as, in characters."""
    return _LOOKUP + _PER_OPERAND * (min(len(known.values), MAX_OPERANDS) + len(derived.stated))


def find_hallucinations(
    answer: str | AnswerText | None, evidence: Evidence, reference: str | None = None
) -> list[str]:
    """Reason texts for every hallucination found in `answer` (empty list when none; an `AnswerText` when the
    answer was already read for other graders)."""
    if not answer:
        return []
    text = answer if isinstance(answer, AnswerText) else AnswerText(answer)
    reasons: list[str] = []  # loops, not comprehensions: usually nothing is found
    for verb in unsupported_claims(text.text, evidence, text.folded):
        reasons.append(f"claims the action '{verb}' but no call with effects was made")
    if evidence.complete:
        tokens = unsupported_identifiers(text, evidence, reference)
        for token in tokens[:MAX_LISTED]:
            reasons.append(f"'{token}' appears in neither the inputs, the tool calls nor the reference")
        if len(tokens) > MAX_LISTED:
            reasons.append(
                f"{len(tokens) - MAX_LISTED} more identifiers appear in neither the inputs, the tool calls nor "
                "the reference"
            )
    return reasons
