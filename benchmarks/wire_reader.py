"""A reader of the OTLP wire format itself, for `benchmarks.wire_floor`: what the collector's decode could cost
if it walked the protobuf bytes instead of going through the protobuf Python API.

It reads what `benchmarks.collector`'s "needed values read" floor reads — each span's ids, name, times and the
string value of each needed attribute key — and builds one tuple a span; it checks nothing a decoder must
(UTF-8, lengths past the end, ids' sizes), so it is a floor, not a decoder. Typed for mypyc: the benchmark
compiles this file alone.
"""

from __future__ import annotations

SpanTuple = tuple[bytes, bytes, bytes, str, int, int, dict[str, str]]


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The varint at `pos` and the position after it."""
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _skip(buf: bytes, pos: int, wire_type: int) -> int:
    """The position after a field's value of `wire_type` at `pos`."""
    if wire_type == 0:
        while buf[pos] >= 0x80:
            pos += 1
        return pos + 1
    if wire_type == 1:
        return pos + 8
    if wire_type == 2:
        n, pos = _varint(buf, pos)
        return pos + n
    if wire_type == 5:
        return pos + 4
    raise ValueError(f"wire type {wire_type}")


def _string_value(buf: bytes, pos: int, end: int) -> str:
    """An `AnyValue`'s `string_value` ("" when it holds another kind)."""
    while pos < end:
        tag, pos = _varint(buf, pos)
        if tag == 10:
            n, pos = _varint(buf, pos)
            return buf[pos : pos + n].decode()
        pos = _skip(buf, pos, tag & 7)
    return ""


def _attribute(buf: bytes, pos: int, end: int, keys: frozenset[bytes], out: dict[str, str]) -> None:
    """One `KeyValue`: its value into `out` when its key is one of `keys`."""
    key = b""
    start = -1
    stop = -1
    while pos < end:
        tag, pos = _varint(buf, pos)
        if tag == 10:
            n, pos = _varint(buf, pos)
            key = buf[pos : pos + n]
            pos += n
        elif tag == 18:
            n, pos = _varint(buf, pos)
            start = pos
            stop = pos = pos + n
        else:
            pos = _skip(buf, pos, tag & 7)
    if start >= 0 and key in keys:
        out[key.decode()] = _string_value(buf, start, stop)


def _span(buf: bytes, pos: int, end: int, keys: frozenset[bytes]) -> SpanTuple:
    """One `Span`'s ids, name, times and needed attributes."""
    trace_id = span_id = parent = b""
    name = ""
    start = stop = 0
    attrs: dict[str, str] = {}
    while pos < end:
        tag, pos = _varint(buf, pos)
        field = tag >> 3
        wire_type = tag & 7
        if wire_type == 2:
            n, pos = _varint(buf, pos)
            after = pos + n
            if field == 9:
                _attribute(buf, pos, after, keys, attrs)
            elif field == 1:
                trace_id = buf[pos:after]
            elif field == 2:
                span_id = buf[pos:after]
            elif field == 4:
                parent = buf[pos:after]
            elif field == 5:
                name = buf[pos:after].decode()
            pos = after
        elif wire_type == 1:
            value = int.from_bytes(buf[pos : pos + 8], "little")
            if field == 7:
                start = value
            elif field == 8:
                stop = value
            pos += 8
        else:
            pos = _skip(buf, pos, wire_type)
    return trace_id, span_id, parent, name, start, stop, attrs


def _fields(buf: bytes, pos: int, end: int, number: int) -> list[tuple[int, int]]:
    """(start, end) of each length-delimited field `number` between `pos` and `end`."""
    out: list[tuple[int, int]] = []
    while pos < end:
        tag, pos = _varint(buf, pos)
        wire_type = tag & 7
        if wire_type == 2:
            n, pos = _varint(buf, pos)
            if tag >> 3 == number:
                out.append((pos, pos + n))
            pos += n
        else:
            pos = _skip(buf, pos, wire_type)
    return out


def read_spans(buf: bytes, keys: frozenset[bytes]) -> list[SpanTuple]:
    """Every span of one `TracesData` message, resource spans → scope spans → spans."""
    spans: list[SpanTuple] = []
    for rs_start, rs_end in _fields(buf, 0, len(buf), 1):
        for ss_start, ss_end in _fields(buf, rs_start, rs_end, 2):
            for sp_start, sp_end in _fields(buf, ss_start, ss_end, 2):
                spans.append(_span(buf, sp_start, sp_end, keys))
    return spans
