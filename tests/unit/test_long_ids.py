"""Long conversation ids (up to `max_attribute_bytes`, 65,536 characters) from a hostile producer: the collector's
memories of recent ids — the trace join's window and LRU, the rekeyer's announcements and loop routes, the
assembler's recently finished conversations — stay within their bytes; ids of a normal size keep their counts.

What a memory keeps is measured with tracemalloc after the test dropped its own references to the ids."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

from agentwatch.collector.assembler import Assembler
from agentwatch.collector.decode import SpanRecord, decode_message
from agentwatch.collector.rekey import Rekeyer
from agentwatch.collector.trace_join import TraceJoin
from agentwatch.config import CollectorConfig
from tests.support.memory import kept_by

MIB = 1024 * 1024
LONG = 60_000  # characters of a hostile id (under max_attribute_bytes)


def long_id(n: int) -> str:
    """A distinct 60,000-character id (a new string each call)."""
    return f"{n:08d}" + "x" * LONG


def tool_span(tid: str, cid: str = "") -> SpanRecord:
    attrs: dict[str, object] = {"gen_ai.conversation.id": cid} if cid else {}
    return SpanRecord(tid, "1" * 16, None, "execute_tool lookup", 1, 2, None, attrs, {}, cid or tid)


class _Producer:
    """Counts what is sent, keeps none of it."""

    def __init__(self) -> None:
        self.announcements = 0
        self.sent = 0

    def send(self, topic: str, value: bytes, key: bytes, headers: list[tuple[str, bytes]]) -> None:
        self.sent += 1
        self.announcements += dict(headers).get("agentwatch-key") == b"trace-conversation"


class _Keys(_Producer):
    """Also keeps the keys sent (loop keys: short)."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: set[bytes] = set()

    def send(self, topic: str, value: bytes, key: bytes, headers: list[tuple[str, bytes]]) -> None:
        super().send(topic, value, key, headers)
        self.keys.add(key)


# ----------------------------------------------------------------------------------------- trace join


def test_the_trace_join_keeps_long_ids_within_its_bound() -> None:
    """1,000 traces announced with 60,000-character ids: the window and the LRU (200 traces each) would keep
    24 MB of them by count; by bytes they keep about two."""
    join = TraceJoin(timeout_s=100, max_held_spans=10_000, trace_memory=200)

    def feed() -> None:
        for n in range(1000):
            tid = f"{n:032x}"
            join.add([tool_span(tid)], 0, 2 * n, now=0.0)
            join.announce(tid, long_id(n), 0, 2 * n + 1, now=0.0)

    assert kept_by(feed) < 2 * MIB
    assert join.id_bytes() <= 2 * join.max_id_bytes
    assert join.conversation_of(f"{999:032x}") == long_id(999)  # the newest is remembered
    assert join.stats.joined_spans == 1000 and join.stats.evicted_spans == 0 and join.held_spans() == 0


def test_over_its_id_bytes_the_join_releases_the_oldest_waiting_trace_early() -> None:
    """A trace whose spans wait is closed early once long ids announced after it fill the window's bytes: its
    spans are keyed by their trace id and counted as evicted, as under the other bounds."""
    join = TraceJoin(timeout_s=100, max_held_spans=10_000, trace_memory=200)
    waiting = "a" * 32
    assert join.add([tool_span(waiting)], 0, 0, now=0.0) == []
    assert join.announce(f"{1:032x}", long_id(1), 0, 1, now=1.0) == []
    [released] = join.announce(f"{2:032x}", long_id(2), 0, 2, now=2.0)  # two ids: 120 KB > 102,400
    assert (released.trace_id, released.conversation_id) == (waiting, waiting)
    assert join.stats.evicted_spans == 1 and join.held_spans() == 0
    assert join.stats.open_traces == 1 and join.low_offset(0) == 2  # the first long one left too
    assert join.conversation_of(f"{1:032x}") == long_id(1)  # remembered after the window


