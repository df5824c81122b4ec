"""Read GenAI message attributes (`gen_ai.input.messages`, `gen_ai.output.messages`): text and tool-call parts."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agentwatch.collector import conventions as cv
from agentwatch.collector.foreign_messages import OPENAI_MARK, response_of, with_openai_fields
from agentwatch.collector.repr_calls import REPR_MARKS, with_repr_calls
from agentwatch.collector.span_record import SpanRecord
from agentwatch.wire.json_text import value_of
from agentwatch.wire.values import read_structured

_loads = value_of  # pydantic's Rust JSON parser (~3x json.loads on short messages), nesting bounded


def as_text(value: Any) -> str | None:
    """A value as text: strings unchanged, anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def json_or_text(value: Any) -> Any:
    """Parse an attribute value that is JSON (or an object or array logged as a Python literal, read safely by
    `agentwatch.wire.values`), else keep the value as is."""
    if isinstance(value, str):
        try:
            return _loads(value)
        except (ValueError, RecursionError):
            return read_structured(value)[0]
    return value


def messages(value: Any) -> list[dict] | None:
    """Messages of a `gen_ai.*.messages` attribute (JSON string or structured); None if absent or unreadable.
    Text parts of the model's that are a Python repr of tool calls are read as those calls (`repr_calls`), and
    OpenAI's `tool_calls` and `tool_call_id` beside or instead of parts as parts (`with_openai_fields`)."""
    if value is None:
        return None
    reprs = openai = False
    if isinstance(value, str):
        reprs = REPR_MARKS[0] in value or REPR_MARKS[1] in value
        openai = OPENAI_MARK in value
        try:
            value = _loads(value)
        except (ValueError, RecursionError):
            return None
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return None
    found = [m for m in value if isinstance(m, dict)]
    if openai:
        found = [with_openai_fields(m) for m in found]
    return [with_repr_calls(m) for m in found] if reprs else found


def parts(message: dict) -> list[dict]:
    """Parts of one message; the older flat `{"role", "content": "..."}` form reads as one text part."""
    found = message.get("parts")
    if isinstance(found, list):
        return [p for p in found if isinstance(p, dict)]
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    return []


def message_text(message: dict) -> str | None:
    """Text parts of one message joined by newlines; None if it has none."""
    found = message.get("parts")
    if isinstance(found, list):
        texts = [
            p["content"]
            for p in found
            if isinstance(p, dict) and p.get("type") == "text" and p.get("content") is not None
        ]
    else:  # the older flat form: `content` as one text part (what `parts` reads)
        content = message.get("content")
        texts = [content] if isinstance(content, str) else []
    if not texts:
        return None
    first = texts[0]
    if len(texts) == 1 and isinstance(first, str):  # the usual case
        return first
    return "\n".join(as_text(t) or "" for t in texts)


def instructions_text(value: Any) -> str | None:
    """The agent's instructions from `gen_ai.system_instructions` (JSON parts, a message, or plain text)."""
    if value is None:
        return None
    parsed = json_or_text(value)
    if isinstance(parsed, list):
        texts = [p.get("content") for p in parsed if isinstance(p, dict) and p.get("type", "text") == "text"]
        texts += [p for p in parsed if isinstance(p, str)]
        joined = "\n".join(t for t in texts if isinstance(t, str) and t)
        return joined or None
    if isinstance(parsed, dict):
        return message_text(parsed)
    return parsed if isinstance(parsed, str) and parsed else as_text(parsed)


def system_text(found: list[dict] | None) -> str | None:
    """Text of the system (or developer) messages among input messages, joined; None if there are none."""
    if not found:
        return None
    texts = [message_text(m) for m in found if m.get("role") in ("system", "developer")]
    joined = "\n".join(t for t in texts if t)
    return joined or None


def last_user_text(found: list[dict] | None) -> str | None:
    """Text of the last user message that has text."""
    question = _last_question(found) if found else None
    return None if question is None else question[1]


def _last_question(found: list[dict]) -> tuple[int, str] | None:
    """The index and text of the last user message that has text, if any."""
    for at in range(len(found) - 1, -1, -1):
        if found[at].get("role") == "user":
            text = message_text(found[at])
            if text is not None:
                return at, text
    return None


def output_text(found: list[dict] | None) -> str | None:
    """Text parts of all non-user output messages, joined by newlines."""
    if not found:
        return None
    texts = []
    for message in found:
        if message.get("role", "assistant") != "user":
            text = message_text(message)
            if text:
                texts.append(text)
    if not texts:
        return None
    return texts[0] if len(texts) == 1 else "\n".join(texts)


