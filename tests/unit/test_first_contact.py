"""A newcomer's own files and first commands: every surprise named, nothing silently dropped or miscounted."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentwatch.metrics_http import MetricsServer, where
from tests.support.fake_openai import FakeOpenAI, verdict_reply
from tests.support.score_cli import KINDS, conversation, failing_hallucinations, run, write

ROOT = Path(__file__).resolve().parents[2]


def _report(*args: str | Path) -> tuple[int, dict, str]:
    code, out, err = run(*args, "--format", "json", "--no-gate")
    return code, json.loads(out), err


# --------------------------------------------------------------------------- duplicates


def test_duplicate_ids_are_counted_and_named(tmp_path: Path) -> None:
    convs = [conversation("good", i) for i in range(8)]
    lines = convs + [convs[i] for i in range(7) for _ in range(3)]  # 7 ids read 4 times each
    lines[-1] = {**convs[6], "turns": [{**convs[6]["turns"][0], "answer": "no idea"}]}  # the last one wins
    code, report, err = _report(write(tmp_path / "dup.jsonl", lines))
    assert code == 0 and report["conversations"] == 8
    assert report["input"]["duplicate_ids"] == 7 and report["input"]["duplicate_records"] == 21
    assert report["input"]["duplicate_examples"] == ["good-0", "good-1", "good-2", "good-3", "good-4"]
    assert report["input"]["records"] == 29
    assert report["passed"] == 7  # good-6 counted once, as its last record (a wrong answer)
    assert (
        "7 conversation ids read more than once (21 extra records): good-0, good-1, good-2, good-3, "
        "good-4 and 2 more; each counts once, its last record"
    ) in err
    _, text, _ = run(tmp_path / "dup.jsonl", "--no-gate")
    assert "Duplicate ids: 7 conversation ids read more than once (21 extra records)" in text


# --------------------------------------------------------------------------- unknown keys


def test_unknown_keys_are_named_with_their_lines_and_the_rest_is_scored(tmp_path: Path) -> None:
    convs = [conversation("good", i) for i in range(8)]
    for c in convs[2:]:
        c["outcom"] = "complete"  # six lines carry the misspelt label
    convs[3]["turns"][0]["tool_calls"][0]["argumnts"] = {"order_id": "1"}
    code, report, err = _report(write(tmp_path / "keys.jsonl", convs))
    assert code == 0 and report["conversations"] == 8 and report["labels"] == {}  # ignored, not a label
    assert report["input"]["unknown_keys"] == {"outcom": 6, "turns.*.tool_calls.*.argumnts": 1}
    warnings = [line for line in err.splitlines() if line.startswith("warning: unknown key")]
    path = tmp_path / "keys.jsonl"
    assert warnings == [
        (
            "warning: unknown key `outcom` ignored (not a transcript field; did you mean `outcome`?): "
            f"{path}:3, {path}:4, {path}:5, {path}:6, {path}:7 and 1 more line(s)"
        ),
        (
            "warning: unknown key `turns.*.tool_calls.*.argumnts` ignored (not a transcript field; did you mean "
            f"`arguments`?): {path}:4"
        ),
    ]


def test_known_keys_and_free_maps_raise_no_warning() -> None:
    from agentwatch.wire.transcript_keys import unknown_keys

    line = conversation("good", 1)
    line["tags"] = {"anything": "goes"}
    line["turns"][0]["tool_calls"][0]["arguments"] = {"free": {"nested": 1}}
    line["turns"][0]["usage"] = [{"model": "m", "input_tokens": 1}]
    assert unknown_keys(line) == []
    line["turns"][0]["expected"]["tools"][0]["mtach"] = {}
    line["turns"][0]["usage"][0]["tokens"] = 3
    assert unknown_keys(line) == ["turns.0.expected.tools.0.mtach", "turns.0.usage.0.tokens"]


# --------------------------------------------------------------------------- BOM, arrays, other formats


def test_a_byte_order_mark_costs_nothing(tmp_path: Path) -> None:
    plain = write(tmp_path / "plain.jsonl", [conversation(k, i) for i, k in enumerate(KINDS)])
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    _, a, _ = _report(plain)
    code, b, err = _report(bom)
    assert code == 0 and "malformed" not in err and b["conversations"] == len(KINDS)
    a.pop("input"), b.pop("input")
    assert a == b


def test_a_json_array_is_read_item_by_item(tmp_path: Path) -> None:
    convs = [conversation(k, i) for i, k in enumerate(KINDS)]
    lines = write(tmp_path / "lines.jsonl", convs)
    array = tmp_path / "array.json"
    array.write_text(json.dumps([*convs[:5], {"turns": "no id"}, *convs[5:]], indent=2), encoding="utf-8")
    _, a, _ = _report(lines)
    code, b, err = _report(array)
    assert code == 0 and f"malformed: {array}: item 6: invalid conversation" in err
    assert b["input"]["malformed"] == 1 and b["input"]["records"] == len(KINDS)
    a.pop("input"), b.pop("input")
    # the one difference: the unread item fails the gate's check of malformed lines (gate.max_malformed 0)
    unread = [
        (g["value"], g["passed"])
        for r in (a, b)
        for g in r["readiness"]["gates"]
        if g["name"] == "malformed lines"
    ]
    assert unread == [(0.0, True), (1.0, False)] and not b["readiness"]["safe_to_ship"]
    for r in (a, b):
        r["readiness"]["gates"] = [g for g in r["readiness"]["gates"] if g["name"] != "malformed lines"]
        r["readiness"].pop("safe_to_ship"), r["readiness"].pop("verdict")
    assert a == b
    one_line = tmp_path / "one-line.json"
    one_line.write_text(json.dumps(convs), encoding="utf-8")
    assert _report(one_line)[1]["conversations"] == len(KINDS)


def test_chat_lines_point_to_the_importer(tmp_path: Path) -> None:
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n", encoding="utf-8")
    code, _, err = run(chat)
    assert code == 2 and "a chat-format line (`messages`)" in err and "agentwatch import openai-chat" in err


def test_a_baseline_that_is_not_a_report_says_what_a_baseline_is(tmp_path: Path) -> None:
    transcripts = write(tmp_path / "t.jsonl", [conversation(k, i) for i, k in enumerate(KINDS)])
    code, _, err = run(transcripts, "--baseline", transcripts)
    assert code == 2 and "Extra data" not in err
    assert f"baseline {transcripts} holds JSON Lines (transcripts), one object per line, not a report" in err
    assert "--format json --out" in err
    one = tmp_path / "one.json"
    one.write_text(json.dumps(conversation("good", 1)), encoding="utf-8")
    code, _, err = run(transcripts, "--baseline", one)
    assert code == 2 and "holds one transcript, not a report" in err


# --------------------------------------------------------------------------- the text report's words


def test_text_report_wording(tmp_path: Path) -> None:
    path = write(tmp_path / "m.jsonl", [conversation(k, i) for i, k in enumerate(KINDS)])
    _, text, _ = run(path, "--no-gate")
    assert "sampled: judge" not in text and "no judge configured" in text
    modes = text.split("TOP FAILURE MODES:")[1].split("NOT GRADED")[0]
    assert "no_grader" not in modes and "(1 conversations)" not in text
    assert "NOT GRADED (2 conversations; coverage, not failures): no_grader 2" in text
    single = write(tmp_path / "one.jsonl", [conversation("hallucinated", 1), conversation("good", 2)])
    _, text, _ = run(single, "--no-gate", "--config", failing_hallucinations(tmp_path))
    assert "1. answer (1 conversation)\n" in text and "  2. hallucination (1 conversation)\n" in text
    # under each mode, its first conversation and what failed there
    assert "     e.g. hallucinated-1: hallucination: turn 0:" in text


def test_score_help_names_its_files() -> None:
    code, out, _ = run("--help")
    assert code == 0 and "{files}" not in out and "FILE..." in out


def test_every_command_names_its_arguments_as_a_reader_would_type_them() -> None:
    """Typer shows an argument without a metavar as its parameter's name in braces (`{files}...`): every
    command's usage line names its arguments in capitals instead, as `score` does."""
    import re

    import typer
    from typer.testing import CliRunner

    from agentwatch.cli import app

    def commands(command: object, path: list[str]) -> list[list[str]]:
        subs = getattr(command, "commands", None)
        if subs is None:
            return [path]
        return [found for name, sub in subs.items() for found in commands(sub, [*path, name])]

    every = commands(typer.main.get_command(app), [])
    assert ["policy", "check"] in every and ["import", "tau-bench"] in every
    lowercase = {}
    for path in every:
        out = CliRunner().invoke(app, [*path, "--help"]).output
        found = re.findall(r"\{[a-z_]+\}", out)
        if found:
            lowercase[" ".join(path)] = found
    assert lowercase == {}


