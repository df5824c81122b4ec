"""Open conversations per partition: de-duplication, completion (end flag, idle, age, caps, byte budget) and
offset bookkeeping.

Call order for at-least-once delivery: `add_message` (or `add` every span, then `message_done`); `poll` returns
finished conversations; score them and write (flush) the scores; only then ask `committable` and commit.
`committable` never passes an offset still held by an open conversation on that partition. `now` is a
monotonic clock (`time.monotonic()`) that never goes backwards; conversations are kept in order of last activity.

Memory is bounded in bytes, not only in counts: every span added is counted (`span_size.span_bytes`, from its
decoded content) and over `max_open_bytes` the least recently active conversations are finished early
(`budget`, incomplete) until the open ones fit. Time is bounded too: a conversation open for `max_open_age_s`
is finished (`age`, incomplete), so that no conversation holds its partition's offsets for longer (a restart
replays at most that much).
"""

from __future__ import annotations

import heapq
import logging
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import groupby
from operator import attrgetter

from agentwatch.collector.conventions import END_KEYS
from agentwatch.collector.decode import SpanRecord
from agentwatch.collector.id_memory import ENTRY_ROOM, IdMemory
from agentwatch.collector.span_size import span_bytes
from agentwatch.config import CollectorConfig

log = logging.getLogger(__name__)

ADDED, DUPLICATE, LATE, DROPPED = "added", "duplicate", "late", "dropped"
_RECENT_PER_PARTITION = 10_000
_CONVERSATION_ID = attrgetter("conversation_id")


@dataclass(slots=True)
class FinishedConversation:
    """A conversation the assembler has finished, with its spans and why it finished."""

    conversation_id: str
    partition: int
    spans: list[SpanRecord]
    reason: str  # "end" | "idle" | "cap" | "budget" | "age" | "shutdown"
    incomplete: bool
    min_offset: int = -1  # lowest offset of its partition holding one of its spans (-1: unknown)
    nbytes: int = 0  # estimated bytes of its spans (`span_size.span_bytes`)


@dataclass(slots=True)
class AssemblerStats:
    """Counters of the assembler (cumulative except `open_conversations`)."""

    open_conversations: int = 0
    open_bytes: int = 0  # estimated bytes of the open conversations' spans (now)
    spans_added: int = 0
    duplicate_spans: int = 0
    late_spans: int = 0
    dropped_spans: int = 0
    capped_conversations: int = 0
    budget_conversations: int = 0  # finished early over max_open_bytes
    aged_conversations: int = 0  # finished early at max_open_age_s
    finished_by_reason: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Open:
    serial: int
    conversation_id: str
    partition: int
    spans: dict[str, SpanRecord]
    min_offset: int
    last_seen: float
    opened_at: float
    end_at: float | None = None
    incomplete: bool = False
    nbytes: int = 0


def _is_end(span: SpanRecord) -> bool:
    for key in END_KEYS:
        value = span.attrs.get(key)
        if value is True or (isinstance(value, str) and value.lower() == "true"):
            return True
    return False


