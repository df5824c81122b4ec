"""What the broker says its topics take (`max.message.bytes`), and the collector refusing to start on a topic too small
for any record (its scores fitted to a small topic: `test_collector_bad_input.py`)."""

from __future__ import annotations

import pytest

from agentwatch.kafka.admin import reach
from agentwatch.kafka.security import KafkaSecurity
from agentwatch.kafka.topics import largest_records
from tests.support.collector_kafka import (
    collector_settings,
    create_topic,
    start_collector_process,
    unique,
)

pytestmark = pytest.mark.broker


def test_the_broker_describes_the_limit_a_topic_was_created_with(broker) -> None:
    bs = broker.bootstrap_servers
    small, plain = unique("limited"), unique("plain")
    create_topic(bs, small, 1, {"max.message.bytes": "40000"})
    create_topic(bs, plain, 1)
    admin, _ = reach(bs, KafkaSecurity(), "test-admin")
    found = largest_records(admin, [small, plain, small])
    assert found.get(small) == 40_000
    assert (
        found.get(plain, 1_048_588) >= 1_000_000
    )  # Tansu reports no limit it was not given; Kafka its default


def test_a_dead_letter_topic_too_small_for_any_record_stops_the_collector_at_start(broker, tmp_path) -> None:
    """`agentwatch collector` against a dead-letter topic taking 5,000 bytes a record: exit 2, one line naming
    the topic and the setting, before consuming anything."""
    bs = broker.bootstrap_servers
    topic, prefix = unique("tiny-in"), unique("tiny")
    create_topic(bs, topic, 1)
    create_topic(bs, f"{prefix}-dlq", 1, {"max.message.bytes": "5000"})
    log_path = tmp_path / "collector.log"
    process = start_collector_process(collector_settings(bs, [topic], prefix), str(log_path))
    try:
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    text = log_path.read_text()
    assert code == 2, text
    assert f"topic '{prefix}-dlq' takes records of at most 5,000 bytes" in text
    assert "collector.max_dead_letter_bytes" in text
