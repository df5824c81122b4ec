"""The collector's shortcuts taken for speed against the plain computation they replace, on generated inputs."""

from __future__ import annotations

import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentwatch.collector.span_record import SpanRecord
from agentwatch.collector.span_size import SPAN_OVERHEAD, span_bytes, value_bytes

# --------------------------------------------------------------------------- the byte budget's estimate

_TEXT = st.text(max_size=20) | st.text("aé€😀", max_size=6)  # ASCII, Latin-1, 2- and 4-byte characters
_VALUE = st.recursive(
    _TEXT | st.integers(-(2**70), 2**70) | st.booleans() | st.floats() | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)


def _plain_span_bytes(span: SpanRecord) -> int:
    """The estimate as first written: `sys.getsizeof` of every key and value."""
    size = SPAN_OVERHEAD + len(span.name) + len(span.trace_id) + len(span.span_id)
    if span.status_error is not None:
        size += sys.getsizeof(span.status_error)
    for key, value in span.attrs.items():
        size += sys.getsizeof(key) + value_bytes(value)
    return size


@settings(max_examples=300, deadline=None)
@given(attrs=st.dictionaries(_TEXT, _VALUE, max_size=10), error=st.none() | _TEXT)
def test_span_bytes_is_the_sum_of_the_sizes_of_keys_and_values(
    attrs: dict[str, Any], error: str | None
) -> None:
    span = SpanRecord("t" * 32, "s" * 16, None, "chat", 1, 2, error, attrs)
    assert span_bytes(span) == _plain_span_bytes(span)


def test_span_bytes_takes_keys_that_are_not_strings() -> None:
    span = SpanRecord("t" * 32, "s" * 16, None, "chat", 1, 2, None, {7: "x", "k": [1, {"a": None}]})  # type: ignore[dict-item]
    assert span_bytes(span) == _plain_span_bytes(span)
