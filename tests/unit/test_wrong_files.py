"""A file given to the wrong command, an empty file, a misspelt key, a verdict in a CI log: each message names
the file and says what to do instead."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentwatch.cli import app
from tests.support import published_runs
from tests.support.score_cli import KINDS, conversation, run, write

runner = CliRunner()


def _import(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, ["import", *map(str, args)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stderr


@pytest.fixture(scope="module")
def tau_file() -> Path:
    return published_runs.require(published_runs.AIRLINE)


def _chat(path: Path) -> Path:
    line = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    path.write_text(json.dumps(line) + "\n" + json.dumps(line) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------- importers


def test_openai_chat_given_a_benchmark_run_names_the_tau_bench_importer(
    tau_file: Path, tmp_path: Path
) -> None:
    code, err = _import("openai-chat", tau_file, "--out", tmp_path / "out")
    assert code == 2
    assert f"{tau_file} holds a τ-bench results file" in err
    assert f"use `agentwatch import tau-bench {tau_file} --out DIR`" in err
    assert not (tmp_path / "out" / "transcripts.jsonl").exists()  # no empty transcripts file left behind
    pretty = tmp_path / "tau2.json"  # a τ²-bench document spread over lines, gzipped
    pretty.write_bytes(gzip.compress(json.dumps({"simulations": [], "tasks": []}, indent=2).encode()))
    code, err = _import("openai-chat", pretty, "--out", tmp_path / "out")
    assert code == 2 and "a τ²-bench results file" in err and "agentwatch import tau-bench" in err


def test_tau_bench_given_chat_logs_names_the_chat_importer(tmp_path: Path) -> None:
    chat = _chat(tmp_path / "chats.jsonl")
    code, err = _import("tau-bench", chat, "--out", tmp_path / "out")
    assert code == 2 and "Extra data" not in err
    assert f"{chat} holds chat-format logs" in err
    assert f"use `agentwatch import openai-chat {chat} --out DIR`" in err


def test_a_json_array_of_chat_conversations_is_told_to_become_one_per_line(tmp_path: Path) -> None:
    """On one line or pretty-printed, an array of conversations is not one conversation's messages: the
    importer and `score` both give the `jq` that writes them one per line; a bare list of messages imports."""
    chats = [
        {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]},
        {"messages": [{"role": "user", "content": "z"}]},
    ]
    for name, text in (("one.json", json.dumps(chats)), ("pretty.json", json.dumps(chats, indent=2))):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        code, err = _import("openai-chat", path, "--out", tmp_path / "out")
        assert code == 2 and f"`jq -c '.[]' {path} > {name}.jsonl`" in err, err
        assert not (tmp_path / "out" / "transcripts.jsonl").exists()
        code, _, err = run(path)
        assert code == 2 and "a JSON array of chat-format conversations" in err
        assert f"jq -c '.[]' {path}" in err and "agentwatch import openai-chat" in err
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(chats[0]["messages"]), encoding="utf-8")
    code, _ = _import("openai-chat", bare, "--out", tmp_path / "bare")
    assert code == 0 and len((tmp_path / "bare" / "transcripts.jsonl").read_text().splitlines()) == 1


def test_importers_read_and_write_what_score_reads_and_no_more(
    tau_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 1.5 MB gzip file of 1.5 GB took `import tau-bench` to 3.2 GB and a 1.5 GB chat line `import openai-chat`
    to 7.6 GB; a conversation imported whole into a line longer than `agentwatch score` reads was then skipped
    there with no word of where it came from. A results file past `MAX_DOCUMENT_BYTES` is refused, a chat line
    past `MAX_LINE_BYTES` skipped with its number, a transcript line past it named and not written."""
    from agentwatch.importers import results_files
    from agentwatch.wire.transcripts import MAX_LINE_BYTES

    run = json.loads(gzip.decompress(tau_file.read_bytes()))
    big = tmp_path / "big.json"
    big.write_text(json.dumps(run), encoding="utf-8")
    monkeypatch.setattr(results_files, "MAX_DOCUMENT_BYTES", big.stat().st_size - 1)
    code, err = _import("tau-bench", big, "--out", tmp_path / "refused")
    assert code == 2 and "(gunzipped): a results file is read whole" in err
    monkeypatch.undo()
    run[0]["traj"][-1]["content"] = "x" * (MAX_LINE_BYTES + 1)
    big.write_text(json.dumps(run), encoding="utf-8")
    code, err = _import("tau-bench", big, "--out", tmp_path / "written")
    assert code == 0 and "over the 16,777,216 `agentwatch score` reads; not written" in err
    assert len((tmp_path / "written" / "transcripts.jsonl").read_text().splitlines()) == len(run) - 1
    chat = _chat(tmp_path / "chat.jsonl")
    line = {"messages": [{"role": "user", "content": "y" * (MAX_LINE_BYTES + 1)}]}
    chat.write_text(chat.read_text() + json.dumps(line) + "\n", encoding="utf-8")
    code, err = _import("openai-chat", chat, "--out", tmp_path / "chats")
    assert code == 0 and f"{chat}:3: line longer than 16,777,216 bytes; skipped" in err
    assert len((tmp_path / "chats" / "transcripts.jsonl").read_text().splitlines()) == 2


