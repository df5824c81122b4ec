"""How a conversation ends: an answer, a handoff to a person, a user's goodbye, or an end marker of the user's.

The "no answer" evidence is about the last turn that asked the agent something. A trailing turn whose input
is a closing ("Thanks, that's all!", "bye") or holds an end marker (`scoring.end_markers`: by default the
simulated users' `###STOP###` of τ-bench and τ²-bench, τ²-bench's `###TRANSFER###` and `###OUT-OF-SCOPE###`),
with no tool call and no answer, asked nothing: the user ended the conversation. A turn that handed the
conversation to a person (a successful call of a `handoff_tools` tool) ended it legitimately, answer or not, and
so did one that called a tool the agent ends its run with (`answer_tools`: SWE-agent's `submit`, whose result is
the patch; smolagents' `final_answer`), successfully.

A closing is a short message (at most 25 words) without a question mark that thanks or says goodbye and asks
for nothing ("please", "can you", "I'd like", "but" …).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from agentwatch.scorers.made_calls import MadeCall
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.tool_kinds import HANDOFF, ToolKinds
from agentwatch.wire.schema import Turn

MAX_CLOSING_WORDS = 25
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
    if not text or "?" in text or len(text.split()) > MAX_CLOSING_WORDS:
        return False
    return _CLOSING.search(text) is not None and _REQUEST.search(text) is None


class EndMarkers:
    """The end markers a user's message may hold (matched case-insensitively anywhere in it)."""

    __slots__ = ("_folded",)

    def __init__(self, markers: dict[str, str]) -> None:
        self._folded = [(m.casefold(), m, kind) for m, kind in markers.items() if m]

    def find(self, text: str | None) -> tuple[str, str] | None:
        """(marker, kind) of the first end marker in `text`, or None."""
        if not text or not self._folded:
            return None
        folded = text.casefold()
        for key, marker, kind in self._folded:
            if key in folded:
                return marker, kind
        return None


@dataclass(frozen=True, slots=True)
class Ending:
    """How a conversation ended: the turn that asked and got no answer (None: none), and the user's end marker
    on a trailing turn when there was one (marker, kind, turn)."""

    unanswered: int | None
    marker: tuple[str, str, int] | None = None


def handed_off(turn: Turn, names: NameNormalizer, kinds: ToolKinds) -> bool:
    """Whether the turn handed the conversation to a person (a successful handoff call)."""
    return any(c.error is None and kinds.of(c, names(c.name)) == HANDOFF for c in turn.tool_calls)


class AnswerTools:
    """The tools an agent ends its run with (`scoring.answer_tools`), by normalised name or glob."""

    __slots__ = ("_names", "_patterns")

    def __init__(self, names: NameNormalizer, patterns: Sequence[str]) -> None:
        self._names = names
        self._patterns = [names(p) for p in patterns if p]

    def answered(self, turn: Turn) -> bool:
        """Whether the turn made a successful call of one of them."""
        return bool(self._patterns) and any(
            c.error is None and any(fnmatchcase(self._names(c.name), p) for p in self._patterns)
            for c in turn.tool_calls
        )


def ending(
    turns: Sequence[Turn],
    names: NameNormalizer,
    kinds: ToolKinds,
    markers: EndMarkers,
    answer_tools: AnswerTools | None = None,
) -> Ending:
    """How the conversation ended: the last turn that asked something and got neither an answer, a handoff nor
    a successful call of an `answer_tools` tool (trailing closings and end markers with no call and no answer
    are skipped; none when that turn's words were not captured at all), and the user's end marker, if one ended
    it."""
    marker: tuple[str, str, int] | None = None
    for i in range(len(turns) - 1, -1, -1):
        turn = turns[i]
        if turn.input is None and turn.answer is None:
            # neither the question nor an answer was captured (content capture off): a missing answer cannot
            # be told from one that was not recorded
            return Ending(None, marker)
        answered = bool(turn.answer and turn.answer.strip())
        if not answered and not turn.tool_calls:
            found = markers.find(turn.input)
            if found is not None:
                marker = marker or (*found, i)
                continue
            if is_closing(turn.input):
                continue
        if answered or handed_off(turn, names, kinds):
            return Ending(None, marker)
        if answer_tools is not None and answer_tools.answered(turn):
            return Ending(None, marker)
        return Ending(i, marker)
    return Ending(None, marker)


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
