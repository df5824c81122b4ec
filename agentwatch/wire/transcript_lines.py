"""One transcript line read as a `Conversation`, or the reason it cannot be, kept with its line number.

A malformed line never stops a read: it becomes a `LineError` (file, line number, reason) and the next line is
read. Lines are read at most `MAX_LINE_BYTES` at a time (`bounded_lines`), so that one enormous line costs no more
memory than that.
"""

from __future__ import annotations

import io
import json
import logging
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agentwatch.wire import json_text
from agentwatch.wire.block_stream import BLOCK, BlockStream
from agentwatch.wire.schema import Conversation
from agentwatch.wire.transcript_keys import UnknownKeys, misspelt_required, unknown_keys

log = logging.getLogger(__name__)

UTF8_BOM = b"\xef\xbb\xbf"
MAX_LINE_BYTES = 16 * 1024 * 1024  # a longer line is reported and skipped, never held in memory whole
MAX_REASON = 300
IMPORT_CHAT = "agentwatch import openai-chat FILE --out DIR"
IMPORT_TAU = "agentwatch import tau-bench FILE --out DIR"
# an exponent of three digits, or a run of 200 digits: a JSON number without either cannot overflow a double.
# The run is matched from its first digit only: tried at every digit, a 16 MB line of 199-digit runs took 1.7 s.
_MAYBE_HUGE = re.compile(r"[eE]\+?[0-9]{3}|(?<![0-9])[0-9]{200}")


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


def reject_constant(name: str) -> float:
    """`parse_constant` for `json.loads`: NaN and Infinity are no JSON numbers (Python's reader takes them)."""
    raise ValueError(f"invalid JSON: {name} is not a JSON number")


def finite_float(text: str) -> float:
    """`parse_float` for `json.loads`: a number too large for a double (`1e400`) is refused, not read as
    infinity (which no JSON writer can write back, and no sum or estimate survives)."""
    value = float(text)
    if math.isinf(value):
        shown = text if len(text) <= 24 else f"{text[:20]}…"
        raise ValueError(f"invalid JSON: {shown} is too large a number (it overflows to infinity)")
    return value


def strict_loads(text: str) -> Any:
    """`text` parsed as JSON, refusing what is no JSON number: NaN, Infinity, and numbers that overflow to
    infinity (looked for only where the text holds a long exponent or digit run: the hook slows every float)."""
    huge = finite_float if _MAYBE_HUGE.search(text) else None
    return json_text.loads(text, parse_constant=reject_constant, parse_float=huge)


