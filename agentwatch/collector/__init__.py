"""The collector: spans from Kafka to scored conversations (needs the `service` extra)."""

from agentwatch.service_extra import require

require(__name__)  # fails with the extra to install, before any service dependency is imported
