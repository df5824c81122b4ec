"""Late labels: a label that arrives after its conversation was scored publishes a revised score.

The collector remembers the scores it published (the JSON it wrote, bounded by count, oldest out first). A label
span (`agentwatch.outcome`) for a conversation that is not open and is remembered yields a revision of that score
(`scorers.relabel`). A label for a conversation nobody remembers (scored before this process started, on a
partition this process did not own, or evicted) goes to the dead-letter topic with reason
`label_unknown_conversation`: counted, kept, and replayable once the score is known.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from dataclasses import dataclass

from agentwatch import wire
from agentwatch.collector.conventions import (
    AGENT_KEYS,
    OPENINFERENCE_KIND_KEY,
    OPERATION_KEY,
    OUTCOME_KEYS,
    RESOURCE_AGENT_KEYS,
    first,
)
from agentwatch.collector.decode import SpanRecord
from agentwatch.wire.schema import ConversationScore, normalize_outcome

FOUND, UNKNOWN, AMBIGUOUS = "found", "unknown", "ambiguous"
_OUTCOMES = wire.SCORE_OUTCOMES


@dataclass(slots=True, frozen=True)
class LateLabel:
    """A label read from a span: which conversation, which agent (if the span says), which outcome."""

    conversation_id: str
    agent: str | None
    outcome: str


def label_of(span: SpanRecord) -> LateLabel | None:
    """The label a span carries, if it is a label and not part of a turn (no operation or span kind)."""
    attrs = span.attrs
    if not attrs or OPERATION_KEY in attrs or OPENINFERENCE_KIND_KEY in attrs:
        return None
    raw = first(span.attrs, OUTCOME_KEYS)
    if not isinstance(raw, str) or normalize_outcome(raw) not in _OUTCOMES:
        return None
    agent = first(span.attrs, AGENT_KEYS) or first(span.resource, RESOURCE_AGENT_KEYS)
    return LateLabel(span.conversation_id, str(agent) if agent else None, normalize_outcome(raw))


# What an entry costs beyond its payload and ids, measured with tracemalloc (2026-11-30, CPython 3.11): the key
# tuple, the ordered dict's slot and link, and the set of agents under the id with its slot.
_ENTRY_BYTES = 360


def _size(key: tuple[str, str], payload: bytes) -> int:
    """Bytes an entry holds as stored: an id of 4-byte characters takes four times its length."""
    return sys.getsizeof(payload) + sys.getsizeof(key[0]) + sys.getsizeof(key[1]) + _ENTRY_BYTES


class ScoreMemory:
    """The last `capacity` published scores, by (agent, conversation id), as the JSON that was written, in at
    most `max_bytes` as stored (JSON, ids and each entry's containers): a count alone let 1,000 scores of 900 KB
    of tags hold 1 GB."""

    def __init__(self, capacity: int, max_bytes: int = 1 << 62) -> None:
        self.capacity = capacity
        self.max_bytes = max_bytes
        self._held = 0  # bytes of the payloads and ids remembered
        self._scores: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._agents: dict[str, set[str]] = {}  # conversation id -> agents remembered under it

    def __len__(self) -> int:
        return len(self._scores)

    def remember(self, score: ConversationScore, payload: bytes) -> None:
        """Keep the JSON `payload` of `score` (replacing an earlier one of the same conversation)."""
        if self.capacity <= 0:
            return
        key = (score.agent, score.conversation_id)
        earlier = self._scores.get(key)
        if earlier is not None:
            self._held -= _size(key, earlier)
        self._scores[key] = payload
        self._held += _size(key, payload)
        self._scores.move_to_end(key)
        self._agents.setdefault(score.conversation_id, set()).add(score.agent)
        while len(self._scores) > self.capacity or (self._held > self.max_bytes and len(self._scores) > 1):
            (agent, cid), forgotten = self._scores.popitem(last=False)
            self._held -= _size((agent, cid), forgotten)
            agents = self._agents.get(cid)
            if agents is not None:
                agents.discard(agent)
                if not agents:
                    del self._agents[cid]

    def find(self, conversation_id: str, agent: str | None) -> tuple[str, bytes | None]:
        """(FOUND, payload), (UNKNOWN, None), or (AMBIGUOUS, None) when several agents used the id and the
        label does not say which."""
        agents = self._agents.get(conversation_id)
        if not agents:
            return UNKNOWN, None
        if agent is not None:
            payload = self._scores.get((agent, conversation_id))
            return (FOUND, payload) if payload is not None else (UNKNOWN, None)
        if len(agents) > 1:
            return AMBIGUOUS, None
        return FOUND, self._scores[(next(iter(agents)), conversation_id)]
