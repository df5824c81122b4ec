"""Langfuse's span attributes (`langfuse.observation.*`) folded into the GenAI attributes the collector reads.

Langfuse's Python SDK (3.x to 5.x) is built on OpenTelemetry: `@observe` and its OpenAI wrapper write each
observation as a span whose `langfuse.observation.type` says what it is (`agent`, `generation`, `tool`, `span`,
`chain`, ...), with its input and output as JSON (`langfuse.observation.input`, `.output`), a generation's model
(`.model.name`), its tokens and cost as JSON objects (`.usage_details`, `.cost_details`), the conversation as
`session.id`, the application as `langfuse.trace.name` and `langfuse.release`. A team that sends those spans to
agentwatch as well (an OpenTelemetry Collector fanning out, or a second span processor) is read here: an `agent`
observation becomes an agent invocation, a `generation` a `chat` call with its messages and usage, a `tool` an
`execute_tool` span with its arguments and result (a LangChain `ToolMessage`'s content); the trace's name is the
agent's name and the release its version, where the spans name none (else the resource's service, as for any
span). A decorated function's input, logged as
`{"args": [...], "kwargs": {...}}`, is read as its one argument (or its keyword arguments). A GenAI attribute the
span already has is kept; other observation types fold into nothing.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import from_json

from agentwatch.collector.chain_values import langchain_tool_message
from agentwatch.collector.foreign_messages import ENCODE, bounded, genai_message, genai_messages
from agentwatch.wire import attributes as A
from agentwatch.wire.provider_usage import first_int, prompt_cache

TYPE = "langfuse.observation.type"
_INPUT = "langfuse.observation.input"
_OUTPUT = "langfuse.observation.output"
_MODEL = "langfuse.observation.model.name"
_USAGE = "langfuse.observation.usage_details"
_COST = "langfuse.observation.cost_details"
_RELEASE = "langfuse.release"
_TRACE_NAME = "langfuse.trace.name"
# every key the decoders keep for the fold (besides the GenAI ones they always keep)
KEYS: frozenset[str] = frozenset({TYPE, _INPUT, _OUTPUT, _MODEL, _USAGE, _COST, _RELEASE, _TRACE_NAME})
_OPERATIONS = {"agent": A.INVOKE_AGENT, "generation": A.CHAT, "tool": A.EXECUTE_TOOL}


def _parsed(value: Any) -> Any:
    """A JSON attribute's value; text that is not JSON (a string output, or one cut at the limit) as it is."""
    if not isinstance(value, str) or value[:1] not in ("{", "[", '"'):
        return value
    try:
        return from_json(value)
    except (ValueError, RecursionError):
        return value


def _readable(value: Any) -> Any:
    """A value read as messages or text: None for JSON that did not parse (cut at the attribute limit), whose
    text is no message anyone said."""
    return None if isinstance(value, str) and value[:1] in ("{", "[") else value


def _call_value(value: Any) -> Any:
    """A decorated function's logged input `{"args": [...], "kwargs": {...}}` as its one positional argument, or
    its keyword arguments; any other value as it is."""
    if not isinstance(value, dict) or set(value) != {"args", "kwargs"}:
        return value
    args, kwargs = value["args"], value["kwargs"]
    if isinstance(args, list) and len(args) == 1 and not kwargs:
        return args[0]
    if not args and isinstance(kwargs, dict):
        return kwargs
    return value


def _json(value: Any) -> str:
    return value if isinstance(value, str) else ENCODE(value)


def _unset(attrs: dict[str, Any], key: str) -> bool:
    return attrs.get(key) in (None, "")


