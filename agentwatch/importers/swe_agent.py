"""SWE-agent and mini-swe-agent trajectories: agents that act by writing a shell command in text.

Neither agent needs API tool calls: the model writes a command (in a fenced block, or `<command>` tags), its
harness runs it and returns the output as the next *user* message, and the run ends when the agent submits.
Each is rewritten here as chat messages with tool calls and their results, so the chat importer reads them:

- SWE-agent (`.traj`): `{"trajectory": [{action, observation, thought, response, …}], "history": [chat
  messages], "info": {exit_status, submission, …}}`. Each step's `action` is a call named by the command's first
  word (`find_file`, `edit`, `python`, `submit`) with `{"command": action}`, its `observation` the result; the
  history gives the instructions (system) and the task (its first user message). Demonstrations
  (`is_demo: true`) are left out. A `history` alone is read the same way, each assistant message's `action`
  (else its command block, as SWE-agent's parsers find it) a step and the message after it the result;
- mini-swe-agent (`{"messages": [...], "trajectory_format": "mini-swe-agent-1…"}`, or a bare list of messages
  whose instructions name its completion signal): each assistant message with exactly one command block (its
  `action_regex`; the parsed `extra.actions` where logged) is a call of its one tool, `bash`, with
  `{"command": ...}`, and the next user message the result. The command that ends the run by printing
  `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` is a `submit` call, its result the submission.

The thought beside a command is not an answer; an assistant message without a command is the agent's words only
when nothing follows it (its last words), else a step the harness rejected, left out with a note.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentwatch.importers.results_files import first_line
from agentwatch.importers.swe_commands import (
    MINI_PATTERNS,
    TrajectoryError,
    mini_command,
    mini_patterns,
    swe_agent_command,
)
from agentwatch.importers.swe_commands import message_text as _text
from agentwatch.importers.trajectory_chat import LEAST_API_CALL, Chat, instructions
from agentwatch.wire import json_text
from agentwatch.wire.transcript_documents import MAX_DOCUMENT_BYTES
from agentwatch.wire.transcripts import UTF8_BOM, TranscriptFileError, open_binary

SIGNAL = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"  # mini-swe-agent ends a run whose output starts with this
SUBMIT = "submit"  # SWE-agent's command that ends a run; mini-swe-agent's completion is read as one too
MINI_TOOL = "bash"  # mini-swe-agent's one tool (`BASH_TOOL` in its tool-calling mode)
MAX_COMMAND_NAME = 64  # characters of a SWE-agent call's name; commands and programs are named in far fewer
_DOCUMENT_HEAD = 1 << 16
_STREAM_ERRORS = (OSError, EOFError, zlib.error)  # what reading a damaged gzip file raises


def _swe_messages(messages: Sequence[Any]) -> bool:
    """Whether messages are SWE-agent's history: an assistant message carries its parsed `action` and
    `thought`."""
    return any(
        isinstance(m, dict)
        and m.get("role") == "assistant"
        and isinstance(m.get("action"), str)
        and "thought" in m
        for m in messages
    )


def is_swe_agent(value: dict[str, Any]) -> bool:
    """Whether a JSON object is a SWE-agent trajectory (steps with `action` and `observation`, or a history of
    SWE-agent's messages)."""
    if "messages" in value or "turns" in value or "traj" in value:
        return False
    trajectory, history = value.get("trajectory"), value.get("history")
    if isinstance(trajectory, list):
        first = next((s for s in trajectory if isinstance(s, dict)), None)
        if first is not None and "action" in first and "observation" in first:
            return True
    return isinstance(history, list) and _swe_messages(history)


def _mini_acts(messages: Sequence[Any]) -> bool:
    """Whether messages are a mini-swe-agent run in text: its instructions name the completion signal, no
    message has API tool calls, and an assistant message holds one command."""
    dicts = [m for m in messages if isinstance(m, dict)]
    told = any(
        m.get("role") in ("system", "user") and SIGNAL in (_text(m.get("content")) or "") for m in dicts
    )
    if not told or any(m.get("tool_calls") for m in dicts):
        return False
    return any(m.get("role") == "assistant" and mini_command(m, MINI_PATTERNS) is not None for m in dicts)


def trajectory_kind(value: Any) -> str | None:
    """Whose trajectory a record is, "swe-agent" or "mini-swe-agent" (an object, or a bare list of messages);
    None for any other record."""
    if isinstance(value, dict) and is_swe_agent(value):
        return "swe-agent"
    messages = value.get("messages") if isinstance(value, dict) else value
    if not isinstance(messages, list):
        return None
    logged_as = value.get("trajectory_format") if isinstance(value, dict) else None
    if str(logged_as).startswith("mini-swe-agent") or _mini_acts(messages):
        return "mini-swe-agent"
    calls = any(isinstance(m, dict) and m.get("tool_calls") for m in messages)
    return "swe-agent" if not calls and _swe_messages(messages) else None


def _steps(record: dict[str, Any], history: list[Any], task: int | None) -> Iterator[tuple[str, Any, bool]]:
    """(command, result, has_result) per step: the `trajectory`'s, else the history's after the task (a
    command of "" is a step without one: its thought is the text)."""
    trajectory = record.get("trajectory")
    if trajectory is not None:
        if not isinstance(trajectory, list):
            raise TrajectoryError("`trajectory` is not a list")
        for position, step in enumerate(trajectory):
            if not isinstance(step, dict):
                raise TrajectoryError(f"trajectory step {position} is not an object")
            action, observation = step.get("action"), step.get("observation")
            if not isinstance(action, str):
                raise TrajectoryError(f"trajectory step {position} has no `action` (a text)")
            if observation is not None and not isinstance(observation, str):
                raise TrajectoryError(f"trajectory step {position} has an `observation` that is not a text")
            if action.strip():
                yield (action, observation, True)
            else:  # no command: the step's words
                yield ("", step.get("thought", step.get("response")), True)
        return
    start = -1 if task is None else task
    pending: tuple[str, Any] | None = None  # a command waiting for the message after it
    for position, message in enumerate(history):
        if position <= start or message.get("is_demo") is True:
            continue
        role, content = message.get("role"), message.get("content")
        if role == "assistant":
            if pending is not None:
                yield (*pending, False)
            action = message.get("action")
            command = action if isinstance(action, str) else swe_agent_command(_text(content) or "")
            pending = (command, None) if command and command.strip() else None
            if pending is None:
                yield ("", message.get("thought", _text(content)), True)
        elif role in ("user", "tool") and pending is not None:
            yield (pending[0], content, True)
            pending = None
    if pending is not None:
        yield (*pending, False)


def command_name(command: str) -> str:
    """The name of a SWE-agent call: its command's first word, cut at `MAX_COMMAND_NAME` characters (a
    one-word command of megabytes would otherwise name its tool with megabytes, which every grader reads)."""
    word = command.split(None, 1)[0]
    return word if len(word) <= MAX_COMMAND_NAME else word[: MAX_COMMAND_NAME - 1] + "…"


def _swe_agent(record: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """A SWE-agent trajectory as chat messages, and notes."""
    history = record.get("history", [])
    if not isinstance(history, list):
        raise TrajectoryError("`history` is not a list")
    chat = Chat()
    task = instructions(history, chat, "history message")
    for command, result, has_result in _steps(record, history, task):
        if command:
            chat.call(command_name(command), command.strip(), result, has_result)
        else:
            chat.words(_text(result))
    info = record.get("info")
    status = info.get("exit_status") if isinstance(info, dict) else None
    if isinstance(status, str) and status and status != "submitted":
        chat.notes.append(f"the run ended with exit status {status[:60]!r}")
    return chat.done()


def _mini(record: Any, messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """A mini-swe-agent trajectory as chat messages, and notes."""
    chat = Chat()
    task = instructions(messages, chat, "message")
    patterns = mini_patterns(record)
    info = record.get("info") if isinstance(record, dict) else None
    status = info.get("exit_status") if isinstance(info, dict) else None
    submission: Any = None
    unanswered = 0  # user messages no command waits for (format errors, interruptions)
    for position, message in enumerate(messages):
        role = message.get("role")
        if role == "system" or position == task or message.get("is_demo") is True:
            continue  # copied above, or a demonstration (left out, counted above)
        calls = message.get("tool_calls") if role == "assistant" else None
        if calls:  # its tool-calling mode: the API's calls as they are (copied: the last may become `submit`)
            calls = (
                [dict(c) if isinstance(c, dict) else c for c in calls] if isinstance(calls, list) else calls
            )
            chat.messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            dicts = [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
            chat.count(len(dicts), LEAST_API_CALL)
            chat.last_call, chat.last_result = (dicts[-1] if dicts else None), None
        elif role == "assistant":
            command = mini_command(message, patterns)
            if command is None:
                chat.words(_text(message.get("content")))
            else:
                chat.call(MINI_TOOL, command, None, False)
        elif role == "tool":
            chat.messages.append(message)
            chat.last_result = message
        elif (
            role == "user" and chat.last_call is not None and chat.last_result is None and chat.unsaid is None
        ):
            chat.result(message.get("content"))  # the output of the command before it
        elif role == "user":
            unanswered += 1
        elif role == "exit":  # 2.x: how the run ended, and the submission
            extra = message.get("extra")
            status = extra.get("exit_status", status) if isinstance(extra, dict) else status
            submission = message.get("content")
        else:
            raise TrajectoryError(f"message {position} has an unknown role {str(role)[:40]!r}")
    _submitted(chat, status, submission)
    if unanswered:
        chat.notes.append(
            f"{unanswered} message(s) of the harness no command waited for (format errors) left out"
        )
    return chat.done()


def _submitted(chat: Chat, status: Any, submission: Any) -> None:
    """Read the run's last call as `submit` when it printed the completion signal and the run ended on it, as
    mini-swe-agent ends a run (exit status `Submitted`, or none logged and no command output after it)."""
    call, result = chat.last_call, chat.last_result
    if call is None or chat.unsaid is not None or status not in (None, "Submitted"):
        if isinstance(status, str) and status not in ("", "Submitted"):
            chat.notes.append(f"the run ended with exit status {status[:60]!r}")
        return
    function = call.get("function")
    if not isinstance(function, dict) or SIGNAL not in str(function.get("arguments")):
        return
    output = _text(result.get("content")) if result is not None else None
    if status is None and output is not None and "<returncode>" in output:
        return  # the command's output came back as any other's: the signal was not its first line
    call["function"] = {**function, "name": SUBMIT}
    if result is None and submission is not None:
        chat.result(submission)


def trajectory_messages(record: Any) -> tuple[list[dict[str, Any]], list[str]] | None:
    """The chat messages (with tool calls and results) and notes of a SWE-agent or mini-swe-agent trajectory;
    None for any other record. Raise TrajectoryError when it cannot be read."""
    if isinstance(record, Unreadable):
        raise TrajectoryError(record.reason)
    kind = trajectory_kind(record)
    if kind is None:
        return None
    messages = record.get("messages") if isinstance(record, dict) else record
    if kind == "mini-swe-agent":
        assert isinstance(messages, list)
        for position, message in enumerate(messages):
            if not isinstance(message, dict):
                raise TrajectoryError(f"message {position} is not an object")
        return _mini(record, messages)
    if isinstance(record, dict) and "messages" not in record:
        return _swe_agent(record)
    return _swe_agent({"history": messages})


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A file named as a trajectory (`.traj`, `.traj.json`) holding an indented document that cannot be read as
    one: why (its one error, where read line by line each of its lines was one, "Extra data")."""

    reason: str


def trajectory_document(path: str | Path) -> Any:
    """The trajectory a file holds as one indented JSON document (SWE-agent's `.traj`, mini-swe-agent's
    `.traj.json`), parsed; `Unreadable` for such a document in a file so named that holds none (cut short, no
    JSON, no trajectory); None for any other file (JSON Lines above all: read line by line, as before)."""
    if not Path(path).is_file():
        return None  # a pipe is read once: looked into here, the line reader would find it drained
    named = Path(path).name.removesuffix(".gz").endswith((".traj", ".traj.json"))  # as both agents save them
    try:
        with open_binary(path) as stream:
            head, failed = _head(stream)
            first = first_line(head.removeprefix(UTF8_BOM).lstrip())[0].strip()  # CR alone ends it too
            # an indented document opens alone on its first line; a JSON line does not
            if first not in (b"{", b"["):
                return None
            raw = head
            if failed is None:
                try:
                    raw += stream.read(MAX_DOCUMENT_BYTES + 1 - len(head))
                except _STREAM_ERRORS as exc:
                    failed = exc
    except (TranscriptFileError, *_STREAM_ERRORS):
        return None  # read line by line, which reports it
    if failed is not None:  # a gzip file cut short or damaged
        return _unreadable(named, f"the document cannot be read whole ({type(failed).__name__}: {failed})")
    if len(raw) > MAX_DOCUMENT_BYTES:
        return _unreadable(
            named, f"the document is over {MAX_DOCUMENT_BYTES >> 20} MiB: a trajectory is read whole"
        )
    try:
        value = json_text.loads(raw.removeprefix(UTF8_BOM).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return _unreadable(named, f"the document is no JSON, cut short? ({str(exc) or type(exc).__name__})")
    if trajectory_kind(value) is not None:
        return value
    return _unreadable(
        named,
        "the document holds no SWE-agent or mini-swe-agent trajectory (steps with `action` and `observation`, "
        "a `history` of SWE-agent's messages, or mini-swe-agent's `messages`)",
    )


def _head(stream: io.BufferedIOBase) -> tuple[bytes, Exception | None]:
    """The first bytes of `stream`, and the error that cut them short (read whole, a gzip file cut short gave
    none: its first line was not looked at)."""
    chunks: list[bytes] = []
    size = 0
    try:
        while size < _DOCUMENT_HEAD and (chunk := stream.read1(_DOCUMENT_HEAD - size)):
            chunks.append(chunk)
            size += len(chunk)
    except _STREAM_ERRORS as exc:
        return b"".join(chunks), exc
    return b"".join(chunks), None


def _unreadable(named: bool, reason: str) -> Unreadable | None:
    """Why a file named as a trajectory cannot be read as one; None for another file (read line by line)."""
    return Unreadable(reason[:300]) if named else None
