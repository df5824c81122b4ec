"""SWE-agent and mini-swe-agent trajectories (agents that act by writing shell commands in text): their commands
read as tool calls with their outputs as results, the run submitted ends answered, demonstrations are left out,
and no other shape is read differently. Fixtures in tests/data are written to the shapes of the published
trajectories (SWE-agent's `tests/test_data/trajectories`, mini-swe-agent's `tests/test_data/*.traj.json`)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentwatch.cli import app
from agentwatch.importers.formats import kind_of, sniff
from agentwatch.importers.openai_chat import ChatFormatError, conversation_from_record, read_chat_lines
from agentwatch.importers.swe_agent import SIGNAL, swe_agent_command, trajectory_kind
from agentwatch.report.validity import grade
from agentwatch.wire.schema import Conversation
from agentwatch.wire.transcripts import LineError

DATA = Path(__file__).resolve().parents[1] / "data"
SWE_TRAJ = DATA / "swe_agent_text.traj"
MINI_TRAJ = DATA / "mini_swe_agent.traj.json"


def _read(path: Path) -> tuple[list[Conversation], list[LineError]]:
    errors: list[LineError] = []
    return [Conversation.model_validate(line) for line in read_chat_lines(path, errors)], errors


def _calls(conv: Conversation) -> list[tuple[str, Any]]:
    return [(c.name, c.arguments) for t in conv.turns for c in t.tool_calls]


def _reasons(conv: Conversation) -> list[str]:
    return grade([conv])[0].reasons


def test_a_swe_agent_traj_file_reads_its_commands_as_tool_calls() -> None:
    (conv,), errors = _read(SWE_TRAJ)
    assert not errors
    assert conv.conversation_id == "swe_agent_text"
    assert _calls(conv) == [
        ("find_file", {"command": 'find_file "missing_colon.py"'}),
        ("edit", {"command": "edit 4:4\ndef division(a: float, b: float) -> float:\nend_of_edit"}),
        ("python", {"command": "python tests/missing_colon.py"}),
        ("submit", {"command": "submit"}),
    ]
    (turn,) = conv.turns
    assert turn.tool_calls[2].result == "8.2\n"
    assert str(turn.tool_calls[3].result).startswith("\ndiff --git")  # the patch: only the trajectory has it
    assert turn.answer is None  # the thoughts beside the commands are no answer
    assert conv.system is not None and conv.system.startswith("SETTING:")


def test_a_swe_agent_demonstration_is_not_the_tasks_input() -> None:
    (conv,), _ = _read(SWE_TRAJ)
    assert conv.turns[0].input is not None and conv.turns[0].input.startswith("We're currently solving")
    assert "DEMONSTRATION" not in conv.turns[0].input
    assert any("demonstration" in n for n in conv.notes)


def test_a_submitted_swe_agent_run_ends_answered_and_its_thoughts_claim_nothing() -> None:
    (conv,), _ = _read(SWE_TRAJ)
    reasons = _reasons(conv)
    assert not [r for r in reasons if r.startswith(("no_answer", "evidence"))], reasons


def test_a_swe_agent_history_alone_reads_its_actions_as_tool_calls() -> None:
    """The history as a chat line (`{"messages": history}`) read as turns without calls before, its thoughts'
    "updated" flagged as claims of effects never made."""
    history = json.loads(SWE_TRAJ.read_text())["history"]
    conv = conversation_from_record({"messages": history}, "h")
    assert [name for name, _ in _calls(conv)] == ["find_file", "edit", "python", "submit"]
    assert conv.turns[0].tool_calls[0].result is not None
    assert conv.turns[0].tool_calls[-1].result is None  # the history ends on the submit
    assert len(conv.turns) == 1 and "DEMONSTRATION" not in (conv.turns[0].input or "")
    assert not [r for r in _reasons(conv) if r.startswith(("no_answer", "evidence"))]


def test_import_openai_chat_reads_a_traj_file(tmp_path: Path) -> None:
    run = CliRunner().invoke(app, ["import", "openai-chat", str(SWE_TRAJ), "--out", str(tmp_path)])
    assert run.exit_code == 0, run.output
    (line,) = (tmp_path / "transcripts.jsonl").read_text().splitlines()
    assert [c["name"] for c in json.loads(line)["turns"][0]["tool_calls"]][-1] == "submit"
    assert sniff(SWE_TRAJ).kind == "chat"


def test_a_mini_swe_agent_trajectory_reads_bash_calls_and_submits() -> None:
    (conv,), errors = _read(MINI_TRAJ)
    assert not errors
    assert _calls(conv) == [
        ("bash", {"command": "cat tests/missing_colon.py"}),
        ("bash", {"command": "sed -i '1s/-> float$/-> float:/' tests/missing_colon.py"}),
        ("submit", {"command": f"echo {SIGNAL} && git diff"}),
    ]
    (turn,) = conv.turns
    assert str(turn.tool_calls[-1].result).startswith("diff --git")  # the submission
    assert turn.answer is None
    # two command blocks are a format error, as mini-swe-agent reads them: that step and its reply left out
    assert len(conv.notes) == 2
    assert not [r for r in _reasons(conv) if r.startswith(("no_answer", "evidence"))]


def test_a_bare_list_of_mini_swe_agent_messages_is_read_the_same() -> None:
    messages = json.loads(MINI_TRAJ.read_text())["messages"]
    conv = conversation_from_record(messages, "m")
    assert [name for name, _ in _calls(conv)] == ["bash", "bash", "submit"]
    assert trajectory_kind(messages) == "mini-swe-agent"


def _mini2(tail: list[dict[str, Any]]) -> dict[str, Any]:
    """mini-swe-agent 2.x in text: parsed actions logged in `extra`, an `exit` message last."""
    return {
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {"exit_status": tail[-1]["extra"]["exit_status"]},
        "messages": [
            {"role": "system", "content": f"Finish with `echo {SIGNAL}`."},
            {"role": "user", "content": "Fix the bug."},
            {
                "role": "assistant",
                "content": "THOUGHT: look\n\n```mswea_bash_command\nls\n```",
                "extra": {"actions": [{"command": "ls"}]},
            },
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\na.py\n</output>"},
            *tail,
        ],
    }


def test_mini_swe_agent_2_submits_through_its_exit_message() -> None:
    record = _mini2(
        [
            {
                "role": "assistant",
                "content": f"```mswea_bash_command\necho {SIGNAL}\n```",
                "extra": {"actions": [{"command": f"echo {SIGNAL}"}]},
            },
            {
                "role": "exit",
                "content": "the patch",
                "extra": {"exit_status": "Submitted", "submission": "x"},
            },
        ]
    )
    conv = conversation_from_record(record, "m2")
    assert [(c.name, c.result) for c in conv.turns[0].tool_calls][-1] == ("submit", "the patch")


def test_a_mini_swe_agent_run_stopped_by_its_limits_has_not_answered() -> None:
    record = _mini2(
        [{"role": "exit", "content": "LimitsExceeded", "extra": {"exit_status": "LimitsExceeded"}}]
    )
    conv = conversation_from_record(record, "m3")
    assert [c.name for c in conv.turns[0].tool_calls] == ["bash"]
    assert any("LimitsExceeded" in n for n in conv.notes)
    assert any(r.startswith("no_answer") for r in _reasons(conv))


def test_the_signal_whose_output_came_back_as_any_other_is_no_submit() -> None:
    """mini-swe-agent ends the run only when the signal is its output's first line: a command that failed
    before printing it got its output back, and the run went on."""
    messages = json.loads(MINI_TRAJ.read_text())["messages"][:6] + [
        {"role": "assistant", "content": f"```bash\ncd nowhere && echo {SIGNAL}\n```"},
        {
            "role": "user",
            "content": "<returncode>1</returncode>\n<output>\ncd: nowhere: No such file\n</output>",
        },
    ]
    conv = conversation_from_record(messages, "m4")
    assert [c.name for c in conv.turns[0].tool_calls] == ["bash", "bash", "bash"]


def test_mini_swe_agent_tool_calling_mode_submits_too() -> None:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": "ls"})},
    }
    done = {
        **call,
        "id": "c2",
        "function": {"name": "bash", "arguments": json.dumps({"command": f"echo {SIGNAL}"})},
    }
    record = {
        "trajectory_format": "mini-swe-agent-1.1",
        "messages": [
            {"role": "system", "content": "You can run bash."},
            {"role": "user", "content": "Fix the bug."},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
            {"role": "assistant", "content": "", "tool_calls": [done]},
            {"role": "exit", "content": "the patch", "extra": {"exit_status": "Submitted"}},
        ],
    }
    original = copy.deepcopy(record)
    conv = conversation_from_record(record, "m5")
    assert [(c.name, c.result) for c in conv.turns[0].tool_calls] == [
        ("bash", "a.py"),
        ("submit", "the patch"),
    ]
    assert record == original  # the record given is not changed


def test_the_last_words_without_a_command_are_the_answer() -> None:
    messages = json.loads(MINI_TRAJ.read_text())["messages"][:4] + [
        {"role": "assistant", "content": "I cannot fix this: the file is read-only."}
    ]
    conv = conversation_from_record(messages, "m6")
    assert conv.turns[0].answer == "I cannot fix this: the file is read-only."


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda d: d["trajectory"].__setitem__(1, "edit 4:4"), "trajectory step 1 is not an object"),
        (lambda d: d["trajectory"][2].pop("action"), "trajectory step 2 has no `action` (a text)"),
        (
            lambda d: d["trajectory"][0].__setitem__("observation", ["x"]),
            "trajectory step 0 has an `observation`",
        ),
        (lambda d: d["history"].__setitem__(0, None), "history message 0 is not an object"),
        (lambda d: d.__setitem__("history", "none"), "`history` is not a list"),
    ],
)
def test_a_bad_step_is_an_error_with_its_position_and_the_rest_is_read(
    tmp_path: Path, change: Any, reason: str
) -> None:
    good = json.loads(SWE_TRAJ.read_text())
    bad = copy.deepcopy(good)
    change(bad)
    with pytest.raises(ChatFormatError, match=reason.replace("`", ".").replace("(", ".").replace(")", ".")):
        conversation_from_record(bad, "bad")
    lines = tmp_path / "runs.jsonl"
    lines.write_text(json.dumps(bad) + "\n" + json.dumps(good) + "\n")
    convs, errors = _read(lines)
    assert [e.line for e in errors] == [1] and reason in errors[0].reason
    assert [len(c.turns[0].tool_calls) for c in convs] == [4]
    document = tmp_path / "bad.traj"
    document.write_text(json.dumps(bad, indent=2))
    convs, errors = _read(document)
    assert not convs and reason in errors[0].reason


def test_swe_agent_command_finds_the_action_as_its_parsers_do() -> None:
    assert swe_agent_command("Look.\n```\nls -a\n```") == "ls -a\n"
    assert swe_agent_command("a\n```python\nx = 1\n```\nthen\n```\nsubmit\n```") == "submit\n"
    assert swe_agent_command("DISCUSSION\nfirst\n<command>\nopen a.py\n</command>") == "\nopen a.py\n"
    assert swe_agent_command("no command here") is None


def test_other_shapes_are_read_as_before(tmp_path: Path) -> None:
    """A chat log whose assistant writes a bash block is no trajectory; nor is an object that merely holds a
    `trajectory` or a `history`; an indented chat document still reads line by line (and fails so)."""
    chat = [
        {"role": "user", "content": "How do I list files?"},
        {"role": "assistant", "content": "Run this:\n\n```bash\nls -la\n```"},
    ]
    conv = conversation_from_record(chat, "c")
    assert conv.turns[0].tool_calls == [] and conv.turns[0].answer is not None
    assert trajectory_kind(chat) is None
    assert trajectory_kind({"trajectory": [{"x": 1}], "history": []}) is None
    assert kind_of({"trajectory": [1, 2], "history": [{"role": "user", "content": "hi"}]}) == "unknown"
    indented = tmp_path / "chat.json"
    indented.write_text(json.dumps({"messages": chat}, indent=2))
    convs, errors = _read(indented)
    assert not convs and len(errors) > 1 and errors[0].line == 1
