"""Actions an answer claims were taken: "I have cancelled…", "your order has been refunded".

A past-tense action verb after "I have", "we've", "has been" or "was successfully", in a clause that neither
negates it nor makes it a condition or a possibility ("none of them has been cancelled", "if it was booked", "it
must have been booked"), and not a state found ("has already been cancelled"). Whether a claim is grounded is
the hallucination grader's business (`scorers.hallucination.unsupported_claims`): any successful call with effects
grounds one, and a verb a tool result states is a status read back.
"""

from __future__ import annotations

import re

__all__ = ["CLAIM_VERBS", "claimed_actions", "verb_forms", "word_in"]

# Past-tense verbs of an action claim ("I have cancelled", "has been refunded"): what the claim detector looks
# for. Grounding does not use them: any successful call with effects grounds a claim.
CLAIM_VERBS: tuple[str, ...] = (
    "cancelled",
    "canceled",
    "refunded",
    "booked",
    "reserved",
    "scheduled",
    "sent",
    "emailed",
    "updated",
    "changed",
    "modified",
    "created",
    "deleted",
    "removed",
    "transferred",
    "submitted",
    "issued",
    "reset",
    "processed",
    "exchanged",
    "returned",
)
_VERBS = "|".join(sorted(CLAIM_VERBS, key=len, reverse=True))
_ADVERBS = r"(?:(?:just|now|already|successfully|also|gone\s+ahead\s+and)\s+)*"
_CLAIM = re.compile(
    rf"\b(?:I|we)(?:'ve|\s+have)?\s+{_ADVERBS}({_VERBS})\b"
    rf"|\b(?:has|have)\s+{_ADVERBS}been\s+{_ADVERBS}({_VERBS})\b"
    rf"|\b(?:was|were)\s+successfully\s+({_VERBS})\b",
    re.IGNORECASE,
)


# Words before a claim verb in its clause that make it no claim: negations, conditions, modals of what may be.
_NOT_ASSERTED = re.compile(
    r"\b(?:not|no|none|never|nothing|neither|nor|cannot|if|whether|unless|until|once|might|may|could|would"
    r"|should|must)\b|n't|n’t"
)
_CLAUSE_MARKS = (".", "!", "?", ";", ",", "\n")


def claimed_actions(answer: str, folded: str | None = None) -> list[str]:
    """Past-tense action verbs the answer claims were performed, lower-case, unique (`folded`: the answer
    case-folded, if already known)."""
    if folded is None:
        folded = answer.casefold()
    if not _mentions_action(folded):
        return []
    out: list[str] = []
    for m in _CLAIM.finditer(answer):
        if m.group(2) and "already" in m.group(0).casefold():
            continue  # "has already been cancelled": a state found, not an action taken
        clause = answer[_clause_start(answer, m.start()) : m.start()].casefold()
        if _NOT_ASSERTED.search(clause):
            continue  # "none of them has been cancelled", "if it was booked", "it must have been booked"
        verb = (m.group(1) or m.group(2) or m.group(3)).lower()
        if verb not in out:
            out.append(verb)
    return out


def _clause_start(text: str, end: int) -> int:
    """Where the clause holding position `end` starts (after the last ".", "!", "?", ";", "," or line break)."""
    return max(text.rfind(mark, 0, end) for mark in _CLAUSE_MARKS) + 1


def verb_forms(verb: str) -> tuple[str, ...]:
    """The verb and the words a result states it with: "refunded" → "refund" (a refund in the payment history),
    "exchanged" → "exchange", "cancelled" → "cancel"."""
    if not verb.endswith("ed"):
        return (verb,)
    base = verb[:-2]
    return (verb, verb[:-1], base[:-1] if base.endswith("ll") else base)


def _mentions_action(folded: str) -> bool:
    """Whether the case-folded answer contains one of the action verbs (most answers claim nothing)."""
    return any(verb in folded for verb in CLAIM_VERBS)


def word_in(text: str, word: str) -> bool:
    """Whether `word` occurs in `text` with no letter glued to either side."""
    start = text.find(word)
    while start >= 0:
        end = start + len(word)
        if (not start or not text[start - 1].isalpha()) and (end >= len(text) or not text[end].isalpha()):
            return True
        start = text.find(word, start + 1)
    return False
