"""Internal topics are created at start; input topics may appear after it (real broker)."""

import json
import logging
import time

import pytest
from agentwatch.collector.topics import ensure_topics
from collector_kafka_helpers import (
    SDK_HEADERS,
    ServiceThread,
    TopicReader,
    collector_settings,
    create_topic,
    otlp_bytes,
    producer,
    simple_conversation,
    unique,
)
from kafka.admin import KafkaAdminClient

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


def test_input_topic_created_after_start_is_consumed_without_a_warning(broker, topic, caplog):
    """Subscribed before its input topic exists (an agent not yet run): one INFO line, then the topic's spans
    are scored once the first producer creates it."""
    bs = broker.bootstrap_servers
    settings = collector_settings(bs, [topic], unique("late-topic"))
    reader = TopicReader(bs, settings.collector.scores_topic)
    with caplog.at_level(logging.INFO, logger="agentwatch.collector.service"), ServiceThread(settings) as svc:
        deadline = time.monotonic() + 30
        while "does not exist yet" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.1)
        create_topic(bs, topic, 1)
        cid = unique("conv")
        p = producer(bs)
        p.send(topic, value=otlp_bytes(simple_conversation(cid)), key=cid.encode(), headers=SDK_HEADERS)
        p.flush()
        records = reader.wait(lambda r: len(r) >= 1, 60)
        assert svc.error is None
    reader.close()
    assert [json.loads(r.value)["conversation_id"] for r in records] == [cid]
    service_lines = [r for r in caplog.records if r.name == "agentwatch.collector.service"]
    assert any(f"input topic {topic} does not exist yet" in r.getMessage() for r in service_lines)
    assert [r.getMessage() for r in service_lines if r.levelno >= logging.WARNING] == []
