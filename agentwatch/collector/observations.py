"""What LLM-tracing SDKs with their own span vocabulary log (an observation's JSON input and output, a model
call's usage and cost), written as the GenAI attributes the collector reads: shared by `langfuse_spans` and
`mlflow_spans`. Every `put_*` keeps a GenAI attribute the span already has."""

from __future__ import annotations

from typing import Any

from agentwatch.collector.chain_values import langchain_tool_message
from agentwatch.collector.foreign_messages import ENCODE, bounded, genai_message, genai_messages
from agentwatch.wire import attributes as A
from agentwatch.wire.json_text import value_of


def parsed(value: Any) -> Any:
    """A JSON attribute's value; text that is not JSON (a string output, or JSON cut at the limit) as it is."""
    if not isinstance(value, str) or value[:1] not in ("{", "[", '"'):
        return value
    try:
        return value_of(value)
    except (ValueError, RecursionError):
        return value


def as_json(value: Any) -> str:
    """A value as an attribute's text: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else ENCODE(value)


def unset(attrs: dict[str, Any], key: str) -> bool:
    """Whether the span has no value under `key` yet."""
    return attrs.get(key) in (None, "")


def put(attrs: dict[str, Any], key: str, value: Any) -> None:
    """`value` under `key` unless it is None or the span has one."""
    if value is not None and unset(attrs, key):
        attrs[key] = value


def call_value(value: Any) -> Any:
    """A decorated function's logged call `{"args": [...], "kwargs": {...}}` (Langfuse's `@observe`, Traceloop's
    decorators) as its one positional argument, or its keyword arguments; any other value as it is."""
    if not isinstance(value, dict) or set(value) != {"args", "kwargs"}:
        return value
    args, kwargs = value["args"], value["kwargs"]
    if isinstance(args, list) and len(args) == 1 and not kwargs:
        return args[0]
    if not args and isinstance(kwargs, dict):
        return kwargs
    return value


def _readable(value: Any) -> Any:
    """A value read as messages or text: None for JSON that did not parse (cut at the attribute limit), whose
    text is no message anyone said."""
    return None if isinstance(value, str) and value[:1] in ("{", "[") else value


def _one_text(value: Any) -> Any:
    """A function's arguments by name when they are one text (`{"question": "..."}`): that text."""
    if isinstance(value, dict) and len(value) == 1 and "role" not in value:
        (only,) = value.values()
        if isinstance(only, str):
            return only
    return value


def put_messages(attrs: dict[str, Any], given: Any, said: Any, limit: int) -> None:
    """An agent's or a model call's input and output (parsed JSON or text) as its input and output messages: a
    chat request's `messages`, a list of messages, a message, text, or a function's one text argument; JSON cut at
    the limit gives none rather than its text."""
    given, said = _one_text(_readable(given)), _readable(said)
    if isinstance(given, dict) and isinstance(given.get("messages"), list):  # a chat request's body
        system = given.get("system")  # Anthropic's instructions beside the messages
        given = ([{"role": "system", "content": system}] if isinstance(system, str) else []) + given[
            "messages"
        ]
    if isinstance(given, str):
        given = {"role": "user", "content": given}
    found = [m for m in genai_messages(given, "user") if m["parts"]] if given is not None else []
    if found and unset(attrs, A.INPUT_MESSAGES):
        attrs[A.INPUT_MESSAGES] = bounded(found, limit)
    if isinstance(said, dict) and isinstance(said.get("choices"), list) and said["choices"]:
        choice = said["choices"][0]  # a Chat Completions response: its first choice's message
        said = choice.get("message") if isinstance(choice, dict) else None
    answered = genai_message(
        {"role": "assistant", "content": said} if isinstance(said, str) else said, "assistant"
    )
    if answered is not None and answered["parts"] and unset(attrs, A.OUTPUT_MESSAGES):
        attrs[A.OUTPUT_MESSAGES] = bounded([answered], limit)


def put_tool(attrs: dict[str, Any], name: str, arguments: Any, result: Any) -> None:
    """A tool call's name (the span's), arguments and result (a LangChain `ToolMessage`'s content, and its id)."""
    put(attrs, A.TOOL_NAME, name or None)
    if arguments is not None:
        put(attrs, A.TOOL_ARGUMENTS, as_json(arguments))
    if result is None or not unset(attrs, A.TOOL_RESULT):
        return
    message = langchain_tool_message(as_json(result))
    if message is not None:
        result, call_id = message
        put(attrs, A.TOOL_CALL_ID, call_id)
    attrs[A.TOOL_RESULT] = as_json(result)


def put_tokens(
    attrs: dict[str, Any], tokens_in: int | None, tokens_out: int | None, read: int | None, write: int | None
) -> None:
    """A model call's tokens (input counting the prompt cache, output, cache reads and writes)."""
    put(attrs, A.INPUT_TOKENS, tokens_in)
    put(attrs, A.OUTPUT_TOKENS, tokens_out)
    put(attrs, A.CACHE_READ_INPUT_TOKENS, read)
    put(attrs, A.CACHE_CREATION_INPUT_TOKENS, write)


def total_cost(cost: Any, total: str) -> float | None:
    """A call's cost in USD from an object of costs: its `total` key, else the sum of its numbers."""
    if not isinstance(cost, dict):
        return None
    whole = cost.get(total)
    if isinstance(whole, (int, float)) and not isinstance(whole, bool):
        return float(whole)
    parts = [v for v in cost.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return float(sum(parts)) if parts else None
