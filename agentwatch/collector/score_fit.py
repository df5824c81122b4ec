"""A score record that fits the broker: details left out, in steps, until it is under `collector.max_score_bytes`.

A score carries a grade and reasons per turn, and the values of the arguments that differed from what was
expected: 5,000 turns, each failing with a one-line error, scored 1.65 MB (3,200 turns, 1 MB), past what a
Kafka broker takes by default (`message.max.bytes`, 1,048,588 bytes a record). The broker refused it, the
collector's flush failed, and at every restart the collector read the same conversation again and stopped again.
`fit` keeps what the exporter counts — outcome, verdict, evidence, costs, the set of failure modes, each turn's
tool scores — and leaves details out in this order, stopping at the first step that fits, with a `note:` reason
saying what was left out:

1. long texts cut: each reason and turn error to 300 characters, each differing value to 200;
2. one reason per failure mode (the first of each code as written: finer than the exporter's normalised modes,
   so each of those keeps one), no turn reasons, the first 10 differences;
3. only the turns with tool scores, without their reasons, errors and forbidden tools;
4. no turn scores (the exporter's tool dimensions then miss this conversation);
5. no tags (an agent may send any number of `agentwatch.tag.*` attributes: 1,500 of 1 KB made a 1.5 MB score,
   17,000 one the producer refused, stopping the collector at every restart).

A score that does not fit even then (ids of a size no agent sends) is published unscored, without tags.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from agentwatch.scorers import unscored
from agentwatch.wire.schema import ArgumentDifference, Conversation, ConversationScore, TurnScore

log = logging.getLogger(__name__)

# Bytes a score record leaves free under collector.max_score_bytes: a label's revision, which the review service
# publishes from the stored score, adds a reason and the label (at most 81 bytes, tests/unit/test_score_fit.py).
REVISION_ROOM = 1024

_REASON_CHARS = 300
_VALUE_CHARS = 200
_MAX_DIFFERENCES = 10


def score_payload(
    score: ConversationScore, conv: Conversation | None, room: int
) -> tuple[ConversationScore, bytes]:
    """The score to publish for `conv` (None for a revision) and its JSON, at most `room` bytes: slimmed by
    `fit` when over, unscored when no JSON writer takes a value of it."""
    try:
        payload = score.model_dump_json().encode()
    except ValueError as exc:  # a value no JSON writer takes: raised here, it would stop the collector
        if conv is None:
            raise
        log.exception("score of %s could not be written: published unscored", conv.conversation_id)
        score = unscored(conv, f"writer_error: {type(exc).__name__}: {str(exc)[:200]}")
        payload = score.model_dump_json().encode()
    if len(payload) <= room:
        return score, payload
    # a record the broker refuses would stop the collector at every restart
    log.warning(
        "score of %s is %d bytes, over the %d its record has room for: details left out",
        score.conversation_id,
        len(payload),
        room,
    )
    return fit(score, payload, room, lambda why: stand_in(score, conv, why))


def stand_in(score: ConversationScore, conv: Conversation | None, why: str) -> ConversationScore:
    """The unscored stand-in of a score no slimming fits (a revision's keeps its verdict, without details)."""
    if conv is not None:
        return unscored(conv, why)
    return score.model_copy(update={"reasons": [why], "turn_scores": [], "differences": [], "tags": {}})


def fit(
    score: ConversationScore, payload: bytes, room: int, unscored: Callable[[str], ConversationScore]
) -> tuple[ConversationScore, bytes]:
    """`score` and its JSON `payload` when it is at most `room` bytes, else the first slimmer score that is
    (`unscored(reason)` when none is)."""
    if len(payload) <= room:
        return score, payload
    size = len(payload)
    for step, slim in enumerate(
        (_short_texts, _one_reason_per_mode, _tool_turns_only, _no_turns, _no_tags), 1
    ):
        score = slim(score)
        noted = score.model_copy(update={"reasons": [*score.reasons, _note(step, size, room)]})
        payload = noted.model_dump_json().encode()
        if len(payload) <= room:
            return noted, payload
    bare = unscored(
        f"record_too_large: the score is {size:,} bytes, over the {room:,} its record has room for"
    )
    bare = bare.model_copy(update={"tags": {}})  # the conversation's own, as many and as long as it sent
    return bare, bare.model_dump_json().encode()


def _note(step: int, size: int, room: int) -> str:
    left_out = (
        "long texts cut",
        "one reason per failure mode kept, turn reasons and differences past 10 left out",
        "only the turns with tool scores kept, without their reasons",
        "turn scores left out",
        "turn scores and tags left out",
    )[step - 1]
    return f"note: the score was {size:,} bytes, over the {room:,} its record has room for: {left_out}"


def _no_tags(score: ConversationScore) -> ConversationScore:
    return score.model_copy(update={"tags": {}})


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else f"{text[:chars]}… [{len(text) - chars:,} characters cut]"


def _short_value(value: Any) -> Any:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return value if len(text) <= _VALUE_CHARS else _cut(text, _VALUE_CHARS)


def _short_texts(score: ConversationScore) -> ConversationScore:
    turns = [
        t.model_copy(
            update={
                "reasons": [_cut(r, _REASON_CHARS) for r in t.reasons],
                "error": None if t.error is None else _cut(t.error, _REASON_CHARS),
            }
        )
        for t in score.turn_scores
    ]
    differences = [
        d.model_copy(update={"expected": _short_value(d.expected), "got": _short_value(d.got)})
        for d in score.differences
    ]
    return score.model_copy(
        update={
            "reasons": [_cut(r, _REASON_CHARS) for r in score.reasons],
            "turn_scores": turns,
            "differences": differences,
        }
    )


def _one_reason_per_mode(score: ConversationScore) -> ConversationScore:
    seen: set[str] = set()
    reasons = []
    for reason in score.reasons:
        code = reason.split(":", 1)[0].strip()
        if code not in seen:
            seen.add(code)
            reasons.append(reason)
    turns = [t.model_copy(update={"reasons": []}) for t in score.turn_scores]
    differences: list[ArgumentDifference] = score.differences[:_MAX_DIFFERENCES]
    return score.model_copy(update={"reasons": reasons, "turn_scores": turns, "differences": differences})


def _tool_turns_only(score: ConversationScore) -> ConversationScore:
    turns: list[TurnScore] = [
        t.model_copy(update={"reasons": [], "error": None, "forbidden_tools": []})
        for t in score.turn_scores
        if t.tool is not None
    ]
    return score.model_copy(update={"turn_scores": turns})


def _no_turns(score: ConversationScore) -> ConversationScore:
    return score.model_copy(update={"turn_scores": []})
