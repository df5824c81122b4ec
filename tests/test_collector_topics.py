"""Internal topics are created at start and tracked by the producer for its whole life (real broker)."""

import time

from agentwatch.collector.topics import ensure_topics, track_topics
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient


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


def test_tracked_topic_survives_a_metadata_refresh(broker, topic):
    other = f"{topic}-other"
    ensure_topics(broker.bootstrap_servers, [topic, other], partitions=2)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    try:
        track_topics(producer, [other])  # the refresh below then asks for the tracked topics only
        track_topics(producer, [topic])
        producer.send(topic, b"y").get(timeout=10)
        # Untracked, the topic known only from the bootstrap's all-topics metadata vanishes on the next refresh
        # (kafka-python 3.0), and batches for it wait for a leader that is never looked up again.
        producer._metadata.request_update()
        time.sleep(0.5)
        assert producer._metadata.partitions_for_topic(topic) == {0, 1}
        producer.send(topic, b"z").get(timeout=10)
    finally:
        producer.close()
