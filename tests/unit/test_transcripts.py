"""Reading transcript JSONL files: plain and gzip, malformed lines reported with their line numbers."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from agentwatch.wire.transcripts import (
    LineError,
    TranscriptFileError,
    is_gzip,
    iter_conversations,
    read_conversations,
)


def _conv(cid: str, **extra: object) -> str:
    return json.dumps({"conversation_id": cid, "turns": [{"input": "hi", "answer": "hello"}], **extra})


LINES = [
    _conv("c1", task="t"),  # 1
    "",  # 2 blank: skipped silently
    '{"conversation_id": "c2", "turns": [',  # 3 truncated JSON
    "[1, 2]",  # 4 not an object
    json.dumps({"turns": []}),  # 5 missing conversation_id
    _conv("c3", outcome="Partial-Correct"),  # 6
    json.dumps({"conversation_id": "c4", "turns": "nope"}),  # 7 wrong type
    _conv("c5"),  # 8
]


def _write(path: Path, lines: list[str], gz: bool = False, extra: bytes = b"") -> Path:
    data = ("\n".join(lines) + "\n").encode() + extra
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def _check(convs: list, errors: list[LineError], name: str) -> None:
    assert [c.conversation_id for c in convs] == ["c1", "c3", "c5"]
    assert convs[1].outcome is not None and convs[1].outcome.value == "partial_correct"
    assert [(e.path, e.line) for e in errors] == [(name, 3), (name, 4), (name, 5), (name, 7)]
    assert "invalid JSON" in errors[0].reason
    assert "expected a JSON object" in errors[1].reason
    assert "conversation_id" in errors[2].reason
    assert "turns" in errors[3].reason
    assert str(errors[0]).startswith(f"{name}:3: invalid JSON")


def test_plain_file_malformed_lines_reported_rest_read(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", LINES, extra=b"\xff\xfe not utf8\n")
    errors: list[LineError] = []
    convs = list(iter_conversations(path, errors))
    assert errors[-1].line == 9 and "not UTF-8" in errors[-1].reason
    _check(convs, errors[:-1], str(path))


def test_gzip_detected_by_magic_bytes_not_name(tmp_path: Path) -> None:
    gz = _write(tmp_path / "named-plain.jsonl", LINES, gz=True)
    plain = _write(tmp_path / "named.gz", LINES)
    assert is_gzip(gz) and not is_gzip(plain)
    for path in (gz, plain):
        errors: list[LineError] = []
        _check(list(iter_conversations(path, errors)), errors, str(path))


def test_truncated_gzip_keeps_what_was_read(tmp_path: Path) -> None:
    lines = [_conv(f"c{i}") for i in range(2000)]
    data = gzip.compress(("\n".join(lines) + "\n").encode())
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    errors: list[LineError] = []
    convs = list(iter_conversations(path, errors))
    assert 0 < len(convs) < 2000
    assert [c.conversation_id for c in convs] == [f"c{i}" for i in range(len(convs))]
    assert len(errors) == 1 and "rest of file skipped" in errors[0].reason
    assert errors[0].line >= len(convs)


def test_unreadable_files_raise(tmp_path: Path) -> None:
    with pytest.raises(TranscriptFileError, match="cannot read"):
        read_conversations([tmp_path / "missing.jsonl"], [])
    bad = tmp_path / "bad.gz"
    bad.write_bytes(b"\x1f\x8b" + b"\x00" * 20)
    with pytest.raises(TranscriptFileError, match="cannot decode"):
        read_conversations([bad], [])
    # cut inside its 10-byte header: it read as an empty file (alone "Aborted.", beside others skipped unsaid)
    whole = gzip.compress(("\n".join(LINES) + "\n").encode())
    for cut in (3, 5, 9):
        headless = tmp_path / f"cut{cut}.jsonl.gz"
        headless.write_bytes(whole[:cut])
        with pytest.raises(TranscriptFileError, match=f"cannot decode {headless}"):
            read_conversations([headless], [])


def test_progress_reports_bytes_read(tmp_path: Path) -> None:
    path = _write(tmp_path / "many.jsonl", [_conv(f"c{i}") for i in range(1000)])
    seen: list[int] = []
    errors: list[LineError] = []
    assert len(list(iter_conversations(path, errors, seen.append))) == 1000
    assert seen == sorted(seen) and seen[-1] == path.stat().st_size and len(seen) >= 3
    assert errors == []


# --------------------------------------------------------------------------- hostile input


def test_hostile_lines_are_reported_and_the_rest_is_read(tmp_path) -> None:
    from agentwatch.wire import transcripts

    good = b'{"conversation_id": "ok", "turns": [{"input": "q", "answer": "a"}]}\n'
    lines = [
        b"[" * 100_000 + b"\n",  # deep nesting
        b'{"conversation_id": "n", "turns": [{"input": "q", "answer": NaN}]}\n',
        b'{"conversation_id": "i", "turns": [{"input": "q", "duration_ms": -Infinity}]}\n',
        b'{"conversation_id": "u", "turns": [{"input": "\xff\xfe"}]}\n',
        b'{"conversation_id": "' + b"x" * (transcripts.MAX_LINE_BYTES + 10) + b'"}\n',  # over-long line
        b'{"conversation_id": "s", "turns": [{"input": "q", "answer": "a", "duration_ms": "12.5"}]}\n',
        good,
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(b"".join(lines))
    errors: list = []
    convs = list(transcripts.iter_conversations(path, errors))
    assert [c.conversation_id for c in convs] == ["s", "ok"]
    assert convs[0].turns[0].duration_ms == 12.5  # a number written as a string is read as the number
    reasons = {e.line: e.reason for e in errors}
    assert reasons == {
        1: "invalid JSON: nested too deeply",
        2: "invalid JSON: NaN is not a JSON number",
        3: "invalid JSON: -Infinity is not a JSON number",
        4: "not UTF-8 at byte 46",
        5: f"line longer than {transcripts.MAX_LINE_BYTES} bytes; skipped",
    }


def test_hostile_baseline_files_are_clear_errors(tmp_path) -> None:
    import gzip

    import pytest

    from agentwatch.report.baseline import BaselineError, load_baseline

    binary = tmp_path / "b.bin"
    binary.write_bytes(b"\x00\xff\xfe binary")
    with pytest.raises(BaselineError, match="not a JSON report"):
        load_baseline(binary)
    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * 100_000)
    with pytest.raises(BaselineError, match="nested too deeply"):
        load_baseline(deep)
    broken_gzip = tmp_path / "c.json.gz"
    broken_gzip.write_bytes(gzip.compress(b'{"a": 1}')[:12])
    with pytest.raises(BaselineError, match="cannot read baseline"):
        load_baseline(broken_gzip)


def test_the_wire_contract_is_the_schemas() -> None:
    """One place names the outcome values and evidence codes; the pydantic schema and the SDK agree with it."""
    from agentwatch import wire
    from agentwatch.wire import attributes
    from agentwatch.wire.schema import EVIDENCE, SCHEMA_VERSION, Outcome

    assert {o.value for o in Outcome} == wire.SCORE_OUTCOMES
    assert attributes.OUTCOMES == wire.LABEL_OUTCOMES == wire.SCORE_OUTCOMES - {"unscored"}
    assert EVIDENCE == wire.EVIDENCE and SCHEMA_VERSION == wire.SCORE_FORMAT_VERSION
