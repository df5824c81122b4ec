"""Verdict cache keyed by judge id and a canonical hash of what the judge sees (`Judge.fingerprint`).

A conversation delivered twice, or the same conversation in two runs, is judged once. Only verdicts that grade
are kept (a failure is retried next time). In memory it is an LRU of `max_entries`, and of `max_entries` ×
`ENTRY_ROOM` bytes of keys and explanations (an explanation is up to 1,000 characters, and 1,000 of 4 bytes each
made an entry 4.4 KB, 440 MB at the default 100,000; a typical entry counts under 500); with a `path` every new
verdict is appended as one JSON line and the file is read back on open, so the offline CLI keeps its cache
between runs (the last line of a key wins; a line that is not a verdict that grades — torn, too long, not
UTF-8, a score outside [0, 1], an outcome no judge gives — is skipped and counted in a warning). The file is rewritten with the verdicts
kept in memory once it holds more than twice as many lines (at least `_MIN_LINES`), so that a service judging
for months neither fills its disk nor reads for minutes at start; one process writes a file. Thread-safe.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

from agentwatch.judge.verdict import JudgeVerdict, validate_verdict
from agentwatch.wire.schema import Outcome

log = logging.getLogger(__name__)

_MIN_LINES = 100  # a file this short is never rewritten
_MAX_LINE = 64 * 1024  # bytes; a verdict's line is a few hundred (its explanation at most 1,000 characters)
_MAX_EXPLANATION = 1000
_MAX_COUNT = 10**12
# What an entry costs beside its key and explanation (the verdict object, its numbers, the LRU's link): a typical
# entry measured 419 bytes with tracemalloc on CPython 3.11, of which its key and explanation about 230.
_ENTRY_OVERHEAD = 256
# Bytes an entry may count on average: a 1,000-character ASCII explanation counts 1,440 with its key, so entries
# of any explanation in ASCII all fit; ones of 4-byte characters (4,440) fit a third as many.
ENTRY_ROOM = 1536


def cache_key(judge_id: str, fingerprint: str) -> str:
    """The key of a verdict: judge id and fingerprint."""
    return f"{judge_id}\x1f{fingerprint}"


def _to_json(key: str, v: JudgeVerdict) -> str:
    return json.dumps(
        {
            "key": key,
            "outcome": v.outcome.value if v.outcome is not None else None,
            "score": v.score,
            "explanation": v.explanation,
            "judge_id": v.judge_id,
            "input_tokens": v.input_tokens,
            "output_tokens": v.output_tokens,
            "cost_usd": v.cost_usd,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _count(value: object) -> int:
    """A token count from the file: a whole number from 0 to `_MAX_COUNT`, else ValueError."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_COUNT:
        raise ValueError(f"token count {str(value)[:40]} is not a count")
    return value


def _from_json(d: object) -> tuple[str, JudgeVerdict]:
    """The key and verdict of one line; ValueError for anything but a verdict that grades."""
    if not isinstance(d, dict) or not isinstance(d.get("key"), str):
        raise ValueError("not a verdict line")
    cost = d.get("cost_usd")
    if cost is not None and (
        isinstance(cost, bool) or not isinstance(cost, (int, float)) or not 0 <= cost < math.inf
    ):
        raise ValueError(f"cost {str(cost)[:40]} is not a cost")
    explanation = d.get("explanation")
    judge_id = d.get("judge_id")
    if not isinstance(explanation, (str, type(None))) or not isinstance(judge_id, (str, type(None))):
        raise ValueError("explanation or judge id is not text")
    v = JudgeVerdict(
        outcome=Outcome(d["outcome"]),
        score=d["score"],
        explanation=(explanation or "")[:_MAX_EXPLANATION],
        judge_id=judge_id or "",
        input_tokens=_count(d.get("input_tokens")),
        output_tokens=_count(d.get("output_tokens")),
        cost_usd=None if cost is None else float(cost),
    )
    checked = validate_verdict(v)  # the score a number in [0, 1], the outcome a class a judge may give
    if not checked.ok:
        raise ValueError(checked.detail)
    return d["key"], replace(v, score=float(v.score))  # type: ignore[arg-type]


