"""The collector publishes transcripts for review on a real broker: the review sample and flagged
conversations (with their first score, keyed by conversation id), revisions after late labels, nothing else;
an oversized transcript is cut, not refused."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from agentwatch.collector.metrics import PipelineStats
from agentwatch.config import SamplingConfig, SamplingRule
from agentwatch.wire.review_records import TranscriptRecord
from tests.support.collector_kafka import (
    ServiceThread,
    ToolSpec,
    TopicReader,
    TurnSpec,
    collector_settings,
    conversation_spans,
    otlp_bytes,
    producer,
    simple_conversation,
    unique,
)
from tests.support.review import get_stored

SDK_HEADERS = [("content-type", b"application/x-protobuf"), ("agentwatch-key", b"conversation")]

LATE_LABEL = r"""
import sys
from agentwatch.sdk import configure, conversation, shutdown

bootstrap, topic, cid = sys.argv[1:4]
configure("kafka", agent="support-bot", version="1.2.0", bootstrap_servers=bootstrap, topic=topic)
conversation.label("abandoned", conversation_id=cid)
shutdown()
"""


@pytest.mark.broker
def test_review_sample_and_flagged_transcripts_reach_the_topic(broker, topic, tmp_path) -> None:
    bs = broker.bootstrap_servers
    prefix = unique("feed")
    settings = collector_settings(
        bs, [topic], prefix, transcripts_topic=f"{prefix}-transcripts", max_transcript_bytes=20_000
    )
    # refunds: every conversation in the review sample; smalltalk: none
    settings.sampling = SamplingConfig(rules=[SamplingRule(task="refunds", review_rate=1.0)])
    sampled, flagged, plain, big = unique("sampled"), unique("flagged"), unique("plain"), unique("big")
    failing = unique(
        "failing"
    )  # outside the review sample, not flagged: it failed (a refund expected, none made)
    spans = [
        *simple_conversation(sampled, turns=2, task="refunds"),
        *simple_conversation(flagged, task="smalltalk", extra={"agentwatch.outcome": "abandoned"}),
        *simple_conversation(plain, task="smalltalk"),
        *conversation_spans(
            big,
            [
                TurnSpec(
                    user="x" * 30_000,
                    answer="ok",
                    tools=[ToolSpec("search", {"q": "y" * 100}, {"hits": ["z" * 20_000]})],
                )
            ],
            task="refunds",
        ),
        *conversation_spans(
            failing,
            [
                TurnSpec(
                    user="refund order 42",
                    answer="done",
                    tools=[ToolSpec("lookup_order", {"order_id": 42}, {"status": "shipped"})],
                    expected={"tools": [{"name": "refund_order", "arguments": {"order_id": 42}}]},
                )
            ],
            task="smalltalk",
        ),
    ]
    out = producer(bs)
    out.send(topic, otlp_bytes(spans), key=b"batch", headers=SDK_HEADERS)
    out.flush()
    assert settings.collector.transcripts_topic is not None
    reader = TopicReader(bs, settings.collector.transcripts_topic)
    with ServiceThread(settings) as svc:
        records = reader.wait(lambda r: len(r) >= 4, 30)
        assert len(records) == 4, [r.key for r in records]
        run = subprocess.run(
            [sys.executable, "-c", LATE_LABEL, bs, topic, sampled],
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert run.returncode == 0, run.stderr.decode()[-2000:]
        records = reader.wait(lambda r: len(r) >= 5, 30)
        assert svc.error is None
        stats = svc.service.stats
    reader.close()
    by_key: dict[str, list[TranscriptRecord]] = {}
    for r in records:
        assert r.key is not None
        by_key.setdefault(r.key.decode(), []).append(TranscriptRecord.model_validate_json(r.value))
    assert set(by_key) == {
        sampled,
        flagged,
        big,
        failing,
    }  # the one that passed outside both is not published
    (f_rec,) = by_key[failing]
    assert (f_rec.kind, f_rec.sample, f_rec.score.passed) == ("transcript", "failing", False)
    first, revision = by_key[sampled]
    assert (first.kind, first.sample, first.score.revision, first.score.review_sampled) == (
        "transcript",
        "review_sample",
        0,
        True,
    )
    assert first.conversation is not None
    assert [t.input for t in first.conversation.turns] == ["question 0", "question 1"]
    call = first.conversation.turns[0].tool_calls[0]
    assert (call.name, call.arguments, call.result) == (
        "lookup_order",
        {"order_id": 42},
        {"status": "refunded"},
    )
    assert revision.score.label is not None
    assert (revision.kind, revision.conversation, revision.score.revision, revision.score.label.value) == (
        "revision",
        None,
        1,
        "abandoned",
    )
    (f,) = by_key[flagged]
    assert f.score.label is not None
    assert (f.kind, f.sample, f.score.label.value, f.score.review_sampled) == (
        "transcript",
        "flagged",
        "abandoned",
        False,
    )
    (b,) = by_key[big]
    size = len(next(r.value for r in records if r.key is not None and r.key.decode() == big))
    assert size <= 20_000
    assert b.conversation is not None
    turn = b.conversation.turns[0]
    assert turn.input is not None
    assert turn.input.startswith("x" * 4000) and "characters cut" in turn.input and len(turn.input) < 4100
    assert any("over the 20,000-byte limit" in n for n in b.conversation.notes)
    assert json.loads(json.dumps(turn.tool_calls[0].result))  # still a JSON value
    assert stats.transcripts_published == {"review_sample": 3, "flagged": 1, "failing": 1}
    assert stats.transcripts_cut == 1
    # the review store takes the collector's records as they come: three transcripts, then the revision (the
    # spans ended in 2023: no retention here)
    from agentwatch.review.store import Store

    store = Store(f"sqlite:///{tmp_path / 'review.db'}")
    parsed = [TranscriptRecord.model_validate_json(r.value) for r in records]
    results = [store.ingest(record, time.time(), 1e10) for record in parsed]
    assert sorted(results) == ["revised", "stored", "stored", "stored", "stored"]
    stored = [get_stored(store, i.id) for i in store.queue()[0]]
    latest = {c.conversation_id: c.latest_score for c in stored}
    label = latest[sampled].label
    assert label is not None and (latest[sampled].revision, label.value) == (1, "abandoned")


def _run_until(settings, *, scores: int, transcripts: int) -> tuple[list, list, PipelineStats]:
    """Run a collector until `scores` scores and `transcripts` transcript records are out, and a second more
    (nothing else is to come); the scores, the transcript records and its counters."""
    bs = settings.kafka.bootstrap_servers
    assert settings.collector.transcripts_topic is not None
    reader = TopicReader(bs, settings.collector.transcripts_topic)
    out = TopicReader(bs, settings.collector.scores_topic)
    with ServiceThread(settings) as svc:
        scored = out.wait(lambda r: len(r) >= scores, 30)
        records = reader.wait(lambda r: len(r) >= transcripts, 30)
        time.sleep(1.0)
        records = reader.wait(lambda r: len(r) > transcripts, 0.5)
        assert svc.error is None
        stats = svc.service.stats
    reader.close()
    out.close()
    return scored, records, stats


@pytest.mark.broker
def test_an_incident_sends_the_first_failing_transcripts_of_each_series_a_minute(broker, topic) -> None:
    """Every conversation of a series failing (its agent broke) sent a transcript each to the topic and the
    review store; at most `collector.failing_transcripts_per_minute` a minute of end time per series are sent,
    the rest counted."""
    bs = broker.bootstrap_servers
    prefix = unique("incident")
    settings = collector_settings(
        bs, [topic], prefix, transcripts_topic=f"{prefix}-transcripts", failing_transcripts_per_minute=2
    )
    refund_not_made = {"tools": [{"name": "refund_order", "arguments": {"order_id": 42}}]}

    def failing(cid: str, task: str) -> list:
        turn = TurnSpec(
            user="refund order 42",
            answer="done",
            tools=[ToolSpec("lookup_order", {"order_id": 42}, {"status": "shipped"})],
            expected=refund_not_made,
        )
        return conversation_spans(cid, [turn], task=task)  # all end in the same minute

    refunds = [unique(f"refunds{i}") for i in range(5)]
    orders = unique("orders")
    out = producer(bs)
    for cid in refunds:
        out.send(topic, otlp_bytes(failing(cid, "refunds")), key=cid.encode(), headers=SDK_HEADERS)
    out.send(topic, otlp_bytes(failing(orders, "orders")), key=orders.encode(), headers=SDK_HEADERS)
    out.flush()
    scored, records, stats = _run_until(settings, scores=6, transcripts=3)
    assert (
        len(scored) == 6 and len(records) == 3
    )  # every conversation scored: the alerts' figures count them all
    sent = [TranscriptRecord.model_validate_json(r.value) for r in records]
    assert all(r.sample == "failing" and r.score.passed is False for r in sent)
    by_task = sorted(r.score.task for r in sent)
    assert by_task == ["orders", "refunds", "refunds"]
    assert stats.transcripts_published == {"failing": 3} and stats.transcripts_skipped == 3


@pytest.mark.broker
def test_a_transcript_with_a_long_conversation_id_fits_the_broker(broker, topic) -> None:
    """The record's key is the conversation id (up to `max_attribute_bytes` characters): a transcript of 991,164
    bytes, under `max_transcript_bytes` and so sent whole, with a 60,014-byte key made a record past the bound
    and Kafka's default limit (1,048,588 bytes a record; Tansu has none), so the broker would refuse it and the
    collector stop, on the same message at every restart. The key and headers count in the bound."""
    bs = broker.bootstrap_servers
    prefix = unique("longid")
    settings = collector_settings(bs, [topic], prefix, transcripts_topic=f"{prefix}-transcripts")
    settings.sampling = SamplingConfig(rules=[SamplingRule(review_rate=1.0)])
    cid = unique("c") + "x" * 60_000
    tools = [ToolSpec("lookup", {"q": i}, {"text": f"{i} " + "y" * 62_000}) for i in range(14)]
    spans = conversation_spans(cid, [TurnSpec(user="find it", answer="found", tools=tools)])
    out = producer(bs)
    out.send(topic, otlp_bytes(spans), key=b"batch", headers=SDK_HEADERS)
    out.flush()
    scored, records, _ = _run_until(settings, scores=1, transcripts=1)
    assert len(scored) == 1 and len(records) == 1
    (record,) = records
    assert record.key is not None and record.key.decode() == cid
    size = len(record.key) + len(record.value) + sum(len(k) + len(v) for k, v in record.headers)
    assert size <= settings.collector.max_transcript_bytes
    sent = TranscriptRecord.model_validate_json(record.value)
    assert sent.conversation is not None and any("limit" in n for n in sent.conversation.notes)
