"""Required outputs: values some answer of the agent must state (the total it computed, a confirmation code).

An output that is a number is found when an answer of any turn writes a number of the same value, however
formatted ("23553" in "You saved $23,553.", "327" in "$327.00", but not "132" in "1327"); any other output
when an answer contains it, case-insensitively, thousands separators ignored on both sides.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentwatch.scorers.text import numbers_in, parse_number
from agentwatch.wire.schema import Conversation

_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")


def _plain(text: str) -> str:
    return _THOUSANDS.sub("", text).casefold()


def missing_outputs(outputs: Sequence[str], answers: Sequence[str]) -> list[str]:
    """The outputs none of `answers` states, in the order given."""
    if not outputs:
        return []
    texts = [_plain(a) for a in answers]
    values: list[float] | None = None
    missing = []
    for output in outputs:
        wanted = _plain(str(output)).strip()
        if not wanted:
            continue
        number = parse_number(wanted)
        if number is None:
            if any(wanted in text for text in texts):
                continue
        else:
            if values is None:
                values = [v for a in answers for v, _ in numbers_in(a)]
            if any(abs(v - number) <= 1e-9 * max(1.0, abs(number)) for v in values):
                continue
        missing.append(str(output))
    return missing


def answers_of(conv: Conversation) -> list[str]:
    """The non-blank answers of every turn, in order."""
    return [t.answer for t in conv.turns if t.answer and t.answer.strip()]


def outputs_reasons(prefix: str, outputs: Sequence[str], conv: Conversation) -> list[str]:
    """A `<prefix>_outputs` reason naming the outputs no answer of `conv` states; empty when all are."""
    absent = missing_outputs(outputs, answers_of(conv)) if outputs else []
    return [f"{prefix}_outputs: no answer states {', '.join(repr(o) for o in absent)}"] if absent else []
