"""The assembler's byte budget and maximum open age: conversations finished early, counted, offsets moving."""

from __future__ import annotations

import gc
import random
import tracemalloc
from typing import Any

from agentwatch.collector.assembler import Assembler
from agentwatch.collector.decode import SpanRecord
from agentwatch.collector.span_size import SPAN_OVERHEAD, span_bytes
from agentwatch.config import CollectorConfig

MIB = 1024 * 1024


def fat_span(conv: str, n: int, content_bytes: int = 0, *, end: bool = False) -> SpanRecord:
    attrs: dict[str, Any] = {"gen_ai.conversation.id": conv}
    for k in range(6 if content_bytes else 0):
        # distinct strings (an equal literal would be one object, counted six times but held once)
        attrs[f"gen_ai.content.{k}"] = f"{conv}/{n}/{k}:" + "x" * content_bytes
    if end:
        attrs["agentwatch.conversation.end"] = True
    return SpanRecord(
        trace_id=f"{abs(hash(conv)) % (1 << 64):032x}",
        span_id=f"{n:016x}",
        parent_span_id=None,
        name="invoke_agent",
        start_ns=n,
        end_ns=n + 1,
        status_error=None,
        attrs=attrs,
        resource={},
        conversation_id=conv,
    )


def config(**kw: Any) -> CollectorConfig:
    base: dict[str, Any] = {"idle_timeout_s": 3600.0, "end_grace_s": 1.0}
    base.update(kw)
    return CollectorConfig(**base)


def test_span_bytes_counts_the_decoded_content() -> None:
    small, fat = fat_span("c", 1), fat_span("c", 2, 64 * 1024)
    assert SPAN_OVERHEAD <= span_bytes(small) < SPAN_OVERHEAD + 300
    assert 6 * 64 * 1024 < span_bytes(fat) < 6 * 64 * 1024 + 2000
    wide = fat_span("c", 3)
    wide.attrs["gen_ai.input.messages"] = "€" * 1000  # stored 2 bytes a character
    wide.attrs["tags"] = ["a" * 500, {"k": "b" * 500}]
    assert span_bytes(wide) > span_bytes(small) + 2000 + 1000


