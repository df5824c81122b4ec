"""Creating the topics the collector writes to and reads back, before it subscribes to them.

A topic that does not exist when the consumer subscribes is only picked up at the next metadata refresh, and
records produced to a topic being auto-created can sit unsent until it appears. Creating the internal topics
explicitly at start avoids both.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

log = logging.getLogger(__name__)

_TIMEOUT_S = 10.0  # a collector that cannot reach Kafka at start says so, instead of hanging


def ensure_topics(
    bootstrap_servers: str,
    topics: Iterable[str],
    partitions: int,
    replication_factor: int = -1,
    client_id: str = "agentwatch",
) -> list[str]:
    """Create the `topics` that do not exist yet; return the names created. Existing topics are left alone."""
    admin = AdminClient(
        {"bootstrap.servers": bootstrap_servers, "client.id": f"{client_id}-admin"}, logger=log
    )
    existing = set(admin.list_topics(timeout=_TIMEOUT_S).topics)
    missing = [t for t in dict.fromkeys(topics) if t not in existing]
    created: list[str] = []
    for name in missing:  # one at a time: another instance may create the same topic concurrently
        future = admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=replication_factor)],
            operation_timeout=_TIMEOUT_S,
        )[name]
        try:
            future.result(timeout=_TIMEOUT_S)
            created.append(name)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    if created:
        log.info("created topics %s (%d partitions)", created, partitions)
    return created
