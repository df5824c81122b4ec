"""A consumer's error events: counted by name for /metrics, logged, and raised when fatal.

librdkafka reports what goes wrong outside a record in two ways: client-wide errors (a broker that cannot be
reached, every broker down, a group that fenced this member) to the consumer's `error_cb`, and errors of a
topic or partition (a topic not created yet) as messages whose `error()` is set. Without an `error_cb` the first
were only lines of librdkafka's log; logged alone, a broker that drops the
connection every few seconds showed only in logs that the log filter (`log_repeats`) thins; counted by name,
`agentwatch_consumer_errors_total{error="_TRANSPORT"}` (`agentwatch_exporter_…`, `agentwatch_review_…` in those
services) shows it on the dashboard.
A fatal error leaves the consumer unusable: it is raised, so the service stops and its supervisor restarts it,
rather than polling a dead consumer forever.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

from confluent_kafka import KafkaError, KafkaException
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)


class ConsumerEvents(Collector):
    """Counts a consumer's error events by librdkafka name, as the counter `metric` (`…_total{error}`)."""

    def __init__(self, metric: str, topics: str) -> None:
        # one name per service: the demo serves the collector's and the exporter's metrics on one endpoint
        self._metric = metric
        self._topics = topics  # what the consumer reads, as log lines name it ("input topic", "scores topic")
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def record(self, error: KafkaError, topic: str | None = None) -> None:
        """Count and log one error event (a consumer's `error_cb`, or a message whose `error()` is set); raises
        KafkaException when it is fatal."""
        name = error.name()
        with self._lock:
            self._counts[name] = self._counts.get(name, 0) + 1
        if error.fatal():
            raise KafkaException(error)
        if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:  # its first producer creates it: not a fault
            log.info("%s %s does not exist yet; consuming it once it does", self._topics, topic)
        else:
            log.warning("consumer: %s", error)

    def counts(self) -> dict[str, int]:
        """Error events so far, by name."""
        with self._lock:
            return dict(self._counts)

    def collect(self) -> Iterator[Metric]:
        """The counter family, one sample per error name seen."""
        family = CounterMetricFamily(
            self._metric,
            "Error events the Kafka consumer reported, by librdkafka error name (_TRANSPORT: a broker "
            "connection failed; UNKNOWN_TOPIC_OR_PART: a topic not created yet); a fatal one stops the service.",
            labels=["error"],
        )
        for name, n in sorted(self.counts().items()):
            family.add_metric([name], n)
        yield family