def _parts_by_call(models: list[SpanRecord], keys: tuple[str, ...], kind: str) -> dict[str, dict[str, Any]]:
    """The parts of one kind (`tool_call`, `tool_call_response`) of the model spans' messages attribute `keys`,
    by call id."""
    found: dict[str, dict[str, Any]] = {}
    for span in models:
        for message in messages(cv.first(span.attrs, keys)) or []:
            for part in parts(message):
                if part.get("type") == kind and part.get("id") is not None:
                    found[str(part["id"])] = part
    return found


def _responses(models: list[SpanRecord]) -> dict[str, Any]:
    """The results of the `tool_call_response` parts of the model spans' input messages, by call id (and, where
    their ids are none of the calls', by the ids of the calls they answer in order: `_answered_in_order`)."""
    found = _parts_by_call(models, cv.INPUT_MESSAGES_KEYS, "tool_call_response")
    results = {call: response_of(part) for call, part in found.items()}
    for span in models:
        for call, result in _answered_in_order(cv.first(span.attrs, cv.INPUT_MESSAGES_KEYS)).items():
            results.setdefault(call, result)
    return results


def _answered_in_order(value: Any) -> dict[str, Any]:
    """The results a messages attribute gives tool calls under ids none of the calls has (OpenLLMetry's
    Responses API instrumentation logs the calls under the output item's id, `fc_…`, and their results under the
    call's, `call_…`): the tool messages right after an assistant message's calls answer them in order, when
    they are as many and no id matches; by the calls' ids."""
    found = messages(value) or []
    out: dict[str, Any] = {}
    for i, message in enumerate(found):
        calls = [
            str(p["id"]) for p in parts(message) if p.get("type") == "tool_call" and p.get("id") is not None
        ]
        if not calls:
            continue
        responses: list[dict[str, Any]] = []
        for following in found[i + 1 :]:
            given = [p for p in parts(following) if p.get("type") == "tool_call_response"]
            if not given:
                break
            responses.extend(given)
        if len(responses) == len(calls) and set(calls).isdisjoint(str(r.get("id")) for r in responses):
            out.update(zip(calls, (response_of(r) for r in responses), strict=True))
    return out


class ToolResponses:
    """The tool results every model call of a conversation was given, by call id: read on first use.

    Without agent spans model calls are turns of their own unless they are joined as one tool loop
    (`answers_calls_of`), and the result of a call one of them asked for is in a later one's input messages."""

    __slots__ = ("_found", "_models")

    def __init__(self, models: Callable[[], list[SpanRecord]]) -> None:
        self._models = models  # called on first use: most conversations never need it
        self._found: dict[str, Any] | None = None

    def get(self, call_id: str) -> tuple[bool, Any]:
        """(whether a result was given for the call, the result)."""
        if self._found is None:
            self._found = _responses(self._models())
        return call_id in self._found, self._found.get(call_id)


def _part_ids(value: Any, kind: str) -> set[str]:
    """The ids of the parts of one kind (`tool_call`, `tool_call_response`) in a messages attribute."""
    return {
        str(part["id"])
        for message in messages(value) or []
        for part in parts(message)
        if part.get("type") == kind and part.get("id") is not None
    }


def calls_asked(models: list[SpanRecord]) -> dict[str, tuple[str, Any]]:
    """The (name, arguments) of the `tool_call` parts of model output messages, by call id; then of those the
    later calls' input messages repeat (where a call's own output was not logged as parts). An input call under an
    id no output gave, with the tool and arguments of an output call, is that call repeated under another id."""
    echoed = _parts_by_call(models, cv.INPUT_MESSAGES_KEYS, "tool_call")
    own = _parts_by_call(models, cv.OUTPUT_MESSAGES_KEYS, "tool_call")
    asked = {call: (_name(part), json_or_text(part.get("arguments"))) for call, part in own.items()}
    repeats: dict[str, list[tuple[str, tuple[str, Any]]]] = {}  # input calls under ids no output gave
    for call, part in echoed.items():
        if call not in own:
            value = (_name(part), json_or_text(part.get("arguments")))
            repeats.setdefault(_key(value), []).append((call, value))
    logged = [_key(value) for value in asked.values()] if repeats else []
    for key, calls in repeats.items():
        # no more than the output calls of that tool and arguments: those calls repeated under another id
        # (OpenLLMetry's Responses instrumentation logs the item's `fc_…` id there), not calls of their own
        if len(calls) > logged.count(key):
            asked.update(calls)
    return asked


def _key(call: tuple[str, Any]) -> str:
    return json.dumps(call, sort_keys=True, default=str)


def may_ask_for_tools(model: SpanRecord) -> bool:
    """Whether a model call's output messages may hold a `tool_call` part (False when they are JSON text without
    one, or absent: most calls answer, and their messages need no parse)."""
    output = cv.first(model.attrs, cv.OUTPUT_MESSAGES_KEYS)
    return output is not None and (not isinstance(output, str) or '"tool_call"' in output)


