"""The instrumentation SDK: `@trace`, `conversation`, `configure`, `record_usage`, and the Kafka span exporter.

Runs inside the agent and is all `pip install agentwatch` installs: it imports only OpenTelemetry and, on the
first export to Kafka, the OTLP encoder and kafka-python; never the service packages.
"""

from agentwatch.sdk.configure import Instrumentation, configure, shutdown
from agentwatch.sdk.context import bind_context, conversation, current_conversation
from agentwatch.sdk.decorators import trace
from agentwatch.sdk.kafka_exporter import KafkaSpanExporter
from agentwatch.sdk.processor import ConversationSpanProcessor
from agentwatch.sdk.usage import record_usage

__all__ = [
    "ConversationSpanProcessor",
    "Instrumentation",
    "KafkaSpanExporter",
    "bind_context",
    "configure",
    "conversation",
    "current_conversation",
    "record_usage",
    "shutdown",
    "trace",
]
