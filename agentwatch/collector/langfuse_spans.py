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

from agentwatch.collector.observations import (
    call_value,
    parsed,
    put,
    put_messages,
    put_tokens,
    put_tool,
    total_cost,
)
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
    put_tokens(attrs, tokens_in, tokens_out, read, write)


def fold(attrs: dict[str, Any], name: str, limit: int) -> None:
    """Replace one span's Langfuse keys (it has an observation type) with the GenAI attributes they stand
    for; `name` is the span's, the observation's name."""
    kind = attrs.pop(TYPE, None)
    given, said = parsed(attrs.pop(_INPUT, None)), parsed(attrs.pop(_OUTPUT, None))
    model, release, app = attrs.pop(_MODEL, None), attrs.pop(_RELEASE, None), attrs.pop(_TRACE_NAME, None)
    usage, cost = parsed(attrs.pop(_USAGE, None)), parsed(attrs.pop(_COST, None))
    operation = _OPERATIONS.get(kind) if isinstance(kind, str) else None
    if operation is None:
        return
    put(attrs, A.OPERATION, operation)
    put(attrs, A.AGENT_VERSION, None if release is None else str(release))
    put(attrs, A.AGENT_NAME, None if app is None else str(app))
    if operation == A.EXECUTE_TOOL:
        put_tool(attrs, name, call_value(given), said)
        return
    if operation == A.CHAT:
        put(attrs, A.RESPONSE_MODEL, None if model is None else str(model))
        _usage(attrs, usage)
        put(attrs, A.COST_USD, total_cost(cost, "total"))
    put_messages(attrs, call_value(given), said, limit)
