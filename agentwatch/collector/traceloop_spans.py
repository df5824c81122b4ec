"""Traceloop's decorators (`traceloop.span.kind`, `traceloop.entity.*`) folded into the GenAI attributes the
collector reads, where the span names no GenAI operation.

Traceloop's SDK (OpenLLMetry's entry point; `pip install traceloop-sdk` gives 0.45.6 today, the newest whose
pins resolve) writes a span per decorated function: `@agent`, `@tool`, `@workflow`, `@task` as
`traceloop.span.kind`, the call's arguments as `traceloop.entity.input` (`{"args": [...], "kwargs": {...}}`) and
its return value as `traceloop.entity.output`, both JSON; its model instrumentations write the conventions'
older flattened keys, read elsewhere. An `agent` span becomes an agent invocation (its question and answer), a
`tool` span an `execute_tool` span (its name `traceloop.entity.name`); `workflow` and `task` fold into nothing.
Spans that name a GenAI operation (OpenLLMetry's newer LangChain and Agents SDK instrumentations write both)
are read by their GenAI keys alone: their `traceloop.entity.*` are a framework's callback payloads.
"""

from __future__ import annotations

from typing import Any

from agentwatch.collector.observations import call_value, parsed, put, put_messages, put_tool, unset
from agentwatch.wire import attributes as A

KIND = "traceloop.span.kind"
_NAME = "traceloop.entity.name"
_INPUT = "traceloop.entity.input"
_OUTPUT = "traceloop.entity.output"
# every key the decoders keep for the fold (besides the GenAI ones they always keep)
KEYS: frozenset[str] = frozenset({KIND, _NAME, _INPUT, _OUTPUT})


def fold(attrs: dict[str, Any], name: str, limit: int) -> None:
    """Replace one span's Traceloop keys (it has a span kind) with the GenAI attributes they stand for, unless
    it names a GenAI operation; `name` is the span's (`<entity>.<kind>`)."""
    kind = attrs.pop(KIND, None)
    entity = attrs.pop(_NAME, None)
    given, said = parsed(attrs.pop(_INPUT, None)), parsed(attrs.pop(_OUTPUT, None))
    if not unset(attrs, A.OPERATION) or kind not in ("agent", "tool"):
        return
    if kind == "tool":
        attrs[A.OPERATION] = A.EXECUTE_TOOL
        tool = entity if isinstance(entity, str) and entity else name.removesuffix(".tool")
        put_tool(attrs, tool, call_value(given), said)
        return
    attrs[A.OPERATION] = A.INVOKE_AGENT
    put(attrs, A.AGENT_NAME, entity if isinstance(entity, str) and entity else None)
    put_messages(attrs, call_value(given), said, limit)
