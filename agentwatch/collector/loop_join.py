"""A loop the caller runs, each model call a trace of its own: the earlier calls' traces are parts of the last one.

A model client instrumented with no agent span around it and no conversation id makes every call of a tool loop
a trace, and so a conversation, of its own. The rebuild reads a later call's input for the calls made before it
(`messages.calls_before`, noted as `turns.EARLIER_CALLS`), so the last call's conversation is the whole turn;
the earlier ones end asking for a tool whose result they do not hold (`steps` not captured) and carry no
verdict. Counted as conversations they would multiply the traffic every failure-evidence rate is divided by.

A *fragment* is such a conversation: its last turn unanswered, `steps` not captured, and tool calls waiting for
their results. A later conversation *continues* it when its first model call's input gave a result (or an
error) to one of the calls the fragment waits on: same agent and version, same tool, same call id and the same
arguments (a synthetic id such as `get_weather_0` is not unique across conversations; the arguments make a
false match unlikely, and a false match only leaves out a conversation that had no verdict). A continued
fragment is left out; one that nothing continues is scored as it is.

`drop_continued` does it for conversations rebuilt from files. `LoopJoin` does it live, in either order: a
fragment waits, its offsets held, until a later conversation continues it or `loop_join_timeout_s` passes (then
it is scored alone); a continuation's calls are remembered for as long, for a fragment that finishes after it
(both may finish in one poll). The fragments waiting are bounded in bytes, over which the oldest is scored
alone; the calls remembered, in number. Conversations of one loop
reach one collector because the re-key path sends a trace that names no conversation, once the trace join
releases it, to the partition of `loop_route` (its loop's first tool call) rather than of its trace id
(`rekey.Rekeyer.republish`); a trace that arrives keyed by its producer (our SDK's) goes where its key says, and a
fragment that meets no continuation is scored alone after the timeout, as it was before this join.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from agentwatch.collector.turns import EARLIER_CALLS
from agentwatch.wire.schema import Conversation, ToolCall

log = logging.getLogger(__name__)

CallKey = bytes  # digest of agent, version, tool, call id and arguments as canonical JSON
_STEPS = "steps"
_MAX_CLAIMS = (
    100_000  # calls of recent continuations remembered (~100 B each): a fragment may come after them
)
T = TypeVar("T")


def _key(conv: Conversation, call: ToolCall) -> CallKey:
    text = json.dumps(
        [conv.agent, conv.version, call.name, call.call_id or "", call.arguments],
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def waits_on(conv: Conversation) -> frozenset[CallKey]:
    """The calls a loop fragment waits on (empty when `conv` is no fragment)."""
    if _STEPS not in conv.not_captured or not conv.turns or conv.turns[-1].answer is not None:
        return frozenset()
    return frozenset(_key(conv, c) for c in conv.turns[-1].tool_calls if c.result is None and c.error is None)


def continues(conv: Conversation) -> frozenset[CallKey]:
    """The calls of earlier traces whose results `conv`'s first model call was given (empty when none were)."""
    if not any(note.startswith(EARLIER_CALLS) for note in conv.notes):
        return frozenset()
    return frozenset(
        _key(conv, c)
        for turn in conv.turns
        for c in turn.tool_calls
        if c.result is not None or c.error is not None
    )


def loop_route(conv: Conversation) -> bytes | None:
    """A Kafka key that sends every trace of one loop to one partition: the digest of its last turn's first tool
    call (a fragment's first call asked, a continuation's first call continued: the loop's first call), for a
    fragment or a continuation; None for any other conversation. Unique call ids spread loops evenly."""
    if not (waits_on(conv) or continues(conv)):
        return None
    return _key(conv, conv.turns[-1].tool_calls[0]).hex().encode("ascii")


def drop_continued(convs: Iterable[Conversation]) -> tuple[list[Conversation], int]:
    """The conversations without the loop fragments another of them continues, and how many were left out."""
    convs = list(convs)
    claimed: set[CallKey] = set()
    for conv in convs:
        claimed |= continues(conv)
    kept = [conv for conv in convs if not (waits_on(conv) & claimed)]
    return kept, len(convs) - len(kept)


@dataclass(slots=True)
class _Parked(Generic[T]):
    keys: frozenset[CallKey]
    partition: int
    min_offset: int
    nbytes: int
    since: float
    item: T


