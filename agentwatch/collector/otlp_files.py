"""Read OTLP trace files offline: one protobuf `TracesData`, OTLP/JSON, JSON lines, or size-prefixed records.

The OpenTelemetry Collector's file exporter writes JSON lines (`format: json`) or protobuf records each
preceded by a 4-byte big-endian size (`format: proto`); both are read here, gzip-compressed or not. Records of
log files (`LogsData`) give the messages their GenAI events log (`log_records`), folded into their spans when
the conversation is rebuilt.
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agentwatch.collector.conventions import CONVERSATION_KEYS
from agentwatch.collector.decode import DecodeError, SpanRecord, decode_message
from agentwatch.collector.log_records import decode_log_message, is_json_logs

log = logging.getLogger(__name__)

JSON, PROTOBUF = "application/json", "application/x-protobuf"
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@dataclass(slots=True)
class FileProblem:
    """A part of a file that could not be read: where (file, line or record) and why."""

    path: str
    where: str
    reason: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.path}:{self.where}: {self.reason}" + (f" ({self.detail})" if self.detail else "")


@dataclass(slots=True)
class FileSpans:
    """Spans read from OTLP files, and the problems met on the way."""

    spans: list[SpanRecord] = field(default_factory=list)
    problems: list[FileProblem] = field(default_factory=list)
    records: int = 0


def _framed(data: bytes) -> list[bytes] | None:
    """Split size-prefixed records (4-byte big-endian sizes) if they tile `data`, else None. A last record cut
    short (a file still being written, or copied in part) after whole ones is kept as the bytes there are, to be
    reported as the record it is: the whole ones before it are read."""
    out: list[bytes] = []
    pos, n = 0, len(data)
    while pos < n:
        size = int.from_bytes(data[pos : pos + 4], "big") if pos + 4 <= n else 0
        if size == 0 or pos + 4 + size > n:
            return [*out, data[pos:]] if out else None
        out.append(data[pos + 4 : pos + 4 + size])
        pos += 4 + size
    return out or None


def _is_protobuf(data: bytes) -> bool:
    """Whether `data` decodes as one OTLP protobuf `TracesData`."""
    try:
        decode_message(data, PROTOBUF)
    except DecodeError:
        return False
    return True


def iter_records(data: bytes) -> Iterator[tuple[str, bytes, str]]:
    """Yield (where, payload, content type) for each OTLP record in the bytes of one file."""
    head = data[:64].lstrip()
    if head[:1] in (b"{", b"["):
        try:
            json.loads(data)
        except (ValueError, RecursionError):
            if data[:1] == b"\n" and _is_protobuf(
                data
            ):  # a tag byte 0x0a, then a length that reads "{" or "["
                yield "message", data, PROTOBUF
                return
            for number, line in enumerate(data.splitlines(), start=1):
                if line.strip():
                    yield f"line {number}", line, JSON
            return
        yield "document", data, JSON
        return
    framed = _framed(data) if data[:1] != b"\x0a" else None
    if framed is not None:
        for number, payload in enumerate(framed, start=1):
            yield f"record {number}", payload, PROTOBUF
        return
    yield "message", data, PROTOBUF


def read_bytes(path: str | Path) -> tuple[bytes, str | None]:
    """The bytes of an OTLP file, gunzipped if gzip-compressed, and why they stop short when a gzip file was cut
    (what it held up to the cut is kept, as `agentwatch score` keeps the lines it read); raise DecodeError for
    a file nothing can be read from, or of an unsupported compression."""
    data = Path(path).read_bytes()
    if data[:2] == _GZIP_MAGIC:
        return _gunzip(data)
    if data[:4] == _ZSTD_MAGIC:
        raise DecodeError("unsupported_compression", "zstd-compressed file; decompress it first (zstd -d)")
    return data, None


def _gunzip(data: bytes) -> tuple[bytes, str | None]:
    out: list[bytes] = []
    rest = data
    while rest:  # a gzip file may hold several members, one after another
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out.append(member.decompress(rest))
        except zlib.error as exc:
            if not out or not any(out):
                raise DecodeError("invalid_gzip", str(exc)[:200]) from None
            return b"".join(out), f"not gzip past {sum(map(len, out)):,} bytes read ({exc})"
        if not member.eof:
            read = b"".join(out)
            if not read:
                raise DecodeError("invalid_gzip", "the file ends before any of its content")
            return (
                read,
                f"cut short: it ends after {len(read):,} bytes read, before the end of its gzip stream",
            )
        rest = member.unused_data.lstrip(b"\x00")  # zeros after a member pad it, as gzip allows
    return b"".join(out), None


def _decode(payload: bytes, content_type: str, limit: int) -> list[SpanRecord]:
    """The spans of one record, or the fragments of one record of log records; DecodeError."""
    if content_type == JSON and is_json_logs(payload):
        return _fragments(payload, content_type, limit)
    try:
        return decode_message(payload, content_type, max_attribute_bytes=limit)
    except DecodeError as exc:
        if content_type != PROTOBUF:
            raise
        try:
            return _fragments(payload, content_type, limit)
        except DecodeError:
            raise exc from None


def _fragments(payload: bytes, content_type: str, limit: int) -> list[SpanRecord]:
    """The fragments of one record of log records; DecodeError when none of them logs a span's messages."""
    batch = decode_log_message(payload, content_type, max_attribute_bytes=limit)
    if not batch.fragments:
        raise DecodeError(
            "no_message_events", f"{batch.records} log records, none a GenAI message event of a span"
        )
    return batch.fragments


def read_otlp_files(paths: list[str | Path], *, max_attribute_bytes: int = 65536) -> FileSpans:
    """Decode every record of every file; unreadable parts become problems, never exceptions."""
    result = FileSpans()
    for path in paths:
        try:
            data, cut = read_bytes(path)
        except OSError as exc:
            result.problems.append(FileProblem(str(path), "file", "unreadable", exc.strerror or str(exc)))
            continue
        except DecodeError as exc:
            result.problems.append(FileProblem(str(path), "file", exc.reason, exc.detail))
            continue
        if cut is not None:
            result.problems.append(FileProblem(str(path), "file", "truncated_gzip", cut))
        if not data.strip():
            result.problems.append(FileProblem(str(path), "file", "empty"))
            continue
        for where, payload, content_type in iter_records(data):
            result.records += 1
            try:
                result.spans.extend(_decode(payload, content_type, max_attribute_bytes))
            except DecodeError as exc:
                result.problems.append(FileProblem(str(path), where, exc.reason, exc.detail))
    return result


def group_by_conversation(spans: list[SpanRecord]) -> dict[str, list[SpanRecord]]:
    """Group spans by conversation id; spans without a conversation key join the conversation of their trace."""
    by_trace: dict[str, str] = {}
    for span in spans:
        if span.trace_id not in by_trace and any(
            span.attrs.get(k) not in (None, "") for k in CONVERSATION_KEYS
        ):
            by_trace[span.trace_id] = span.conversation_id
    groups: dict[str, list[SpanRecord]] = {}
    for span in spans:
        if span.conversation_id == span.trace_id and span.trace_id in by_trace:
            span.conversation_id = by_trace[span.trace_id]
        groups.setdefault(span.conversation_id, []).append(span)
    return groups