def test_the_trace_join_keeps_100000_traces_of_uuid_conversations() -> None:
    """Normal ids never meet the byte bound: `trace_memory` (100,000 by default) traces stay in the window, and
    are all remembered after it."""
    join = TraceJoin(timeout_s=10, max_held_spans=100_000, trace_memory=100_000)
    for n in range(100_000):
        tid = f"{n:032x}"
        join.add([tool_span(tid)], 0, n, now=0.0)
        join.announce(tid, str(uuid.UUID(int=n)), 0, n, now=0.0)
    assert join.stats.open_traces == 100_000 and join.stats.evicted_spans == 0
    join.poll(now=20.0)
    assert join.stats.open_traces == 0
    assert join.conversation_of(f"{0:032x}") == str(uuid.UUID(int=0))
    assert join.id_bytes() <= join.max_id_bytes


# ----------------------------------------------------------------------------------------- rekeyer


def test_the_rekeyer_remembers_announcements_of_long_ids_within_its_bound() -> None:
    """1,000 traces naming 60,000-character conversations: 60 MB of announced ids by count (10,000), at most
    5 MB by bytes; the newest is still not announced twice."""
    out = _Producer()
    rekeyer = Rekeyer(out, "rk")

    def feed() -> None:
        for n in range(1000):
            cid = long_id(n)
            rekeyer.route([tool_span(f"{n:032x}", cid)])

    assert kept_by(feed) < 8 * MIB
    assert out.announcements == 1000
    rekeyer.route([tool_span(f"{999:032x}", long_id(999))])
    assert out.announcements == 1000


def test_the_rekeyer_remembers_10000_announcements_of_uuid_conversations() -> None:
    out = _Producer()
    rekeyer = Rekeyer(out, "rk")
    for n in range(10_000):
        rekeyer.route([tool_span(f"{n:032x}", str(uuid.UUID(int=n)))])
    rekeyer.route([tool_span(f"{0:032x}", str(uuid.UUID(int=0)))])
    assert out.announcements == 10_000  # the oldest is still remembered: not announced again


def test_the_rekeyer_remembers_loop_routes_within_its_bound() -> None:
    """The loop routes are keyed by trace id, which the decoders keep to 32 characters; were one long, 400 of
    60,000 characters would keep 24 MB by count, at most 5 MB by bytes."""
    recording = Path(__file__).parent.parent / "data" / "google_genai_trace.json"
    spans = decode_message(recording.read_bytes(), "application/json")
    step = [s for s in spans if s.trace_id == spans[0].trace_id]  # a model call of a loop: a trace of its own
    out = _Keys()
    rekeyer = Rekeyer(out, "rk")

    def feed() -> None:
        for n in range(400):
            tid = f"{n:08x}" + "ab" * (LONG // 2)
            rekeyer.republish([dataclasses.replace(s, trace_id=tid, conversation_id=tid) for s in step])

    assert kept_by(feed) < 8 * MIB
    assert out.sent == 400 and len(out.keys) == 1  # every step went by its loop, not by its trace id
    assert len(next(iter(out.keys))) < 100


# ----------------------------------------------------------------------------------------- assembler


def test_the_assembler_remembers_finished_long_ids_within_its_bound() -> None:
    """1,000 conversations of 60,000-character ids finished on one partition: 200 remembered by count would
    keep 12 MB, by bytes (200 × 512) about one; the newest is still known, its late spans counted late."""
    a = Assembler(CollectorConfig(idle_timeout_s=1.0), recent_per_partition=200)

    def feed() -> None:
        for n in range(1000):
            cid = long_id(n)
            a.add_message([tool_span(f"{n:032x}", cid)], 0, n, now=2.0 * n)
            a.poll(now=2.0 * n + 1.5)
            a.committable(0)
            a.oldest_open_age(now=2.0 * n + 1.5)

    assert kept_by(feed) < 2 * MIB
    assert a.stats.open_conversations == 0 and a.stats.finished_by_reason == {"idle": 1000}
    assert a.add(tool_span(f"{999:032x}", long_id(999)), 0, 1000, now=3000.0) == "late"


def test_the_assembler_remembers_10000_finished_uuid_conversations_a_partition() -> None:
    a = Assembler(CollectorConfig(idle_timeout_s=1.0))
    for n in range(10_000):
        a.add_message([tool_span(f"{n:032x}", str(uuid.UUID(int=n)))], 0, n, now=0.0)
    assert len(a.poll(now=2.0)) == 10_000
    assert a.add(tool_span(f"{0:032x}", str(uuid.UUID(int=0))), 0, 10_000, now=3.0) == "late"
    assert a.add(tool_span(f"{0:032x}", str(uuid.UUID(int=10_000))), 0, 10_001, now=3.0) == "added"