def _usage(attrs: dict[str, Any], usage: Any) -> None:
    """A generation's `usage_details` (Langfuse's `input` / `output`, or the provider's own names) as the
    GenAI token attributes, prompt-cache tokens included."""
    if not isinstance(usage, dict):
        return
    tokens_in = first_int(usage, "input", "prompt_tokens", "input_tokens")
    tokens_out = first_int(usage, "output", "completion_tokens", "output_tokens")
    tokens_in, read, write = prompt_cache(usage, tokens_in)
    read = read if read is not None else first_int(usage, "input_cached_tokens", "input_cache_read")
    write = write if write is not None else first_int(usage, "input_cache_creation")
    for key, value in (
        (A.INPUT_TOKENS, tokens_in),
        (A.OUTPUT_TOKENS, tokens_out),
        (A.CACHE_READ_INPUT_TOKENS, read),
        (A.CACHE_CREATION_INPUT_TOKENS, write),
    ):
        if value is not None and _unset(attrs, key):
            attrs[key] = value


def _cost(cost: Any) -> float | None:
    """A generation's `cost_details` in USD: its `total`, else the sum of its parts."""
    if not isinstance(cost, dict):
        return None
    total = cost.get("total")
    if isinstance(total, (int, float)) and not isinstance(total, bool):
        return float(total)
    parts = [v for v in cost.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return float(sum(parts)) if parts else None


def _tool(attrs: dict[str, Any], name: str, given: Any, said: Any) -> None:
    """A tool observation's name, arguments and result (a LangChain `ToolMessage`'s content, and its call id)."""
    if _unset(attrs, A.TOOL_NAME):
        attrs[A.TOOL_NAME] = name
    if given is not None and _unset(attrs, A.TOOL_ARGUMENTS):
        attrs[A.TOOL_ARGUMENTS] = _json(_call_value(given))
    if said is None or not _unset(attrs, A.TOOL_RESULT):
        return
    message = langchain_tool_message(_json(said))
    if message is not None:
        said, call_id = message
        if call_id is not None and _unset(attrs, A.TOOL_CALL_ID):
            attrs[A.TOOL_CALL_ID] = call_id
    attrs[A.TOOL_RESULT] = _json(said)


def fold(attrs: dict[str, Any], name: str, limit: int) -> None:
    """Replace one span's Langfuse keys (it has an observation type) with the GenAI attributes they stand
    for; `name` is the span's, the observation's name."""
    kind = attrs.pop(TYPE, None)
    given, said = _parsed(attrs.pop(_INPUT, None)), _parsed(attrs.pop(_OUTPUT, None))
    model, release, app = attrs.pop(_MODEL, None), attrs.pop(_RELEASE, None), attrs.pop(_TRACE_NAME, None)
    usage, cost = _parsed(attrs.pop(_USAGE, None)), _parsed(attrs.pop(_COST, None))
    operation = _OPERATIONS.get(kind) if isinstance(kind, str) else None
    if operation is None:
        return
    if _unset(attrs, A.OPERATION):
        attrs[A.OPERATION] = operation
    if release is not None and _unset(attrs, A.AGENT_VERSION):
        attrs[A.AGENT_VERSION] = str(release)
    if app is not None and _unset(attrs, A.AGENT_NAME):
        attrs[A.AGENT_NAME] = str(app)
    if operation == A.EXECUTE_TOOL:
        _tool(attrs, name, given, said)
        return
    if operation == A.INVOKE_AGENT:
        given = _call_value(given)
    else:
        if model is not None and _unset(attrs, A.RESPONSE_MODEL):
            attrs[A.RESPONSE_MODEL] = str(model)
        _usage(attrs, usage)
        spent = _cost(cost)
        if spent is not None and _unset(attrs, A.COST_USD):
            attrs[A.COST_USD] = spent
    given, said = _readable(given), _readable(said)
    if isinstance(given, dict) and isinstance(given.get("messages"), list):  # a chat request's body
        given = given["messages"]
    if isinstance(given, str):
        given = {"role": "user", "content": given}
    found = genai_messages(given, "user") if given is not None else []
    if found and _unset(attrs, A.INPUT_MESSAGES):
        attrs[A.INPUT_MESSAGES] = bounded(found, limit)
    answered = genai_message(
        {"role": "assistant", "content": said} if isinstance(said, str) else said, "assistant"
    )
    if answered is not None and answered["parts"] and _unset(attrs, A.OUTPUT_MESSAGES):
        attrs[A.OUTPUT_MESSAGES] = bounded([answered], limit)
