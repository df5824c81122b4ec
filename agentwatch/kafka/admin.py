"""Reaching Kafka from a service at start: one clear error naming the setting, instead of retrying for ever.

librdkafka retries a refused login or certificate silently (the consumer for ever, an admin call until its
timeout). Both services open an admin client first and ask for the cluster's metadata: an authentication or
TLS error reported meanwhile ends the wait at once with a `KafkaSecurityError` that names the setting to fix.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ClusterMetadata

from agentwatch.kafka.security import KafkaSecurity

# librdkafka's own lines for the admin client (one per failed connection attempt while the probe retries): the
# probe ends in one exception that says what failed, so they are kept out of the service's log.
_client_log = logging.getLogger(f"{__name__}.librdkafka")
_client_log.setLevel(logging.CRITICAL)

TIMEOUT_S = 10.0  # a service that cannot reach Kafka at start says so, instead of hanging


def reach(
    bootstrap_servers: str, security: KafkaSecurity, client_id: str, timeout_s: float = TIMEOUT_S
) -> tuple[AdminClient, ClusterMetadata]:
    """An admin client that has reached the cluster, with the cluster's metadata.

    Raises KafkaSecurityError (naming the setting) when the broker refuses the credentials or certificates,
    KafkaException when the cluster cannot be reached within `timeout_s`.
    """
    errors: list[KafkaError] = []
    # librdkafka takes its callbacks in the same mapping as its settings (the stubs know only the settings).
    config: dict[str, Any] = {
        **security.client_settings("librdkafka", bootstrap_servers, client_id),
        "error_cb": errors.append,
    }
    admin = AdminClient(config, logger=_client_log)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return admin, admin.list_topics(timeout=min(0.5, max(0.05, deadline - time.monotonic())))
        except KafkaException as exc:
            admin.poll(0)  # serve error_cb
            for err in errors:
                text = err.str()
                refused = (
                    err.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL)
                    or "SASL" in text
                    or "alert number" in text.lower()
                )  # a TLS alert from the broker, e.g. certificate required
                found = security.diagnose_connection([text], bootstrap_servers) if refused else None
                if found is not None:
                    raise found from None
            if time.monotonic() >= deadline:
                messages = [e.str() for e in errors]
                found = (
                    security.diagnose_connection(messages, bootstrap_servers)
                    if security.protocol != "PLAINTEXT"
                    else None
                )
                if found is not None:
                    raise found from None
                error = exc.args[0]
                raise KafkaException(
                    KafkaError(error.code(), f"not reachable within {timeout_s:g} s ({error.str()})")
                ) from None
