"""Transcript files that are damaged or written oddly: whatever can be read is read, the rest is named."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import sys
import threading
from pathlib import Path

import pytest

from agentwatch.wire.transcripts import LineError, TranscriptFileError, iter_conversations
from tests.support.score_cli import run


def _conv(cid: str) -> dict[str, object]:
    return {"conversation_id": cid, "turns": [{"input": 'hi, [x] {y} "q"', "answer": "hello"}]}


def _line(cid: str) -> bytes:
    return json.dumps(_conv(cid)).encode()


def _read(path: Path) -> tuple[list[str], list[LineError], list[str]]:
    errors: list[LineError] = []
    notes: list[str] = []
    ids = [c.conversation_id for c in iter_conversations(path, errors, notes=notes)]
    return ids, errors, notes


BAD_ITEMS = {
    b'{"conversation_id": "n", "turns": [{"input": "q", "answer": NaN}]}': "NaN is not a JSON number",
    b'{"conversation_id": "i", "turns": [{"input": "q", "duration_ms": 1'
    + b"0" * 5000
    + b"}]}": "an integer of more",
    b'{"conversation_id": "d", "turns": [], "m": '
    + b"[" * 100_000
    + b"]" * 100_000
    + b"}": "nested too deeply",
    b'{"conversation_id": "u\xff", "turns": []}': "not UTF-8",
}


@pytest.mark.parametrize(("bad", "reason"), BAD_ITEMS.items(), ids=["nan", "huge-int", "deep", "not-utf8"])
@pytest.mark.parametrize("indent", [None, 2])
def test_a_json_array_with_one_bad_item_loses_only_that_item(
    tmp_path: Path, bad: bytes, reason: str, indent: int | None
) -> None:
    """One bad item made the whole array unreadable: `score` exited 2 and every good conversation was lost."""
    sep = b",\n  " if indent else b","
    path = tmp_path / "a.json"
    path.write_bytes(b"[" + sep.join([_line("c1"), _line("c2"), bad, _line("c3")]) + b"]\n")
    ids, errors, notes = _read(path)
    assert ids == ["c1", "c2", "c3"]
    assert [(e.line, e.item) for e in errors] == [(3, True)] and reason in errors[0].reason
    assert "read item by item" in notes[0]


def test_a_json_array_cut_short_keeps_the_items_before_the_cut(tmp_path: Path) -> None:
    data = json.dumps([_conv(f"c{i}") for i in range(3000)], indent=2).encode()
    plain = tmp_path / "cut.json"
    plain.write_bytes(data[: len(data) // 2])
    ids, errors, _ = _read(plain)
    assert 0 < len(ids) < 3000 and ids == [f"c{i}" for i in range(len(ids))]
    assert [e.line for e in errors] == [len(ids) + 1] and "cut short" in errors[0].reason
    packed = gzip.compress(data)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    ids, errors, _ = _read(cut)
    assert 0 < len(ids) < 3000 and ids == [f"c{i}" for i in range(len(ids))]
    assert "EOFError" in errors[-1].reason and "rest of file skipped" in errors[-1].reason
    trailing = tmp_path / "trailing.json.gz"  # a whole array, then bytes that are no gzip member
    trailing.write_bytes(packed + b"junk")
    ids, errors, _ = _read(trailing)
    assert len(ids) == 3000 and len(errors) == 1 and "rest of file skipped" in errors[0].reason


@pytest.mark.parametrize("first", [b"[]", b"[" + _line("c0") + b"]", b"{"])
def test_json_lines_whose_first_line_looks_like_a_document_are_read_as_lines(
    tmp_path: Path, first: bytes
) -> None:
    """A first line `[]`, `[{...}]` or `{` made the file one (invalid) document: every line after it was lost."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(first + b"\n" + _line("c1") + b"\n" + _line("c2") + b"\n")
    ids, errors, _ = _read(path)
    assert ids == ["c1", "c2"] and [e.line for e in errors] == [1]


