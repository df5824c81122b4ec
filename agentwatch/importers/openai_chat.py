"""Chat-format logs (OpenAI messages, one conversation per JSON line) → agentwatch `Conversation`s.

A conversation's messages become turns: a user message opens a turn; the assistant's text messages until the
next user message are its answer (joined by blank lines); its tool calls are the turn's calls. System and
developer messages are the agent's instructions (`Conversation.system`).

Tool results are paired with the calls still waiting for one: the waiting call with the result's id, else the
oldest waiting call (real logs reuse ids within a conversation). A result starting with one of the error
prefixes ("Error:" by default) marks its call as failed, as does `"error": true` on the message (τ²-bench);
so does one that binds such a text to a name, as a harness running the agent's calls as code prints it
(`# var_4 = "Error: insufficient gift card balance"`).
τ²-bench's message shape (`tool_calls: [{id, name, arguments: {...}, requestor}]`, tool messages with `id`) is
read too; calls the *user* requested (`requestor: "user"`) are the user's own actions, not the agent's,
and are left out with a note, as are messages in a role of the agent's harness (a planner's `subtask_creator`)
where the user and the agent speak in the usual roles. A model call's usage recorded on the agent's message
(τ²-bench through LiteLLM: `usage` with prompt and completion tokens, `cost` in USD, the model in `raw_data`) is
the turn's usage when every agent message of the conversation records one; otherwise none is taken (a cost summed
over some of the calls would be too low) and a note says so. Messages in the shapes of other APIs and loggers (Anthropic, OpenAI Responses,
Gemini, LangChain) are rewritten as chat messages first (`importers.dialects`); an agent that acts in text
(`importers.text_actions`) is read when the caller says so. SWE-agent and mini-swe-agent trajectories (a line,
or a file holding one as an indented JSON document) are detected and rewritten first (`importers.swe_agent`).
"""

from __future__ import annotations

import json
import math
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentwatch.importers import set_identity, transcript_line
from agentwatch.importers.dialects import chat_messages
from agentwatch.importers.finite_values import non_finite_notes
from agentwatch.importers.message_usage import message_usage
from agentwatch.importers.swe_agent import TrajectoryError, trajectory_document, trajectory_messages
from agentwatch.importers.text_actions import RESULT_PREFIX, read_action
from agentwatch.wire import json_text
from agentwatch.wire.schema import Conversation
from agentwatch.wire.transcripts import (
    MAX_LINE_BYTES,
    LineError,
    TranscriptFileError,
    bounded_lines,
    file_stem,
    open_binary,
    validation_reason,
)
from agentwatch.wire.values import ReadAs, read_structured

ERROR_PREFIXES: tuple[str, ...] = ("Error:", "error:", "ERROR:")
_AGENT_ROLES = frozenset({"assistant", "model"})
_SYSTEM_ROLES = frozenset({"system", "developer"})
_MAX_REASON = 300
_STREAM_ERRORS = (OSError, EOFError, zlib.error)  # what reading a damaged gzip file raises
# A result bound to a name, as a harness that runs the agent's calls as code prints it: `# var_4 = "Error: ..."`.
_BOUND = re.compile(r"#?[ \t]*[A-Za-z_]\w*[ \t]*=[ \t]*[\"']?")


def _speaks_known_roles(messages: list[tuple[int, Any]]) -> bool:
    """Whether both the user and the agent have a message in a role known here."""
    roles = {m.get("role") for _, m in messages if isinstance(m, dict) and isinstance(m.get("role"), str)}
    return "user" in roles and not _AGENT_ROLES.isdisjoint(roles)


def _says_error(text: str, prefixes: tuple[str, ...]) -> bool:
    """Whether a tool result's text starts with an error prefix, itself or as the value bound to a name."""
    text = text.lstrip()
    if text.startswith(prefixes):
        return True
    bound = _BOUND.match(text)
    return bound is not None and text.startswith(prefixes, bound.end())


class ChatFormatError(ValueError):
    """A record is not a chat-format conversation (the message says what is wrong)."""


