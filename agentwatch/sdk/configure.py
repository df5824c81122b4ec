"""`configure` and `shutdown`: wire the SDK into a TracerProvider (a new one, or the application's own).

Settings come from the arguments, else `AGENTWATCH_*` environment variables, else defaults. Our processors are
installed on a provider once, inside a `ProcessorGroup`, so a later `configure` call replaces them instead
of adding duplicates.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace as otel_trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter

from agentwatch.sdk.capture import MIN_ATTRIBUTE_BYTES, Capture, capture_settings_from_env
from agentwatch.sdk.kafka_exporter import DEFAULT_TOPIC, KafkaSpanExporter
from agentwatch.sdk.kafka_producer import checked_compression
from agentwatch.sdk.lenient import read_name
from agentwatch.sdk.processor import ConversationSpanProcessor, ProcessorGroup
from agentwatch.sdk.runtime import RUNTIME, TRACER_NAME

log = logging.getLogger(__name__)

EXPORTERS = ("kafka", "otlp", "console", "memory", "none")


@dataclass(slots=True)
class Instrumentation:
    """What `configure` set up."""

    tracer_provider: TracerProvider
    exporter: SpanExporter | None
    owns_provider: bool


_GROUPS: weakref.WeakKeyDictionary[TracerProvider, ProcessorGroup] = weakref.WeakKeyDictionary()
_ACTIVE: Instrumentation | None = None
_CONFIGURE_LOCK = threading.Lock()


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    return value.strip() if value and value.strip() else None


# opentelemetry-python sends grpc or http/protobuf; http/json (an OTel value) is sent as http/protobuf, as before
OTLP_PROTOCOLS = ("grpc", "http/protobuf", "http/json")


def _checked(
    argument: str, given: str | None, variable: str, problem: Callable[[str], str | None]
) -> str | None:
    """The argument, else the variable, else None; a ValueError naming where a bad value came from (at
    configure, not as every span dropped later)."""
    value, source = (given, argument) if given else (_env(variable), variable)
    if not value:
        return None
    why = problem(value)
    if why is not None:
        raise ValueError(f"{source}: {why}")
    return value


def _bad_servers(value: str) -> str | None:
    for server in value.split(","):
        host, sep, port = server.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            return f"{server.strip()!r} is not host:port (a port from 1 to 65535)"
    return None


def _bad_compression(value: str) -> str | None:
    try:
        checked_compression(value)
    except ValueError as exc:
        return str(exc)
    return None


def _check_capture_arguments(
    capture_content: object, max_attribute_bytes: object, redact_values: object, redact_patterns: object
) -> None:
    """A ValueError naming a capture argument `configure` would misread: `capture_content="false"` turned
    capture on, a size under 64 was made 64 without a word, and a pattern given as one string was read as
    one pattern per character."""
    for name, flag in (("capture_content", capture_content), ("redact_values", redact_values)):
        if flag is not None and not isinstance(flag, bool):
            raise ValueError(f"{name} must be True, False or None, got {flag!r}")
    size = max_attribute_bytes
    if size is not None and (
        not isinstance(size, int) or isinstance(size, bool) or size < MIN_ATTRIBUTE_BYTES
    ):
        raise ValueError(
            f"max_attribute_bytes must be an integer of {MIN_ATTRIBUTE_BYTES} or more, got {size!r}"
        )
    if isinstance(redact_patterns, (str, bytes)):
        raise ValueError(
            f"redact_patterns must be a dict or a list of patterns, got the string {redact_patterns!r}"
        )


def _redact_keys(given: Iterable[str]) -> tuple[str, ...]:
    """The key words of `redact_keys`; a ValueError for one string (`"ssn"` was read as the words "s" and "n",
    and the SSN went out) or a word that is not a string."""
    if isinstance(given, (str, bytes)):
        raise ValueError(f"redact_keys must be a list of key words, got the string {given!r}")
    keys = tuple(given)
    for key in keys:
        if not isinstance(key, str):
            raise ValueError(f"redact_keys must hold strings, got {key!r}")
    return keys


def _make_exporter(
    kind: str,
    bootstrap_servers: str | None,
    topic: str | None,
    compression: str | None,
    otlp_endpoint: str | None,
    otlp_protocol: str | None,
    kafka_security: dict[str, Any] | None = None,
) -> SpanExporter | None:
    if kind == "kafka":
        given = _checked("bootstrap_servers", bootstrap_servers, "AGENTWATCH_BOOTSTRAP_SERVERS", _bad_servers)
        servers = given or "127.0.0.1:9092"
        codec = _checked("compression", compression, "AGENTWATCH_COMPRESSION", _bad_compression)
        return KafkaSpanExporter(
            bootstrap_servers=servers,
            topic=topic or _env("AGENTWATCH_SPANS_TOPIC") or DEFAULT_TOPIC,
            compression=None if codec in (None, "none") else codec,
            security=kafka_security,  # else AGENTWATCH_KAFKA_SECURITY_PROTOCOL, AGENTWATCH_KAFKA_SASL_USERNAME, ...
        )
    if kind == "otlp":
        protocol = "grpc"
        for name, value in (
            ("otlp_protocol", otlp_protocol),
            ("AGENTWATCH_OTLP_PROTOCOL", _env("AGENTWATCH_OTLP_PROTOCOL")),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", _env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", _env("OTEL_EXPORTER_OTLP_PROTOCOL")),
        ):
            if value:
                if value not in OTLP_PROTOCOLS:
                    raise ValueError(f"{name}: {value!r} is not one of {OTLP_PROTOCOLS}")
                protocol = value
                break
        endpoint = (
            otlp_endpoint or None
        )  # None: the exporter's own default and OTEL_EXPORTER_OTLP_* variables
        if protocol.startswith("http"):
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HTTPExporter

            return HTTPExporter(endpoint=endpoint)
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GRPCExporter

        return GRPCExporter(endpoint=endpoint)
    if kind == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if kind == "memory":
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        return InMemorySpanExporter()
    if kind == "none":
        return None
    raise ValueError(f"unknown exporter {kind!r}: expected one of {EXPORTERS} or a SpanExporter")


def configure(
    exporter: str | SpanExporter | None = None,
    *,
    agent: str | None = None,
    version: str | None = None,
    bootstrap_servers: str | None = None,
    topic: str | None = None,
    compression: str | None = None,
    otlp_endpoint: str | None = None,
    otlp_protocol: str | None = None,
    kafka_security: dict[str, Any] | None = None,
    capture_content: bool | None = None,
    max_attribute_bytes: int | None = None,
    redact_keys: Iterable[str] | None = None,
    redact_values: bool | None = None,
    redact_patterns: dict[str, str] | Iterable[str | re.Pattern[str]] | None = None,
    tracer_provider: TracerProvider | None = None,
    batch: bool = True,
    extra_processors: Iterable[SpanProcessor] = (),
) -> Instrumentation:
    """Set up tracing for `@trace` and `conversation`: our span processor plus one exporter.

    exporter: "kafka" (default), "otlp", "console", "memory", "none" or a SpanExporter instance. With
    `tracer_provider`, or when an SDK TracerProvider is already the global one, our processors are added to
    it; otherwise a new provider (resource `service.name`=agent, `service.version`=version) becomes global.
    kafka_security: TLS/SASL of the Kafka exporter, e.g. {"security_protocol": "SASL_SSL", "sasl_mechanism":
    "SCRAM-SHA-512", "sasl_username": ..., "sasl_password": ..., "ssl_ca_file": ...}; unset keys come from
    `AGENTWATCH_KAFKA_<KEY>` variables.
    redact_keys: key names whose values are redacted whole (default `DEFAULT_REDACT_KEYS`; the variable
    AGENTWATCH_REDACT_KEYS, comma-separated, replaces them, or adds to them when it starts with `+`).
    redact_values: search every captured string for secrets by their shape (default on; AGENTWATCH_REDACT_VALUES=0
    turns it off); redact_patterns: the regular expressions of that search (default `DEFAULT_VALUE_PATTERNS`).
    """
    global _ACTIVE
    agent = read_name("agent", agent or _env("AGENTWATCH_AGENT") or _env("OTEL_SERVICE_NAME"))
    version = read_name("version", version or _env("AGENTWATCH_AGENT_VERSION"))
    # what an argument does not say, from the variables; a bad value raises here
    _check_capture_arguments(capture_content, max_attribute_bytes, redact_values, redact_patterns)
    from_env = capture_settings_from_env(strict=True)
    # made before anything is installed: a bad pattern raised once the new processors had replaced the old ones
    capture = Capture(
        enabled=from_env["enabled"] if capture_content is None else capture_content,
        max_bytes=from_env["max_bytes"] if max_attribute_bytes is None else max_attribute_bytes,
        redact_keys=_redact_keys(from_env["redact_keys"] if redact_keys is None else redact_keys),
        redact_values=from_env["redact_values"] if redact_values is None else redact_values,
        value_patterns=redact_patterns,
    )

    if isinstance(exporter, SpanExporter):
        span_exporter: SpanExporter | None = exporter
    else:
        # AGENTWATCH_EXPORTER is also the service's `exporter` settings section: prefer AGENTWATCH_SPAN_EXPORTER.
        kind = (
            exporter or _env("AGENTWATCH_SPAN_EXPORTER") or _env("AGENTWATCH_EXPORTER") or "kafka"
        ).lower()
        if kind not in EXPORTERS:
            source = "exporter" if exporter else "AGENTWATCH_SPAN_EXPORTER (or AGENTWATCH_EXPORTER)"
            raise ValueError(
                f"{source}: unknown exporter {kind!r}: expected one of {EXPORTERS} or a SpanExporter"
            )
        span_exporter = _make_exporter(
            kind, bootstrap_servers, topic, compression, otlp_endpoint, otlp_protocol, kafka_security
        )

    # one at a time: eight threads configuring at once made eight TracerProviders, the spans of ours and of
    # other instrumentations going to different ones
    with _CONFIGURE_LOCK:
        provider, owns = _provider(tracer_provider, agent, version)
        processors: list[SpanProcessor] = [
            ConversationSpanProcessor(agent=agent, version=version),
            *extra_processors,
        ]
        if span_exporter is not None:
            processors.append(
                BatchSpanProcessor(span_exporter) if batch else SimpleSpanProcessor(span_exporter)
            )
        group = _GROUPS.get(provider)
        if group is None:
            group = _GROUPS[provider] = ProcessorGroup(processors, span_exporter)
            provider.add_span_processor(group)
        else:
            group.replace(processors, span_exporter)

        RUNTIME.tracer = provider.get_tracer(TRACER_NAME)
        RUNTIME.capture = capture
        RUNTIME.agent = agent
        RUNTIME.version = version
        _ACTIVE = Instrumentation(tracer_provider=provider, exporter=span_exporter, owns_provider=owns)
        return _ACTIVE


def _provider(
    given: TracerProvider | None, agent: str | None, version: str | None
) -> tuple[TracerProvider, bool]:
    if given is not None:
        return given, False
    current = otel_trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        log.info("agentwatch: adding its span processors to the existing TracerProvider")
        return current, False
    attrs: dict[str, Any] = {"service.name": agent or "unknown_agent"}
    if version:
        attrs["service.version"] = version
    provider = TracerProvider(resource=Resource.create(attrs))
    otel_trace.set_tracer_provider(provider)
    return provider, True


def shutdown(timeout_s: float = 5.0) -> None:
    """Flush and stop what `configure` set up (the whole provider if it created it, else only our processors).

    Queued spans are handed to the exporter, and the broker's acknowledgements awaited, within timeout_s; for
    what is still in flight then, the Kafka exporter waits up to its own `shutdown_timeout_s`.
    """
    global _ACTIVE
    active, _ACTIVE = _ACTIVE, None
    if active is None:
        return
    group = _GROUPS.get(active.tracer_provider)
    try:
        if group is not None:
            group.force_flush(int(timeout_s * 1000))
            group.replace([])
        if active.owns_provider:
            active.tracer_provider.shutdown()
    except Exception:
        log.exception("agentwatch: error during shutdown")
