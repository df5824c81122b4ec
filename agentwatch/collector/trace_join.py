"""Trace-level join: spans without a conversation key wait, by trace id, until their trace names its conversation.

Official GenAI instrumentations put `gen_ai.conversation.id` on agent and chat spans but not on tool spans of
other libraries, and the OpenTelemetry Collector may send a trace's spans in several messages. On the re-key
path (see `rekey.py` and docs/collector_service.md, Keying) every span of such a trace reaches one collector
process through the rekey topic keyed by trace id:

* spans whose conversation is unknown travel as OTLP records keyed by trace id (`agentwatch-key: trace`);
* for every trace whose conversation a message reveals, a small announcement record keyed by trace id
  (`agentwatch-key: trace-conversation`, the conversation id as its value) travels the same way.

`TraceJoin` is what the owner of those records keeps. Spans of a trace whose conversation is known are released
at once with that conversation id; the others are held until an announcement arrives (in either order), or
until `trace_join_timeout_s` has passed since the trace was first seen: then they become a one-turn
conversation keyed by the trace id. A trace stays in the join window for `trace_join_timeout_s` even once its
conversation is known, and keeps the offset of its first record held (a crash replays the announcement with
the spans it must join); after that the trace → conversation mapping stays in a bounded LRU so that late spans
of a known trace still go to their conversation. Held spans are bounded by `max_held_spans`, traces in the
window and in the LRU by `trace_memory`, the bytes of held spans by `max_held_bytes` (counted like the
assembler's budget, `span_size.span_bytes`), and the bytes of the ids in the window, and apart those in the LRU,
by `max_id_bytes` (`trace_memory` × `id_memory.ENTRY_ROOM`: a conversation id may be 64 K characters, and a count
alone let them hold gigabytes): over a bound, the oldest trace leaves the window early, and the least recently
used mapping leaves the LRU.

Callers republish what is released (by conversation id) and commit a rekey-topic offset only below
`low_offset(partition)` and after flushing the producer.
"""

from __future__ import annotations

import heapq
import logging
from collections import OrderedDict
from dataclasses import dataclass, field

from agentwatch.collector.decode import SpanRecord
from agentwatch.collector.id_memory import ENTRY_ROOM, IdMemory, id_bytes
from agentwatch.collector.span_size import span_bytes

log = logging.getLogger(__name__)

KEY_TRACE = b"trace"
KEY_TRACE_CONVERSATION = b"trace-conversation"


@dataclass(slots=True)
class TraceJoinStats:
    """Counters of the join (cumulative except `held_spans` and `open_traces`)."""

    held_spans: int = 0  # spans waiting for their trace's conversation now
    held_bytes: int = 0  # their estimated bytes
    open_traces: int = 0  # traces in the join window now
    joined_spans: int = 0  # spans given the conversation of their trace
    timed_out_spans: int = 0  # spans whose trace never named a conversation: keyed by trace id
    evicted_spans: int = 0  # spans released early (as trace-id conversations) because of a memory bound
    announcements: int = 0  # announcement records read
    conflicts: int = 0  # announcements naming another conversation than the one already known for the trace


@dataclass(slots=True)
class _Trace:
    serial: int
    trace_id: str
    partition: int
    min_offset: int
    first_seen: float
    conversation_id: str | None = None
    spans: list[SpanRecord] = field(default_factory=list)
    nbytes: int = 0


