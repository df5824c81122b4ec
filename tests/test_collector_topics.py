"""Internal topics are created at start (real broker)."""

from agentwatch.collector.topics import ensure_topics
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
