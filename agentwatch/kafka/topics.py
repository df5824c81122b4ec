"""Creating the topics the collector writes to and reads back, before it subscribes to them.

A topic that does not exist when the consumer subscribes is only picked up at the next metadata refresh, and
records produced to a topic being auto-created can sit unsent until it appears. Creating the internal topics
explicitly at start avoids both. The largest record each topic takes (`max.message.bytes`) is read at start
too, so that the collector writes no record the broker would refuse (`agentwatch.collector.record_limits`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ClusterMetadata, ConfigResource, NewTopic

from agentwatch.kafka.admin import TIMEOUT_S, reach
from agentwatch.kafka.security import KafkaSecurity

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = "max.message.bytes"  # a topic's largest record; Kafka's default is the broker's 1,048,588


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
    return _create_missing(admin, metadata, topics, partitions, replication_factor)


def _create_missing(
    admin: AdminClient,
    metadata: ClusterMetadata,
    topics: Iterable[str],
    partitions: int,
    replication_factor: int,
) -> list[str]:
    """Create the `topics` the cluster's `metadata` does not list; the names created."""
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


def _pipeline_topics(settings: Any) -> list[str]:
    """The topics the collector reads and writes (`Settings`: its `collector` section)."""
    c = settings.collector
    return [
        *c.input_topics,
        *c.log_topics,
        c.rekey_topic,
        c.scores_topic,
        c.dead_letter_topic,  # consumed at once
        *([c.transcripts_topic] if c.transcripts_topic else []),
    ]


def ensure_pipeline_topics(settings: Any) -> tuple[list[str], dict[str, int]]:
    """Create the topics the collector reads and writes that do not exist yet (`Settings`: its `kafka` and
    `collector` sections), and read the largest record each takes: the names created, and `largest_records`."""
    c, kafka = settings.collector, settings.kafka
    admin, metadata = reach(
        kafka.bootstrap_servers, KafkaSecurity.from_config(kafka), f"{kafka.client_id}-admin"
    )
    topics = _pipeline_topics(settings)
    created = _create_missing(admin, metadata, topics, c.topic_partitions, c.topic_replication_factor)
    return created, largest_records(admin, topics)


def largest_records(
    admin: AdminClient, topics: Iterable[str], timeout_s: float = TIMEOUT_S
) -> dict[str, int]:
    """The largest record each topic takes (`max.message.bytes`), for the topics whose configuration the broker
    describes; a topic it does not (no such key, describing refused, no answer in time) is left out."""
    names = list(dict.fromkeys(topics))
    if not names:
        return {}
    try:
        futures = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, t) for t in names])
    except KafkaException as exc:
        log.warning("the broker's record limits not read (%s): the configured bounds are used", exc)
        return {}
    out: dict[str, int] = {}
    deadline = time.monotonic() + timeout_s  # one wait for all: a broker that never answers delays start once
    for resource, future in futures.items():
        try:
            entry = future.result(timeout=max(0.0, deadline - time.monotonic())).get(MAX_MESSAGE_BYTES)
        except Exception as exc:  # noqa: BLE001 - a broker without DescribeConfigs, or ACLs refusing it
            log.warning(
                "topic %s: its record limit not read (%s): the configured bounds are used", resource.name, exc
            )
            continue
        if entry is not None and entry.value is not None and str(entry.value).isdigit():
            out[resource.name] = int(entry.value)
    return out
