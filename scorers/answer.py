"""Reference answer grader: normalised exact match, numeric tolerance, containment, token F1."""

from __future__ import annotations

import re
from functools import lru_cache

from agentwatch.scorers.text import numbers_in, parse_number

# A word (letters and digits, any script) with numeric groups kept together: "1,234.50" is one token.
_TOKEN = re.compile(r"[^\W_]+(?:[.,]\d+)*")
_DIGITS = frozenset("0123456789")
_ARTICLES = frozenset({"a", "an", "the"})
# A reference that is just a number, maybe with a currency sign or a unit word: "$42.50", "42.5 USD", "7 days".
_NUMERIC_REF = re.compile(r"^\s*[$€£¥]?\s*([-+]?[\d,]*\.?\d+)\s*%?\s*([A-Za-z]{0,12})\s*\.?\s*$")


def normalise_tokens(text: str) -> list[str]:
    """Lower-cased word tokens without punctuation or articles; numbers canonical ("1,234.50" → "1234.5")."""
    out: list[str] = []
    for token in _TOKEN.findall(text.lower()):
        if token in _ARTICLES:
            continue
        if token[0] in _DIGITS:
            value = parse_number(token)
            if value is not None:
                token = repr(int(value)) if value.is_integer() else repr(value)
        out.append(token)
    return out


def token_f1(answer_tokens: list[str], reference_tokens: list[str]) -> float:
    """SQuAD-style token F1 of two token lists."""
    if not answer_tokens or not reference_tokens:
        return float(answer_tokens == reference_tokens)
    remaining: dict[str, int] = {}
    for t in reference_tokens:
        remaining[t] = remaining.get(t, 0) + 1
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


def _contains_run(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    if n == 0 or n > len(haystack):
        return False
    first = needle[0]
    return any(haystack[i] == first and haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def numeric_reference(reference: str) -> float | None:
    """The value of a reference that is one number (with optional currency sign or unit); else None."""
    m = _NUMERIC_REF.match(reference)
    if m is None:
        return None
    return parse_number(m.group(1))


@lru_cache(maxsize=4096)
def _reference(reference: str) -> tuple[list[str], float | None]:
    """Tokens and numeric value of a reference answer (cached: many trials share one reference)."""
    return normalise_tokens(reference), numeric_reference(reference)


def grade_answer(answer: str | None, reference: str, numeric_tolerance: float = 1e-6) -> float:
    """Score an answer against a reference answer in [0, 1].

    1.0 for a normalised exact match; for a numeric reference, 1.0 if the answer states that number (relative
    tolerance `numeric_tolerance`) else 0.0; otherwise 1.0 if the reference's tokens appear as a contiguous run
    in the answer, else token F1.
    """
    if not answer or not answer.strip():
        return 0.0
    ref_tokens, target = _reference(reference)
    ans_tokens = normalise_tokens(answer)
    if ans_tokens == ref_tokens:
        return 1.0
    if target is not None:
        tol = numeric_tolerance * max(1.0, abs(target))
        return float(any(abs(value - target) <= tol for value, _ in numbers_in(answer)))
    if _contains_run(ans_tokens, ref_tokens):
        return 1.0
    return token_f1(ans_tokens, ref_tokens)