def test_either_importer_given_transcripts_names_score(tmp_path: Path) -> None:
    transcripts = write(tmp_path / "t.jsonl", [conversation(k, i) for i, k in enumerate(KINDS[:3])])
    for command in ("tau-bench", "openai-chat"):
        code, err = _import(command, transcripts, "--out", tmp_path / "out")
        assert code == 2 and "holds agentwatch transcripts" in err
        assert f"use `agentwatch score {transcripts}`" in err


def test_an_empty_file_is_named_empty_by_every_command(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    for command in ("tau-bench", "openai-chat"):
        code, err = _import(command, empty, "--out", tmp_path / "out")
        assert code == 2 and "not JSON" not in err
        assert f"error: {empty} is empty: there is nothing to import" in err
    code, _, err = run(empty)
    assert code == 2
    assert f"error: no conversation could be read from {empty} (empty: no line holds a conversation)" in err


def test_score_given_a_benchmark_run_names_the_importer(tau_file: Path, tmp_path: Path) -> None:
    """A τ-bench file, a τ²-bench run's `results.json` (as its directory format saves it) and that directory:
    each named, with the command that reads it; a directory of no run asks for its files."""
    code, _, err = run(tau_file)
    assert code == 2 and "agentwatch import tau-bench" in err
    saved = tmp_path / "run"
    (saved / "simulations").mkdir(parents=True)
    (saved / "results.json").write_text(json.dumps({"timestamp": "t", "info": {}, "tasks": []}), "utf-8")
    code, _, err = run(saved / "results.json")
    assert code == 2 and "holds a τ²-bench results file" in err
    code, _, err = run(saved)
    assert code == 2 and f"use `agentwatch import tau-bench {saved} --out DIR`" in err
    code, _, err = run(saved / "simulations")
    assert code == 2 and "is a directory: give the transcript files in it" in err


def test_an_import_that_yields_nothing_leaves_the_earlier_transcripts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, _ = _import("openai-chat", _chat(tmp_path / "good.jsonl"), "--out", out)
    assert code == 0
    before = (out / "transcripts.jsonl").read_text(encoding="utf-8")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"messages": [{"role": "robot"}]}\n{"messages": 3}\n', encoding="utf-8")
    code, err = _import("openai-chat", broken, "--out", out)
    assert code == 2 and f"no conversation could be imported from {broken}" in err
    assert "skipped: " in err  # each line says why
    assert (out / "transcripts.jsonl").read_text(encoding="utf-8") == before
    assert [p.name for p in out.iterdir()] == ["transcripts.jsonl"]


def test_a_chat_log_and_a_benchmark_run_still_import(tau_file: Path, tmp_path: Path) -> None:
    code, _ = _import("openai-chat", _chat(tmp_path / "c.jsonl"), "--out", tmp_path / "a")
    assert code == 0 and len((tmp_path / "a" / "transcripts.jsonl").read_text().splitlines()) == 2
    code, _ = _import("tau-bench", tau_file, "--out", tmp_path / "b")
    assert code == 0 and len((tmp_path / "b" / "transcripts.jsonl").read_text().splitlines()) == 100


# --------------------------------------------------------------------------- score


def _mixed(tmp_path: Path) -> Path:
    return write(tmp_path / "m.jsonl", [conversation(k, i) for i, k in enumerate(KINDS)])


def _passing(tmp_path: Path) -> Path:
    return write(tmp_path / "good.jsonl", [conversation("good", i) for i in range(200)])


