"""Hostile transcript and log files on the offline path: numbers that overflow to infinity, lines ended by CR
alone, gzip files damaged or cut short. Whatever can be read is read; the rest is named, never a traceback."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agentwatch.cli import app
from agentwatch.wire.transcript_lines import bounded_lines
from agentwatch.wire.transcripts import LineError, iter_conversations
from tests.support.score_cli import run

_BLOCK = 64 * 1024  # the block `bounded_lines` reads a stream by


def _conv(cid: str, **turn: object) -> dict[str, object]:
    return {"conversation_id": cid, "turns": [{"input": "q", "answer": "a", **turn}]}


def _chat(cid: str) -> dict[str, object]:
    return {
        "id": cid,
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}],
    }


def _read(path: Path) -> tuple[list[str], list[LineError]]:
    errors: list[LineError] = []
    return [c.conversation_id for c in iter_conversations(path, errors)], errors


def _strict(line: str) -> dict[str, Any]:
    """`line`, a JSON object, parsed refusing NaN and Infinity (which `json.loads` alone takes)."""

    def refuse(name: str) -> object:
        raise ValueError(f"{name} is no JSON")

    doc = json.loads(line, parse_constant=refuse)
    assert isinstance(doc, dict)
    return doc


def test_a_number_that_overflows_to_infinity_is_a_malformed_line(tmp_path: Path) -> None:
    """`duration_ms: 1e400` (or `"Infinity"` as text) was read as an infinite duration, a budget of `1e400` as an
    infinite ceiling: the details file then said `duration_s: null` with no word, and the report counted an
    infinite budget as one not overspent."""
    lines = [
        json.dumps(_conv("dur")).replace('"answer": "a"', '"answer": "a", "duration_ms": 1e400'),
        json.dumps({**_conv("budget"), "budget_usd": 0}).replace('"budget_usd": 0', '"budget_usd": 1E+400'),
        json.dumps(_conv("result", tool_calls=[{"name": "f", "result": {"v": 0}}])).replace(
            '"v": 0', '"v": -' + "9" * 320 + ".5"
        ),
        json.dumps(_conv("text", duration_ms="Infinity")),
        json.dumps({**_conv("text-budget"), "budget_usd": "1e999"}),
        json.dumps(_conv("small", duration_ms=0.5)).replace("0.5", "1e-400"),  # an underflow is just 0
        json.dumps(_conv("ok", duration_ms=1e308)),
    ]
    path = tmp_path / "inf.jsonl"
    path.write_text("\n".join(lines) + "\n")
    ids, errors = _read(path)
    assert ids == ["small", "ok"]
    reasons = {e.line: e.reason for e in errors}
    assert reasons == {
        1: "invalid JSON: 1e400 is too large a number (it overflows to infinity)",
        2: "invalid JSON: 1E+400 is too large a number (it overflows to infinity)",
        3: "invalid JSON: -9999999999999999999… is too large a number (it overflows to infinity)",
        4: "invalid conversation: turns.0.duration_ms: Input should be a finite number",
        5: "invalid conversation: budget_usd: Input should be a finite number",
    }
    array = tmp_path / "inf.json"  # one JSON array: the bad items alone are lost
    array.write_text("[\n" + ",\n".join(lines) + "\n]\n")
    ids, errors = _read(array)
    assert ids == ["small", "ok"] and [(e.line, e.item) for e in errors] == [(i, True) for i in range(1, 6)]

    code, _out, err = run(path, "--no-gate", "--format", "json", "--details", tmp_path / "d.jsonl")
    assert code == 0 and "inf.jsonl:1: invalid JSON: 1e400 is too large" in err
    for line in (tmp_path / "d.jsonl").read_text().splitlines():
        assert _strict(line)["duration_s"] is not None


def test_lines_ended_by_cr_alone_are_read_as_lines(tmp_path: Path) -> None:
    """A file whose lines end in CR alone (classic Mac OS) was one line: every conversation in it lost to one
    `Extra data` error."""
    lines = [json.dumps(_conv(f"c{i}")) for i in range(3)]
    lines.insert(1, '{"conversation_id": "bad", "turns": [')
    path = tmp_path / "cr.jsonl"
    path.write_bytes(("\r".join(lines) + "\r").encode())
    ids, errors = _read(path)
    assert ids == ["c0", "c1", "c2"] and [e.line for e in errors] == [2]
    packed = tmp_path / "cr.jsonl.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert _read(packed)[0] == ["c0", "c1", "c2"]

    # a line end that straddles two blocks of the read: CR alone, and CR LF (a CR then is no line of its own)
    first = b'{"a": "' + b"x" * (_BLOCK - 10) + b'"}\r'
    assert len(first) == _BLOCK
    assert list(bounded_lines(io.BytesIO(first + b"{}\r{}"))) == [first[:-1] + b"\n", b"{}\n", b"{}"]
    assert list(bounded_lines(io.BytesIO(first + b"\n{}\r\n{}"))) == [first + b"\n", b"{}\r\n", b"{}"]
    spaced = b'{"a": 1,\r"b": 2}\n{}\n'  # LF lines: a CR inside one is whitespace, not a line end
    assert list(bounded_lines(io.BytesIO(spaced))) == [b'{"a": 1,\r"b": 2}\n', b"{}\n"]


def test_score_of_a_damaged_gzip_file_that_gives_nothing_exits_2(tmp_path: Path) -> None:
    """Naming why nothing was read looked into the file again: a gzip file cut short ended the run with click's
    `Aborted!` and exit 1 (the gate's status), one that fails its CRC with a traceback."""
    data = gzip.compress(b"".join(json.dumps(_chat(f"c{i}")).encode() + b"\n" for i in range(2000)))
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    code, _out, err = run(cut)
    assert code == 2 and "error: no conversation could be read from" in err and "Aborted" not in err
    crc = tmp_path / "crc.jsonl.gz"
    crc.write_bytes(data[:-8] + bytes(b ^ 0xFF for b in data[-8:-4]) + data[-4:])  # the CRC-32 altered
    code, _out, err = run(crc)
    assert code == 2 and "error: no conversation could be read from" in err


def test_import_of_chat_logs_cut_short_keeps_the_lines_before_the_cut(tmp_path: Path) -> None:
    """`agentwatch score` keeps what a gzip file cut short holds; `import openai-chat` imported nothing (exit 2),
    and a deflate stream damaged at its start ended with a traceback (`zlib.error` is no OSError)."""
    data = gzip.compress(b"".join(json.dumps(_chat(f"c{i}")).encode() + b"\n" for i in range(2000)))
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["import", "openai-chat", str(cut), "--out", str(out)])
    assert result.exit_code == 0, result.output
    written = (out / "transcripts.jsonl").read_text().splitlines()
    assert (
        0 < len(written) < 2000 and f"{cut}:{len(written) + 1}: file unreadable after line" in result.stderr
    )
    assert [json.loads(line)["conversation_id"] for line in written] == [f"c{i}" for i in range(len(written))]

    damaged = tmp_path / "damaged.jsonl.gz"
    damaged.write_bytes(data[:10] + b"\xff" + data[11:])  # a deflate block of the reserved type
    for command in ("openai-chat", "tau-bench"):
        result = CliRunner().invoke(app, ["import", command, str(damaged), "--out", str(tmp_path / command)])
        assert result.exit_code == 2 and "invalid block type" in result.stderr, (command, result.exception)


