"""Bad input through the real broker: dead letters with reasons, caps that bound memory, a collector that keeps going."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, TracesData

from agentwatch.collector.deadletter import (
    DETAIL_HEADER,
    OFFSET_HEADER,
    PARTITION_HEADER,
    REASON_HEADER,
    TOPIC_HEADER,
)
from agentwatch.collector.decode import decode_message
from agentwatch.collector.reconstruct import build_conversation
from agentwatch.collector.record_limits import BATCH_ROOM
from agentwatch.config import Settings
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import ConversationScore
from tests.support.collector_kafka import (
    SDK_HEADERS,
    Record,
    ServiceThread,
    ToolSpec,
    TopicReader,
    TurnSpec,
    collector_settings,
    conversation_spans,
    create_topic,
    ids_of,
    otlp_bytes,
    producer,
    scores_of,
    simple_conversation,
    start_collector_process,
    unique,
)

pytestmark = pytest.mark.broker

MAX_SPANS = 500
MAX_ATTR = 4096


def _kv(key: str, value: object) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=str(value)))


def _raw_spans(cid: str, n: int, *, parent=lambda i: None, attrs=None, trace=b"\x01" * 16) -> TracesData:
    """TracesData of `n` spans of conversation `cid`, built directly in protobuf (fast, any values)."""
    spans = []
    for i in range(n):
        p = parent(i)
        a = {"gen_ai.conversation.id": cid, **((attrs or {}) if i == 0 else {})}
        spans.append(
            Span(
                trace_id=trace,
                span_id=(i + 1).to_bytes(8, "big"),
                parent_span_id=b"" if p is None else (p + 1).to_bytes(8, "big"),
                name=f"span {i}",
                start_time_unix_nano=1_700_000_000_000_000_000 + i,
                end_time_unix_nano=1_700_000_000_000_000_000 + i + 1,
                attributes=[_kv(k, v) for k, v in a.items()],
            )
        )
    return TracesData(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])])


@pytest.fixture(scope="module")
def running(broker):
    """One collector for the module, on a 1-partition topic so that order is total."""
    bs = broker.bootstrap_servers
    topic = unique("bad")
    create_topic(bs, topic, 1)
    cfg = collector_settings(
        bs, [topic], unique("bad"), max_spans_per_conversation=MAX_SPANS, max_attribute_bytes=MAX_ATTR
    )
    scores = TopicReader(bs, cfg.collector.scores_topic)
    dlq = TopicReader(bs, cfg.collector.dead_letter_topic)
    with ServiceThread(cfg) as svc:
        yield bs, topic, svc, scores, dlq
        assert svc.error is None
    scores.close()
    dlq.close()


def _send_then_sentinel(
    bs: str, topic: str, items: Sequence[tuple[bytes, bytes, list | None]], scores
) -> str:
    """Send (key, value, headers) items then a good conversation; return once the good one is scored."""
    p = producer(bs)
    for key, value, headers in items:
        p.send(topic, value=value, key=key, headers=headers)
    sentinel = unique("sentinel")
    p.send(topic, value=otlp_bytes(simple_conversation(sentinel)), key=sentinel.encode(), headers=SDK_HEADERS)
    p.flush()
    p.close()
    scores.wait(lambda r: sentinel in ids_of(r), 30)
    assert sentinel in ids_of(scores.records), "the collector stopped scoring after bad input"
    return sentinel


def _dead_letters(dlq, keys: set[bytes], timeout_s: float = 10) -> dict[bytes, dict[str, bytes]]:
    dlq.wait(lambda r: keys <= {x.key for x in r}, timeout_s)
    return {r.key: dict(r.headers) for r in dlq.records if r.key in keys}


def test_undecodable_messages_reach_the_dead_letter_topic(running):
    bs, topic, svc, scores, dlq = running
    good = otlp_bytes(simple_conversation(unique("g"), turns=2))
    cases = {
        b"random": (os.urandom(4096), None),
        b"truncated": (good[: len(good) // 2], SDK_HEADERS),
        b"bad-json": (b'{"resourceSpans": [{"scopeSpans": 7', [("content-type", b"application/json")]),
        b"not-otlp-json": (json.dumps({"hello": "world"}).encode(), None),
        b"empty": (b"", SDK_HEADERS),
        b"no-ids": (_raw_spans("x", 1, trace=b"").SerializeToString(), SDK_HEADERS),
    }
    prefix = unique("k").encode()
    keys = {prefix + b"/" + name for name in cases}
    items = [(k, *cases[k.split(b"/", 1)[1]]) for k in keys]
    _send_then_sentinel(bs, topic, items, scores)
    letters = _dead_letters(dlq, keys)
    assert set(letters) == keys
    originals = {k: v for k, v, _ in items}
    by_key = {r.key: r for r in dlq.records}
    for key, headers in letters.items():
        assert headers[REASON_HEADER].decode() in {
            "empty",
            "not_otlp",
            "invalid_protobuf",
            "invalid_json",
            "invalid_span",
        }, headers
        assert headers[TOPIC_HEADER].decode() == topic
        assert int(headers[PARTITION_HEADER]) == 0 and int(headers[OFFSET_HEADER]) >= 0
        assert (by_key[key].value or b"") == originals[key]  # the original payload, unchanged
    reasons = {k.split(b"/", 1)[1]: h[REASON_HEADER] for k, h in letters.items()}
    assert reasons[b"empty"] == b"empty"
    assert reasons[b"bad-json"] == b"invalid_json"
    assert sum(svc.service.stats.rejected_by_reason.values()) >= len(cases)


def test_absurd_values_are_bounded(running):
    """10 MB attribute, 100k spans in one conversation, a 5k-deep parent chain, a parent cycle."""
    bs, topic, svc, scores, _ = running
    huge, many, deep, cycle = (unique(x) for x in ("huge", "many", "deep", "cycle"))
    items = [
        (
            huge.encode(),
            _raw_spans(huge, 1, attrs={"gen_ai.output.messages": "x" * 10_000_000}).SerializeToString(),
            SDK_HEADERS,
        )
    ]
    for chunk in range(10):  # 100,000 spans of one conversation, 10 messages of 10,000
        data = _raw_spans(many, 10_000, trace=b"\x02" * 16)
        for i, span in enumerate(data.resource_spans[0].scope_spans[0].spans):
            span.span_id = (chunk * 10_000 + i + 1).to_bytes(8, "big")
        items.append((many.encode(), data.SerializeToString(), SDK_HEADERS))
    items.append(
        (
            deep.encode(),
            _raw_spans(deep, 400, parent=lambda i: i - 1 if i else None).SerializeToString(),
            SDK_HEADERS,
        )
    )
    items.append(
        (cycle.encode(), _raw_spans(cycle, 3, parent=lambda i: (i + 1) % 3).SerializeToString(), SDK_HEADERS)
    )
    a = svc.service.assembler.stats
    before = a.dropped_spans + a.late_spans
    _send_then_sentinel(bs, topic, items, scores)
    scores.wait(lambda r: {huge, many, deep, cycle} <= set(ids_of(r)), 15)
    by_id = {s["conversation_id"]: s for s in scores_of(scores.records)}
    assert {huge, many, deep, cycle} <= set(by_id)
    assert by_id[many]["incomplete"] is True
    # spans past the cap are dropped (or, once the capped conversation went idle, counted late) — never kept
    assert a.dropped_spans + a.late_spans - before == 100_000 - MAX_SPANS
    assert all(
        len(r.value) < 100_000 for r in scores.records if json.loads(r.value)["conversation_id"] == huge
    )
    assert svc.service.assembler.stats.open_conversations == 0
    assert svc.thread.is_alive()


def test_an_attribute_of_an_unexpected_shape_or_a_failing_rebuild_is_that_conversations_alone(
    running, monkeypatch
):
    """`gen_ai.operation.name` sent as an array stopped the collector with a TypeError on every start (its
    offsets never committed past that span). The conversation is scored; and whatever else fails while a
    conversation is rebuilt is published unscored with the error as its reason, the collector going on."""
    from agentwatch.collector import service as collector_service

    bs, topic, svc, scores, _ = running
    listed, failing = unique("listed"), unique("failing")
    data = _raw_spans(listed, 2, parent=lambda i: None if i == 0 else 0, trace=b"\x03" * 16)
    name = KeyValue(key="gen_ai.operation.name")
    name.value.array_value.values.add().string_value = "invoke_agent"
    data.resource_spans[0].scope_spans[0].spans[0].attributes.append(name)
    real = collector_service.setup_only

    def fails_for_one(spans):
        if any(s.conversation_id == failing for s in spans):
            raise RuntimeError("a bug in rebuilding")
        return real(spans)

    monkeypatch.setattr(collector_service, "setup_only", fails_for_one)
    items = [
        (listed.encode(), data.SerializeToString(), SDK_HEADERS),
        (failing.encode(), otlp_bytes(simple_conversation(failing)), SDK_HEADERS),
    ]
    _send_then_sentinel(bs, topic, items, scores)
    scores.wait(lambda r: {listed, failing} <= set(ids_of(r)), 15)
    by_id = {s["conversation_id"]: s for s in scores_of(scores.records)}
    assert {listed, failing} <= set(by_id)
    assert by_id[failing]["outcome"] == "unscored"
    assert any(
        r.startswith("reconstruct_error: RuntimeError: a bug in rebuilding")
        for r in by_id[failing]["reasons"]
    )
    assert svc.thread.is_alive()


def _must_be_rejected(payload: bytes) -> bool:
    """Independent oracle: not JSON and no protobuf span with well-formed ids → must be dead-lettered."""
    try:
        json.loads(payload)
        return False
    except ValueError:
        pass
    try:
        data = TracesData.FromString(payload)
    except Exception:  # noqa: BLE001 - any parse failure
        return True
    for rs in data.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                if len(span.trace_id) == 16 and len(span.span_id) == 8:
                    return False
    return True


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(payloads=st.lists(st.binary(max_size=2048), min_size=1, max_size=20))
def test_random_payloads_never_stop_the_collector(running, payloads):
    bs, topic, _, scores, dlq = running
    prefix = unique("h").encode()
    items = [(prefix + b"-%d" % i, p, None) for i, p in enumerate(payloads)]
    _send_then_sentinel(bs, topic, items, scores)
    must = {k for k, v, _ in items if _must_be_rejected(v)}
    letters = _dead_letters(dlq, must, timeout_s=5)
    assert must <= set(letters)
    for headers in letters.values():
        assert headers[REASON_HEADER]


def test_a_score_no_json_writer_takes_is_published_unscored_and_the_collector_goes_on(broker):
    """A custom scorer (user code) returning a score that holds a value no JSON writer takes (a lone surrogate)
    stopped the collector, and again on the same message at every restart; the score is published unscored
    with a `writer_error` reason and the next conversation is scored."""
    from agentwatch.scorers import ConversationScorer

    bs = broker.bootstrap_servers
    topic = unique("unwritable")
    create_topic(bs, topic, 1)
    cfg = collector_settings(bs, [topic], unique("unwritable"))
    real = ConversationScorer(cfg)

    def score(conv):
        result = real.score(conv)
        if conv.conversation_id.startswith("unwritable"):
            result.reasons.append("custom: half \ud800 of a pair")
        return result

    scores = TopicReader(bs, cfg.collector.scores_topic)
    bad = unique("unwritable")
    with ServiceThread(cfg, scorer=score) as svc:
        p = producer(bs)
        p.send(topic, value=otlp_bytes(simple_conversation(bad)), key=bad.encode(), headers=SDK_HEADERS)
        p.flush()
        p.close()
        _send_then_sentinel(bs, topic, [], scores)
        assert svc.error is None
    (written,) = [s for s in scores_of(scores.records) if s["conversation_id"] == bad]
    assert written["outcome"] == "unscored" and written["reasons"][0].startswith("writer_error: ")
    scores.close()


def _failing_turns_scored(bs: str, topic: str, cfg: Settings) -> tuple[Record, dict, ConversationScore]:
    """A conversation of 400 turns, each a tool failing with a 200-character error, sent to `topic` of a running
    collector: its score record, that record's JSON, and the score it has whole."""
    big = unique("big")
    turns = [
        TurnSpec(
            user=f"q{i}",
            answer=f"a{i}",
            tools=[ToolSpec("lookup", {"i": i}, None, error="TimeoutError: " + "e" * 200)],
            start_ns=i * 1_000_000,
        )
        for i in range(400)
    ]
    payload = otlp_bytes(conversation_spans(big, turns))
    scores = TopicReader(bs, cfg.collector.scores_topic)
    with ServiceThread(cfg) as svc:
        p = producer(bs)
        p.send(topic, value=payload, key=big.encode(), headers=SDK_HEADERS)
        p.flush()
        p.close()
        _send_then_sentinel(bs, topic, [], scores)
        assert svc.error is None
    (record,) = [r for r in scores.records if json.loads(r.value)["conversation_id"] == big]
    scores.close()
    whole = ConversationScorer(cfg).score(
        build_conversation(decode_message(payload, "application/x-protobuf"))
    )
    return record, json.loads(record.value), whole