@dataclass(slots=True)
class LoopJoinStats:
    """Counters of the loop join (cumulative except `parked` and `parked_bytes`)."""

    parked: int = 0  # fragments waiting now
    parked_bytes: int = 0  # their estimated bytes
    continued: int = 0  # fragments a later conversation continued: left out
    alone: int = 0  # fragments nothing continued within the timeout: scored as they are
    evicted: int = 0  # of those, released early because of the byte bound


class LoopJoin(Generic[T]):
    """Loop fragments waiting for the conversation that continues them, with what scoring them needs (`T`); the
    calls recent conversations continued, for a fragment that finishes after its continuation."""

    def __init__(self, timeout_s: float, max_bytes: int) -> None:
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.stats = LoopJoinStats()
        self._parked: OrderedDict[int, _Parked[T]] = OrderedDict()  # by serial, oldest first
        self._by_key: dict[CallKey, list[int]] = {}
        self._claims: OrderedDict[CallKey, float] = OrderedDict()  # continued calls, oldest first
        self._serial = 0

    def __len__(self) -> int:
        return len(self._parked)

    def claim(self, conv: Conversation, now: float) -> int:
        """Leave out the fragments `conv` continues, and remember its calls for a fragment still to come; how
        many were left out."""
        keys = continues(conv) if self.timeout_s > 0 else frozenset()
        serials = {s for key in keys for s in self._by_key.get(key, ())}
        for serial in serials:
            self._take(serial)
        for key in keys:
            self._claims[key] = now
            self._claims.move_to_end(key)
        self._forget_claims(now)
        self.stats.continued += len(serials)
        return len(serials)

    def take(
        self, conv: Conversation, item: T, partition: int, min_offset: int, nbytes: int, now: float
    ) -> bool:
        """Whether `conv` is taken: left out (a conversation already seen continues it) or held, with `item`
        (what scoring it needs), until one does; False: it is no fragment (or the join is off), score it now."""
        keys = waits_on(conv) if self.timeout_s > 0 else frozenset()
        if not keys:
            return False
        self._forget_claims(now)
        if any(key in self._claims for key in keys):
            self.stats.continued += 1
            return True
        self._serial += 1
        self._parked[self._serial] = _Parked(keys, partition, min_offset, nbytes, now, item)
        for key in keys:
            self._by_key.setdefault(key, []).append(self._serial)
        self.stats.parked += 1
        self.stats.parked_bytes += nbytes
        return True

    def due(self, now: float) -> list[T]:
        """The fragments nothing continued within the timeout, and the oldest over the byte bound: to score."""
        out = []
        while self._parked:
            serial, oldest = next(iter(self._parked.items()))
            over = self.stats.parked_bytes > self.max_bytes
            if not over and oldest.since + self.timeout_s > now:
                break
            self.stats.evicted += over
            out.append(self._take(serial).item)
        self.stats.alone += len(out)
        return out

    def drain(self) -> list[T]:
        """Every fragment still waiting (at shutdown), to score alone."""
        out = [self._take(serial).item for serial in list(self._parked)]
        self.stats.alone += len(out)
        return out

    def low_offset(self, partition: int) -> int | None:
        """The lowest offset a waiting fragment holds on `partition`, if any."""
        held = [p.min_offset for p in self._parked.values() if p.partition == partition and p.min_offset >= 0]
        return min(held) if held else None

    def forget(self, partitions: Iterable[int]) -> int:
        """Drop the fragments of revoked partitions (their new owner replays them); how many."""
        gone = set(partitions)
        serials = [s for s, p in self._parked.items() if p.partition in gone]
        for serial in serials:
            self._take(serial)
        return len(serials)

    def _forget_claims(self, now: float) -> None:
        """Drop the claims older than the timeout, and the oldest over `_MAX_CLAIMS`."""
        while self._claims:
            key, since = next(iter(self._claims.items()))
            if since + self.timeout_s > now and len(self._claims) <= _MAX_CLAIMS:
                break
            del self._claims[key]

    def _take(self, serial: int) -> _Parked[T]:
        parked = self._parked.pop(serial)
        for key in parked.keys:
            waiting = self._by_key.get(key)
            if waiting is not None:
                waiting.remove(serial)
                if not waiting:
                    del self._by_key[key]
        self.stats.parked -= 1
        self.stats.parked_bytes -= parked.nbytes
        return parked
