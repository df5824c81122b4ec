"""Helpers shared by the SDK tests: an in-memory tracing set-up per test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentwatch.sdk import configure, shutdown


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """A fresh TracerProvider with our processors and a SimpleSpanProcessor into memory."""
    exporter = InMemorySpanExporter()
    configure(exporter, tracer_provider=TracerProvider(), batch=False, capture_content=True)
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