def _record_bytes(record: Record) -> int:
    return len(record.key or b"") + len(record.value) + sum(len(k) + len(v) for k, v in record.headers)


def test_a_score_past_the_record_limit_leaves_details_out_and_keeps_its_verdict(broker):
    """A conversation of 400 failing turns scored past `collector.max_score_bytes` (here 20,000; Kafka takes
    1,048,588 a record by default, and 5,000 turns failing with a one-line error scored 1.65 MB): the broker
    would refuse the record and the collector stop at every restart. The record fits, says what was left out,
    and keeps the verdict."""
    bs = broker.bootstrap_servers
    topic = unique("bigscore")
    create_topic(bs, topic, 1)
    cfg = collector_settings(bs, [topic], unique("bigscore"), max_score_bytes=20_000)
    record, written, whole = _failing_turns_scored(bs, topic, cfg)
    assert _record_bytes(record) <= 20_000
    (note,) = [r for r in written["reasons"] if r.startswith("note: the score was")]
    assert int(note.split()[4].replace(",", "")) > 20_000, note
    assert len(whole.model_dump_json()) > 20_000
    for field in ("turns", "passed", "outcome", "evidence", "cost_usd", "input_tokens"):
        assert written[field] == whole.model_dump(mode="json")[field], field


def test_a_scores_topic_taking_small_records_gets_scores_that_fit_it(broker) -> None:
    """The scores topic takes 30,000 bytes a record (its `max.message.bytes`) where `collector.max_score_bytes`
    is 1,000,000: the collector reads the topic's limit at start, and the score of 400 failing turns (57 kB
    whole) is written cut to fit the topic, its outcome, evidence and counts as scored whole."""
    bs = broker.bootstrap_servers
    topic, prefix = unique("limits-in"), unique("limits")
    create_topic(bs, topic, 1)
    create_topic(bs, f"{prefix}-scores", 1, {"max.message.bytes": "30000"})
    cfg = collector_settings(bs, [topic], prefix)
    assert cfg.collector.max_score_bytes == 1_000_000
    record, written, whole = _failing_turns_scored(bs, topic, cfg)
    assert _record_bytes(record) <= 30_000 - BATCH_ROOM
    assert any(r.startswith("note: the score was") for r in written["reasons"])
    assert len(whole.model_dump_json()) > 30_000
    for field in ("turns", "passed", "outcome", "evidence", "cost_usd", "input_tokens"):
        assert written[field] == whole.model_dump(mode="json")[field], field