class TraceJoin:
    """Traces in the join window of the rekey partitions this process owns, plus a bounded LRU of known traces."""

    def __init__(
        self, timeout_s: float, max_held_spans: int, trace_memory: int, max_held_bytes: int = 64 << 20
    ) -> None:
        self.timeout_s = timeout_s
        self.max_held_spans = max(0, max_held_spans)
        self.max_held_bytes = max(0, max_held_bytes)
        self.trace_memory = max(1, trace_memory)
        self.max_id_bytes = self.trace_memory * ENTRY_ROOM  # of the window's ids, and of the LRU's
        self.stats = TraceJoinStats()
        self._window: OrderedDict[str, _Trace] = OrderedDict()  # by first seen (oldest first)
        self._window_id_bytes = 0  # counted bytes of the trace and conversation ids of the window's traces
        # trace id -> conversation id, least recent first
        self._known: IdMemory[str] = IdMemory(self.trace_memory, self.max_id_bytes)
        self._held: dict[
            int, list[tuple[int, int, str]]
        ] = {}  # partition -> heap of (offset, serial, trace id)
        self._serial = 0

    # ----------------------------------------------------------------------- records in

    def conversation_of(self, trace_id: str) -> str | None:
        """The conversation of a trace, if the join knows it."""
        entry = self._window.get(trace_id)
        if entry is not None:
            return entry.conversation_id
        return self._known.get(trace_id)

    def announce(
        self, trace_id: str, conversation_id: str, partition: int, offset: int, now: float
    ) -> list[SpanRecord]:
        """A record at (partition, offset) says `trace_id` belongs to `conversation_id`; the spans this releases."""
        self.stats.announcements += 1
        entry = self._window.get(trace_id)
        if entry is None:
            known = self._known.get(trace_id)
            if known is not None:
                if known != conversation_id:
                    self._conflict(trace_id, known, conversation_id)
                self._known.touch(trace_id)
                return []
            evicted = self._make_room()
            entry = self._open(trace_id, partition, offset, now)
        else:
            evicted = []
        if entry.conversation_id is None:
            entry.conversation_id = conversation_id
            self._window_id_bytes += id_bytes(conversation_id)
            released = entry.spans
            entry.spans = []
            self.stats.held_spans -= len(released)
            self.stats.held_bytes -= entry.nbytes
            entry.nbytes = 0
            self.stats.joined_spans += len(released)
            for span in released:
                span.conversation_id = conversation_id
            if self._window_id_bytes > self.max_id_bytes:
                released.extend(self._fit_ids())
            return evicted + released
        if entry.conversation_id != conversation_id:
            self._conflict(trace_id, entry.conversation_id, conversation_id)
        return evicted

    def add(self, spans: list[SpanRecord], partition: int, offset: int, now: float) -> list[SpanRecord]:
        """Spans of the record at (partition, offset) whose conversation is unknown to their sender: those whose
        trace's conversation is known come back with it set; the others are held."""
        released: list[SpanRecord] = []
        for span in spans:
            tid = span.trace_id
            entry = self._window.get(tid)
            if entry is None:
                known = self._known.get(tid)
                if known is not None:
                    self._known.touch(tid)
                    span.conversation_id = known
                    if known != tid:
                        self.stats.joined_spans += 1
                    released.append(span)
                    continue
                released.extend(self._make_room())
                entry = self._open(tid, partition, offset, now)
            if entry.conversation_id is not None:
                span.conversation_id = entry.conversation_id
                self.stats.joined_spans += 1
                released.append(span)
            else:
                entry.spans.append(span)
                size = span_bytes(span)
                entry.nbytes += size
                self.stats.held_bytes += size
                self.stats.held_spans += 1
        if self.stats.held_spans > self.max_held_spans or self.stats.held_bytes > self.max_held_bytes:
            released.extend(self._evict_held())
        if self._window_id_bytes > self.max_id_bytes:
            released.extend(self._fit_ids())
        return released

    # ----------------------------------------------------------------------- time and bounds

    def poll(self, now: float) -> list[SpanRecord]:
        """Close the traces first seen `timeout_s` ago or more; the spans released (keyed by trace id)."""
        released: list[SpanRecord] = []
        window = self._window
        limit = now - self.timeout_s
        while window:
            entry = next(iter(window.values()))
            if entry.first_seen > limit:
                break
            released.extend(self._close(entry, timed_out=True))
        return released

    def _evict_held(self) -> list[SpanRecord]:
        """Over `max_held_spans` or `max_held_bytes`: close the oldest traces that hold spans until under both."""
        released: list[SpanRecord] = []
        stats = self.stats
        for entry in list(self._window.values()):
            if stats.held_spans <= self.max_held_spans and stats.held_bytes <= self.max_held_bytes:
                break
            if entry.spans:
                log.warning(
                    "trace join holds %d spans, %d bytes (bounds %d, %d); trace %s released without a "
                    "conversation",
                    stats.held_spans,
                    stats.held_bytes,
                    self.max_held_spans,
                    self.max_held_bytes,
                    entry.trace_id,
                )
                released.extend(self._close(entry, timed_out=False))
        return released

    def _fit_ids(self) -> list[SpanRecord]:
        """Over `max_id_bytes` of ids in the window: close the oldest traces (not the newest) until under it."""
        released: list[SpanRecord] = []
        window = self._window
        if len(window) > 1:
            log.warning(
                "trace join window holds %d bytes of ids (bound %d); the oldest traces leave it early",
                self._window_id_bytes,
                self.max_id_bytes,
            )
        while self._window_id_bytes > self.max_id_bytes and len(window) > 1:
            released.extend(self._close(next(iter(window.values())), timed_out=False))
        return released

    def id_bytes(self) -> int:
        """Counted bytes of the ids the join remembers: of the traces in the window and of the LRU."""
        return self._window_id_bytes + self._known.nbytes

    def low_offset(self, partition: int) -> int | None:
        """The lowest offset of `partition` still held by a trace in the window, or None."""
        heap = self._held.get(partition)
        while heap:
            offset, serial, tid = heap[0]
            entry = self._window.get(tid)
            if entry is None or entry.serial != serial:
                heapq.heappop(heap)
                continue
            return offset
        return None

    def revoke(self, partitions: list[int]) -> None:
        """Forget the traces of revoked partitions (their records will be replayed by the new owner)."""
        gone = set(partitions)
        for tid in [t for t, e in self._window.items() if e.partition in gone]:
            entry = self._window.pop(tid)
            self._window_id_bytes -= _ids_of(entry)
            self.stats.held_spans -= len(entry.spans)
            self.stats.held_bytes -= entry.nbytes
        for p in gone:
            self._held.pop(p, None)
        self.stats.open_traces = len(self._window)

    def held_spans(self) -> int:
        """Spans waiting for their trace's conversation."""
        return self.stats.held_spans

    # ----------------------------------------------------------------------- internals

    def _make_room(self) -> list[SpanRecord]:
        """A full window (`trace_memory` traces): the oldest trace leaves early; the spans that releases."""
        if len(self._window) < self.trace_memory:
            return []
        return self._close(next(iter(self._window.values())), timed_out=False)

    def _open(self, trace_id: str, partition: int, offset: int, now: float) -> _Trace:
        self._serial += 1
        entry = _Trace(self._serial, trace_id, partition, offset, now)
        self._window[trace_id] = entry
        self._window_id_bytes += id_bytes(trace_id)
        heapq.heappush(self._held.setdefault(partition, []), (offset, entry.serial, trace_id))
        self.stats.open_traces = len(self._window)
        return entry

    def _close(self, entry: _Trace, timed_out: bool) -> list[SpanRecord]:
        del self._window[entry.trace_id]
        self._window_id_bytes -= _ids_of(entry)
        self.stats.open_traces = len(self._window)
        released = entry.spans
        entry.spans = []
        conversation = entry.conversation_id
        if conversation is None:
            conversation = entry.trace_id
            self.stats.held_spans -= len(released)
            self.stats.held_bytes -= entry.nbytes
            entry.nbytes = 0
            if timed_out:
                self.stats.timed_out_spans += len(released)
            else:
                self.stats.evicted_spans += len(released)
            for span in released:
                span.conversation_id = conversation
        self._known.remember(entry.trace_id, conversation)
        return released

    def _conflict(self, trace_id: str, known: str, other: str) -> None:
        self.stats.conflicts += 1
        log.info("trace %s announced for conversation %s, already joined to %s; kept", trace_id, other, known)


def _ids_of(entry: _Trace) -> int:
    """Counted bytes of a window trace's ids (its conversation id once known)."""
    cid = entry.conversation_id
    return id_bytes(entry.trace_id) + (0 if cid is None else id_bytes(cid))