@pytest.mark.parametrize("fmt", ["text", "json", "html"])
def test_every_score_exit_states_the_verdict_on_stderr(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"report.{fmt}"
    code, stdout, err = run(_mixed(tmp_path), "--format", fmt, "--out", out)
    assert code == 1 and stdout == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith("verdict: DO NOT SHIP (pass@1, p^3 (exchangeable) failed); pass@1 lower bound 0.")
    assert "(needs >= 0.8)" in last and f"report in {out}; exit 1" in last
    code, _, err = run(_passing(tmp_path), "--format", fmt, "--out", out)
    assert code == 0 and err.strip().splitlines()[-1] == f"verdict: SAFE TO SHIP; report in {out}; exit 0"
    code, _, err = run(_mixed(tmp_path), "--format", fmt, "--out", out, "--no-gate")
    assert code == 0 and err.strip().endswith("exit 0 (--no-gate: the gate does not set it)")


def test_the_verdict_names_a_baseline_regression(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    assert run(_passing(tmp_path), "--format", "json", "--out", base)[0] == 0
    worse = [conversation("good" if i % 3 else "partial", i) for i in range(200)]
    code, _, err = run(write(tmp_path / "w.jsonl", worse), "--baseline", base, "--format", "json")
    last = err.strip().splitlines()[-1]
    assert (
        code == 1 and "baseline regression" in last and "[all] P(pass^3 dropped by more than 0.05) = " in last
    )


def test_a_json_array_is_noted_like_every_other_message(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    array = tmp_path / "array.json"
    array.write_text(json.dumps([conversation(k, i) for i, k in enumerate(KINDS)]), encoding="utf-8")
    with caplog.at_level(logging.INFO):
        code, _, err = run(array, "--no-gate")
    assert code == 0
    assert f"note: {array} holds one JSON array: read item by item" in err.splitlines()
    assert not [r for r in caplog.records if r.levelno >= logging.INFO and "JSON array" in r.getMessage()]


def test_a_misspelt_required_key_gets_a_did_you_mean(tmp_path: Path) -> None:
    line: dict[str, Any] = conversation("good", 1)
    line["converstion_id"] = line.pop("conversation_id")
    line["turns"][0]["tool_calls"][0]["nmae"] = line["turns"][0]["tool_calls"][0].pop("name")
    code, _, err = run(write(tmp_path / "typo.jsonl", [line]))
    assert code == 2
    assert (
        "conversation_id: Field required (the line has `converstion_id`: did you mean `conversation_id`?)"
        in err
    )
    assert "turns.0.tool_calls.0.name: Field required (the line has `nmae`: did you mean `name`?)" in err


def test_task_ids_sort_as_numbers(tmp_path: Path) -> None:
    lines = []
    for i, task in enumerate(["10", "2", "0", "1", "task-10", "task-2"] * 3):
        line = conversation("good", i)
        line["task"] = task
        lines.append(line)
    code, stdout, _ = run(write(tmp_path / "t.jsonl", lines), "--format", "json", "--no-gate")
    assert code == 0
    assert list(json.loads(stdout)["by_task"]) == ["0", "1", "2", "10", "task-2", "task-10"]
    _, text, _ = run(tmp_path / "t.jsonl", "--no-gate")
    per_task = text.split("METRICS (by task):")[1].splitlines()[1:7]
    assert [line.split()[0] for line in per_task] == ["0", "1", "2", "10", "task-2", "task-10"]


# --------------------------------------------------------------------------- the live demo


def _rows(tasks: int) -> list[dict[str, str]]:
    return [
        {
            "version": v,
            "task": f"order_status_{t}",  # the demo's longest task name
            "graded": "1234/5678",
            "success": "0.85 [0.80, 0.90]",
            "pow3": "p^3 (exch.) 0.61 [0.55, 0.70]",
            "ASR": "0.85 [0.80, 0.90]",
            "errors": "1.2%",
            "regression": "0.99 vs 1.0",
        }
        for t in range(tasks)
        for v in ("1.0", "1.1")
    ]


@pytest.mark.parametrize(
    ("width", "height", "tasks", "fits"), [(200, 40, 4, True), (130, 40, 4, False), (200, 20, 8, False)]
)
def test_the_live_table_is_shown_whole_or_not_at_all(width: int, height: int, tasks: int, fits: bool) -> None:
    """A table wider or taller than the terminal would lose its last columns or its footer: lines instead."""
    from rich.console import Console

    from agentwatch.cli import demo_cmd

    console = Console(width=width, height=height, force_terminal=True, record=True, color_system=None)
    display = demo_cmd._Display(console, "1h", 9464)
    if display.live is not None:  # a live display left running keeps sys.stdout for the tests after this one
        display.live.stop()
    table = display._table(_rows(tasks), 1000, 30.0, None)
    assert display.fits(table) is fits
    if fits:
        console.print(table)
        shown = console.export_text()
        assert "Ctrl-C to stop" in shown and "P(regression)" in shown and "…" not in shown
        assert max(len(line) for line in shown.splitlines()) <= width
