"""Creating the topics the collector writes to and reads back, before it subscribes to them.

A topic that does not exist when the consumer subscribes is only picked up at the next metadata refresh
(minutes), and records produced to a topic being auto-created can sit unsent until they expire. Creating the
internal topics explicitly at start avoids both.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

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
