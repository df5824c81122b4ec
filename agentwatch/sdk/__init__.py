"""The instrumentation SDK: `@trace`, `conversation`, `configure`, `record_usage`, and the Kafka span exporter.

Runs inside the agent: it imports only OpenTelemetry and (lazily, on the exporter's thread) kafka-python.
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
