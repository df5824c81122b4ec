"""Transcript files that are one JSON document: an array of conversations, or one conversation spread over lines.

Such a file is read whole (at most `MAX_DOCUMENT_BYTES`) and parsed whole. When that fails, what can be read is
still read: an array item by item (`json_array`), each bad item reported with its position, a file cut short
read up to the cut; a file that only looked like a document (JSON Lines whose first line is an array or a lone
`{`) line by line. A file of which nothing can be read raises `TranscriptFileError`.
"""

from __future__ import annotations

import io
import logging
import zlib
from collections.abc import Iterator
from pathlib import Path

from agentwatch.wire.json_array import array_end, array_items
from agentwatch.wire.schema import Conversation
from agentwatch.wire.transcript_keys import UnknownKeys
from agentwatch.wire.transcript_lines import (
    IMPORT_CHAT,
    IMPORT_TAU,
    MAX_REASON,
    UTF8_BOM,
    LineError,
    TranscriptFileError,
    bounded_lines,
    line_conversation,
    other_format,
    parse_object,
    strict_loads,
)

log = logging.getLogger(__name__)

MAX_DOCUMENT_BYTES = 256 * 1024 * 1024  # a JSON array is read whole: bigger ones must be JSON Lines
_BLOCK = 1 << 20
_CUT_SHORT = "the file ends before the array's closing `]` (cut short?)"


def whole_document(head: bytes) -> str | None:
    """`array` or `object` when a file is one JSON document rather than JSON Lines, else None."""
    text = head.removeprefix(UTF8_BOM).lstrip()
    first_line = text.split(b"\n", 1)[0].strip()
    if first_line == b"[" or (text.startswith(b"[") and text[1:].lstrip()[:1] in (b"{", b"]")):
        return "array"
    if first_line == b"{":
        return "object"
    return None


def document_conversations(
    stream: io.BufferedIOBase,
    name: str,
    kind: str,
    errors: list[LineError],
    unknown: UnknownKeys | None,
    notes: list[str] | None,
) -> Iterator[Conversation]:
    """The conversations of a file holding one JSON `kind` (`array`, or `object` spread over lines)."""
    raw, cut = _read_whole(stream, name, kind)
    try:
        doc = _parse(raw, name, kind)
    except TranscriptFileError as failure:
        yield from _salvage(raw, name, kind, errors, unknown, notes, failure)
    else:
        if notes is not None:
            notes.append(f"{name} holds one JSON {kind}: read item by item")
        log.debug("%s holds one JSON %s: read item by item", name, kind)
        for position, obj in enumerate(_document_items(doc, name), start=1):
            keys: list[str] | None = [] if unknown is not None else None
            try:
                conv = parse_object(obj, keys)
            except ValueError as exc:
                errors.append(LineError(name, position, str(exc)[:MAX_REASON], item=True))
                continue
            if keys and unknown is not None:
                unknown.add(f"{name}: item {position}", keys)
            yield conv
    if cut is not None:
        reason = f"file unreadable here ({type(cut).__name__}: {cut}); rest of file skipped"
        log.warning("%s: %s", name, reason)
        errors.append(LineError(name, raw.count(b"\n") + 1, reason))


def _read_whole(stream: io.BufferedIOBase, name: str, kind: str) -> tuple[bytes, Exception | None]:
    """The bytes of a whole-document file, and the error that stopped the read before its end (a gzip file cut
    short, trailing garbage) or None; TranscriptFileError when nothing could be read or it is too big."""
    blocks: list[bytes] = []
    size = 0
    try:
        while size <= MAX_DOCUMENT_BYTES:
            block = stream.read1(
                min(_BLOCK, MAX_DOCUMENT_BYTES + 1 - size)
            )  # what one read gives: kept if the next fails
            if not block:
                break
            blocks.append(block)
            size += len(block)
    except (OSError, EOFError, zlib.error) as exc:
        if not blocks:
            raise TranscriptFileError(f"cannot decode {name}: {exc}") from exc
        return b"".join(blocks), exc
    if size > MAX_DOCUMENT_BYTES:
        raise TranscriptFileError(
            f"{name} holds one JSON {kind} larger than {MAX_DOCUMENT_BYTES >> 20} MiB: write one "
            "conversation per line instead (JSON Lines; e.g. `jq -c '.[]' FILE > FILE.jsonl`)"
        )
    return b"".join(blocks), None


def _parse(raw: bytes, name: str, kind: str) -> object:
    """The JSON document `raw`; TranscriptFileError saying why it is none."""
    try:
        return strict_loads(raw.removeprefix(UTF8_BOM).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise TranscriptFileError(
            f"{name} starts like one JSON {kind} but is not valid JSON ({exc}); transcripts are one JSON "
            "object per line (JSON Lines)"
        ) from None


def _salvage(
    raw: bytes,
    name: str,
    kind: str,
    errors: list[LineError],
    unknown: UnknownKeys | None,
    notes: list[str] | None,
    failure: TranscriptFileError,
) -> Iterator[Conversation]:
    """What can be read of a document that does not parse whole: an array item by item; JSON Lines that only
    looked like a document line by line; else `failure` is raised."""
    start = len(raw) - len(raw.removeprefix(UTF8_BOM).lstrip())
    if kind == "array":
        end = array_end(raw, start)
        if end is None or not raw[end:].strip():
            if notes is not None:
                notes.append(f"{name} holds one JSON array that does not parse whole: read item by item")
            yield from _array_conversations(raw, start, name, errors, unknown)
            return
    # its first line is an array, or a lone `{`, and lines follow: JSON Lines, read whole only if one line is read
    lines: list[LineError] = []
    found = [
        conv
        for lineno, line in enumerate(bounded_lines(io.BytesIO(raw)), start=1)
        if (conv := line_conversation(line, name, lineno, lines, unknown)) is not None
    ]
    if not found:
        raise failure
    errors.extend(lines)
    yield from found


def _array_conversations(
    raw: bytes, start: int, name: str, errors: list[LineError], unknown: UnknownKeys | None
) -> Iterator[Conversation]:
    """The conversations of the JSON array opening at `raw[start]`, parsed an item at a time."""
    for position, (begin, stop, ends) in enumerate(array_items(raw, start), start=1):
        text = raw[begin:stop]
        if not text.strip():
            if (
                ends != b"]" or position > 1
            ):  # `[]` is an empty array; `,,`, `,]` or a cut leave an empty item
                errors.append(LineError(name, position, "no value here" if ends else _CUT_SHORT, item=True))
            continue
        before = len(errors)
        conv = line_conversation(text, name, position, errors, unknown, item=True)
        if not ends and len(errors) > before:  # the text ends inside this item
            last = errors.pop()
            reason = f"the file ends inside this item (cut short?): {last.reason}"[:MAX_REASON]
            errors.append(LineError(name, position, reason, item=True))
        if conv is not None:
            yield conv
            if not ends:
                errors.append(LineError(name, position + 1, _CUT_SHORT, item=True))


def _document_items(doc: object, name: str) -> list[object]:
    """The conversations of a whole-file JSON document, or TranscriptFileError naming the importer to use."""
    items = doc if isinstance(doc, list) else [doc]
    first = next((i for i in items if isinstance(i, dict)), None)
    other = other_format(first) if first is not None else None
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
