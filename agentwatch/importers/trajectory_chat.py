"""Chat messages written for a SWE-agent or mini-swe-agent trajectory (`importers.swe_agent`): each command a
call with its result, the instructions and the task copied, demonstrations and rejected steps left out and
counted. The calls are counted as they are written: a trajectory of more than one transcript line holds is
refused before it is all rewritten (a .traj of a million one-word steps took 33 s and 2.5 GB, and its 80 MB
line was refused in the end).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentwatch.importers.swe_commands import TrajectoryError
from agentwatch.wire.transcripts import MAX_LINE_BYTES

# the least bytes a call takes in a transcript line: `{"name":"x","arguments":{"command":"x"},"call_id":"call-0"},`
# written here, `{"name":"x"},` copied from the tool-calling mode
LEAST_CALL, LEAST_API_CALL = 55, 13


@dataclass(slots=True)
class Chat:
    """Chat messages written for a trajectory: calls with their results, and what was left out."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    last_call: dict[str, Any] | None = None  # the last call made, and its result message when it has one
    last_result: dict[str, Any] | None = None
    unsaid: str | None = None  # the latest words without a command: the answer, if nothing follows them
    rejected: int = 0  # assistant messages without a command that something followed
    written: int = 0  # the least bytes the calls so far take in the transcript line

    def count(self, calls: int, least: int) -> None:
        """Count `calls` more calls of at least `least` bytes each in the transcript line; TrajectoryError past
        what one line holds (a .traj of a million steps took 2.5 GB, and its line was refused in the end)."""
        self.written += calls * least
        if self.written > MAX_LINE_BYTES:
            raise TrajectoryError(
                f"more calls than a transcript line holds ({MAX_LINE_BYTES:,} bytes, as `agentwatch score` reads "
                "it): not imported"
            )

    def call(self, name: str, command: str, result: Any, has_result: bool) -> None:
        """A call of `name` with `{"command": command}`, and its result when it has one."""
        self.count(1, LEAST_CALL)
        if self.unsaid is not None:
            self.rejected += 1
            self.unsaid = None
        call = {
            "id": f"call-{len(self.messages)}",
            "function": {"name": name, "arguments": {"command": command}},
        }
        self.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        self.last_call, self.last_result = call, None
        if has_result:
            self.result(result)

    def result(self, content: Any) -> None:
        """The result of the last call."""
        assert self.last_call is not None
        # a call of the tool-calling mode may have no id: the chat reader gives the result to the oldest waiting
        self.last_result = {"role": "tool", "tool_call_id": self.last_call.get("id"), "content": content}
        self.messages.append(self.last_result)

    def words(self, text: str | None) -> None:
        """An assistant message without a command."""
        if self.unsaid is not None:
            self.rejected += 1
        self.unsaid = text or None

    def done(self) -> tuple[list[dict[str, Any]], list[str]]:
        """The messages (the last words without a command at the end, said to the user) and notes."""
        if self.unsaid is not None:
            self.messages.append({"role": "assistant", "content": self.unsaid})
        if self.rejected:
            self.notes.append(
                f"{self.rejected} assistant message(s) without a command, followed by more steps (rejected by "
                "the agent's harness), left out"
            )
        return self.messages, self.notes


def instructions(history: Sequence[Any], chat: Chat, where: str) -> int | None:
    """Copy the system messages and the task (the first user message) of `history`, demonstrations left out;
    the task's position (None: none)."""
    task, demos = None, 0
    for position, message in enumerate(history):
        if not isinstance(message, dict):
            raise TrajectoryError(f"{where} {position} is not an object")
        if message.get("is_demo") is True:
            demos += 1
        elif message.get("role") == "system":
            chat.messages.append({"role": "system", "content": message.get("content")})
        elif message.get("role") == "user" and task is None:
            task = position
            chat.messages.append({"role": "user", "content": message.get("content")})
    if demos:
        chat.notes.append(
            f"{demos} demonstration message(s) (`is_demo`) left out: not the task's conversation"
        )
    return task