def test_judge_calls_log_no_http_line_each(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    path.write_text(
        "".join(
            json.dumps({"conversation_id": f"c{i}", "turns": [{"input": f"q{i}", "answer": f"a{i}"}]}) + "\n"
            for i in range(5)
        ),
        encoding="utf-8",
    )
    with FakeOpenAI(lambda _body: verdict_reply("complete", 0.9)) as server:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "agentwatch",
                "score",
                str(path),
                "--judge",
                "gpt-4o-mini",
                "--judge-url",
                server.base_url,
                "--no-gate",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        calls = len(server.requests)
    assert done.returncode == 0, done.stderr
    assert calls == 5 and "HTTP Request" not in done.stderr and "judge openai:gpt-4o-mini:v1" in done.stderr
    assert "judge sample 5 (openai:gpt-4o-mini:v1)" in done.stdout


# --------------------------------------------------------------------------- services and docs


def test_a_server_on_every_interface_logs_the_address_to_open(caplog: pytest.LogCaptureFixture) -> None:
    assert where("127.0.0.1", 9464) == "http://127.0.0.1:9464/metrics"
    assert where("::1", 9464) == "http://[::1]:9464/metrics"
    with caplog.at_level(logging.INFO, logger="agentwatch.metrics_http"):
        server = MetricsServer(lambda: b"", 0, "0.0.0.0")
        server.stop()
    (line,) = [r.getMessage() for r in caplog.records if "serving metrics" in r.getMessage()]
    assert line == (
        f"serving metrics on http://127.0.0.1:{server.port}/metrics (listening on all interfaces, "
        f"0.0.0.0:{server.port})"
    )


def test_the_runbook_and_the_alerts_doc_state_the_same_figures() -> None:
    """Every simulated delay in the runbooks is a row of docs/alerts.md's table, and so is the fleet's rate."""
    runbook = (ROOT / "deploy" / "README.md").read_text(encoding="utf-8")
    alerts = (ROOT / "docs" / "alerts.md").read_text(encoding="utf-8")
    in_runbook = set(re.findall(r"(\d+)\s+minutes\s+median,\s+(\d+)\s+at\s+the\s+95th\s+percentile", runbook))
    in_alerts = set(re.findall(r"\| (\d+) / (\d+) \|", alerts))
    assert len(in_runbook) == 8 and in_runbook <= in_alerts, in_runbook - in_alerts
    (fleet,) = re.findall(r"for 12 months: ([\d.]+) false pages a month", runbook)
    assert f"| 12 | 5 | {fleet} |" in alerts
