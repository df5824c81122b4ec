"""Conversation assembly: completion rules, de-duplication, late spans, caps and the offset rule."""

from __future__ import annotations

import random
from typing import Any

from agentwatch.collector.assembler import Assembler
from agentwatch.collector.decode import SpanRecord
from agentwatch.config import CollectorConfig


def span(conv: str, n: int, *, end: bool = False, start: int | None = None) -> SpanRecord:
    attrs: dict[str, Any] = {"gen_ai.conversation.id": conv}
    if end:
        attrs["agentwatch.conversation.end"] = True
    return SpanRecord(
        trace_id=f"{abs(hash(conv)) % (1 << 64):032x}",
        span_id=f"{n:016x}",
        parent_span_id=None,
        name="s",
        start_ns=start if start is not None else n,
        end_ns=(start if start is not None else n) + 1,
        status_error=None,
        attrs=attrs,
        resource={},
        conversation_id=conv,
    )


def config(**kw) -> CollectorConfig:
    base: dict[str, Any] = {"idle_timeout_s": 10.0, "end_grace_s": 1.0}
    base.update(kw)
    return CollectorConfig(**base)


def test_end_flag_completes_after_grace_and_stragglers_join() -> None:
    a = Assembler(config())
    assert a.add(span("c", 1), 0, 0, now=0.0) == "added"
    assert a.add(span("c", 2, end=True), 0, 1, now=1.0) == "added"
    assert a.poll(1.5) == []
    assert a.add(span("c", 3), 0, 2, now=1.6) == "added"  # straggler within the grace
    (fin,) = a.poll(2.0)
    assert (fin.conversation_id, fin.partition, fin.reason, fin.incomplete) == ("c", 0, "end", False)
    assert sorted(s.span_id for s in fin.spans) == [f"{i:016x}" for i in (1, 2, 3)]
    assert a.stats.finished_by_reason == {"end": 1}
    assert a.stats.open_conversations == 0


def test_idle_timeout_finishes_least_recently_active_first() -> None:
    a2 = Assembler(config(idle_timeout_s=5.0))
    a2.add(span("old", 1), 0, 0, now=0.0)
    a2.add(span("new", 2), 0, 1, now=3.0)
    a2.add(span("old", 3), 0, 2, now=4.0)  # activity moves "old" behind "new"
    assert a2.poll(7.9) == []
    assert [f.conversation_id for f in a2.poll(8.5)] == ["new"]
    assert [f.conversation_id for f in a2.poll(9.0)] == ["old"]
    assert a2.stats.finished_by_reason == {"idle": 2}


def test_duplicates_and_late_spans_are_counted_not_merged() -> None:
    a = Assembler(config())
    assert a.add(span("c", 1), 0, 0, now=0.0) == "added"
    assert a.add(span("c", 1), 0, 1, now=0.1) == "duplicate"
    (fin,) = a.poll(100.0)
    assert len(fin.spans) == 1
    assert a.add(span("c", 2), 0, 2, now=101.0) == "late"
    assert a.add(span("c", 1), 0, 3, now=101.0) == "late"
    assert a.poll(1000.0) == []
    assert (a.stats.duplicate_spans, a.stats.late_spans, a.stats.spans_added) == (1, 2, 1)


def test_open_conversation_cap_finishes_the_oldest_early() -> None:
    a = Assembler(config(max_open_conversations=3))
    for i in range(5):
        a.add(span(f"c{i}", i), 0, i, now=float(i))
    assert a.stats.open_conversations == 3
    assert a.stats.capped_conversations == 2
    capped = a.poll(0.0)
    assert [(f.conversation_id, f.reason, f.incomplete) for f in capped] == [
        ("c0", "cap", True),
        ("c1", "cap", True),
    ]


def test_span_cap_drops_extra_spans_and_marks_incomplete() -> None:
    a = Assembler(config(max_spans_per_conversation=10))
    results = [a.add(span("c", i), 0, i, now=0.0) for i in range(25)]
    assert results.count("added") == 10 and results.count("dropped") == 15
    (fin,) = a.drain()
    assert len(fin.spans) == 10 and fin.incomplete and fin.reason == "shutdown"
    assert a.stats.dropped_spans == 15


def test_committable_never_passes_an_open_conversation() -> None:
    a = Assembler(config(idle_timeout_s=5.0))
    assert a.committable(0) is None  # nothing done yet
    a.add(span("a", 1), 0, 0, now=0.0)
    a.message_done(0, 0)
    a.add(span("b", 2), 0, 1, now=1.0)
    a.message_done(0, 1)
    assert a.committable(0) is None  # held at 0 by "a": nothing new to commit
    a.add(span("c", 3, end=True), 1, 0, now=1.0)
    a.message_done(1, 0)
    assert a.committable(1) is None  # partition 1's only message is held by "c"
    finished = a.poll(5.5)  # "a" idle, "c" ended
    assert sorted(f.conversation_id for f in finished) == ["a", "c"]
    assert a.committable(0) == 1  # "b" still holds offset 1
    assert a.committable(0) is None  # nothing new since
    assert a.committable(1) == 1
    a.poll(100.0)
    assert a.committable(0) == 2


