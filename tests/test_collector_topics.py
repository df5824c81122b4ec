"""Internal topics are created at start and tracked by the producer for its whole life (real broker)."""

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient

from agentwatch.collector.topics import ensure_topics, track_topics


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


def test_tracked_topic_survives_a_targeted_metadata_refresh(broker, topic):
    ensure_topics(broker.bootstrap_servers, [topic, f"{topic}-other"], partitions=2)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    try:
        track_topics(producer, [topic])
        # A send to another topic triggers a refresh of the tracked topics only; ours must stay known.
        producer.send(f"{topic}-other", b"x").get(timeout=10)
        producer.send(topic, b"y").get(timeout=10)
        assert producer.partitions_for(topic) == {0, 1}
        assert topic in producer._metadata._topics  # the workaround's whole point (kafka-python 3.0 bug)
    finally:
        producer.close()
