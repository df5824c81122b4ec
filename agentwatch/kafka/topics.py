"""Creating the topics the collector writes to and reads back, before it subscribes to them.

A topic that does not exist when the consumer subscribes is only picked up at the next metadata refresh, and
records produced to a topic being auto-created can sit unsent until it appears. Creating the internal topics
explicitly at start avoids both.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from agentwatch.kafka.admin import TIMEOUT_S, reach
from agentwatch.kafka.security import KafkaSecurity

log = logging.getLogger(__name__)


def ensure_topics(
    bootstrap_servers: str,
    topics: Iterable[str],
    partitions: int,
    replication_factor: int = -1,
    client_id: str = "agentwatch",
    security: KafkaSecurity | None = None,
) -> list[str]:
    """Create the `topics` that do not exist yet; return the names created. Existing topics are left alone.

    Raises KafkaSecurityError (naming the setting) when the broker refuses the credentials or certificates.
    """
    admin, metadata = reach(bootstrap_servers, security or KafkaSecurity(), f"{client_id}-admin")
    existing = set(metadata.topics)
    missing = [t for t in dict.fromkeys(topics) if t not in existing]
    created: list[str] = []
    for name in missing:  # one at a time: another instance may create the same topic concurrently
        future = admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=replication_factor)],
            operation_timeout=TIMEOUT_S,
        )[name]
        try:
            future.result(timeout=TIMEOUT_S)
            created.append(name)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    if created:
        log.info("created topics %s (%d partitions)", created, partitions)
    return created


def ensure_pipeline_topics(settings: Any) -> list[str]:
    """Create the topics the collector reads and writes (`Settings`: its `kafka` and `collector` sections)."""
    c, kafka = settings.collector, settings.kafka
    return ensure_topics(
        kafka.bootstrap_servers,
        [
            *c.input_topics,
            *c.log_topics,
            c.rekey_topic,
            c.scores_topic,
            c.dead_letter_topic,  # consumed at once
            *([c.transcripts_topic] if c.transcripts_topic else []),
        ],
        partitions=c.topic_partitions,
        replication_factor=c.topic_replication_factor,
        client_id=kafka.client_id,
        security=KafkaSecurity.from_config(kafka),
    )
