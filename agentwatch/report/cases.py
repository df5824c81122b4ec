"""The transcripts the HTML report lists: for each failure mode, the first conversations that have it.

Reading a large input keeps every score but not every transcript: `CaseKeeper.offer` keeps a conversation's
transcript only while its agent version has fewer than `per_mode` kept conversations with one of its failure
modes — the same first-come rule as the report's lists (`FailureMode.conversations`), so what the page lists
it can open. A later record of the same conversation replaces the earlier one, as in the report.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from agentwatch.report.build import COVERAGE_CODES, INFORMATIONAL_CODES, failure_code
from agentwatch.wire.schema import Conversation, ConversationScore


@dataclass(frozen=True, slots=True)
class Case:
    """A conversation's transcript and its score."""

    conversation: Conversation
    score: ConversationScore


def _modes(score: ConversationScore) -> set[str]:
    return {failure_code(r) for r in score.reasons} - INFORMATIONAL_CODES - COVERAGE_CODES


@dataclass(slots=True)
class CaseKeeper:
    """Keeps the first `per_mode` conversations of each failure mode, per agent version."""

    per_mode: int
    kept: dict[tuple[str, str, str], Case] = field(default_factory=dict)
    counts: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    by_id: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def offer(self, conversation: Conversation, score: ConversationScore) -> None:
        """Keep this transcript when one of its failure modes still has room (or it replaces a kept one)."""
        key = (score.agent, score.version, score.conversation_id)
        modes = _modes(score)
        if key in self.kept:
            self.kept[key] = Case(conversation, score)
            return
        wanted = [m for m in modes if self.counts[(score.agent, score.version, m)] < self.per_mode]
        if not wanted:
            return
        self.kept[key] = Case(conversation, score)
        self.by_id.setdefault(score.conversation_id, []).append((score.agent, score.version))
        for m in modes:
            self.counts[(score.agent, score.version, m)] += 1

    def find(self, conversation_id: str, agent_version: str | None = None) -> list[Case]:
        """The kept conversations with this id (of one `agent version` when given)."""
        return [
            self.kept[(agent, version, conversation_id)]
            for agent, version in self.by_id.get(conversation_id, [])
            if agent_version is None or f"{agent} {version}" == agent_version
        ]
