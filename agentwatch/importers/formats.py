"""Which format a file holds, so that a command given another command's file says which command reads it.

`agentwatch score` reads transcripts, `agentwatch import openai-chat` chat-format logs, `agentwatch import
tau-bench` benchmark results; each is easy to give the other's file. `sniff` looks at the first line (and,
when the file is one JSON document, at the document) and names the format; `wrong_format` turns a format the
command does not read into one sentence naming the command that does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agentwatch.importers.dialects import MESSAGE_TYPES
from agentwatch.importers.results_files import HEADER, first_line
from agentwatch.importers.swe_agent import is_swe_agent
from agentwatch.wire import json_text
from agentwatch.wire.transcripts import MAX_DOCUMENT_BYTES, UTF8_BOM, open_binary

Kind = Literal["empty", "transcripts", "chat", "tau-bench", "tau2-bench", "unknown"]
Layout = Literal["lines", "document"]
HEAD_BYTES = 1 << 20  # enough for the first line of every format seen; a longer one is read as a document

WHAT: dict[str, str] = {
    "empty": "nothing (the file is empty)",
    "transcripts": "agentwatch transcripts (a conversation with `turns` per line)",
    "chat": "chat-format logs (a conversation of `messages` per line)",
    "tau-bench": "a τ-bench results file (a JSON array of {task_id, trial, reward, info, traj}, or one a line)",
    "tau2-bench": "a τ²-bench results file (an object with `simulations` and `tasks`, a header and a "
    "simulation a line, or a list of simulations)",
    "unknown": "no format agentwatch reads",
}
COMMAND: dict[str, str] = {
    "transcripts": "agentwatch score {file}",
    "chat": "agentwatch import openai-chat {file} --out DIR",
    "tau-bench": "agentwatch import tau-bench {file} --out DIR",
    "tau2-bench": "agentwatch import tau-bench {file} --out DIR",
}


@dataclass(frozen=True, slots=True)
class Sniffed:
    """What a file holds (`kind`), and whether as JSON Lines or as one JSON document (`layout`)."""

    kind: Kind
    layout: Layout


def kind_of(value: object) -> Kind:
    """The format a parsed JSON value (a line, or a whole document) belongs to."""
    if isinstance(value, dict):
        if isinstance(value.get("simulations"), list) or isinstance(value.get("simulation_index"), list):
            return "tau2-bench"  # one file, or the metadata of a run saved as a directory
        if isinstance(value.get("tasks"), list) and isinstance(value.get("info"), dict):
            return "tau2-bench"  # a run's metadata saved without its simulations' index
        if value.get("type") == HEADER and isinstance(value.get("info"), dict):
            return "tau2-bench"  # the first line of a run written a simulation a line
        if "traj" in value:
            return "tau-bench"
        if "turns" in value:
            return "transcripts"
        if isinstance(value.get("messages"), list) and "task_id" in value and "reward_info" in value:
            return "tau2-bench"  # one simulation: a leaderboard file may hold a bare list of them
        if isinstance(value.get("messages"), list):
            return "chat"
        if is_swe_agent(value):
            return "chat"  # a SWE-agent trajectory: the chat importer reads it (`importers.swe_agent`)
        return "unknown"
    if isinstance(value, list):
        first = next((item for item in value if isinstance(item, dict)), None)
        if first is None:
            return "unknown"
        if _messages(value):
            return "chat"  # a bare list of messages: one chat conversation
        return kind_of(first)
    return "unknown"


def _messages(value: list) -> bool:
    """Whether a JSON array is a bare list of chat messages (one conversation), not a list of conversations."""
    first = next((item for item in value if isinstance(item, dict)), None)
    if first is None:
        return False
    kind = first.get("type")  # may be anything: a list or an object is no message type (and cannot be hashed)
    typed = isinstance(kind, str) and kind in MESSAGE_TYPES
    return ("role" in first or typed or ("from" in first and "value" in first)) and "turns" not in first


def _parse(raw: bytes) -> object:
    try:
        return json_text.loads(raw.removeprefix(UTF8_BOM).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def sniff_bytes(raw: bytes) -> Sniffed:
    """What the whole content of a file holds (`raw`, already gunzipped)."""
    text = raw.removeprefix(UTF8_BOM).strip()
    if not text:
        return Sniffed("empty", "lines")
    first, ended = first_line(text)  # ended by LF, CRLF or, in a file whose lines end so, CR alone
    line = _parse(first)
    if line is not None and ended:
        return Sniffed(kind_of(line), "lines")
    whole = _parse(text)
    if whole is not None:
        # one line holding a list of conversations is a document; one holding a conversation (a bare list of
        # messages among them) is a line
        many = (isinstance(whole, list) and not _messages(whole)) or kind_of(whole) == "tau2-bench"
        return Sniffed(kind_of(whole), "document" if many else "lines")
    return Sniffed(kind_of(line) if line is not None else "unknown", "lines")


def sniff(path: str | Path) -> Sniffed:
    """What the file at `path` holds (gzip detected); the whole file is read only when it is one JSON document
    (at most `MAX_DOCUMENT_BYTES`). Raise TranscriptFileError when it cannot be opened."""
    with open_binary(path) as stream:
        head = stream.read(HEAD_BYTES + 1)
        if len(head) <= HEAD_BYTES:
            return sniff_bytes(head)
        text = head.removeprefix(UTF8_BOM).lstrip()
        first, ended = first_line(text)
        line = _parse(first) if ended else None
        if line is not None:
            return Sniffed(kind_of(line), "lines")
        rest = stream.read(MAX_DOCUMENT_BYTES + 1 - len(head))
    if len(head) + len(rest) > MAX_DOCUMENT_BYTES:
        return Sniffed("unknown", "lines")
    return sniff_bytes(head + rest)


def wrong_format(
    path: str | Path, found: Sniffed, reads: tuple[Kind, ...], layout: Layout | None
) -> str | None:
    """Why a command that reads `reads` (laid out as `layout`, any when None) cannot read what was `found`,
    naming the command that can; None when it can, or when nothing is known about the file."""
    if found.kind == "unknown":
        return None
    if found.kind == "empty":
        return f"{path} is empty: there is nothing to import"
    if found.kind in reads:
        if layout is None or found.layout == layout:
            return None
        return (
            f"{path} holds one JSON document of {WHAT[found.kind]}; this command reads one conversation per "
            f"line (JSON Lines, e.g. `jq -c '.[]' {path} > {Path(path).name}.jsonl`)"
        )
    command = COMMAND[found.kind].format(file=path)
    return f"{path} holds {WHAT[found.kind]}, not what this command reads: use `{command}`"
