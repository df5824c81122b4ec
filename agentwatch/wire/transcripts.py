"""Read transcript files: JSON Lines of `Conversation`, plain or gzip (detected by magic bytes).

A malformed line never stops the read: it is recorded as a `LineError` (file, line number, reason) and the
remaining lines are still read. A file that cannot be opened at all raises `TranscriptFileError`. A UTF-8
byte order mark is skipped; a file holding one JSON array of conversations is read item by item; keys no field
reads are reported (`UnknownKeys`), not dropped in silence.
"""

from __future__ import annotations

import gzip
import io
import json
import logging
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from agentwatch.wire import json_text
from agentwatch.wire.schema import Conversation
from agentwatch.wire.transcript_keys import UnknownKeys, misspelt_required, unknown_keys

log = logging.getLogger(__name__)

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024  # a JSON array is read whole: bigger ones must be JSON Lines
_MAX_REASON = 300
MAX_LINE_BYTES = 16 * 1024 * 1024  # a longer line is reported and skipped, never held in memory whole


class TranscriptFileError(OSError):
    """A transcript file cannot be opened or decoded at all."""


@dataclass(frozen=True, slots=True)
class LineError:
    """A line that could not be read as a `Conversation`: where, and why."""

    path: str
    line: int
    reason: str
    item: bool = False  # `line` is the position of an item in a JSON array, not a line number

    def __str__(self) -> str:
        where = f" item {self.line}:" if self.item else f"{self.line}:"
        return f"{self.path}:{where} {self.reason}"


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


def validation_reason(exc: ValidationError, obj: object = None) -> str:
    """The first errors of a validation as one line: `field.path: message; ...`; a required field that is
    missing names the key of `obj` that probably meant it (`did you mean`)."""
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "<root>"
        hint = misspelt_required(obj, tuple(err["loc"])) if err["type"] == "missing" else None
        meant = f" (the line has `{hint}`: did you mean `{err['loc'][-1]}`?)" if hint else ""
        parts.append(f"{loc}: {err['msg']}{meant}")
    more = exc.error_count() - len(parts)
    return "invalid conversation: " + "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def parse_line(raw: bytes, unknown: list[str] | None = None) -> Conversation:
    """Parse one JSONL line into a `Conversation`; raise ValueError with a readable reason.

    A leading byte order mark is skipped. `unknown`, when given, receives the paths of keys no field reads.
    """
    try:
        text = raw.removeprefix(UTF8_BOM).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 at byte {exc.start}") from exc
    try:
        obj = json_text.loads(text.rstrip("\r\n"), parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg} (column {exc.colno})") from exc
    except RecursionError:
        raise ValueError("invalid JSON: nested too deeply") from None
    return parse_object(obj, unknown)


def parse_object(obj: object, unknown: list[str] | None = None) -> Conversation:
    """A parsed JSON value as a `Conversation`; raise ValueError with a readable reason."""
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")  # noqa: TRY004
    other = _other_format(obj)
    if other is not None:
        raise ValueError(other)
    if unknown is not None:
        unknown.extend(unknown_keys(obj))
    try:
        return Conversation.model_validate(obj)
    except ValidationError as exc:
        raise ValueError(validation_reason(exc, obj)) from exc
    except RecursionError:
        raise ValueError("invalid conversation: nested too deeply") from None


IMPORT_CHAT = "agentwatch import openai-chat FILE --out DIR"
IMPORT_TAU = "agentwatch import tau-bench FILE --out DIR"


def _other_format(obj: dict[str, object]) -> str | None:
    """Why a JSON object is another format than a transcript line, and which importer reads it; else None."""
    if "turns" in obj:
        return None
    if isinstance(obj.get("messages"), list):
        return f"a chat-format line (`messages`), not a transcript: convert it with `{IMPORT_CHAT}`"
    if "traj" in obj or "simulations" in obj:
        return f"a τ-bench result, not a transcript: convert it with `{IMPORT_TAU}`"
    return None


