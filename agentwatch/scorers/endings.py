"""How a conversation ends: an answer, a handoff to a person, or a user's goodbye that needs no answer.

The "no answer" evidence is about the last turn that asked the agent something. A trailing turn whose input
is a closing ("Thanks, that's all!", "bye", a simulated user's `###STOP###`), with no tool call and no answer,
asked nothing; and a turn that handed the conversation to a person (a successful call of a `handoff_tools`
tool) ended it legitimately, answer or not.

A closing is a short message (at most 25 words) without a question mark that thanks or says goodbye and asks
for nothing ("please", "can you", "I'd like", "but" …), or any message holding the `###STOP###` token of
τ-bench's simulated users.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentwatch.scorers.effects import MadeCall
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.tool_kinds import HANDOFF, ToolKinds
from agentwatch.wire.schema import Turn

MAX_CLOSING_WORDS = 25
_STOP = re.compile(r"#{2,}\s*STOP\b", re.IGNORECASE)
_CLOSING = re.compile(
    r"\b(?:thanks?|thank\s+you|thx|ty|bye|goodbye|good\s+bye|cheers|take\s+care|all\s+set|you\s+too|will\s+do"
    r"|appreciate|that(?:'s|\s+is|\s+would\s+be|\s+will\s+be|\s+should\s+be)\s+(?:all|it)"
    r"|have\s+a\s+(?:good|great|nice|wonderful|lovely)|talk\s+(?:to\s+you\s+)?(?:soon|later))\b",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"\b(?:please|can\s+you|could\s+you|would\s+you|will\s+you|i\s+want|i'd\s+like|i\s+would\s+like"
    r"|i\s+need\s+to|help\s+me|but|however|still)\b",
    re.IGNORECASE,
)


def is_closing(text: str | None) -> bool:
    """Whether a user message only closes the conversation (see the module docstring)."""
    if not text:
        return False
    if _STOP.search(text):
        return True
    if "?" in text or len(text.split()) > MAX_CLOSING_WORDS:
        return False
    return _CLOSING.search(text) is not None and _REQUEST.search(text) is None


def handed_off(turn: Turn, names: NameNormalizer, kinds: ToolKinds) -> bool:
    """Whether the turn handed the conversation to a person (a successful handoff call)."""
    return any(c.error is None and kinds.of(c, names(c.name)) == HANDOFF for c in turn.tool_calls)


def unanswered_turn(turns: Sequence[Turn], names: NameNormalizer, kinds: ToolKinds) -> int | None:
    """Index of the last turn that asked something and got neither an answer nor a handoff, else None.
    Trailing closings with no call and no answer are skipped."""
    for i in range(len(turns) - 1, -1, -1):
        turn = turns[i]
        answered = bool(turn.answer and turn.answer.strip())
        if not answered and not turn.tool_calls and is_closing(turn.input):
            continue
        if answered or handed_off(turn, names, kinds):
            return None
        return i
    return None


def wrong_ending(end: str, made: Sequence[MadeCall]) -> str | None:
    """Why the conversation's ending is not `end` (handoff: a successful handoff call; answer: none)."""
    handoffs = [m for m in made if m.kind == HANDOFF and m.ok]
    if end == "handoff" and not handoffs:
        return "expected a handoff to a person, none was made"
    if end == "answer" and handoffs:
        return f"expected the agent to resolve it, it handed off ({handoffs[0].call.name})"
    return None


def ending_reasons(prefix: str, end: str | None, made: Sequence[MadeCall]) -> list[str]:
    """A `<prefix>_end` reason when the conversation does not end as `end` says; empty otherwise."""
    wrong = wrong_ending(end, made) if end is not None else None
    return [f"{prefix}_end: {wrong}"] if wrong else []
