"""A consumer's error events: counted by name on /metrics, logged, raised when fatal — in every consuming service."""

from __future__ import annotations

import logging
import socket
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from agentwatch.collector.intake import Intake
from agentwatch.collector.metrics import PipelineStats, register
from agentwatch.config import CollectorConfig
from agentwatch.kafka.consumer_events import ConsumerEvents
from agentwatch.metrics_http import render_families


def _closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _refused(events: ConsumerEvents, within_s: float = 20.0) -> None:
    """Client-wide error events librdkafka itself reports to `events`: a consumer whose only broker refuses
    connections, polled until one arrives."""
    consumer = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{_closed_port()}",
            "group.id": "events",
            "reconnect.backoff.ms": 10,
            "reconnect.backoff.max.ms": 50,
            "error_cb": events.record,
            "log_level": 0,  # librdkafka's own lines about the refused connection are not the test's
        }
    )
    consumer.subscribe(["nowhere"])
    deadline = time.monotonic() + within_s
    try:
        while not events.counts() and time.monotonic() < deadline:
            consumer.consume(10, 0.2)
    finally:
        consumer.close()


def _samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = render_families(registry.collect())
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


def test_a_broker_that_refuses_connections_is_counted_by_error_name_and_logged(caplog) -> None:
    events = ConsumerEvents("agentwatch_consumer_errors", "input topic")
    with caplog.at_level(logging.WARNING, logger="agentwatch.kafka.consumer_events"):
        _refused(events)
    counts = events.counts()
    assert counts, "librdkafka reported no error for a broker that refuses connections"
    assert set(counts) <= {"_TRANSPORT", "_ALL_BROKERS_DOWN"}, counts
    assert len(caplog.records) == sum(counts.values())
    registry = CollectorRegistry()
    registry.register(events)
    got = _samples(registry)
    for name, n in counts.items():
        assert got[("agentwatch_consumer_errors_total", (("error", name),))] == n


def test_a_fatal_error_is_counted_and_raised() -> None:
    events = ConsumerEvents("agentwatch_exporter_consumer_errors", "scores topic")
    fenced = KafkaError(KafkaError.FENCED_INSTANCE_ID, "fenced by another member", fatal=True)
    with pytest.raises(KafkaException) as raised:
        events.record(fenced, "scores")
    assert raised.value.args[0].code() == KafkaError.FENCED_INSTANCE_ID
    assert events.counts() == {"FENCED_INSTANCE_ID": 1}


def test_a_topic_not_created_yet_is_counted_and_logged_as_information(caplog) -> None:
    events = ConsumerEvents("agentwatch_review_consumer_errors", "transcripts topic")
    with caplog.at_level(logging.INFO, logger="agentwatch.kafka.consumer_events"):
        events.record(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART), "transcripts")
    [line] = caplog.records
    assert line.levelno == logging.INFO
    assert line.getMessage() == "transcripts topic transcripts does not exist yet; consuming it once it does"
    assert events.counts() == {"UNKNOWN_TOPIC_OR_PART": 1}


class _EventMessage:
    """A consumer event as `consume` returns it: no record, an error."""

    def __init__(self, error: KafkaError) -> None:
        self._error = error

    def error(self) -> KafkaError:
        return self._error

    def topic(self) -> str:
        return "spans"


def test_the_collector_counts_its_consumer_events_and_the_demo_serves_both_services_on_one_endpoint() -> None:
    """The collector's intake hands error events to its `ConsumerEvents`, which `register` exposes; the exporter's
    family has another name, so one registry holding both (the demo's) renders two families, not one twice."""
    stats = PipelineStats()
    collector_events = ConsumerEvents("agentwatch_consumer_errors", "input topic")
    intake = Intake(CollectorConfig(), stats, None, None, None, None, None, None, collector_events)  # type: ignore[arg-type]
    for _ in range(3):
        intake.handle(_EventMessage(KafkaError(KafkaError._TRANSPORT)), 0.0)  # type: ignore[arg-type]
    assert stats.messages_consumed == 0  # an event is not a record

    class _Service:
        consumer_events = collector_events

    registry = CollectorRegistry()
    register(stats, registry, _Service())
    exporter_events = ConsumerEvents("agentwatch_exporter_consumer_errors", "scores topic")
    exporter_events.record(KafkaError(KafkaError._ALL_BROKERS_DOWN), None)
    registry.register(exporter_events)
    got = _samples(registry)
    assert got[("agentwatch_consumer_errors_total", (("error", "_TRANSPORT"),))] == 3
    assert got[("agentwatch_exporter_consumer_errors_total", (("error", "_ALL_BROKERS_DOWN"),))] == 1