def _whole_document(head: bytes) -> str | None:
    """`array` or `object` when a file is one JSON document rather than JSON Lines, else None."""
    text = head.removeprefix(UTF8_BOM).lstrip()
    first_line = text.split(b"\n", 1)[0].strip()
    if first_line == b"[" or (text.startswith(b"[") and text[1:].lstrip()[:1] in (b"{", b"]")):
        return "array"
    if first_line == b"{":
        return "object"
    return None


def _read_document(stream: io.BufferedIOBase, name: str, kind: str) -> object:
    """The whole JSON document of a file (an array, or an object spread over lines); TranscriptFileError."""
    raw = stream.read(MAX_DOCUMENT_BYTES + 1)
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise TranscriptFileError(
            f"{name} holds one JSON {kind} larger than {MAX_DOCUMENT_BYTES >> 20} MiB: write one "
            "conversation per line instead (JSON Lines; e.g. `jq -c '.[]' FILE > FILE.jsonl`)"
        )
    try:
        return json_text.loads(raw.removeprefix(UTF8_BOM).decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise TranscriptFileError(
            f"{name} starts like one JSON {kind} but is not valid JSON ({exc}); transcripts are one JSON "
            "object per line (JSON Lines)"
        ) from None


def _document_items(doc: object, name: str) -> list[object]:
    """The conversations of a whole-file JSON document, or TranscriptFileError naming the importer to use."""
    items = doc if isinstance(doc, list) else [doc]
    first = next((i for i in items if isinstance(i, dict)), None)
    other = _other_format(first) if first is not None else None
    if isinstance(doc, dict) and "turns" not in doc and "conversation_id" not in doc:
        other = other or "not a transcript"
        return _refuse(
            name,
            f"holds one JSON document spread over lines ({other}), not one conversation per "
            f"line (a τ²-bench results file? `{IMPORT_TAU}`)",
        )
    if other is not None and first is not None and isinstance(first.get("messages"), list):
        return _refuse(
            name,
            "holds a JSON array of chat-format conversations (`messages`), not transcripts: write them one per line "
            f"(`jq -c '.[]' {name} > {Path(name).name}.jsonl`) and convert that with `{IMPORT_CHAT}`",
        )
    if other is not None:
        return _refuse(name, f"holds a JSON array whose items are not transcripts ({other})")
    return items


def _refuse(name: str, why: str) -> list[object]:
    raise TranscriptFileError(f"{name} {why}")


@contextmanager
def open_binary(path: str | Path) -> Iterator[io.BufferedIOBase]:
    """The bytes of a file, gunzipped when it starts with the gzip magic; TranscriptFileError if not read."""
    try:
        raw_fh = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise TranscriptFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    with raw_fh:
        magic = raw_fh.read(2)
        raw_fh.seek(0)
        stream: io.BufferedIOBase = (
            gzip.GzipFile(fileobj=raw_fh, mode="rb") if magic == GZIP_MAGIC else raw_fh
        )
        yield stream


def _reject_constant(name: str) -> float:
    raise ValueError(f"invalid JSON: {name} is not a JSON number")


def bounded_lines(stream: io.BufferedIOBase, limit: int = MAX_LINE_BYTES) -> Iterator[bytes | None]:
    """The lines of `stream`; None for a line longer than `limit` bytes (read past, never held whole)."""
    while True:
        raw = stream.readline(limit + 1)
        if not raw:
            return
        if len(raw) <= limit or raw.endswith(b"\n"):
            yield raw
            continue
        while raw and not raw.endswith(b"\n"):  # skip the rest of the over-long line
            raw = stream.readline(1024 * 1024)
        yield None


def iter_conversations(
    path: str | Path,
    errors: list[LineError],
    on_progress: Callable[[int], None] | None = None,
    unknown: UnknownKeys | None = None,
    notes: list[str] | None = None,
) -> Iterator[Conversation]:
    """Yield the conversations of one file; append malformed lines to `errors`, keys no field reads to
    `unknown`, how the file was read when it is not JSON Lines to `notes`; report bytes read (raw file)."""
    name = str(path)
    try:
        raw_fh = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise TranscriptFileError(f"cannot read {name}: {exc.strerror or exc}") from exc
    with raw_fh:
        magic = raw_fh.read(2)
        raw_fh.seek(0)
        stream: io.BufferedIOBase = (
            gzip.GzipFile(fileobj=raw_fh, mode="rb") if magic == GZIP_MAGIC else raw_fh
        )
        unreadable: Exception | None = None
        try:
            # both a plain file and a GzipFile can peek; their common base class does not declare it
            whole = _whole_document(stream.peek(4096)[:4096])  # type: ignore[attr-defined]
        except (OSError, EOFError, zlib.error) as exc:
            whole, unreadable = None, exc  # reported by the read below, or after it when it reads nothing
        if whole is not None:
            if notes is not None:
                notes.append(f"{name} holds one JSON {whole}: read item by item")
            yield from _document_conversations(stream, name, whole, errors, unknown)
            if on_progress is not None:
                on_progress(raw_fh.tell())
            return
        lineno = 0
        try:
            for lineno, raw in enumerate(bounded_lines(stream), start=1):
                if on_progress is not None and lineno % 256 == 0:
                    on_progress(raw_fh.tell())
                if raw is None:
                    errors.append(
                        LineError(name, lineno, f"line longer than {MAX_LINE_BYTES} bytes; skipped")
                    )
                    continue
                if not raw.strip():
                    continue
                keys: list[str] | None = [] if unknown is not None else None
                try:
                    conv = parse_line(raw, keys)
                except ValueError as exc:
                    reason = str(exc)[:_MAX_REASON]
                    log.debug("%s:%d: %s", name, lineno, reason)
                    errors.append(LineError(name, lineno, reason))
                    continue
                if keys and unknown is not None:
                    unknown.add(f"{name}:{lineno}", keys)
                yield conv
        except (OSError, EOFError, zlib.error) as exc:
            if lineno == 0:
                raise TranscriptFileError(f"cannot decode {name}: {exc}") from exc
            reason = (
                f"file unreadable after line {lineno} ({type(exc).__name__}: {exc}); rest of file skipped"
            )
            log.warning("%s: %s", name, reason)
            errors.append(LineError(name, lineno + 1, reason))
        if lineno == 0 and unreadable is not None:  # a gzip file cut inside its header reads as empty after
            raise TranscriptFileError(f"cannot decode {name}: {unreadable}")
        if on_progress is not None:
            on_progress(raw_fh.tell())


def _document_conversations(
    stream: io.BufferedIOBase, name: str, kind: str, errors: list[LineError], unknown: UnknownKeys | None
) -> Iterator[Conversation]:
    """The conversations of a file holding one JSON array (or one conversation spread over lines)."""
    try:
        doc = _read_document(stream, name, kind)
    except (OSError, EOFError, zlib.error) as exc:
        raise TranscriptFileError(f"cannot decode {name}: {exc}") from exc
    log.debug("%s holds one JSON %s: read item by item", name, kind)
    for position, obj in enumerate(_document_items(doc, name), start=1):
        keys: list[str] | None = [] if unknown is not None else None
        try:
            conv = parse_object(obj, keys)
        except ValueError as exc:
            errors.append(LineError(name, position, str(exc)[:_MAX_REASON], item=True))
            continue
        if keys and unknown is not None:
            unknown.add(f"{name}: item {position}", keys)
        yield conv


def read_conversations(paths: list[str | Path], errors: list[LineError]) -> list[Conversation]:
    """Read every file in order; malformed lines go to `errors`; raise TranscriptFileError on unreadable files."""
    out: list[Conversation] = []
    for path in paths:
        out.extend(iter_conversations(path, errors))
    return out