def content_text(content: Any) -> str | None:
    """The text of a message's content: a string, or the text parts of a list of parts; None if none."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") in ("text", "output_text", "input_text"):
                text = part.get("text", part.get("content"))
                if isinstance(text, str):
                    texts.append(text)
        return "\n".join(texts) if texts else None
    return json.dumps(content, ensure_ascii=False, default=str)


def _json_value(text: Any) -> tuple[Any, ReadAs]:
    """A tool result or argument string holding a JSON (or Python-literal) object or array, parsed, and how it
    was read; anything else unchanged."""
    if isinstance(text, str):
        return read_structured(text)
    return text, "json"


@dataclass(slots=True)
class _Turn:
    input: str | None
    answers: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    usage: list[dict[str, Any]] = field(default_factory=list)
    spoke_last: bool = True  # the agent's last act in the turn was a message, not a tool call

    def fields(self, metered: bool) -> dict[str, Any]:
        # The answer is every message of the agent in the turn (an amount stated before the last calls
        # counts), provided it spoke after its last call: a turn that stops on a tool call never answered.
        answer = "\n\n".join(a for a in self.answers if a.strip()) if self.spoke_last else ""
        out = {"input": self.input, "answer": answer or None, "tool_calls": self.calls}
        return {**out, "usage": self.usage} if metered else out


@dataclass(slots=True)
class _Builder:
    """Messages in, turns out; calls wait for their results in order."""

    error_prefixes: Sequence[str]
    text_actions: bool = False  # the agent acts in text (`importers.text_actions`), not by API tool calls
    turns: list[_Turn] = field(default_factory=list)
    system: list[str] = field(default_factory=list)
    waiting: list[tuple[str | None, dict[str, Any]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    user_calls: int = 0
    python_literals: int = 0  # arguments and results logged as Python reprs, read as literals
    agent_messages: int = 0
    metered: int = 0  # agent messages that record their model call's usage

    @property
    def all_metered(self) -> bool:
        """Whether every agent message recorded its usage (the turns' usage is then taken)."""
        return self.metered > 0 and self.metered == self.agent_messages

    def turn(self) -> _Turn:
        if not self.turns:
            self.turns.append(_Turn(input=""))  # the agent spoke first: a turn with an empty input
        return self.turns[-1]

    def user(self, text: str | None, message: dict[str, Any]) -> None:
        if self.text_actions and self.waiting and text is not None and text.startswith(RESULT_PREFIX):
            self._settle(self.waiting.pop(0)[1], text[len(RESULT_PREFIX) :], failed=False)
            return
        if message.get("tool_calls"):
            self.user_calls += len(message["tool_calls"])
            if not text:
                return  # the user acted on their own side (τ²-bench's telecom user, a check for the stop): no ask
        last = self.turns[-1] if self.turns else None
        if last is not None and not last.answers and not last.calls and last.input:
            last.input = f"{last.input}\n{text or ''}".rstrip()  # two user messages in a row: one input
        else:
            self.turns.append(_Turn(input=text or ""))

    def assistant(self, text: str | None, message: dict[str, Any]) -> None:
        if not (
            message.get("cost") == 0 and message.get("usage") is None
        ):  # else no model wrote it (a greeting)
            self.agent_messages += 1
            usage = message_usage(message)
            if usage is not None:
                self.metered += 1
                self.turn().usage.append(usage)
        if self.text_actions and text:
            action = read_action(text)
            if action.name is not None:
                self._call(self.turn(), action.name, action.arguments, None)
                return
            text = action.said
        turn = self.turn()
        if text:
            turn.answers.append(text)
            turn.spoke_last = True
        calls = message.get("tool_calls") or []
        if not calls and isinstance(message.get("function_call"), dict):
            calls = [{"function": message["function_call"]}]  # the legacy single function call
        for raw in calls:
            if not isinstance(raw, dict):
                continue
            if raw.get("requestor") == "user":
                self.user_calls += 1
                continue
            function = raw.get("function")
            fn: dict[str, Any] = function if isinstance(function, dict) else raw
            name = fn.get("name")
            args = fn.get("arguments")
            parsed, read_as = _json_value(args) if isinstance(args, str) else (args, "json")
            if isinstance(args, str) and args.strip() and not isinstance(parsed, dict):
                self.notes.append(f"arguments of a {name} call are not a JSON object: kept as text")
            elif read_as == "python":
                self.python_literals += 1
            call_id = None if raw.get("id") in (None, "") else str(raw.get("id"))
            self._call(turn, name, {} if args in (None, "") else parsed, call_id)

    def _call(self, turn: _Turn, name: Any, arguments: Any, call_id: str | None) -> None:
        call: dict[str, Any] = {
            "name": str(name) if name else "unknown",
            "arguments": arguments,
            "call_id": call_id,
        }
        turn.calls.append(call)
        turn.spoke_last = False
        self.waiting.append((call_id, call))

    def tool(self, message: dict[str, Any]) -> None:
        if message.get("requestor") == "user":
            return  # the result of the user's own call
        call_id = message.get("tool_call_id", message.get("id"))
        call_id = None if call_id in (None, "") else str(call_id)
        call = self._take(call_id, message.get("name"))
        if call is None:
            self.notes.append(f"a tool result ({call_id or 'no id'}) with no call waiting for it was ignored")
            return
        self._settle(call, content_text(message.get("content")), failed=message.get("error") is True)

    def _settle(self, call: dict[str, Any], text: str | None, failed: bool) -> None:
        """Give a call its result `text`, or its error when `failed` or the text starts with an error prefix."""
        failed = failed or (isinstance(text, str) and _says_error(text, tuple(self.error_prefixes)))
        if failed:
            call["error"] = (text or "error").strip()[:2000]
        else:
            call["result"], read_as = _json_value(text)
            if read_as == "python":
                self.python_literals += 1

    def _take(self, call_id: str | None, name: Any) -> dict[str, Any] | None:
        """The waiting call this result answers: same id, else (legacy `function` results) same name, else the
        oldest waiting call."""
        waiting = self.waiting
        found = next(
            (i for i, (wid, _) in enumerate(waiting) if call_id is not None and wid == call_id), None
        )
        if found is None and call_id is None and name is not None:
            found = next((i for i, (_, call) in enumerate(waiting) if call["name"] == name), None)
        if found is None:
            found = 0 if waiting else None
        return None if found is None else waiting.pop(found)[1]


def conversation_from_messages(
    messages: Sequence[Any],
    conversation_id: str,
    *,
    error_prefixes: Sequence[str] = ERROR_PREFIXES,
    text_actions: bool = False,
    **fields: Any,
) -> Conversation:
    """One `Conversation` from chat messages; `fields`: other `Conversation` fields (agent, task, outcome, …);
    `text_actions`: the agent acts in text (`importers.text_actions`). Raise ChatFormatError when the record
    cannot be read as a conversation."""
    builder = _Builder(error_prefixes, text_actions)
    read = list(chat_messages(messages, builder.notes))
    # Messages of a role of the agent's own harness (a planner's `subtask_creator`) are neither the user's nor
    # the agent's answer: left out, counted, where the user and the agent speak in roles known here.
    side_channel = _speaks_known_roles(read)
    left_out: dict[str, int] = {}
    for position, message in read:
        if not isinstance(message, dict):
            raise ChatFormatError(f"message {position} is not an object")
        role = message.get("role")
        if not isinstance(role, str):
            raise ChatFormatError(f"message {position} has no role (a string): {str(role)[:40]!r}")
        if not isinstance(message.get("tool_calls") or [], list):
            raise ChatFormatError(f"message {position} has `tool_calls` that are not a list")
        text = content_text(message.get("content"))
        if role in _SYSTEM_ROLES:
            if text:
                builder.system.append(text)
        elif role == "user":
            builder.user(text, message)
        elif role in _AGENT_ROLES:
            builder.assistant(text, message)
        elif role in ("tool", "function"):
            builder.tool(message)
        elif side_channel:
            left_out[role] = left_out.get(role, 0) + 1
        else:
            raise ChatFormatError(f"message {position} has an unknown role {role!r}")
    if left_out:
        roles = list(left_out.items())
        named = ", ".join(f"{n} of role {role[:40]!r}" for role, n in roles[:5])
        if len(roles) > 5:
            named += f" and {sum(n for _, n in roles[5:])} of {len(roles) - 5} other roles"
        builder.notes.append(
            f"message(s) left out, neither the user's, the agent's, a tool's nor the instructions: {named}"
        )
    if builder.waiting:
        builder.notes.append(f"{len(builder.waiting)} tool call(s) without a result")
    if builder.user_calls:
        builder.notes.append(f"{builder.user_calls} tool call(s) made by the user (not the agent) left out")
    if builder.metered and not builder.all_metered:
        builder.notes.append(
            f"usage recorded on {builder.metered} of {builder.agent_messages} agent messages: none taken, "
            "the cost is unknown"
        )
    if builder.python_literals:
        builder.notes.append(
            f"{builder.python_literals} tool argument(s) or result(s) logged as Python literals, read with "
            "ast.literal_eval"
        )
    record = {
        "conversation_id": conversation_id,
        "system": "\n\n".join(builder.system) or None,
        "turns": [t.fields(builder.all_metered) for t in builder.turns],
        **fields,
    }
    record["notes"] = [*record.get("notes", []), *builder.notes]
    try:
        conv = Conversation.model_validate(record)
    except ValidationError as exc:
        raise ChatFormatError(validation_reason(exc)) from exc
    # a number that is not finite is written as null in the transcript line: said, not silently
    conv.notes.extend(non_finite_notes(conv))
    return conv


_FIELDS = ("agent", "version", "task", "tags", "outcome", "budget_usd", "system")


def conversation_from_record(
    record: Any, default_id: str, error_prefixes: Sequence[str] = ERROR_PREFIXES, **defaults: Any
) -> Conversation:
    """A chat-format record — `{"messages": [...], "id"?, "agent"?, "task"?, ...}` or a bare list of
    messages — as a `Conversation`; `defaults` fill the fields the record does not carry."""
    try:
        trajectory = trajectory_messages(record)
    except TrajectoryError as exc:
        raise ChatFormatError(str(exc)) from exc
    if isinstance(record, list):
        record = {"messages": record}
    if trajectory is None and not (isinstance(record, dict) and isinstance(record.get("messages"), list)):
        raise ChatFormatError("expected an object with a `messages` list (or a list of messages)")
    cid = record.get("conversation_id", record.get("id", default_id))
    fields = {k: v for k, v in defaults.items() if v is not None}
    fields.update({k: record[k] for k in _FIELDS if record.get(k) is not None})
    if trajectory is not None:  # SWE-agent's, mini-swe-agent's: its commands as tool calls
        record, fields["notes"] = {"messages": trajectory[0]}, trajectory[1]
    conv = conversation_from_messages(record["messages"], str(cid), error_prefixes=error_prefixes, **fields)
    # a budget of `1e400` or `Infinity` is written out as `Infinity`, which no JSON reader reads back
    if conv.budget_usd == math.inf:
        conv.budget_usd = None
        conv.notes.append(f"budget_usd {str(record.get('budget_usd'))[:40]!r} ignored: not a finite number")
    return conv


def read_chat_lines(
    path: str | Path, errors: list[LineError], error_prefixes: Sequence[str] = ERROR_PREFIXES, **defaults: Any
) -> Iterator[dict[str, Any]]:
    """Transcript lines from a chat-format JSON Lines file (plain or gzip); bad lines go to `errors` with
    their line number and the rest is still read."""
    stem = file_stem(path)
    document = trajectory_document(path)
    if document is not None:  # a trajectory saved as one indented JSON document (`.traj`): read whole
        try:
            conv = conversation_from_record(document, stem.removesuffix(".traj"), error_prefixes, **defaults)
        except (ValueError, RecursionError) as exc:
            errors.append(LineError(str(path), 1, (str(exc) or type(exc).__name__)[:_MAX_REASON]))
            return
        yield transcript_line(conv)
        return
    lineno = 0
    with open_binary(path) as stream:
        try:
            for lineno, raw in enumerate(bounded_lines(stream), start=1):
                if raw is None:  # read past, never held whole (a 1.5 GB line took 7.6 GB)
                    errors.append(
                        LineError(str(path), lineno, f"line longer than {MAX_LINE_BYTES:,} bytes; skipped")
                    )
                    continue
                if not raw.strip():
                    continue
                try:
                    record = json_text.loads(raw)
                    conv = conversation_from_record(record, f"{stem}-{lineno}", error_prefixes, **defaults)
                except (ValueError, RecursionError) as exc:  # JSON, UTF-8 and ChatFormatError are ValueErrors
                    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    errors.append(LineError(str(path), lineno, reason[:_MAX_REASON]))
                    continue
                if isinstance(record, dict):
                    set_identity(conv, record.get("attempt"), record.get("instance"))
                yield transcript_line(conv)
        except _STREAM_ERRORS as exc:  # a gzip file cut short or damaged: the lines before are kept
            if lineno == 0:
                raise TranscriptFileError(f"cannot decode {path}: {exc}") from exc
            reason = (
                f"file unreadable after line {lineno} ({type(exc).__name__}: {exc}); rest of file skipped"
            )
            errors.append(LineError(str(path), lineno + 1, reason[:_MAX_REASON]))
