"""Hostile trajectories, ShareGPT records and tool values: each is read (or refused with its line) in bounded time,
never a traceback; demonstrations never become the run's calls; notes stay few and short."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentwatch.cli import app
from agentwatch.importers.openai_chat import ChatFormatError, conversation_from_record, read_chat_lines
from agentwatch.importers.swe_agent import MAX_COMMAND_NAME, SIGNAL, command_name
from agentwatch.importers.swe_commands import MINI_PATTERNS, mini_command, mini_patterns
from agentwatch.wire.schema import Conversation
from agentwatch.wire.transcripts import LineError

DATA = Path(__file__).resolve().parents[1] / "data"
MINI_TRAJ = DATA / "mini_swe_agent.traj.json"


def _calls(conv: Conversation) -> list[tuple[str, Any, Any]]:
    return [(c.name, c.arguments, c.result) for t in conv.turns for c in t.tool_calls]


def _mini(*messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "trajectory_format": "mini-swe-agent-1.1",
        "messages": [
            {"role": "system", "content": f"Finish with `echo {SIGNAL}`."},
            {"role": "user", "content": "Fix the bug."},
            *messages,
        ],
        **fields,
    }


def _with_regex(regex: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(MINI_TRAJ.read_text())
    record.setdefault("info", {}).setdefault("config", {})["agent"] = {"action_regex": regex}
    return record


@pytest.mark.parametrize(
    ("regex", "reason"), [("(unclosed", "is no regular expression"), (r"```(b)ash\n(.*?)\n```", "2 groups")]
)
def test_a_run_whose_action_regex_cannot_read_commands_is_an_error_with_its_line(
    tmp_path: Path, regex: str, reason: str
) -> None:
    bad, good = _with_regex(regex), json.loads(MINI_TRAJ.read_text())
    with pytest.raises(ChatFormatError, match=reason):
        conversation_from_record(bad, "bad")
    lines = tmp_path / "runs.jsonl"
    lines.write_text(json.dumps(bad) + "\n" + json.dumps(good) + "\n")
    errors: list[LineError] = []
    read = list(read_chat_lines(lines, errors))
    assert len(read) == 1 and [e.line for e in errors] == [1] and reason in errors[0].reason
    document = tmp_path / "bad.traj.json"
    document.write_text(json.dumps(bad, indent=2))
    run = CliRunner().invoke(app, ["import", "openai-chat", str(document), "--out", str(tmp_path / "o")])
    assert run.exit_code == 2 and reason in run.output


def test_an_action_regex_of_no_group_reads_whole_matches_as_mini_swe_agent_does() -> None:
    conv = conversation_from_record(_with_regex(r"```bash\n.*?\n```"), "m")
    assert _calls(conv)[0][1] == {"command": "```bash\ncat tests/missing_colon.py\n```"}


def test_a_call_of_the_tool_calling_mode_without_an_id_gets_the_next_output() -> None:
    call = {"type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": "ls"})}}
    record = _mini(
        {"role": "assistant", "content": "", "tool_calls": [call]}, {"role": "user", "content": "a.py"}
    )
    assert _calls(conversation_from_record(record, "m")) == [("bash", {"command": "ls"}, "a.py")]


def test_a_demonstration_in_a_mini_swe_agent_run_is_no_call_of_the_run() -> None:
    record = _mini(
        {"role": "assistant", "content": "```bash\nrm -rf demo\n```", "is_demo": True},
        {"role": "user", "content": "<returncode>0</returncode>demo", "is_demo": True},
        {"role": "assistant", "content": "```bash\nls\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\na.py"},
    )
    conv = conversation_from_record(record, "m")
    assert [c[1] for c in _calls(conv)] == [{"command": "ls"}]
    assert conv.notes == ["2 demonstration message(s) (`is_demo`) left out: not the task's conversation"]


def test_a_logged_action_that_is_no_text_leaves_the_message_read_by_its_pattern() -> None:
    record = _mini(
        {"role": "assistant", "content": "```bash\nls\n```", "extra": {"actions": [{"command": 5}]}},
        {"role": "user", "content": "<returncode>0</returncode>"},
    )
    assert [c[1] for c in _calls(conversation_from_record(record, "m"))] == [{"command": "ls"}]


@pytest.mark.timeout(
    30
)  # a hang guard, not a timing: the quadratic search took 32–73 s; this takes well under 1 s
@pytest.mark.parametrize("opening", ["```bash\nx", "```mswea_bash_command\nx", "<mswea_bash_command>x"])
def test_a_message_of_many_unclosed_command_blocks_is_read_in_linear_time(opening: str) -> None:
    """mini-swe-agent's patterns search from each opening to the end of the text for a closing: an opening
    without one, 20,000 times over, took a minute per pattern."""
    record = _mini(
        {"role": "assistant", "content": opening * 20_000},
        {"role": "user", "content": "format error"},
        {"role": "assistant", "content": "```bash\nls\n```"},
    )
    conv = conversation_from_record(record, "m")
    assert [c[1] for c in _calls(conv)] == [{"command": "ls"}]


@pytest.mark.timeout(30)  # a hang guard, not a timing: Python's re doubles its time with every "a" here
def test_a_runs_own_backtracking_action_regex_is_read_in_linear_time() -> None:
    """A pattern comes with the file: `((?:a+)+)` before a closing that is not there backtracks 2^n ways in
    Python's re (0.08 s at 22 a's, hours at 40); RE2 finds the same commands at once."""
    record = _with_regex(r"<run>((?:a+)+)</run>")
    record["messages"] = [
        *record["messages"][:2],
        {"role": "assistant", "content": "<run>" + "a" * 40 + "X"},
        {"role": "user", "content": "format error"},
        {"role": "assistant", "content": "<run>aaa</run>"},
        {"role": "user", "content": "<returncode>0</returncode>"},
    ]
    conv = conversation_from_record(record, "m")
    assert [c[1] for c in _calls(conv)] == [{"command": "aaa"}]


def test_a_runs_own_action_regex_finds_what_re_findall_finds() -> None:
    """RE2 reads a run's pattern as mini-swe-agent's re.findall with DOTALL does; one RE2 refuses (lookbehind)
    is still read, by re."""
    texts = [
        "THOUGHT\n```sh\nls -a\n```",
        "```sh\nls\n``` and ```sh\npwd\n```",
        "no block",
        "```sh\n\u00e9\n```",
        "```sh\ncd src\npytest -x\n```",  # a command of two lines: DOTALL
    ]
    for pattern in (r"```sh\n(.*?)\n```", r"```sh\n.*?```", r"(?<=```sh\n)(.*?)\n```"):
        for text in texts:
            found = [a.strip() for a in re.findall(pattern, text, re.DOTALL)]
            expected = found[0] if len(found) == 1 else None
            assert mini_command({"content": text}, mini_patterns(_with_regex(pattern))) == expected, (
                pattern,
                text,
            )


def test_the_command_patterns_find_what_re_findall_finds() -> None:
    texts = [
        "```bash\nls\n```",
        "a\n```bash  \n\n ls -a\n```\nb",
        "```bash\n```",
        "```bash\n\n```",
        "```bash\nls\n``` then ```bash\npwd\n```",
        "```bash\nls\n```bash\nx",
        "<mswea_bash_command>ls</mswea_bash_command><mswea_bash_command>x",
        "```mswea_bash_command\nls\n```\n```bash\npwd\n```",
    ]
    for text in texts:
        expected = None
        for pattern in MINI_PATTERNS:
            found = [a.strip() for a in re.findall(pattern, text, re.DOTALL)]
            if found:
                expected = found[0] if len(found) == 1 else None
                break
        assert mini_command({"content": text}, MINI_PATTERNS) == expected, text


def test_a_sharegpt_speaker_that_is_no_name_is_an_error_with_its_line(tmp_path: Path) -> None:
    good = [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]
    lines = tmp_path / "sg.jsonl"
    bad = [
        [{"from": ["human"], "value": "hi"}, {"from": "gpt", "value": "yo"}],
        [{"from": "human", "value": "hi"}, {"from": {"a": 1}, "value": "yo"}],
    ]
    lines.write_text("".join(json.dumps(r) + "\n" for r in [*bad, good]))
    errors: list[LineError] = []
    assert len(list(read_chat_lines(lines, errors))) == 1
    assert [e.line for e in errors] == [1, 2]


@pytest.mark.timeout(
    60
)  # a hang guard, not a timing: quadratic, 200,000 observations took over 300 s; now ~1 s
def test_many_sharegpt_observations_are_read_in_linear_time() -> None:
    call = {"from": "function_call", "value": json.dumps({"name": "f", "arguments": {}})}
    record = [{"from": "human", "value": "q"}, call, *[{"from": "observation", "value": "r"}] * 200_000]
    conv = conversation_from_record(record, "sg")
    assert len(_calls(conv)) == 1


def test_sharegpt_calls_left_without_a_result_are_noted_a_few_times_then_counted() -> None:
    calls = {"from": "function_call", "value": json.dumps([{"name": "a"}, {"name": "b"}])}
    record = [{"from": "human", "value": "q"}]
    for _ in range(50):
        record += [calls, {"from": "observation", "value": "not a list"}]
    conv = conversation_from_record(record, "sg")
    parallel = [n for n in conv.notes if "parallel" in n]
    assert len(parallel) <= 6 and "45 more" in parallel[-1]


def test_a_sharegpt_observation_nested_past_the_parser_is_kept_as_text() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    record = [
        {"from": "human", "value": "q"},
        {"from": "function_call", "value": json.dumps([{"name": "a"}, {"name": "b"}])},
        {"from": "observation", "value": deep},
        {"from": "gpt", "value": "done"},
    ]
    conv = conversation_from_record(record, "sg")
    assert [c[0] for c in _calls(conv)] == ["a", "b"] and conv.turns[0].tool_calls[0].result == deep


def test_the_note_of_a_value_that_is_not_finite_deep_in_a_call_is_short() -> None:
    value: Any = float("nan")
    for _ in range(900):
        value = {"k" * 60: value}
    messages = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": value}}],
        },
        {"role": "tool", "tool_call_id": "c", "content": "ok"},
    ]
    conv = conversation_from_record({"messages": messages}, "x")
    (note,) = conv.notes
    assert len(note) < 600 and note.startswith("turn 0, call 0 (f, id c): NaN in its arguments at `kkk")


def test_a_trajectory_of_more_calls_than_a_transcript_line_holds_is_refused_early() -> None:
    """A million steps of `ls` took 33 s and 2.5 GB before its 80 MB transcript line was refused."""
    with pytest.raises(ChatFormatError, match="more calls than a transcript line holds"):
        conversation_from_record({"trajectory": [{"action": "x", "observation": None}] * 310_000}, "big")
    words = conversation_from_record(
        {"trajectory": [{"action": "", "observation": None, "thought": "t"}] * 310_000}, "words"
    )
    assert _calls(words) == [] and words.turns[0].answer == "t"


def test_the_command_patterns_find_what_re_findall_finds_in_random_texts() -> None:
    import random

    from agentwatch.importers.swe_commands import commands_found

    pieces = [
        "```",
        "bash",
        "mswea_bash_command",
        "\n",
        " ",
        "x",
        "<mswea_bash_command>",
        "</mswea_bash_command>",
    ]
    patterns = [*MINI_PATTERNS, r"<bash_code>(.*?)</bash_code>", r"```bash\n.*?\n```"]
    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        for pattern in patterns:
            assert commands_found(pattern, text) == [a.strip() for a in re.findall(pattern, text, re.DOTALL)]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"{\n" + b'  "trajectory": [{"action": "ls", "observation": "\xff"}]\n}\n', "is no JSON"),
        (b'{\n  "trajectory": [],\n  "history": []\n}\n', "holds no SWE-agent or mini-swe-agent trajectory"),
        (b'{\n  "trajectory": [\n    {"action": "ls",\n', "is no JSON, cut short?"),
    ],
)
def test_a_traj_file_that_holds_no_readable_trajectory_is_one_error(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    """Read line by line instead, each of its lines was an error of its own ("Extra data")."""
    traj = tmp_path / "run.traj"
    traj.write_bytes(content)
    errors: list[LineError] = []
    assert list(read_chat_lines(traj, errors)) == []
    assert [e.line for e in errors] == [1] and reason in errors[0].reason
    other = tmp_path / "run.json"  # a file not named as a trajectory is read line by line, as before
    other.write_bytes(content)
    errors = []
    assert list(read_chat_lines(other, errors)) == [] and len(errors) > 1


def test_a_gzip_traj_cut_short_is_one_error(tmp_path: Path) -> None:
    import gzip

    packed = gzip.compress((DATA / "swe_agent_text.traj").read_bytes())
    traj = tmp_path / "run.traj.gz"
    traj.write_bytes(packed[: len(packed) // 2])
    errors: list[LineError] = []
    assert list(read_chat_lines(traj, errors)) == []
    assert [e.line for e in errors] == [1] and "cannot be read whole (EOFError" in errors[0].reason


def test_a_message_type_that_is_no_name_is_refused_with_its_line_not_a_traceback(tmp_path: Path) -> None:
    """Sniffing a bare list of messages looked its first message's `type` up in a set: a list there raised
    `TypeError: unhashable type` out of `import openai-chat`."""
    path = tmp_path / "typed.jsonl"
    path.write_text(json.dumps([{"type": ["x"], "content": "hi"}]) + "\n")
    result = CliRunner().invoke(app, ["import", "openai-chat", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "typed.jsonl:1:" in result.output and "Traceback" not in result.output


def test_a_swe_agent_command_of_one_long_word_names_its_call_with_a_cut_word() -> None:
    """The call's name is the command's first word; a word of a megabyte is cut there, the command kept whole."""
    blob = "x" * 1_000_000
    for command, name in ((blob, "x" * (MAX_COMMAND_NAME - 1) + "…"), ("open a.py 10", "open")):
        assert command_name(command) == name
    record = {
        "history": [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "Fix the bug."},
            {"role": "assistant", "content": "", "thought": "", "action": blob},
            {"role": "user", "content": "command not found"},
            {"role": "assistant", "content": "", "thought": "", "action": "submit"},
            {"role": "user", "content": "diff"},
        ],
        "info": {"exit_status": "submitted"},
    }
    calls = _calls(conversation_from_record(record, "swe"))
    assert [c[0] for c in calls] == ["x" * (MAX_COMMAND_NAME - 1) + "…", "submit"]
    assert calls[0][1] == {"command": blob}