def test_import_of_a_chat_budget_that_overflows_writes_json_score_reads(tmp_path: Path) -> None:
    """A chat line's `budget_usd: 1e400` was written to transcripts.jsonl as `Infinity`, which is no JSON:
    `agentwatch score` then refused the line, and the conversation the import counted was lost."""
    logs = tmp_path / "logs.jsonl"
    logs.write_text(
        json.dumps({**_chat("c1"), "budget_usd": 0}).replace('"budget_usd": 0', '"budget_usd": 1e400')
        + "\n"
        + json.dumps({**_chat("c2"), "budget_usd": "Infinity"})
        + "\n"
        + json.dumps({**_chat("c3"), "budget_usd": 0.5})
        + "\n"
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["import", "openai-chat", str(logs), "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = [_strict(line) for line in (out / "transcripts.jsonl").read_text().splitlines()]
    assert [(line.get("budget_usd"), line.get("notes")) for line in lines] == [
        (None, ["budget_usd 'inf' ignored: not a finite number"]),
        (None, ["budget_usd 'Infinity' ignored: not a finite number"]),
        (0.5, None),
    ]
    ids, errors = _read(out / "transcripts.jsonl")
    assert ids == ["c1", "c2", "c3"] and errors == []


def test_finite_turn_durations_that_sum_past_a_float_give_no_duration_not_an_infinite_one(
    tmp_path: Path,
) -> None:
    """Two turns of 1e308 ms each are finite, but their sum is not: the score said `duration_s` inf (null in JSON,
    `inf` to whatever read the record in memory)."""
    from agentwatch.scorers import ConversationScorer
    from agentwatch.wire.schema import Conversation

    turn = {"input": "q", "answer": "a", "duration_ms": 1e308}
    score = ConversationScorer().score(
        Conversation.model_validate({"conversation_id": "c", "turns": [turn, turn]})
    )
    assert score.duration_s is None
    one = ConversationScorer().score(Conversation.model_validate({"conversation_id": "c", "turns": [turn]}))
    assert one.duration_s == 1e305  # one such turn is a duration, however long
