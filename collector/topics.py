"""Creating the topics the collector writes to and reads back, before it subscribes to them.

A topic that does not exist when the consumer subscribes is only picked up at the next metadata refresh
(minutes), and records produced to a topic being auto-created can sit unsent until they expire. Creating the
internal topics explicitly at start avoids both.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError

log = logging.getLogger(__name__)


def ensure_topics(
    bootstrap_servers: str, topics: Iterable[str], partitions: int, replication_factor: int = -1,
    client_id: str = "agentwatch",
) -> list[str]:
    """Create the `topics` that do not exist yet; return the names created. Existing topics are left alone."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id=f"{client_id}-admin")
    try:
        existing = set(admin.list_topics())
        missing = [t for t in dict.fromkeys(topics) if t not in existing]
        created: list[str] = []
        for name in missing:  # one at a time: another instance may create the same topic concurrently
            try:
                admin.create_topics([NewTopic(name, partitions, replication_factor)])
                created.append(name)
            except TopicAlreadyExistsError:
                pass
        if created:
            log.info("created topics %s (%d partitions)", created, partitions)
        return created
    finally:
        admin.close()


def track_topics(producer: KafkaProducer, topics: Iterable[str]) -> None:
    """Make `producer` keep metadata for `topics` for its whole life.

    Works around a kafka-python 3.0 bug: a topic whose partitions are already known when it is first sent to
    (from the all-topics metadata of the bootstrap) is never added to the producer's tracked topics, so the
    next targeted metadata refresh drops it; from then on its batches wait for a leader that is never looked
    up, and expire after `delivery_timeout_ms`. Seen as "Expiring N record(s) ... 120000 ms has passed".
    """
    metadata = getattr(producer, "_metadata", None)
    for topic in dict.fromkeys(topics):
        if metadata is not None and hasattr(metadata, "add_topic"):
            metadata.add_topic(topic)
        producer.partitions_for(topic)