def test_span_bytes_is_not_below_what_the_spans_take() -> None:
    """The estimate of 200 fat spans is at least what tracemalloc sees them take (and within 25% of it)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    spans = [fat_span(f"c{i}", i, 8 * 1024 + i) for i in range(200)]
    taken = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    estimate = sum(span_bytes(s) for s in spans)
    assert taken <= estimate <= 1.25 * taken, (taken, estimate)


def test_over_the_byte_budget_the_least_recently_active_finish_early() -> None:
    a = Assembler(config(max_open_bytes=1 * MIB))
    spans = [fat_span(f"c{i}", i, 64 * 1024) for i in range(4)]
    for i, s in enumerate(spans):  # 4 conversations of 1 span each: ~1.5 MiB
        a.add(s, 0, i, now=float(i))
        a.message_done(0, i)
    assert a.stats.open_bytes <= 1 * MIB
    assert a.stats.budget_conversations == 2 and a.stats.open_conversations == 2
    finished = a.poll(10.0)
    assert [(f.conversation_id, f.reason, f.incomplete) for f in finished] == [
        ("c0", "budget", True),
        ("c1", "budget", True),
    ]
    assert a.stats.finished_by_reason == {"budget": 2}
    assert a.stats.open_bytes == span_bytes(spans[2]) + span_bytes(spans[3]) == a.open_bytes_estimate()
    assert a.committable(0) == 2  # held by c2 from offset 2 on
    # activity decides: c2 gets a span, so c3 is now the least recently active
    a.add(fat_span("c2", 10, 64 * 1024), 0, 4, now=11.0)
    a.message_done(0, 4)
    assert [f.conversation_id for f in a.poll(11.0)] == ["c3"]


def test_one_conversation_larger_than_the_budget_is_finished_and_its_later_spans_are_late() -> None:
    a = Assembler(config(max_open_bytes=1 * MIB))
    statuses = [a.add(fat_span("huge", i, 64 * 1024), 0, i, now=0.0) for i in range(6)]
    # the third span takes it over the budget: finished; its id is remembered, its later spans are late
    assert statuses == ["added"] * 3 + ["late"] * 3
    (first,) = a.poll(0.0)
    assert first.reason == "budget" and first.incomplete and len(first.spans) == 3
    assert a.stats.open_bytes == 0 and a.stats.late_spans == 3


def test_budget_finishing_inside_a_message_keeps_the_offset_rule() -> None:
    """Spans of several conversations in one message: the ones finished early hold the offset until polled."""
    a = Assembler(config(max_open_bytes=1 * MIB))
    a.add_message([fat_span("a", 1, 64 * 1024), fat_span("b", 2, 64 * 1024)], 0, 0, now=0.0)
    a.add_message([fat_span(f"c{i}", 10 + i, 64 * 1024) for i in range(3)], 0, 1, now=1.0)
    assert a.stats.budget_conversations >= 2
    assert a.committable(0) is None  # everything still held (finished early, not yet polled)
    done = a.poll(1.0)
    assert {f.conversation_id for f in done} >= {"a", "b"}
    assert a.stats.open_bytes <= 1 * MIB


def test_a_conversation_open_longer_than_the_maximum_age_is_finished_and_offsets_move() -> None:
    """One span every 4 s on one conversation never idles; at max_open_age_s it is finished (`age`)."""
    a = Assembler(config(idle_timeout_s=10.0, max_open_age_s=60.0))
    offset = 0
    scored: list[str] = []
    for second in range(0, 200, 4):
        now = float(second)
        a.add(fat_span("forever", offset), 0, offset, now=now)
        a.message_done(0, offset)
        offset += 1
        a.add(fat_span(f"short{second}", 1000 + offset, end=True), 0, offset, now=now)
        a.message_done(0, offset)
        offset += 1
        scored += [f.conversation_id for f in a.poll(now)]
    assert "forever" in scored
    assert a.stats.finished_by_reason.get("age") == 1 and a.stats.aged_conversations == 1
    # after the age finish, the offset moved past the forever conversation's first span
    committed = a.committable(0)
    assert committed is not None and committed > 40
    # its later spans are late (its id is remembered), they do not pin the offsets again
    assert a.add(fat_span("forever", 99_999), 0, offset, now=300.0) == "late"


def test_oldest_open_age_and_the_age_queue_stay_small() -> None:
    a = Assembler(config(idle_timeout_s=1.0, max_open_age_s=100.0))
    for i in range(10_000):  # conversations that end on their own: their age entries must not pile up
        a.add(fat_span(f"c{i}", i, end=True), 0, i, now=i * 0.01)
        a.message_done(0, i)
        a.poll(i * 0.01)
    assert len(a._opened) <= 2 * a.stats.open_conversations + 1024
    a.poll(200.0)
    assert a.stats.open_conversations == 0 and a.oldest_open_age(200.0) == 0.0
    a.add(fat_span("slow", 10**6), 0, 10**6, now=200.0)
    assert a.oldest_open_age(230.0) == 30.0
    assert a.oldest_open_age(230.0) == 30.0


def test_behind_a_long_open_conversation_the_offset_heap_keeps_only_open_ones() -> None:
    """One conversation open at offset 0 for the whole test (under max_open_age_s): the 20,000 conversations
    finished after it left each an entry in the partition's offset heap, kept until the open one finished; the
    heap now holds about as many entries as conversations are open, and the offset rule is unchanged."""
    a = Assembler(config(idle_timeout_s=50.0, max_open_age_s=3600.0))
    a.add(fat_span("long", 0), 0, 0, now=0.0)
    a.message_done(0, 0)
    for i in range(1, 20_001):
        now = i * 0.01
        a.add(fat_span(f"c{i}", i, end=True), 0, i, now=now)
        a.message_done(0, i)
        if i % 100 == 0:
            a.add(fat_span("long", 100_000 + i), 0, i, now=now)  # active: never idle
            a.poll(now)
            assert a.committable(0) in (None, 0)  # held by the long conversation's first span
    assert a.stats.finished_by_reason.get("end", 0) >= 19_900
    assert len(a._held[0]) <= 2 * a.stats.open_conversations + 1025
    a.add(fat_span("long", 1, end=True), 0, 20_001, now=300.0)
    a.message_done(0, 20_001)
    assert "long" in [f.conversation_id for f in a.poll(400.0)]
    assert a.committable(0) == 20_002


def test_random_streams_under_a_small_budget_lose_no_span_and_keep_the_offset_rule() -> None:
    """Every span added ends in exactly one finished conversation; commits never pass an unpolled span."""
    rng = random.Random(7)
    a = Assembler(config(max_open_bytes=1 * MIB, max_open_age_s=50.0, idle_timeout_s=20.0))
    held: dict[int, str] = {}  # offset -> conversation
    finished_spans: set[str] = set()
    added: set[str] = set()
    now = 0.0
    for offset in range(3000):
        now += rng.random()
        cid = f"c{rng.randrange(60)}"
        s = fat_span(cid, offset, rng.choice([0, 0, 0, 16 * 1024, 64 * 1024]), end=rng.random() < 0.05)
        if a.add(s, 0, offset, now) == "added":
            added.add(s.span_id)
            held[offset] = cid
        a.message_done(0, offset)
        for fin in a.poll(now):
            finished_spans.update(x.span_id for x in fin.spans)
        assert a.stats.open_bytes <= 1 * MIB
        c = a.committable(0)
        if c is not None:
            open_ids = {x.span_id for conv in a._open.values() for x in conv.spans.values()}
            assert all(f"{o:016x}" not in open_ids for o in range(c)), "committed past an open span"
    for fin in a.drain():
        finished_spans.update(x.span_id for x in fin.spans)
    assert finished_spans == added
    assert a.stats.open_bytes == 0
    assert a.stats.finished_by_reason.get("budget", 0) > 0


def test_the_trace_join_holds_at_most_max_held_bytes() -> None:
    from agentwatch.collector.trace_join import TraceJoin

    join = TraceJoin(60.0, 100_000, 1000, max_held_bytes=1 * MIB)
    released: list[SpanRecord] = []
    for i in range(6):  # six traces of one fat span each, none announced
        released += join.add([fat_span(f"t{i}", i, 64 * 1024)], 0, i, now=float(i))
        assert join.stats.held_bytes <= 1 * MIB
    assert [s.conversation_id for s in released] == [s.trace_id for s in released]  # keyed by trace id
    assert len(released) == join.stats.evicted_spans == 4
    assert join.stats.held_spans == 6 - len(released)
    released = join.announce(fat_span("t5", 5).trace_id, "conv-5", 0, 10, now=10.0)
    assert [s.conversation_id for s in released] == ["conv-5"]
    assert join.stats.held_bytes == span_bytes(fat_span("t4", 4, 64 * 1024))  # t4 waits; t0-t3 went early


def test_waiting_for_the_judge_counts_bytes_too() -> None:
    from concurrent.futures import Future

    from agentwatch.collector.judging import PendingVerdicts
    from agentwatch.judge.verdict import JudgeVerdict
    from agentwatch.wire.schema import Conversation

    a = Assembler(config(max_open_bytes=64 * MIB))
    a.add(fat_span("c", 1, 64 * 1024), 0, 0, now=0.0)
    (fin,) = a.drain()
    assert fin.nbytes == span_bytes(fat_span("c", 1, 64 * 1024)) > 6 * 64 * 1024
    pending = PendingVerdicts()
    futures: list[Future[JudgeVerdict]] = [Future(), Future()]
    for i, future in enumerate(futures):
        pending.add(Conversation(conversation_id=f"c{i}"), i, 0, future, nbytes=fin.nbytes)
    assert pending.nbytes == 2 * fin.nbytes
    futures[0].set_result(JudgeVerdict.failed("judge_timeout", "x"))
    assert len(pending.ready()) == 1 and pending.nbytes == fin.nbytes
    pending.forget([1])
    assert pending.nbytes == 0
