"""Collector service end to end against the real broker: agent spans in, every ConversationScore field out."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

import pytest

from agentwatch.collector.rekey import KEY_HEADER
from tests.support.collector_kafka import (
    SDK_HEADERS,
    ServiceThread,
    ToolSpec,
    TopicReader,
    TurnSpec,
    assert_refund_agent_score,
    collect_one_score,
    collector_settings,
    conversation_spans,
    create_topic,
    ids_of,
    otlp_bytes,
    otlp_json,
    producer,
    scores_of,
    simple_conversation,
    unique,
)

pytestmark = pytest.mark.broker

T0 = 1_763_000_000_000_000_000  # ns


def test_agent_conversation_end_to_end(broker, topic):
    """A two-turn conversation of an instrumented agent → broker → collector → one exact score."""
    bs = broker.bootstrap_servers
    cid = unique("conv")
    turns = [
        TurnSpec(
            user="Where is order 42?",
            answer="Order 42 has shipped; ETA 2026-11-25.",
            tools=[ToolSpec("lookup_order", {"order_id": 42}, {"status": "shipped", "eta": "2026-11-25"})],
            model="gpt-4o-mini",
            input_tokens=1200,
            output_tokens=80,
            expected={
                "tools": [{"name": "lookup_order", "arguments": {"order_id": 42}}],
                "reference_answer": "Order 42 has shipped; ETA 2026-11-25.",
            },
            start_ns=0,
            duration_ns=1_500_000_000,
        ),
        TurnSpec(
            user="Please refund it.",
            answer="Refunded 19.99 USD for order 42.",
            tools=[
                # the result must say something the agent did not already have: "refunded" (utilization ignores
                # values echoed from the call's arguments, such as the amount)
                ToolSpec("refund", {"order_id": 42, "amount": 19.99}, {"status": "refunded", "amount": 19.99})
            ],
            model="gpt-4o",
            input_tokens=2000,
            output_tokens=150,
            expected={
                "tools": [{"name": "refund", "arguments": {"order_id": 42, "amount": 19.99}}],
                "reference_answer": "Refunded 19.99 USD for order 42.",
            },
            start_ns=5_000_000_000,
            duration_ns=2_250_000_000,
        ),
    ]
    spans = conversation_spans(
        cid,
        turns,
        agent="support-bot",
        version="1.2.0",
        task="refunds",
        t0_ns=T0,
        extra={"agentwatch.budget.usd": 0.05, "agentwatch.tag.tier": "gold"},
    )
    p = producer(bs)
    p.send(topic, value=otlp_bytes(spans), key=cid.encode(), headers=SDK_HEADERS)
    p.flush()
    rec, stats = collect_one_score(bs, topic, "e2e")
    assert rec.key == b"support-bot|1.2.0|refunds"
    s = json.loads(rec.value)

    ended = datetime.fromtimestamp((T0 + 5_000_000_000 + 2_250_000_000) / 1e9, tz=UTC)
    assert_refund_agent_score(s, cid, duration_s=1.5 + 2.25, ended_at=ended)
    assert stats.spans_consumed == len(spans) == 2 * 3
    assert stats.scores_produced == 1
    assert stats.rejected_by_reason == {}


def test_otel_collector_format_is_rekeyed_and_reassembled(broker):
    """Batches of several traces, single spans, unkeyed and OTLP/JSON messages → the right conversations."""
    bs = broker.bootstrap_servers
    topic = unique("otlp_spans")
    create_topic(bs, topic, 4)
    rng = random.Random(7)
    convs = {unique("oc"): rng.randint(1, 3) for _ in range(9)}
    all_spans = {cid: simple_conversation(cid, turns=n, t0_ns=T0) for cid, n in convs.items()}
    flat = [(cid, s) for cid, spans in all_spans.items() for s in spans]
    rng.shuffle(flat)
    p = producer(bs)
    third = len(flat) // 3
    batches, singles, jsons = flat[:third], flat[third : 2 * third], flat[2 * third :]
    # 1) unkeyed protobuf batches holding spans of several traces and conversations
    for i in range(0, len(batches), 7):
        p.send(topic, value=otlp_bytes(s for _, s in batches[i : i + 7]))
    # 2) single spans keyed by trace id, as the Collector's kafka exporter does with partition_traces_by_id
    for _, s in singles:
        p.send(topic, value=otlp_bytes([s]), key=f"{s.context.trace_id:032x}".encode())
    # 3) OTLP/JSON, unkeyed, with and without a content-type header
    for j, (_, s) in enumerate(jsons):
        headers = [("content-type", b"application/json")] if j % 2 else None
        p.send(topic, value=otlp_json([s]), headers=headers)
    p.flush()
    sent_spans = sum(len(v) for v in all_spans.values())

    settings = collector_settings(bs, [topic], unique("otelfmt"))
    reader = TopicReader(bs, settings.collector.scores_topic)
    with ServiceThread(settings) as svc:
        records = reader.wait(lambda r: len(set(ids_of(r))) >= len(convs), 40)
        assert svc.error is None
    reader.close()
    by_id = {s["conversation_id"]: s for s in scores_of(records)}
    assert set(by_id) == set(convs)
    assert len(records) == len(convs)  # each conversation once: one consumer assembled it whole
    for cid, n in convs.items():
        score = by_id[cid]
        assert score["turns"] == n
        assert score["input_tokens"] == 100 * n
        assert score["output_tokens"] == 20 * n
        assert score["incomplete"] is False
    stats = svc.service.stats
    assert stats.spans_rekeyed == sent_spans
    assert stats.spans_consumed == 2 * sent_spans  # once from the input, once from the rekey topic
    # the rekey topic holds our-SDK-style messages: keyed by conversation id with the header; and, for the trace
    # join, one announcement per trace (keyed by trace id, the conversation id as value); every span here
    # carries its conversation id, so no span travels keyed by trace id
    rekeyed = TopicReader(bs, settings.collector.rekey_topic)
    recs = rekeyed.wait(lambda r: len(r) > 0, 5)
    rekeyed.close()
    assert recs
    modes = {dict(r.headers)[KEY_HEADER] for r in recs}
    assert modes == {b"conversation", b"trace-conversation"}
    for r in recs:
        assert r.key is not None
        if dict(r.headers)[KEY_HEADER] == b"conversation":
            assert r.key.decode() in convs
        else:
            assert r.value.decode() in convs and len(r.key) == 32


def test_collector_command_without_a_broker_exits_with_a_clear_error() -> None:
    from typer.testing import CliRunner

    from agentwatch.cli import app
    from agentwatch.kafka.broker import free_port

    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    result = CliRunner().invoke(app, ["collector", "--bootstrap-servers", address, "--input-topic", "spans"])
    assert result.exit_code == 1
    assert f"error: Kafka at {address}:" in result.output
    assert "Traceback" not in result.output