class Assembler:
    """Open conversations of the partitions this consumer owns, plus the offset bookkeeping."""

    def __init__(self, config: CollectorConfig, *, recent_per_partition: int = _RECENT_PER_PARTITION) -> None:
        self.config = config
        self.stats = AssemblerStats()
        self._recent_cap = max(1, recent_per_partition)
        self._open: OrderedDict[tuple[int, str], _Open] = OrderedDict()  # least recently active first
        self._ends: deque[tuple[float, tuple[int, str], int]] = deque()  # (end seen at, key, serial)
        self._held: dict[int, list[tuple[int, int, str]]] = {}  # partition -> heap of (offset, serial, id)
        self._pending: list[tuple[FinishedConversation, int]] = []  # finished early, not yet polled
        self._opened: deque[tuple[float, tuple[int, str], int]] = (
            deque()
        )  # (opened at, key, serial), in order
        self._done: dict[int, int] = {}  # partition -> highest offset whose message is done
        self._returned: dict[int, int] = {}  # partition -> last offset handed out by committable
        # partition -> recently finished ids (LRU, value: a late span was logged), bounded in bytes too: a
        # conversation id may be 64 K characters, 10,000 of them 650 MB a partition; at most 5 MB this way
        self._recent: dict[int, IdMemory[bool]] = {}
        self._serial = 0

    # ----------------------------------------------------------------------- spans in

    def add(self, span: SpanRecord, partition: int, offset: int, now: float) -> str:
        """Add one span read at (partition, offset); return "added", "duplicate", "late" or "dropped"."""
        conv, new = self._open_for(span.conversation_id, partition, offset, now, 1)
        if conv is None:
            return LATE
        added, duplicates, _ = self._put([span], conv, now)
        status = ADDED if added else DUPLICATE if duplicates else DROPPED
        if added and not new:
            self._touch(conv, offset)
        if self._bytes_over():
            self._finish_for_budget()
        return status

    def is_open(self, partition: int, conversation_id: str) -> bool:
        """Whether the conversation is being assembled on `partition`."""
        return (partition, conversation_id) in self._open

    def add_message(self, spans: list[SpanRecord], partition: int, offset: int, now: float) -> None:
        """Add every span of the message at (partition, offset), then mark it done (`add` each, `message_done`).

        Spans of one conversation usually come together: the conversation is looked up once per run of them.
        """
        for cid, group in groupby(spans, _CONVERSATION_ID):
            run = list(group)
            conv, new = self._open_for(cid, partition, offset, now, len(run))
            if conv is not None and self._put(run, conv, now)[0] and not new:
                self._touch(conv, offset)
        if self._bytes_over():
            self._finish_for_budget()
        self.message_done(partition, offset)

    def _open_for(
        self, cid: str, partition: int, offset: int, now: float, spans: int
    ) -> tuple[_Open | None, bool]:
        """The open conversation `cid` about to receive `spans` spans read at `offset`, and whether it is new;
        (None, False) if it was finished recently (its spans are counted late)."""
        key = (partition, cid)
        conv = self._open.get(key)
        if conv is not None:
            return conv, False
        recent = self._recent.get(partition)
        if recent is not None and (logged := recent.get(cid)) is not None:
            self.stats.late_spans += spans
            if not logged:
                recent.remember(cid, True, touch=False)
                log.info("late span(s) for finished conversation %s on partition %d", cid, partition)
            return None, False
        if len(self._open) >= self.config.max_open_conversations:
            self._finish_oldest_for_cap()
        self._serial += 1
        conv = _Open(self._serial, cid, partition, {}, offset, now, now)
        self._open[key] = conv
        self._opened.append((now, key, conv.serial))
        if len(self._opened) > 2 * len(self._open) + 1024:  # entries of finished conversations: drop them
            self._opened = deque(e for e in self._opened if self._is_current(e[1], e[2]))
        self._hold(partition, offset, conv.serial, cid)
        self.stats.open_conversations = len(self._open)
        return conv, True

    def _touch(self, conv: _Open, offset: int) -> None:
        """An open conversation got spans at `offset`: most recently active, and held from `offset` if lower."""
        self._open.move_to_end((conv.partition, conv.conversation_id))
        if offset < conv.min_offset:
            conv.min_offset = offset
            self._hold(conv.partition, offset, conv.serial, conv.conversation_id)

    def _put(self, run: list[SpanRecord], conv: _Open, now: float) -> tuple[int, int, int]:
        """Store spans of one open conversation (de-duplicated, capped) and note an end flag; (added,
        duplicate, dropped) counts. The counters of the run are summed once (a message's spans come in runs)."""
        stored = conv.spans
        cap = self.config.max_spans_per_conversation
        added = size = duplicates = dropped = 0
        for span in run:
            if span.span_id in stored:
                duplicates += 1
            elif len(stored) >= cap:
                if not conv.incomplete:
                    log.warning(
                        "conversation %s exceeds %d spans; extra spans dropped",
                        conv.conversation_id,
                        len(stored),
                    )
                conv.incomplete = True
                dropped += 1
            else:
                stored[span.span_id] = span
                size += span_bytes(span)
                added += 1
                if conv.end_at is None and _is_end(span):
                    conv.end_at = now
                    self._ends.append((now, (conv.partition, conv.conversation_id), conv.serial))
        stats = self.stats
        stats.duplicate_spans += duplicates
        stats.dropped_spans += dropped
        if added:
            conv.nbytes += size
            stats.open_bytes += size
            stats.spans_added += added
            conv.last_seen = now
        return added, duplicates, dropped

    def message_done(self, partition: int, offset: int) -> None:
        """Every span of the message at (partition, offset) was added, or the message was dead-lettered."""
        if offset > self._done.get(partition, -1):
            self._done[partition] = offset

    # ----------------------------------------------------------------------- conversations out

    def poll(self, now: float) -> list[FinishedConversation]:
        """Conversations complete by end flag + grace, idle timeout, maximum age, or caps and budget."""
        out = [fin for fin, _ in self._pending]
        self._pending = []
        max_age = self.config.max_open_age_s
        for key, _conv in self._due(self._opened, max_age, now):
            self.stats.aged_conversations += 1
            log.warning(
                "conversation %s open for more than %gs; finished early (incomplete)", key[1], max_age
            )
            out.append(self._finish(key, "age", True))
        for key, conv in self._due(self._ends, self.config.end_grace_s, now):
            out.append(self._finish(key, "end", conv.incomplete))
        idle = self.config.idle_timeout_s
        while self._open:
            key, conv = next(iter(self._open.items()))
            if conv.last_seen + idle > now:
                break
            out.append(self._finish(key, "idle", conv.incomplete))
        return out

    def _due(
        self, queue: deque[tuple[float, tuple[int, str], int]], delay: float, now: float
    ) -> list[tuple[tuple[int, str], _Open]]:
        """The conversations still open whose entry in `queue` (time, key, serial) is `delay` old at `now`,
        taken off it; an entry of a conversation finished since (or reopened: another serial) is dropped."""
        due = []
        while queue and queue[0][0] + delay <= now:
            _, key, serial = queue.popleft()
            if self._is_current(key, serial):
                due.append((key, self._open[key]))
        return due

    def drain(self, partitions: Iterable[int] | None = None) -> list[FinishedConversation]:
        """Finish everything open (of `partitions`, default all), e.g. at shutdown."""
        wanted = None if partitions is None else set(partitions)
        out = [fin for fin, _ in self._pending if wanted is None or fin.partition in wanted]
        self._pending = [
            (fin, off) for fin, off in self._pending if wanted is not None and fin.partition not in wanted
        ]
        for key in [k for k in self._open if wanted is None or k[0] in wanted]:
            conv = self._open[key]
            if conv.end_at is not None:
                out.append(self._finish(key, "end", conv.incomplete))
            else:
                out.append(self._finish(key, "shutdown", True))
        return out

    def revoke(self, partitions: Iterable[int]) -> None:
        """Forget open conversations and offsets of revoked partitions (they will be replayed)."""
        gone = set(partitions)
        for key in [k for k in self._open if k[0] in gone]:
            self.stats.open_bytes -= self._open.pop(key).nbytes
        self._pending = [(fin, off) for fin, off in self._pending if fin.partition not in gone]
        for p in gone:
            self._held.pop(p, None)
            self._done.pop(p, None)
            self._returned.pop(p, None)
            self._recent.pop(p, None)
        self.stats.open_conversations = len(self._open)

    def committable(self, partition: int, below: int | None = None) -> int | None:
        """Offset to commit on `partition` (lowest offset still held, else last done + 1, and at most `below`,
        the lowest offset the caller still holds); None if nothing new."""
        done = self._done.get(partition)
        if done is None:
            return None
        candidate = done + 1 if below is None else min(done + 1, below)
        heap = self._held.get(partition)
        while heap:
            if not self._holds(partition, heap[0]):
                heapq.heappop(heap)
                continue
            candidate = min(candidate, heap[0][0])
            break
        for fin, offset in self._pending:
            if fin.partition == partition:
                candidate = min(candidate, offset)
        if candidate <= self._returned.get(partition, 0):
            return None
        self._returned[partition] = candidate
        return candidate

    def open_bytes_estimate(self) -> int:
        """Estimated bytes of the open conversations' spans (what `max_open_bytes` bounds)."""
        return self.stats.open_bytes

    def oldest_open_age(self, now: float) -> float:
        """Seconds the oldest open conversation has been open (0 when none is)."""
        opened = self._opened
        while opened:  # entries of conversations finished otherwise are dropped on the way (once each)
            opened_at, key, serial = opened[0]
            if self._is_current(key, serial):
                return max(0.0, now - opened_at)
            opened.popleft()
        return 0.0

    # ----------------------------------------------------------------------- internals

    def _hold(self, partition: int, offset: int, serial: int, cid: str) -> None:
        """Note that conversation `cid` (`serial`) holds `partition` from `offset` on.

        Entries of finished conversations leave the heap only once they reach its top: behind one conversation
        open for `max_open_age_s` at a low offset, every later conversation's entry (and its id) stayed, an hour
        of traffic. Past twice the open conversations (plus some slack, so that this is rare), the heap is
        rebuilt of its current entries, which are at most one an open conversation."""
        heap = self._held.setdefault(partition, [])
        heapq.heappush(heap, (offset, serial, cid))
        if len(heap) > 2 * len(self._open) + 1024:
            heap[:] = [e for e in heap if self._holds(partition, e)]
            heapq.heapify(heap)

    def _holds(self, partition: int, entry: tuple[int, int, str]) -> bool:
        """Whether a heap entry (offset, serial, id) of `partition` is an open conversation's lowest offset."""
        offset, serial, cid = entry
        conv = self._open.get((partition, cid))
        return conv is not None and conv.serial == serial and conv.min_offset == offset

    def _is_current(self, key: tuple[int, str], serial: int) -> bool:
        conv = self._open.get(key)
        return conv is not None and conv.serial == serial

    def _bytes_over(self) -> bool:
        return self.stats.open_bytes > self.config.max_open_bytes

    def _finish_for_budget(self) -> None:
        """Over `max_open_bytes`: finish the least recently active conversations early until the rest fit."""
        budget = self.config.max_open_bytes
        first = True
        while self._open and self.stats.open_bytes > budget:
            key, conv = next(iter(self._open.items()))
            self.stats.budget_conversations += 1
            if first:
                log.warning(
                    "open conversations hold %d bytes, over collector.max_open_bytes %d; finishing %s "
                    "(%d bytes) and others early (incomplete)",
                    self.stats.open_bytes,
                    budget,
                    key[1],
                    conv.nbytes,
                )
                first = False
            offset = conv.min_offset
            self._pending.append((self._finish(key, "budget", True), offset))

    def _finish_oldest_for_cap(self) -> None:
        key, conv = next(iter(self._open.items()))
        self.stats.capped_conversations += 1
        log.warning(
            "open-conversation cap %d reached; finishing %s early", self.config.max_open_conversations, key[1]
        )
        offset = conv.min_offset
        self._pending.append((self._finish(key, "cap", True), offset))

    def _finish(self, key: tuple[int, str], reason: str, incomplete: bool) -> FinishedConversation:
        conv = self._open.pop(key)
        self.stats.open_bytes -= conv.nbytes
        partition, cid = key
        recent = self._recent.get(partition)
        if recent is None:
            recent = self._recent[partition] = IdMemory(self._recent_cap, self._recent_cap * ENTRY_ROOM)
        recent.remember(cid, False)
        by_reason = self.stats.finished_by_reason
        by_reason[reason] = by_reason.get(reason, 0) + 1
        self.stats.open_conversations = len(self._open)
        return FinishedConversation(
            cid, partition, list(conv.spans.values()), reason, incomplete, conv.min_offset, conv.nbytes
        )