def test_a_document_of_which_nothing_reads_is_named_once(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_bytes(b"{\n  not json\n")
    with pytest.raises(TranscriptFileError) as caught:
        _read(path)
    assert (
        str(caught.value).startswith(f"{path} starts like one JSON object")
        and str(caught.value).count(str(path)) == 1
    )


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"])
@pytest.mark.parametrize("document", [False, True])
def test_utf16_and_utf32_files_are_read_as_the_text_they_hold(
    tmp_path: Path, encoding: str, document: bool
) -> None:
    """PowerShell's `>` writes UTF-16: each line was `not UTF-8 at byte 0` or `Expecting value`, nothing read."""
    convs = [_conv("c1"), {**_conv("c2"), "task": "naïve ☃"}]
    text = json.dumps(convs) if document else "\r\n".join(json.dumps(c) for c in convs) + "\r\n"
    path = tmp_path / "wide.jsonl"
    path.write_bytes(text.encode(encoding))
    errors: list[LineError] = []
    notes: list[str] = []
    read = list(iter_conversations(path, errors, notes=notes))
    assert [c.conversation_id for c in read] == ["c1", "c2"] and read[1].task == "naïve ☃"
    assert errors == [] and f"is {encoding.upper()} text" in notes[0]


def test_an_integer_too_long_to_read_is_named_so(tmp_path: Path) -> None:
    """The reason was Python's (`use sys.set_int_max_str_digits() to increase the limit`), not the file's."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        b'{"conversation_id": "i", "turns": [], "n": 1' + b"0" * 5000 + b"}\n" + _line("c1") + b"\n"
    )
    ids, errors, _ = _read(path)
    assert ids == ["c1"] and [str(e) for e in errors] == [
        f"{path}:1: invalid JSON: an integer of more than {sys.get_int_max_str_digits():,} digits"
    ]


def test_null_bytes_are_malformed_lines_not_a_wide_encoding(tmp_path: Path) -> None:
    path = tmp_path / "nul.jsonl"
    path.write_bytes(b"\x00\x00\x00\n" + _line("c1") + b"\n")
    ids, errors, notes = _read(path)
    assert ids == ["c1"] and [e.line for e in errors] == [1] and notes == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("packed", [False, True])
def test_a_pipe_is_read_as_a_file_is(tmp_path: Path, packed: bool) -> None:
    """`agentwatch score <(zcat FILE)` reads a pipe, which cannot seek: it stopped with a traceback."""
    data = b"\n".join(_line(f"c{i}") for i in range(600)) + b"\n"
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)

    def feed() -> None:
        with contextlib.suppress(BrokenPipeError), open(fifo, "wb") as fh:
            fh.write(gzip.compress(data) if packed else data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    code, out, err = run(fifo, "--format", "json", "--no-gate")
    if (
        writer.is_alive()
    ):  # a reader that never opened the pipe, or stopped reading it, must not hang the test
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    writer.join()
    assert code == 0 and "Traceback" not in err and json.loads(out)["conversations"] == 600


@pytest.mark.parametrize("option", ["--out", "--details"])
def test_an_output_that_is_a_transcript_file_is_refused_and_the_file_kept(
    tmp_path: Path, option: str
) -> None:
    """`--out run.jsonl` (or `--details`) given one of the files it scores wrote the report over the transcripts."""
    path = tmp_path / "run.jsonl"
    data = b"\n".join(_line(f"c{i}") for i in range(3)) + b"\n"
    path.write_bytes(data)
    code, _, err = run(path, option, tmp_path / "." / "run.jsonl", "--no-gate")
    assert code == 2 and "is the transcript file" in err and path.read_bytes() == data
    same = tmp_path / "both.txt"
    code, _, err = run(path, "--out", same, "--details", same, "--no-gate")
    assert code == 2 and "--out and --details are one file" in err and not same.exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_that_gave_nothing_is_not_opened_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why nothing was read looked into each file again: a named pipe, opened again, waited for ever."""
    from agentwatch.cli.score_messages import why_nothing
    from agentwatch.importers import formats

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    looked: list[Path] = []
    monkeypatch.setattr(formats, "sniff", lambda path: looked.append(path))
    said = why_nothing([fifo], [LineError(str(fifo), 1, "invalid JSON")])
    assert looked == [] and said == f"{fifo} (1 malformed line(s) skipped)"