def test_pending_capped_conversations_hold_their_offsets_until_polled() -> None:
    a = Assembler(config(max_open_conversations=1))
    a.add(span("a", 1), 0, 0, now=0.0)
    a.message_done(0, 0)
    a.add(span("b", 2), 0, 1, now=0.0)  # "a" finished by the cap, not yet handed out
    a.message_done(0, 1)
    assert a.committable(0) is None
    assert [f.conversation_id for f in a.poll(0.0)] == ["a"]
    assert a.committable(0) == 1


def test_revoke_forgets_partitions_and_drain_finishes_the_rest() -> None:
    a = Assembler(config())
    a.add(span("p0", 1), 0, 5, now=0.0)
    a.add(span("p1", 2), 1, 7, now=0.0)
    a.add(span("p2", 3, end=True), 2, 9, now=0.0)
    a.message_done(0, 5)
    a.revoke([0])
    assert a.committable(0) is None
    assert a.stats.open_conversations == 2
    drained = {f.conversation_id: f for f in a.drain([1, 2])}
    assert drained["p1"].reason == "shutdown" and drained["p1"].incomplete
    assert drained["p2"].reason == "end" and not drained["p2"].incomplete
    assert a.drain() == []


def test_random_streams_keep_the_offset_rule_and_lose_nothing() -> None:
    """Against an independent model: the commit never passes the first offset of an unfinished conversation."""
    rng = random.Random(7)
    for _ in range(30):
        a = Assembler(
            config(
                idle_timeout_s=3.0, end_grace_s=0.5, max_open_conversations=8, max_spans_per_conversation=6
            )
        )
        first_offset: dict[str, int] = {}  # model: conversation -> first offset of a span it kept
        emitted: set[str] = set()
        kept: dict[str, set[str]] = {}
        out: dict[str, set[str]] = {}
        now, committed, n = 0.0, 0, 0
        for offset in range(200):
            now += rng.random()
            for _ in range(rng.randint(1, 3)):
                conv = f"c{rng.randint(0, 15)}-{offset // 60}"
                n += 1
                result = a.add(span(conv, n, end=rng.random() < 0.1), 0, offset, now)
                if result == "added":
                    first_offset.setdefault(conv, offset)
                    kept.setdefault(conv, set()).add(f"{n:016x}")
            a.message_done(0, offset)
            for fin in a.poll(now):
                emitted.add(fin.conversation_id)
                out.setdefault(fin.conversation_id, set()).update(s.span_id for s in fin.spans)
            offset_ok = a.committable(0)
            if offset_ok is not None:
                assert offset_ok > committed
                committed = offset_ok
            unfinished = [off for c, off in first_offset.items() if c not in emitted]
            assert committed <= min(unfinished, default=offset + 1)
        for fin in a.drain():
            out.setdefault(fin.conversation_id, set()).update(s.span_id for s in fin.spans)
        assert out == kept


def _finished(a: Assembler, now: float) -> list[tuple]:
    return [
        (f.conversation_id, f.partition, f.reason, f.incomplete, sorted(s.span_id for s in f.spans))
        for f in a.poll(now)
    ]


def test_add_message_is_add_each_span_then_message_done() -> None:
    """The per-message fast path gives the same conversations, counters and offsets as adding span by span."""
    rng = random.Random(7)
    cfg = config(idle_timeout_s=3.0, end_grace_s=0.5, max_open_conversations=6, max_spans_per_conversation=5)
    one, batch = Assembler(cfg), Assembler(cfg)
    now = 0.0
    for offset in range(600):
        now += rng.choice([0.0, 0.1, 0.7])
        partition = rng.randrange(2)
        spans = [
            span(rng.choice("abcdefghij"), rng.randrange(12), end=rng.random() < 0.1)
            for _ in range(rng.randrange(0, 7))
        ]
        spans.sort(key=lambda s: s.conversation_id if rng.random() < 0.7 else "")  # runs, mostly
        for s in spans:
            one.add(s, partition, offset, now)
        one.message_done(partition, offset)
        batch.add_message(spans, partition, offset, now)
        assert _finished(one, now) == _finished(batch, now)
        if offset % 5 == 0:
            assert [one.committable(p) for p in (0, 1)] == [batch.committable(p) for p in (0, 1)]
    assert one.stats == batch.stats
    assert one.stats.late_spans > 0 and one.stats.duplicate_spans > 0 and one.stats.dropped_spans > 0
    assert one.stats.capped_conversations > 0
