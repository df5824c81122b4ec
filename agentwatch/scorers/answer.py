"""Reference answer grader: normalised exact match, numeric tolerance, containment, token F1."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import NamedTuple

from agentwatch.scorers.text import numbers_in, parse_number

# A word (letters and digits, any script) with numeric groups kept together: "1,234.50" is one token. The
# repeats are possessive: a token never gives characters back, so the engine does not retry shorter ones.
_TOKEN = re.compile(r"[^\W_]++(?:[.,]\d++)*+")
_DIGITS = frozenset("0123456789")
_ARTICLES = frozenset({"a", "an", "the"})
# Words that negate what follows them within a few tokens ("t" is what tokenising leaves of "n't": "hasn't").
_NEGATIONS = frozenset({"not", "no", "never", "nor", "cannot", "t", "neither", "without"})
_NEGATION_REACH = 3  # "has not yet been shipped": the negation three tokens before the run
# A negation word said as an interjection negates nothing after it: followed by punctuation ("No, it has
# shipped"), or "no" in a set phrase ("No worries, your refund was issued", "no doubt it shipped").
_INTERJECTION_END = re.compile(r"\s*[,.!;:?\u2014\u2013-]")
_SET_PHRASES = frozenset({"problem", "problems", "worries", "worry", "doubt", "matter"})
# A reference that is just a number, maybe with a currency sign or a unit word: "$42.50", "42.5 USD", "7 days".
_NUMERIC_REF = re.compile(r"^\s*[$€£¥]?\s*([-+]?[\d,]*\.?\d+)\s*%?\s*([A-Za-z]{0,12})\s*\.?\s*$")


def normalise_tokens(text: str) -> list[str]:
    """Lower-cased word tokens without punctuation or articles; numbers canonical ("1,234.50" → "1234.5")."""
    text = text.lower()
    return [
        _canonical_number(token) if token[0] in _DIGITS else token
        for token in _TOKEN.findall(text)
        if token not in _ARTICLES
    ]


def _canonical_number(token: str) -> str:
    """A token that starts with a digit, as its number written canonically; unchanged if it is not a number."""
    if len(token) <= 15 and token.isdigit() and token.isascii():
        # A plain integer (exact in a float) is its own canonical form less leading zeros; reference answers are
        # full of them, so they skip the general parse.
        return str(int(token))
    value = parse_number(token)
    if value is None:
        return token
    return repr(int(value)) if value.is_integer() else repr(value)


def token_f1(answer_tokens: list[str], reference_tokens: list[str]) -> float:
    """SQuAD-style token F1 of two token lists."""
    return _f1(answer_tokens, reference_tokens, Counter(reference_tokens))


def _f1(answer_tokens: list[str], reference_tokens: list[str], reference_counts: Counter[str]) -> float:
    """Token F1 with the reference's token counts given (computed once per reference)."""
    if not answer_tokens or not reference_tokens:
        return float(answer_tokens == reference_tokens)
    remaining = dict(reference_counts)
    common = 0
    for t in answer_tokens:
        left = remaining.get(t)
        if left:
            remaining[t] = left - 1
            common += 1
    if common == 0:
        return 0.0
    precision = common / len(answer_tokens)
    recall = common / len(reference_tokens)
    return 2 * precision * recall / (precision + recall)


def numeric_reference(reference: str) -> float | None:
    """The value of a reference that is one number (with optional currency sign or unit); else None."""
    m = _NUMERIC_REF.match(reference)
    if m is None:
        return None
    return parse_number(m.group(1))


class _Reference(NamedTuple):
    tokens: list[str]
    counts: Counter[str]
    run: str  # the tokens joined by spaces, framed by spaces: a contiguous run is a substring (tokens hold none)
    number: float | None
    negated: bool  # the reference holds a negation word itself


@lru_cache(maxsize=4096)
def _reference(reference: str) -> _Reference:
    """Tokens, token counts, joined run and numeric value of a reference answer (cached: trials share them)."""
    tokens = normalise_tokens(reference)
    run = f" {' '.join(tokens)} "
    return _Reference(
        tokens, Counter(tokens), run, numeric_reference(reference), not _NEGATIONS.isdisjoint(tokens)
    )


def grade_answer(answer: str | None, reference: str, numeric_tolerance: float = 1e-6) -> float:
    """Score an answer against a reference answer in [0, 1].

    1.0 for a normalised exact match; for a numeric reference, 1.0 if the answer states that number (relative
    tolerance `numeric_tolerance`) else 0.0; otherwise 1.0 if the reference's tokens appear as a contiguous run
    in the answer with no negation just before it, 0.0 if every such run is negated (the answer says the
    opposite), else token F1.
    """
    if not answer or not answer.strip():
        return 0.0
    ref = _reference(reference)
    ans_tokens = normalise_tokens(answer)
    if ans_tokens == ref.tokens:
        return 1.0
    if ref.number is not None:
        target = ref.number
        tol = numeric_tolerance * max(1.0, abs(target))
        return float(any(abs(value - target) <= tol for value, _ in numbers_in(answer)))
    # the reference's tokens are a contiguous run of the answer's: stated, or negated wherever it occurs
    stated = _stated(answer, ans_tokens, ref) if ref.tokens else None
    if stated is not None:
        return 1.0 if stated else 0.0
    return _f1(ans_tokens, ref.tokens, ref.counts)


def _stated(answer: str, ans_tokens: list[str], ref: _Reference) -> bool | None:
    """Whether the reference's tokens occur as a run in the answer's with no negation in the few tokens before
    it (True), or only negated there (False: "has not been shipped" says the opposite of "shipped"); None when
    they do not occur as a run. A reference that holds a negation itself only needs the run."""
    joined = f" {' '.join(ans_tokens)} "
    start = joined.find(ref.run)
    if start < 0:
        return None
    if ref.negated:
        return True
    negating: list[bool] | None = None  # per answer token, worked out when a negation word is within reach
    while start >= 0:
        before = joined.count(" ", 0, start + 1) - 1  # answer tokens before the run
        reach = slice(max(0, before - _NEGATION_REACH), before)
        if _NEGATIONS.isdisjoint(ans_tokens[reach]):
            return True
        negating = negating if negating is not None else _negating(answer)
        if not any(negating[reach]):
            return True
        start = joined.find(ref.run, start + 1)
    return False


def _negating(answer: str) -> list[bool]:
    """For each token of `answer` as `normalise_tokens` reads them, whether it negates what follows: a negation
    word not said as an interjection (`_INTERJECTION_END`, `_SET_PHRASES`)."""
    text = answer.lower()
    words = [m for m in _TOKEN.finditer(text) if m.group() not in _ARTICLES]
    out = []
    for i, m in enumerate(words):
        word = m.group()
        if word not in _NEGATIONS:
            out.append(False)
            continue
        following = words[i + 1].group() if i + 1 < len(words) else None
        interjection = _INTERJECTION_END.match(text, m.end()) is not None or (
            word == "no" and following in _SET_PHRASES
        )
        out.append(not interjection)
    return out