def answers_calls_of(earlier: SpanRecord, later: SpanRecord) -> bool:
    """Whether model call `later` is given the result of a tool call model call `earlier` asked for: the two
    are steps of one tool loop. Calls without ids (Gemini's, older function calling) are matched by the names
    of the calls `later`'s input repeats, followed by their results."""
    output = cv.first(earlier.attrs, cv.OUTPUT_MESSAGES_KEYS)
    asked = _part_ids(output, "tool_call")
    if asked:
        given = cv.first(later.attrs, cv.INPUT_MESSAGES_KEYS)
        return (
            not asked.isdisjoint(_part_ids(given, "tool_call_response"))
            or asked <= _answered_in_order(given).keys()
        )
    names = [_name(p) for m in messages(output) or [] for p in parts(m) if p.get("type") == "tool_call"]
    return bool(names) and _unnamed_results(cv.first(later.attrs, cv.INPUT_MESSAGES_KEYS), names) is not None


def _name(part: dict[str, Any]) -> str:
    """A `tool_call` part's tool name, as a call read from it is named."""
    return str(part.get("name") or "unknown")


def _unnamed_results(value: Any, names: list[str]) -> list[Any] | None:
    """The results, in order, that input messages `value` give to the calls of the last message asking for tools,
    when those are calls of `names` without ids; None when they are not."""
    found = messages(value) or []
    for at in range(len(found) - 1, -1, -1):
        calls = [p for p in parts(found[at]) if p.get("type") == "tool_call"]
        if not calls:
            continue
        if [_name(p) for p in calls] != names or any(p.get("id") is not None for p in calls):
            return None
        results = [
            response_of(p) for m in found[at + 1 :] for p in parts(m) if p.get("type") == "tool_call_response"
        ]
        return results or None
    return None


def calls_before(first: SpanRecord, known: set[str | None]) -> list[dict[str, Any]]:
    """The tool calls of a turn made before its first model call `first` (as `ToolCall` fields, in order): those
    `first`'s input repeats after the last user message that has text, with the results given there, except
    those under `known` ids. A loop the caller runs whose earlier steps were traces of their own leaves them
    only there."""
    given = cv.first(first.attrs, cv.INPUT_MESSAGES_KEYS)
    found = messages(given) or []
    question = _last_question(found)
    if question is None:
        return []
    later = found[question[0] + 1 :]
    results = {
        str(p["id"]): response_of(p)
        for m in later
        for p in parts(m)
        if p.get("type") == "tool_call_response" and p.get("id") is not None
    }
    calls = []
    in_order: dict[str, Any] | None = None  # results under ids none of the calls has, read when needed
    for message in later:
        for part in parts(message):
            call_id = None if part.get("id") is None else str(part["id"])
            if part.get("type") != "tool_call" or call_id is None or call_id in known:
                continue
            call = {"name": _name(part), "arguments": json_or_text(part.get("arguments")), "call_id": call_id}
            if call_id not in results:
                in_order = _answered_in_order(given) if in_order is None else in_order
                if call_id in in_order:
                    results[call_id] = in_order[call_id]
            if call_id in results:
                call["result"] = json_or_text(results[call_id])
            calls.append(call)
    return calls


def tools_from_messages(
    models: list[SpanRecord], elsewhere: ToolResponses | None = None
) -> tuple[list[dict[str, Any]], int]:
    """Tool calls from `tool_call` parts of model output messages, results from `tool_call_response` parts of
    the input messages of `elsewhere` (the conversation's model calls), else of the same model calls.

    Returns the calls in order (as `ToolCall` fields) and how many of them have no result captured.
    """
    calls: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, span in enumerate(models):
        unnamed: list[dict[str, Any]] = []  # calls without ids: their results are the next call's, in order
        for message in messages(cv.first(span.attrs, cv.OUTPUT_MESSAGES_KEYS)) or []:
            for part in parts(message):
                if part.get("type") != "tool_call":
                    continue
                call_id = None if part.get("id") is None else str(part["id"])
                if call_id is not None:
                    if call_id in seen:
                        continue
                    seen.add(call_id)
                call = {
                    "name": _name(part),
                    "arguments": json_or_text(part.get("arguments")),
                    "call_id": call_id,
                }
                calls.append(call)
                if call_id is None:
                    unnamed.append(call)
        if unnamed and i + 1 < len(models):
            names = [c["name"] for c in unnamed]
            results = _unnamed_results(cv.first(models[i + 1].attrs, cv.INPUT_MESSAGES_KEYS), names) or []
            for call, result in zip(unnamed, results, strict=False):
                call["result"] = json_or_text(result)
    missing = 0
    if not calls:
        return calls, missing
    responses = elsewhere if elsewhere is not None else ToolResponses(lambda: models)
    for call in calls:
        call_id = call["call_id"]
        if call_id is None:
            missing += "result" not in call
            continue
        given, result = responses.get(call_id)
        if given:
            call["result"] = json_or_text(result)
        else:
            missing += 1
    return calls, missing
