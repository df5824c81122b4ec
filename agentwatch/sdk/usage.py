"""`record_usage`: token usage and cost of a model call, reported by the agent's own code."""

from __future__ import annotations

import logging

from opentelemetry import trace as otel_trace

from agentwatch.wire import attributes as A

log = logging.getLogger(__name__)


def record_usage(
    model: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cost_usd: float | None = None,
    cache_read_input_tokens: int | None = None,
    cache_creation_input_tokens: int | None = None,
) -> bool:
    """Record model, token counts and cost on the current span (call it inside a `@trace(kind="llm")` call).

    `input_tokens` counts every input token, those read from or written to the prompt cache included (the
    GenAI conventions' count: add Anthropic's cache reads and writes to its `input_tokens`)."""
    span = otel_trace.get_current_span()
    if not span.is_recording():
        log.debug("record_usage() outside a recording span; ignored")
        return False
    try:
        attrs: dict[str, str | int | float] = {}
        if model is not None:
            attrs[A.RESPONSE_MODEL] = str(model)
            if A.REQUEST_MODEL not in (getattr(span, "attributes", None) or {}):
                attrs[A.REQUEST_MODEL] = str(model)
                if _is_bare_chat(span):
                    span.update_name(f"{A.CHAT} {model}")
        if input_tokens is not None:
            attrs[A.INPUT_TOKENS] = int(input_tokens)
        if output_tokens is not None:
            attrs[A.OUTPUT_TOKENS] = int(output_tokens)
        if cost_usd is not None:
            attrs[A.COST_USD] = float(cost_usd)
        if cache_read_input_tokens is not None:
            attrs[A.CACHE_READ_INPUT_TOKENS] = int(cache_read_input_tokens)
        if cache_creation_input_tokens is not None:
            attrs[A.CACHE_CREATION_INPUT_TOKENS] = int(cache_creation_input_tokens)
        span.set_attributes(attrs)
    except Exception as exc:  # noqa: BLE001 - int(math.inf) overflows; an object's __str__ or __int__ may fail
        log.warning("record_usage(): invalid value ignored: %r", exc)
        return False
    return True


def _is_bare_chat(span: otel_trace.Span) -> bool:
    return getattr(span, "name", None) == A.CHAT
