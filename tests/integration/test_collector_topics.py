"""Internal topics are created at start; input topics may appear after it (real broker)."""

import json
import logging
import time

import pytest
from kafka.admin import KafkaAdminClient

from agentwatch.kafka.topics import ensure_topics
from tests.support.collector_kafka import (
    SDK_HEADERS,
    ServiceThread,
    TopicReader,
    collector_settings,
    otlp_bytes,
    producer,
    simple_conversation,
    unique,
)

pytestmark = pytest.mark.broker


def test_ensure_topics_creates_missing_and_leaves_existing(broker, topic):
    first = ensure_topics(broker.bootstrap_servers, [topic, f"{topic}-b"], partitions=3)
    again = ensure_topics(broker.bootstrap_servers, [topic, f"{topic}-c"], partitions=5)
    assert sorted(first) == sorted([topic, f"{topic}-b"])
    assert again == [f"{topic}-c"]
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        described = {d["name"]: len(d["partitions"]) for d in admin.describe_topics([topic, f"{topic}-c"])}
    finally:
        admin.close()
    assert described == {topic: 3, f"{topic}-c": 5}


def test_missing_input_topic_is_created_at_start_and_consumed(broker, topic, caplog):
    """An input topic that does not exist yet (no agent has run) is created at start, so the first agent's
    spans are consumed at once, not after a metadata refresh; no warning is logged."""
    bs = broker.bootstrap_servers
    settings = collector_settings(bs, [topic], unique("late-topic"))
    reader = TopicReader(bs, settings.collector.scores_topic)
    with caplog.at_level(logging.INFO, logger="agentwatch"), ServiceThread(settings) as svc:
        deadline = time.monotonic() + 30
        while f"'{topic}'" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.1)
        admin = KafkaAdminClient(bootstrap_servers=bs)
        try:
            assert topic in admin.list_topics()
        finally:
            admin.close()
        cid = unique("conv")
        p = producer(bs)
        p.send(topic, value=otlp_bytes(simple_conversation(cid)), key=cid.encode(), headers=SDK_HEADERS)
        p.flush()
        records = reader.wait(lambda r: len(r) >= 1, 60)
        assert svc.error is None
    reader.close()
    assert [json.loads(r.value)["conversation_id"] for r in records] == [cid]
    lines = [r for r in caplog.records if r.name.startswith(("agentwatch.collector", "agentwatch.kafka"))]
    assert any("created topics" in r.getMessage() and topic in r.getMessage() for r in lines)
    assert [r.getMessage() for r in lines if r.levelno >= logging.WARNING] == []
