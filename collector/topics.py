"""Creating the topics the collector writes to and reads back, before it subscribes to them.

A topic that does not exist when the consumer subscribes is only picked up at the next metadata refresh, and
records produced to a topic being auto-created can sit unsent until it appears. Creating the internal topics
explicitly at start avoids both.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ClusterMetadata, NewTopic

from agentwatch.kafka_security import KafkaSecurity

log = logging.getLogger(__name__)
# librdkafka's own lines for the admin client (one per failed connection attempt while the probe retries): the
# probe ends in one exception that says what failed, so they are kept out of the service's log.
_client_log = logging.getLogger(f"{__name__}.librdkafka")
_client_log.setLevel(logging.CRITICAL)

_TIMEOUT_S = 10.0  # a collector that cannot reach Kafka at start says so, instead of hanging


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
    security = security or KafkaSecurity()
    errors: list[KafkaError] = []
    admin = AdminClient(
        {
            "bootstrap.servers": bootstrap_servers,
            "client.id": f"{client_id}-admin",
            **security.librdkafka(),
            "error_cb": errors.append,
        },
        logger=_client_log,
    )
    existing = set(_probe(admin, errors, security, bootstrap_servers).topics)
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


def _probe(admin: AdminClient, errors: list[KafkaError], security: KafkaSecurity, where: str) -> ClusterMetadata:
    """`list_topics`, failing at once with KafkaSecurityError when librdkafka reports an authentication or TLS
    error (it would otherwise retry until the timeout, and the consumer forever)."""
    deadline = time.monotonic() + _TIMEOUT_S
    while True:
        try:
            return admin.list_topics(timeout=min(0.5, max(0.05, deadline - time.monotonic())))
        except KafkaException as exc:
            admin.poll(0)  # serve error_cb
            for err in errors:
                text = err.str()
                refused = (err.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL) or "SASL" in text
                           or "alert number" in text.lower())  # a TLS alert from the broker, e.g. certificate required
                found = security.diagnose_connection([text], where) if refused else None
                if found is not None:
                    raise found from None
            if time.monotonic() >= deadline:
                messages = [e.str() for e in errors]
                found = security.diagnose_connection(messages, where) if security.protocol != "PLAINTEXT" else None
                if found is not None:
                    raise found from None
                raise exc from None
