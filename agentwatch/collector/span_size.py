"""What a decoded span costs in memory: the figure the collector's byte budgets count.

Counted from the decoded content: the interpreter's size of every attribute value (strings by their own
`sys.getsizeof`, so a non-ASCII string counts 2 or 4 bytes a character, as it is stored), nested lists and maps
of array attributes item by item, the span's name and ids, plus a fixed share for the record and its maps. The
estimate is checked against tracemalloc by `benchmarks/collector_memory.py` (it is slightly above it: a
budget counted with it is not exceeded by the spans it counts).
"""

from __future__ import annotations

import sys
from typing import Any

from agentwatch.collector.span_record import SpanRecord

# the SpanRecord (slots), its attrs dict, the ids' and name's str headers and the assembler's entry for it
SPAN_OVERHEAD = 640
_getsizeof = sys.getsizeof
# `getsizeof` looks its object's `__sizeof__` up by name and adds the collector's header to tracked objects: for
# the keys and the flat values of a span (most of what it holds) the same figure is had for less. An ASCII key is
# stored compactly, one fixed header then a byte a character (its NUL counted in the header): the keys are summed
# from their joined length. A flat value (string, number, boolean, None) is not tracked: its `__sizeof__` is
# its `getsizeof`.
_ASCII_HEADER = _getsizeof("")
_FLAT = frozenset({str, int, float, bool, type(None)})


def value_bytes(value: Any, depth: int = 0) -> int:
    """Bytes an attribute value holds (nested lists and maps item by item, three levels deep at most)."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return _getsizeof(value)
    if depth > 3:
        return _getsizeof(value)
    if kind is list or kind is tuple:
        return _getsizeof(value) + sum(value_bytes(v, depth + 1) for v in value)
    if kind is dict:
        return _getsizeof(value) + sum(_getsizeof(k) + value_bytes(v, depth + 1) for k, v in value.items())
    return _getsizeof(value)


def span_bytes(span: SpanRecord) -> int:
    """Estimated bytes of one decoded span (attribute values, name, ids, record)."""
    size = SPAN_OVERHEAD + len(span.name) + len(span.trace_id) + len(span.span_id)
    if span.status_error is not None:
        size += _getsizeof(span.status_error)
    attrs = span.attrs
    try:
        keys: str | None = "".join(attrs)
    except TypeError:  # a key that is not a string (the decoders write none)
        keys = None
    if keys is not None and keys.isascii():
        size += len(keys) + _ASCII_HEADER * len(attrs)
    else:
        size += sum(map(_getsizeof, attrs))
    flat = _FLAT
    for value in attrs.values():
        size += value.__sizeof__() if type(value) in flat else value_bytes(value)
    return size