def json_reason(exc: ValueError) -> str:
    """Why a text is not JSON, in the user's terms (not Python's: no `sys.set_int_max_str_digits()`)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg} (column {exc.colno})"
    message = str(exc)
    if message.startswith("invalid JSON:"):
        return message
    if (
        "integer string conversion" in message
    ):  # CPython refuses longer integers: reading them takes quadratic time
        return f"invalid JSON: an integer of more than {sys.get_int_max_str_digits():,} digits"
    return f"invalid JSON: {message}"


def parse_line(raw: bytes, unknown: list[str] | None = None) -> Conversation:
    """Parse one JSONL line into a `Conversation`; raise ValueError with a readable reason.

    A leading byte order mark is skipped. `unknown`, when given, receives the paths of keys no field reads.
    """
    try:
        text = raw.removeprefix(UTF8_BOM).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 at byte {exc.start}") from exc
    try:
        obj = strict_loads(text.rstrip("\r\n"))
    except ValueError as exc:
        raise ValueError(json_reason(exc)) from exc
    except RecursionError:
        raise ValueError("invalid JSON: nested too deeply") from None
    return parse_object(obj, unknown)


def parse_object(obj: object, unknown: list[str] | None = None) -> Conversation:
    """A parsed JSON value as a `Conversation`; raise ValueError with a readable reason."""
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")  # noqa: TRY004
    other = other_format(obj)
    if other is not None:
        raise ValueError(other)
    if unknown is not None:
        unknown.extend(unknown_keys(obj))
    try:
        conv = Conversation.model_validate(obj)
    except ValidationError as exc:
        raise ValueError(validation_reason(exc, obj)) from exc
    except RecursionError:
        raise ValueError("invalid conversation: nested too deeply") from None
    infinite = infinite_field(conv)
    if infinite is not None:
        raise ValueError(f"invalid conversation: {infinite}: Input should be a finite number")
    return conv


def infinite_field(conv: Conversation) -> str | None:
    """The path of a number field no cap bounds that holds infinity, else None: a number written as text is read
    as pydantic reads it (`"duration_ms": "Infinity"` or `"1e400"` is infinite), and the sums and estimates of
    the report have no use for it (the other number fields are capped, and NaN is no value `ge=0` takes)."""
    if conv.budget_usd == math.inf:
        return "budget_usd"
    for index, turn in enumerate(conv.turns):
        if turn.duration_ms == math.inf:
            return f"turns.{index}.duration_ms"
    return None


def other_format(obj: dict[str, object]) -> str | None:
    """Why a JSON object is another format than a transcript line, and which importer reads it; else None."""
    if "turns" in obj:
        return None
    if isinstance(obj.get("messages"), list):
        return f"a chat-format line (`messages`), not a transcript: convert it with `{IMPORT_CHAT}`"
    if "traj" in obj or "simulations" in obj:
        return f"a τ-bench result, not a transcript: convert it with `{IMPORT_TAU}`"
    return None


class _LoneCrLines(BlockStream):
    """A stream whose lines end in CR alone (classic Mac OS, some exporters) as one whose lines end in LF. Read as
    LF lines, such a file was one line: every conversation in it lost to one `Extra data` error. A stream with an
    LF in its first block passes as it is: its lines end in LF or CRLF, and a CR alone is whitespace in a line."""

    def __init__(self, source: io.BufferedIOBase) -> None:
        super().__init__(source)
        self._lone_cr: bool | None = None  # decided by the first block that ends a line
        self._held = b""  # a CR that ends a block, until the next byte says whether an LF follows it

    def convert(self, block: bytes, final: bool) -> bytes:
        """The block with its line ends as LF where the stream's lines end in CR alone."""
        data, self._held = self._held + block, b""
        if self._lone_cr is not False and not final and data.endswith(b"\r"):
            data, self._held = data[:-1], b"\r"
        if self._lone_cr is None and (b"\n" in data or b"\r" in data):
            self._lone_cr = b"\n" not in data
        return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if self._lone_cr else data


def bounded_lines(stream: io.BufferedIOBase, limit: int = MAX_LINE_BYTES) -> Iterator[bytes | None]:
    """The lines of `stream`, ended by LF, CRLF or, in a stream whose lines end so, CR alone; None for a line
    longer than `limit` bytes (read past, never held whole)."""
    stream = io.BufferedReader(_LoneCrLines(stream), BLOCK)
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


def line_conversation(
    raw: bytes | None,
    name: str,
    where: int,
    errors: list[LineError],
    unknown: UnknownKeys | None,
    item: bool = False,
) -> Conversation | None:
    """The conversation of one line (`raw`; None for one past `MAX_LINE_BYTES`), or of one item of a JSON array
    (`item`); None for a blank one, and for a malformed one, its `LineError` appended to `errors`."""
    if raw is None:
        errors.append(LineError(name, where, f"line longer than {MAX_LINE_BYTES} bytes; skipped"))
        return None
    if not raw.strip():
        return None
    keys: list[str] | None = [] if unknown is not None else None
    try:
        conv = parse_line(raw, keys)
    except ValueError as exc:
        reason = str(exc)[:MAX_REASON]
        log.debug("%s:%s%d: %s", name, " item " if item else "", where, reason)
        errors.append(LineError(name, where, reason, item=item))
        return None
    if keys and unknown is not None:
        unknown.add(f"{name}: item {where}" if item else f"{name}:{where}", keys)
    return conv
