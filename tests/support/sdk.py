"""Helpers shared by the SDK tests: an in-memory tracing set-up per test."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition
from opentelemetry.proto.trace.v1.trace_pb2 import Span, TracesData
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentwatch.sdk import configure, shutdown


@pytest.fixture
def sdk_provider() -> TracerProvider:
    """The TracerProvider of the `spans` fixture (other instrumentations' tracers come from it)."""
    return TracerProvider()


@pytest.fixture
def spans(sdk_provider: TracerProvider) -> Iterator[InMemorySpanExporter]:
    """A fresh TracerProvider with our processors and a SimpleSpanProcessor into memory."""
    exporter = InMemorySpanExporter()
    configure(exporter, tracer_provider=sdk_provider, batch=False, capture_content=True)
    yield exporter
    shutdown()


def by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    """Finished spans by name (names must be unique in the test)."""
    out: dict[str, ReadableSpan] = {}
    for span in exporter.get_finished_spans():
        assert span.name not in out, f"duplicate span name {span.name}"
        out[span.name] = span
    return out


def attr_json(span: ReadableSpan, key: str) -> Any:
    """A JSON attribute of a span, decoded."""
    value = (span.attributes or {})[key]
    assert isinstance(value, str)
    return json.loads(value)


def consume(bootstrap: str, topic: str, until, timeout_s: float = 30.0) -> list:
    """All records of topic (every partition, from the start) once until(records) holds, else on timeout."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest", enable_auto_commit=False
    )
    records: list = []
    try:
        deadline = time.monotonic() + timeout_s
        assigned = False
        while time.monotonic() < deadline:
            if not assigned:
                parts = consumer.partitions_for_topic(topic)
                if not parts:
                    time.sleep(0.2)
                    continue
                consumer.assign([TopicPartition(topic, p) for p in parts])
                assigned = True
            for batch in consumer.poll(timeout_ms=300).values():
                records.extend(batch)
            if until(records):
                break
    finally:
        consumer.close()
    return records


def decode(record) -> list[tuple[dict[str, str], Span]]:
    """(resource attributes, span) pairs of one OTLP TracesData message."""
    data = TracesData()
    data.ParseFromString(record.value)
    out: list[tuple[dict[str, str], Span]] = []
    for rs in data.resource_spans:
        resource = {kv.key: kv.value.string_value for kv in rs.resource.attributes}
        for ss in rs.scope_spans:
            out.extend((resource, span) for span in ss.spans)
    return out


def attrs_of(span) -> dict:
    out = {}
    for kv in span.attributes:
        v = kv.value
        out[kv.key] = getattr(v, v.WhichOneof("value"))
    return out


def count_spans(records) -> int:
    return sum(len(decode(r)) for r in records)