def test_a_dead_letter_past_the_record_limit_is_sent_without_its_value(broker) -> None:
    """A message the broker took on its input topic, plus the dead letter's headers, can be more than it takes
    on the dead-letter topic (Kafka: 1,048,588 a record by default; here `max_dead_letter_bytes` 20,000): the
    record would be refused and the collector stop on the message at every restart. The dead letter is sent
    without the value, saying so, with the offset where the message still is; a small one is sent whole."""
    bs = broker.bootstrap_servers
    topic = unique("bigdead")
    create_topic(bs, topic, 1)
    cfg = collector_settings(bs, [topic], unique("bigdead"), max_dead_letter_bytes=20_000)
    scores = TopicReader(bs, cfg.collector.scores_topic)
    dead = TopicReader(bs, cfg.collector.dead_letter_topic)
    big, small = b"\xff" * 50_000, b"\xff" * 500
    with ServiceThread(cfg) as svc:
        _send_then_sentinel(bs, topic, [(b"big", big, None), (b"small", small, None)], scores)
        dead.wait(lambda r: {b"big", b"small"} <= {x.key for x in r}, 10)
        assert svc.error is None
    letters = {r.key: r for r in dead.records if r.key in (b"big", b"small")}
    scores.close()
    dead.close()
    assert letters[b"small"].value == small
    letter = letters[b"big"]
    headers = dict(letter.headers)
    assert letter.value == b"" and headers[OFFSET_HEADER] == b"0" and headers[TOPIC_HEADER] == topic.encode()
    assert b"value of 50000 bytes not forwarded" in headers[DETAIL_HEADER]
    assert len(letter.key or b"") + sum(len(k) + len(v) for k, v in letter.headers) <= 20_000


def test_a_flood_of_garbage_is_dead_lettered_whole_and_logged_a_few_lines_a_minute(broker, tmp_path) -> None:
    """300 unusable messages: each dead-lettered with its reason; the collector process (its command line's
    logging) logs 20 lines of that warning in the minute, not 300; every one is in the dead-letter topic and
    counted in its metrics."""
    bs = broker.bootstrap_servers
    topic = unique("garbage")
    create_topic(bs, topic, 1)
    settings = collector_settings(bs, [topic], unique("flood"))
    log_path = tmp_path / "collector.log"
    proc = start_collector_process(settings, str(log_path))
    dead = TopicReader(bs, settings.collector.dead_letter_topic)
    try:
        out = producer(bs)
        for i in range(300):
            out.send(topic, b"\x00not otlp %d" % i, key=b"k", headers=SDK_HEADERS)
        out.flush()
        dead.wait(lambda r: len(r) >= 300, 60)
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(20)
        dead.close()
    assert rc == 0 and len(dead.records) == 300
    assert {dict(r.headers)[REASON_HEADER] for r in dead.records} == {b"invalid_protobuf"}
    text = log_path.read_text()
    assert text.count(" dead letter ") == 20, text[-2000:]
    assert "collector stopped (clean)" in text
