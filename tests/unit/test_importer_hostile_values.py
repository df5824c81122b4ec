"""Values and files the importers meet in real results that JSON Lines readers trip on: numbers that are not
finite (Python's json module writes `NaN` and `Infinity`, as τ-bench's runner saves its results) and line ends of
CR alone (classic Mac OS) or CRLF."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentwatch.cli import app
from agentwatch.importers.finite_values import MAX_NOTED_CALLS
from agentwatch.importers.openai_chat import conversation_from_messages

DATA = Path(__file__).resolve().parents[1] / "data"
LINE_ENDS = {"cr": "\r", "crlf": "\r\n"}


def _import(kind: str, source: Path, out: Path) -> list[dict[str, Any]]:
    """The transcript lines `agentwatch import KIND SOURCE` writes."""
    run = CliRunner().invoke(app, ["import", kind, str(source), "--out", str(out)])
    assert run.exit_code == 0, run.output
    return [json.loads(line) for line in (out / "transcripts.jsonl").read_text().splitlines()]


def _tau_entry(task: int, traj: list[dict[str, Any]]) -> dict[str, Any]:
    actions = [{"name": "calculate", "kwargs": {"expression": "1+1"}}]
    return {
        "task_id": task,
        "trial": 0,
        "reward": 1.0,
        "info": {"task": {"actions": actions, "outputs": []}},
        "traj": traj,
    }


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


NAN_TRAJ: list[dict[str, Any]] = [
    {"role": "system", "content": "Rules."},
    {"role": "user", "content": "What is 0/0?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            _call("c1", "calculate", {"expression": "0/0", "scale": float("nan")}),
            _call("c2", "convert", {"amount": 2}),
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"value": float("inf"), "ok": True})},
    {"role": "tool", "tool_call_id": "c2", "content": json.dumps([1, float("-inf"), float("nan")])},
    {"role": "assistant", "content": "It is undefined."},
]


def test_a_tau_bench_value_that_is_not_finite_is_written_null_and_said(tmp_path: Path) -> None:
    """τ-bench's runner writes NaN and Infinity as Python's json module does; the transcript line, JSON, holds
    null in their place as before, and the notes now say which call held one, where, and what was kept."""
    results = tmp_path / "run.json"
    results.write_text(json.dumps([_tau_entry(0, NAN_TRAJ)]))
    (line,) = _import("tau-bench", results, tmp_path / "o")
    first, second = line["turns"][0]["tool_calls"]
    assert first["arguments"] == {"expression": "0/0", "scale": None}
    assert first["result"] == {"value": None, "ok": True}
    assert second["result"] == [1, None, None]
    assert line["notes"] == [
        "turn 0, call 0 (calculate, id c1): NaN in its arguments at `scale`; Infinity in its result at `value`: "
        "a number that is not finite has no JSON form; kept as null",
        "turn 0, call 1 (convert, id c2): -Infinity in its result at `[1]` and 1 more: a number that is not "
        "finite has no JSON form; kept as null",
    ]


def test_a_tau2_simulation_argument_that_is_not_finite_is_said(tmp_path: Path) -> None:
    sim = {
        "task_id": "t1",
        "trial": 0,
        "reward_info": {"reward": 1.0},
        "termination_reason": "agent_stop",
        "messages": [
            {"role": "user", "content": "Pay."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "a",
                        "name": "pay",
                        "arguments": {"amount": float("nan")},
                        "requestor": "assistant",
                    }
                ],
            },
            {"role": "tool", "id": "a", "content": "paid", "requestor": "assistant"},
            {"role": "assistant", "content": "Paid."},
        ],
    }
    task = {"id": "t1", "evaluation_criteria": {"actions": [], "communicate_info": []}}
    results = tmp_path / "tau2.json"
    results.write_text(json.dumps({"info": {}, "tasks": [task], "simulations": [sim]}))
    (line,) = _import("tau-bench", results, tmp_path / "o")
    assert line["turns"][0]["tool_calls"][0]["arguments"] == {"amount": None}
    assert line["notes"] == [
        "turn 0, call 0 (pay, id a): NaN in its arguments at `amount`: a number that is not finite has no JSON "
        "form; kept as null"
    ]


def test_a_chat_log_value_that_is_not_finite_is_said(tmp_path: Path) -> None:
    """Arguments given as an object holding Infinity, a result text holding `-Infinity`, and a number too large for
    a double (read as infinity): each said, in the order of the calls."""
    messages = [
        {"role": "user", "content": "Go."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "x", "function": {"name": "f", "arguments": {"limit": float("inf")}}},
                {"id": "y", "function": {"name": "g", "arguments": '{"big": 1e400}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "x", "content": '{"rows": [{"v": -Infinity}]}'},
        {"role": "tool", "tool_call_id": "y", "content": "fine"},
        {"role": "assistant", "content": "Done."},
    ]
    log = tmp_path / "chat.jsonl"
    log.write_text(json.dumps({"messages": messages}) + "\n")
    (line,) = _import("openai-chat", log, tmp_path / "o")
    assert [c["arguments"] for c in line["turns"][0]["tool_calls"]] == [{"limit": None}, {"big": None}]
    assert line["turns"][0]["tool_calls"][0]["result"] == {"rows": [{"v": None}]}
    assert line["notes"] == [
        "turn 0, call 0 (f, id x): Infinity in its arguments at `limit`; -Infinity in its result at `rows[0].v`: "
        "a number that is not finite has no JSON form; kept as null",
        "turn 0, call 1 (g, id y): Infinity in its arguments at `big`: a number that is not finite has no JSON "
        "form; kept as null",
    ]


def test_finite_values_add_no_note_and_many_calls_are_counted() -> None:
    calls: list[dict[str, Any]] = [
        {"id": f"c{i}", "function": {"name": "f", "arguments": {"v": float("nan")}}} for i in range(8)
    ]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Go."},
        {"role": "assistant", "content": None, "tool_calls": calls},
        *({"role": "tool", "tool_call_id": f"c{i}", "content": '{"v": 1.5}'} for i in range(8)),
        {"role": "assistant", "content": "Done."},
    ]
    notes = conversation_from_messages(messages, "c").notes
    assert len(notes) == MAX_NOTED_CALLS + 1
    assert notes[-1] == "3 more tool call(s) hold a number that is not finite: kept as null"
    for call in calls:
        call["function"]["arguments"] = {"v": 1e308}
    assert conversation_from_messages(messages, "c").notes == []


# --------------------------------------------------------------------------- line ends


def _lines(records: list[Any], end: str) -> str:
    return "".join(json.dumps(r) + end for r in records)


def _simulation_lines() -> list[dict[str, Any]]:
    """A τ²-bench run written a simulation a line, as harnesses built on τ²-bench write it."""
    task = {"id": "t1", "evaluation_criteria": {"actions": [], "communicate_info": []}}
    sims = [
        {
            "task_id": "t1",
            "trial": trial,
            "reward_info": {"reward": 1.0},
            "termination_reason": "agent_stop",
            "messages": [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}],
        }
        for trial in range(2)
    ]
    return [
        {"type": "header", "info": {"environment_info": {"policy": "Rules."}}},
        *({"type": "simulation", "task": task, "simulation": sim} for sim in sims),
        {"type": "footer", "saved": 2},
    ]


@pytest.mark.parametrize("end", sorted(LINE_ENDS))
def test_tau_bench_json_lines_end_in_cr_alone_or_crlf(tmp_path: Path, end: str) -> None:
    """Read at LF alone, a file whose lines end in CR alone was one line: refused whole ("not JSON: Extra
    data"), τ-bench entries and τ²-bench simulation lines alike."""
    traj = [{"role": "system", "content": "Rules."}, {"role": "user", "content": "Hi."}]
    entries = [_tau_entry(task, [*traj, {"role": "assistant", "content": "Hello."}]) for task in range(3)]
    tau = tmp_path / "tau.jsonl"
    tau.write_bytes(_lines(entries, LINE_ENDS[end]).encode())
    assert [line["task"] for line in _import("tau-bench", tau, tmp_path / "a")] == ["0", "1", "2"]
    tau2 = tmp_path / "tau2.jsonl"
    tau2.write_bytes(_lines(_simulation_lines(), LINE_ENDS[end]).encode())
    assert [line["attempt"] for line in _import("tau-bench", tau2, tmp_path / "b")] == [0, 1]


@pytest.mark.parametrize("end", sorted(LINE_ENDS))
def test_a_bad_line_is_numbered_as_its_line_ends_count(tmp_path: Path, end: str) -> None:
    entries: list[Any] = [_tau_entry(0, [{"role": "user", "content": "Hi."}]), "{oops", _tau_entry(2, [])]
    text = "".join((e if isinstance(e, str) else json.dumps(e)) + LINE_ENDS[end] for e in entries)
    results = tmp_path / "tau.jsonl"
    results.write_bytes(text.encode())
    run = CliRunner().invoke(app, ["import", "tau-bench", str(results), "--out", str(tmp_path / "o")])
    assert run.exit_code == 0, run.output
    assert f"{results}: line 2: not JSON" in run.output
    assert "2 conversation(s)" in run.output


@pytest.mark.parametrize("end", sorted(LINE_ENDS))
def test_an_indented_traj_document_with_cr_line_ends_is_read_whole(tmp_path: Path, end: str) -> None:
    """A `.traj` document opens alone on its first line: found so at a CR alone too, not read line by line."""
    document = json.loads((DATA / "swe_agent_text.traj").read_text())
    traj = tmp_path / "run.traj"
    traj.write_bytes(json.dumps(document, indent=2).replace("\n", LINE_ENDS[end]).encode())
    (line,) = _import("openai-chat", traj, tmp_path / "o")
    plain = tmp_path / "o" / "run.traj"  # the same name: the same conversation id
    plain.write_text(json.dumps(document, indent=2))
    assert [line] == _import("openai-chat", plain, tmp_path / "p")
    assert line["turns"][0]["tool_calls"]


@pytest.mark.parametrize("end", sorted(LINE_ENDS))
def test_a_file_for_another_command_is_named_whatever_its_line_ends(tmp_path: Path, end: str) -> None:
    chat = tmp_path / "chat.jsonl"
    chat.write_bytes(
        _lines([{"messages": [{"role": "user", "content": "Hi."}]}] * 2, LINE_ENDS[end]).encode()
    )
    run = CliRunner().invoke(app, ["import", "tau-bench", str(chat), "--out", str(tmp_path / "o")])
    assert run.exit_code == 2 and "use `agentwatch import openai-chat" in run.output, run.output
    tau2 = tmp_path / "tau2.jsonl"
    tau2.write_bytes(_lines(_simulation_lines(), LINE_ENDS[end]).encode())
    run = CliRunner().invoke(app, ["import", "openai-chat", str(tau2), "--out", str(tmp_path / "o")])
    assert run.exit_code == 2 and "use `agentwatch import tau-bench" in run.output, run.output
