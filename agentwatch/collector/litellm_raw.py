"""LiteLLM's raw request spans read as the model calls they log, and the caller's span it wrote over given back.

LiteLLM's OpenTelemetry callback, with a span current when a call is logged and `USE_OTEL_LITELLM_REQUEST_SPAN`
unset (its default), writes the call's GenAI attributes over that span (the caller's agent span: its
`gen_ai.operation.name` becomes `chat`) instead of opening one, each call over the last, from a thread of its own
(a call logged after the span ended is lost there). Outside the GenAI conventions' mode it also opens, below that
span, one `raw_gen_ai_request` span per call holding the provider's request and response as Python reprs:
`llm.<provider>.messages` (and Anthropic's `.system`), `.choices` (OpenAI's shape) or `.content` and
`.stop_reason` (Anthropic's), `.usage`, `.model`.

The decoders keep those keys on spans of that name and `fold` makes each a `chat` span in the GenAI conventions.
`give_back` then takes LiteLLM's attributes off a span it wrote over that has such calls below it: the calls are
all there, and the span is the caller's again. Without raw spans (the conventions' mode), `turns` marks what went
unseen instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentwatch.collector import conventions as cv
from agentwatch.collector.foreign_messages import ENCODE, bounded, genai_message, genai_messages
from agentwatch.collector.span_record import SpanRecord
from agentwatch.wire import attributes as A
from agentwatch.wire.provider_usage import first_int, prompt_cache
from agentwatch.wire.values import read_python_value

SPAN_NAME = "raw_gen_ai_request"
_FIELDS = frozenset({"messages", "system", "choices", "content", "stop_reason", "usage", "model"})
# what LiteLLM writes over the caller's span besides its own `litellm.*` keys: taken off it when given back
_WRITTEN = (
    cv.MODEL_KEYS
    + cv.INPUT_TOKEN_KEYS
    + cv.OUTPUT_TOKEN_KEYS
    + cv.CACHE_READ_KEYS
    + cv.CACHE_WRITE_KEYS
    + cv.TOTAL_TOKEN_KEYS
    + cv.INPUT_MESSAGES_KEYS
    + cv.OUTPUT_MESSAGES_KEYS
    + cv.SYSTEM_KEYS
    + (cv.LITELLM_CALL_KEY, cv.OPERATION_KEY)
)


def raw_keys(keys: Iterable[str]) -> list[str]:
    """The keys of a raw request span that `fold` reads (`llm.<provider>.<field>`)."""
    return [k for k in keys if k.startswith("llm.") and k.count(".") == 2 and k.rpartition(".")[2] in _FIELDS]


def _read(value: Any) -> Any:
    """A field's value: a repr read (a list, a dict, an object), other text as it is (a model's name)."""
    if not isinstance(value, str) or not (value[:1] in ("[", "{") or "(" in value[:64]):
        return value
    found = read_python_value(value)
    return value if found is None else found


def fold(attrs: dict[str, Any], limit: int) -> None:
    """Replace a raw request span's `llm.<provider>.*` keys with the GenAI attributes of the call they log."""
    raw = {key.rpartition(".")[2]: _read(attrs.pop(key)) for key in raw_keys(list(attrs))}
    said = raw.get("messages")
    if not isinstance(said, list):
        return
    found = genai_messages(said)
    system = raw.get("system")  # Anthropic's, a parameter of its own: text or text blocks
    if system:
        found.insert(
            0, genai_message({"role": "system", "content": system}) or {"role": "system", "parts": []}
        )
    attrs[A.OPERATION] = A.CHAT
    attrs[A.INPUT_MESSAGES] = bounded(found, limit)
    answer = _answer(raw)
    if answer is not None:
        attrs[A.OUTPUT_MESSAGES] = ENCODE([answer])
    if isinstance(raw.get("model"), str):
        attrs[A.RESPONSE_MODEL] = raw["model"]
    usage = raw.get("usage")
    if isinstance(usage, dict):
        tokens_in, read, write = prompt_cache(usage, first_int(usage, "prompt_tokens", "input_tokens"))
        for key, count in (
            (A.INPUT_TOKENS, tokens_in),
            (A.OUTPUT_TOKENS, first_int(usage, "completion_tokens", "output_tokens")),
            (A.CACHE_READ_INPUT_TOKENS, read),
            (A.CACHE_CREATION_INPUT_TOKENS, write),
        ):
            if count is not None:
                attrs[key] = count


def _answer(raw: dict[str, Any]) -> dict[str, Any] | None:
    """The response's first choice (OpenAI's shape) or its content blocks (Anthropic's), with its finish reason."""
    choices = raw.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = genai_message(choices[0].get("message") or {}, "assistant")
        finish = choices[0].get("finish_reason")
    elif isinstance(raw.get("content"), list):
        message = genai_message({"role": "assistant", "content": raw["content"]})
        finish = raw.get("stop_reason")
    else:
        return None
    if message is not None and isinstance(finish, str):
        message["finish_reason"] = finish
    return message


def give_back(spans: list[SpanRecord]) -> None:
    """Take LiteLLM's call off each span it wrote one over that has raw request spans read below it."""
    over = {s.span_id: s for s in spans if cv.LITELLM_CALL_KEY in s.attrs and s.name != cv.LITELLM_SPAN_NAME}
    if not over:
        return
    below = {s.parent_span_id for s in spans if s.name == SPAN_NAME and A.INPUT_MESSAGES in s.attrs}
    for span_id in over.keys() & below:
        span = over[span_id]
        for key in _WRITTEN:
            span.attrs.pop(key, None)
        if span.name.startswith(A.INVOKE_AGENT):  # the operation LiteLLM's `chat` was written over
            span.attrs[A.OPERATION] = A.INVOKE_AGENT
