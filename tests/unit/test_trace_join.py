"""The trace join: spans without a conversation key wait by trace id for their trace to name a conversation."""

from __future__ import annotations

from pathlib import Path

from agentwatch.collector.decode import SpanRecord, decode_message
from agentwatch.collector.rekey import ANNOUNCE_HEADERS, TRACE_HEADERS, Rekeyer, conversation_known
from agentwatch.collector.trace_join import TraceJoin


def span(tid: str, sid: str, cid: str = "", **attrs: object) -> SpanRecord:
    return SpanRecord(tid, sid, None, "execute_tool lookup", 1, 2, None, dict(attrs), {}, cid or tid)


T1, T2, T3 = "a" * 32, "b" * 32, "c" * 32


def test_spans_before_the_announcement_wait_for_it():
    join = TraceJoin(timeout_s=10, max_held_spans=100, trace_memory=100)
    assert join.add([span(T1, "1" * 16), span(T1, "2" * 16)], 0, 5, now=0.0) == []
    assert join.held_spans() == 2
    assert join.low_offset(0) == 5
    released = join.announce(T1, "conv-1", 0, 7, now=1.0)
    assert sorted(s.span_id for s in released) == ["1" * 16, "2" * 16]
    assert {s.conversation_id for s in released} == {"conv-1"}
    assert join.held_spans() == 0
    assert join.low_offset(0) == 5  # kept until the window closes: a replay must find the announcement again
    assert join.poll(now=10.5) == []
    assert join.low_offset(0) is None
    assert join.stats.joined_spans == 2


def test_spans_after_the_announcement_and_after_the_window_join_at_once():
    join = TraceJoin(timeout_s=10, max_held_spans=100, trace_memory=100)
    assert join.announce(T1, "conv-1", 0, 3, now=0.0) == []
    [s] = join.add([span(T1, "1" * 16)], 0, 4, now=1.0)
    assert s.conversation_id == "conv-1"
    join.poll(now=20.0)  # the window closed: the mapping is remembered
    assert join.low_offset(0) is None
    [late] = join.add([span(T1, "2" * 16)], 0, 9, now=30.0)
    assert late.conversation_id == "conv-1"
    assert join.low_offset(0) is None  # nothing held for a known trace
    assert join.conversation_of(T1) == "conv-1"


def test_a_trace_that_never_names_a_conversation_becomes_its_own_after_the_timeout():
    join = TraceJoin(timeout_s=10, max_held_spans=100, trace_memory=100)
    join.add([span(T1, "1" * 16)], 2, 1, now=0.0)
    join.add([span(T2, "2" * 16)], 2, 2, now=5.0)
    assert join.poll(now=9.9) == []
    [s] = join.poll(now=10.0)
    assert (s.trace_id, s.conversation_id) == (T1, T1)
    assert join.low_offset(2) == 2
    assert join.stats.timed_out_spans == 1
    # an announcement after the timeout does not move spans already keyed by trace id
    assert join.announce(T1, "conv-late", 2, 3, now=11.0) == []
    assert join.stats.conflicts == 1
    [again] = join.add([span(T1, "3" * 16)], 2, 4, now=12.0)
    assert again.conversation_id == T1


def test_held_spans_are_bounded():
    join = TraceJoin(timeout_s=100, max_held_spans=3, trace_memory=100)
    join.add([span(T1, "1" * 16), span(T1, "2" * 16)], 0, 1, now=0.0)
    join.add([span(T2, "3" * 16)], 0, 2, now=1.0)
    released = join.add([span(T3, "4" * 16)], 0, 3, now=2.0)  # 4 held > 3: the oldest trace goes early
    assert [(s.trace_id, s.conversation_id) for s in released] == [(T1, T1), (T1, T1)]
    assert join.held_spans() == 2
    assert join.stats.evicted_spans == 2
    assert join.low_offset(0) == 2


def test_traces_in_the_window_and_remembered_are_bounded():
    join = TraceJoin(timeout_s=100, max_held_spans=100, trace_memory=2)
    join.announce(T1, "c1", 0, 1, now=0.0)
    join.add([span(T2, "2" * 16)], 0, 2, now=1.0)
    released = join.add([span(T3, "3" * 16)], 0, 3, now=2.0)  # T1 leaves the window early (nothing held)
    assert released == []
    assert join.conversation_of(T1) == "c1"
    assert join.low_offset(0) == 2
    join.add([span("d" * 32, "4" * 16)], 0, 4, now=3.0)  # T2 leaves, keyed by trace id
    assert join.stats.evicted_spans == 1
    assert len(join._known) <= 2


def test_revoked_partitions_are_forgotten():
    join = TraceJoin(timeout_s=100, max_held_spans=100, trace_memory=100)
    join.add([span(T1, "1" * 16)], 0, 1, now=0.0)
    join.add([span(T2, "2" * 16)], 1, 1, now=0.0)
    join.revoke([0])
    assert join.low_offset(0) is None and join.low_offset(1) == 1
    assert join.held_spans() == 1


class _Producer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, bytes, list]] = []

    def send(self, topic, value, key, headers):
        self.sent.append((topic, key, value, headers))


def test_route_sends_known_spans_by_conversation_and_the_rest_by_trace():
    out = _Producer()
    rekeyer = Rekeyer(out, "rk")
    chat = span(T1, "1" * 16, "conv-1", **{"gen_ai.conversation.id": "conv-1"})
    tool = span(T2, "2" * 16)
    assert conversation_known(chat) and not conversation_known(tool)
    assert rekeyer.route([chat, tool]) == 3
    keys = {
        (key, tuple(headers) == tuple(ANNOUNCE_HEADERS), tuple(headers) == tuple(TRACE_HEADERS))
        for _, key, _, headers in out.sent
    }
    assert keys == {(b"conv-1", False, False), (T1.encode(), True, False), (T2.encode(), False, True)}
    announce = [v for _, k, v, h in out.sent if tuple(h) == tuple(ANNOUNCE_HEADERS)]
    assert announce == [b"conv-1"]
    out.sent.clear()
    rekeyer.route([span(T1, "3" * 16, "conv-1", **{"gen_ai.conversation.id": "conv-1"})])
    assert len(out.sent) == 1  # announced already: not again


def test_released_traces_of_one_loop_are_republished_to_one_partition_by_their_loop() -> None:
    """Google GenAI's two model calls of a loop the caller runs, each a trace naming no conversation
    (`record_agents google_genai`), released by the trace join: both keyed by the loop's first tool call, not by
    their trace ids, so that one collector gets both for the loop join; a trace of no loop keeps its id."""
    recording = Path(__file__).parent.parent / "data" / "google_genai_trace.json"
    spans = decode_message(recording.read_bytes(), "application/json")
    assert {s.conversation_id for s in spans} == {s.trace_id for s in spans} and len(spans) == 2
    out = _Producer()
    assert Rekeyer(out, "rk").republish(spans) == 2
    (key,) = {key for _, key, _, _ in out.sent}
    assert key not in {s.trace_id.encode() for s in spans}
    # a span of one of those traces released later (after the join's window) goes the same way
    late = span(spans[0].trace_id, "5" * 16)
    out.sent.clear()
    rekeyer = Rekeyer(out, "rk")
    rekeyer.republish(spans)
    rekeyer.republish([late])
    assert [key for _, key, _, _ in out.sent][-1] == key
    other = span(T3, "4" * 16)  # a tool span alone: no loop
    out.sent.clear()
    Rekeyer(out, "rk").republish([other])
    assert [key for _, key, _, _ in out.sent] == [T3.encode()]