def _size(key: str, verdict: JudgeVerdict) -> int:
    """Bytes an entry counts: its key and explanation as stored, and `_ENTRY_OVERHEAD`."""
    return sys.getsizeof(key) + sys.getsizeof(verdict.explanation) + _ENTRY_OVERHEAD


def _lines(fh: BinaryIO) -> Iterator[bytes]:
    """The file's lines of at most `_MAX_LINE` bytes; a longer one is given as one empty line, read past."""
    while line := fh.readline(_MAX_LINE + 1):
        if len(line) > _MAX_LINE and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = fh.readline(_MAX_LINE)
            line = b""
        yield line


class JudgeCache:
    """Verdicts by key; `get` returns a copy marked `cached=True`."""

    def __init__(self, max_entries: int = 100_000, path: str | os.PathLike[str] | None = None) -> None:
        self.max_entries = max_entries
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, JudgeVerdict] = OrderedDict()
        self.max_bytes = max_entries * ENTRY_ROOM
        self._bytes = 0  # counted bytes of the entries held (`_size`)
        self._fh = None
        self._lines = 0  # lines in the file
        if self.path is not None:
            self._load()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 — closed in close()

    def _load(self) -> None:
        assert self.path is not None
        if not self.path.exists():
            return
        bad = 0
        with open(self.path, "rb") as fh:
            for line in _lines(fh):
                self._lines += 1
                try:
                    key, verdict = _from_json(json.loads(line))
                # RecursionError: nested deeper than the decoder goes; UnicodeDecodeError is a ValueError
                except (ValueError, KeyError, TypeError, RecursionError):
                    bad += 1
                    continue
                self._put(key, verdict)
            torn = False
            if fh.tell() > 0:
                fh.seek(-1, os.SEEK_END)
                torn = fh.read(1) != b"\n"
        if torn:  # a line cut short by a crash: end it, or the next verdict appended would join it
            with open(self.path, "ab") as out:
                out.write(b"\n")
        if bad:
            log.warning("judge cache %s: %d unreadable line(s) skipped", self.path, bad)

    def _put(self, key: str, verdict: JudgeVerdict) -> None:
        if self.max_entries <= 0:
            return
        entries = self._entries
        earlier = entries.get(key)
        if earlier is not None:
            self._bytes -= _size(key, earlier)
        entries[key] = verdict
        entries.move_to_end(key)
        self._bytes += _size(key, verdict)
        while len(entries) > self.max_entries or (self._bytes > self.max_bytes and len(entries) > 1):
            self._bytes -= _size(*entries.popitem(last=False))

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> JudgeVerdict | None:
        """The cached verdict (marked cached, no latency) or None."""
        with self._lock:
            v = self._entries.get(key)
            if v is None:
                return None
            self._entries.move_to_end(key)
        return replace(v, cached=True, latency_s=0.0)

    def put(self, key: str, verdict: JudgeVerdict) -> None:
        """Keep a verdict that grades (failures are not cached)."""
        if not verdict.ok or verdict.cached:
            return
        verdict = replace(verdict, latency_s=0.0)
        with self._lock:
            self._put(key, verdict)
            if self._fh is not None:
                self._fh.write(_to_json(key, verdict) + "\n")
                self._fh.flush()
                self._lines += 1
                if self._lines > max(2 * self.max_entries, _MIN_LINES):
                    self._rewrite()

    def _rewrite(self) -> None:
        """Replace the file by the verdicts in memory, least recently used first (as they are read back)."""
        assert self.path is not None and self._fh is not None
        self._fh.close()
        fresh = self.path.with_name(self.path.name + ".new")
        with open(fresh, "w", encoding="utf-8") as out:
            out.writelines(_to_json(key, v) + "\n" for key, v in self._entries.items())
            out.flush()
            os.fsync(out.fileno())
        os.replace(fresh, self.path)  # atomic: a crash leaves the old file or the new one, whole
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 — closed in close()
        self._lines = len(self._entries)

    def close(self) -> None:
        """Close the file (if any)."""
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
