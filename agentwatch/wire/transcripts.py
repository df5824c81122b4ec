"""Read transcript files: JSON Lines of `Conversation`, plain or gzip (detected by magic bytes).

A malformed line never stops the read: it is recorded as a `LineError` (file, line number, reason) and the
remaining lines are still read. A file that cannot be opened at all raises `TranscriptFileError`. A UTF-8
byte order mark is skipped; a UTF-16 or UTF-32 file is read as the text it holds; a file holding one JSON array
of conversations is read item by item (`transcript_documents`); keys no field reads are reported
(`UnknownKeys`), not dropped in silence. A pipe (`<(zcat FILE)`) is read as a file is.
"""

from __future__ import annotations

import gzip
import io
import logging
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from agentwatch.wire.schema import Conversation
from agentwatch.wire.transcript_documents import MAX_DOCUMENT_BYTES, document_conversations, whole_document
from agentwatch.wire.transcript_keys import UnknownKeys
from agentwatch.wire.transcript_lines import (
    IMPORT_CHAT,
    IMPORT_TAU,
    MAX_LINE_BYTES,
    UTF8_BOM,
    LineError,
    TranscriptFileError,
    bounded_lines,
    line_conversation,
    parse_line,
    parse_object,
    validation_reason,
)
from agentwatch.wire.wide_text import as_utf8, wide_encoding

__all__ = [  # read from here by the importers and commands; defined beside the reading they belong to
    "IMPORT_CHAT",
    "IMPORT_TAU",
    "MAX_DOCUMENT_BYTES",
    "MAX_LINE_BYTES",
    "UTF8_BOM",
    "LineError",
    "TranscriptFileError",
    "bounded_lines",
    "file_stem",
    "is_gzip",
    "iter_conversations",
    "open_binary",
    "parse_line",
    "parse_object",
    "read_conversations",
    "validation_reason",
]

log = logging.getLogger(__name__)

GZIP_MAGIC = b"\x1f\x8b"
_HEAD = 4096
_STREAM_ERRORS = (OSError, EOFError, zlib.error)


_DATA_SUFFIXES = (".gz", ".json", ".jsonl", ".ndjson")


def file_stem(path: str | Path) -> str:
    """A data file's name without its data extensions: `gpt-4.1_airline.json.gz` is `gpt-4.1_airline` (a dot
    inside the name, as in a model's version, is kept)."""
    name = Path(path).name
    stripped = True
    while stripped:
        stripped = False
        for suffix in _DATA_SUFFIXES:
            if name.lower().endswith(suffix) and len(name) > len(suffix):
                name, stripped = name[: -len(suffix)], True
                break
    return name


def is_gzip(path: str | Path) -> bool:
    """Whether the file starts with the gzip magic bytes."""
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


def _gunzipped(raw_fh: io.BufferedReader) -> io.BufferedIOBase:
    """`raw_fh`, gunzipped when it starts with the gzip magic (peeked, not read and sought back: a pipe cannot
    seek)."""
    if raw_fh.peek(2)[:2] == GZIP_MAGIC:
        return gzip.GzipFile(fileobj=raw_fh, mode="rb")
    return raw_fh


def _open(path: str | Path) -> io.BufferedReader:
    """The file at `path`, opened to read its bytes; TranscriptFileError saying why it cannot be."""
    try:
        return open(path, "rb")
    except OSError as exc:
        raise TranscriptFileError(f"cannot read {path}: {exc.strerror or exc}") from exc


@contextmanager
def open_binary(path: str | Path) -> Iterator[io.BufferedIOBase]:
    """The bytes of a file, gunzipped when it starts with the gzip magic; TranscriptFileError if not read."""
    with _open(path) as raw_fh:
        yield _gunzipped(raw_fh)


def _position(raw_fh: io.BufferedReader) -> int | None:
    """How far into the file the read is; None for a pipe, which has no position."""
    try:
        return raw_fh.tell()
    except OSError:
        return None


def _head(stream: io.BufferedIOBase) -> tuple[bytes, Exception | None]:
    """The first bytes of a stream without reading them, or the error peeking at them raised."""
    try:
        # both a plain file and a GzipFile can peek; their common base class does not declare it
        return stream.peek(_HEAD)[:_HEAD], None  # type: ignore[attr-defined]
    except _STREAM_ERRORS as exc:
        return b"", exc


def iter_conversations(
    path: str | Path,
    errors: list[LineError],
    on_progress: Callable[[int], None] | None = None,
    unknown: UnknownKeys | None = None,
    notes: list[str] | None = None,
) -> Iterator[Conversation]:
    """Yield the conversations of one file; append malformed lines to `errors`, keys no field reads to
    `unknown`, how the file was read when it is not UTF-8 JSON Lines to `notes`; report bytes read (raw file)."""
    name = str(path)
    with _open(path) as raw_fh:

        def progress() -> None:
            at = _position(raw_fh) if on_progress is not None else None
            if on_progress is not None and at is not None:
                on_progress(at)

        stream = _gunzipped(raw_fh)
        head, unreadable = _head(
            stream
        )  # an error is reported by the read below, or after it if it reads nothing
        encoding = wide_encoding(head)
        if encoding is not None:  # read as UTF-8, every line of it would be malformed, and not say why
            stream = as_utf8(stream, encoding)
            head, unreadable = _head(stream)
            if notes is not None:
                notes.append(f"{name} is {encoding.upper()} text, not UTF-8: read as such")
        whole = whole_document(head)
        if whole is not None:
            yield from document_conversations(stream, name, whole, errors, unknown, notes)
            progress()
            return
        lineno = 0
        try:
            for lineno, raw in enumerate(bounded_lines(stream), start=1):
                if lineno % 256 == 0:
                    progress()
                conv = line_conversation(raw, name, lineno, errors, unknown)
                if conv is not None:
                    yield conv
        except _STREAM_ERRORS as exc:
            if lineno == 0:
                raise TranscriptFileError(f"cannot decode {name}: {exc}") from exc
            reason = (
                f"file unreadable after line {lineno} ({type(exc).__name__}: {exc}); rest of file skipped"
            )
            log.warning("%s: %s", name, reason)
            errors.append(LineError(name, lineno + 1, reason))
        if lineno == 0 and unreadable is not None:  # a gzip file cut inside its header reads as empty after
            raise TranscriptFileError(f"cannot decode {name}: {unreadable}")
        progress()


def read_conversations(paths: list[str | Path], errors: list[LineError]) -> list[Conversation]:
    """Read every file in order; malformed lines go to `errors`; raise TranscriptFileError on unreadable files."""
    out: list[Conversation] = []
    for path in paths:
        out.extend(iter_conversations(path, errors))
    return out
