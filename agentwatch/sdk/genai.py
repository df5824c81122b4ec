"""GenAI message and usage shapes: Python values → `gen_ai.*.messages` lists, OpenAI-style responses → usage."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentwatch.wire.provider_usage import field_of as _get
from agentwatch.wire.provider_usage import first_int as _first_int
from agentwatch.wire.provider_usage import prompt_cache

log = logging.getLogger(__name__)


@dataclass(slots=True)
class UsageInfo:
    """Token usage and model reported by a model response."""

    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    cache_read_input_tokens: int | None = None  # of the input tokens, as the GenAI conventions count them
    cache_creation_input_tokens: int | None = None


def text_of(value: Any, dumps: Any) -> str:
    """value as message text: strings as they are, anything else as (redacted, bounded) JSON."""
    return value if isinstance(value, str) else dumps(value)


def user_message(arguments: dict[str, Any], dumps: Any) -> list[dict[str, Any]]:
    """The turn's input as one user message: a single string argument as text, else the arguments as JSON."""
    if len(arguments) == 1:
        (only,) = arguments.values()
        content = text_of(only, dumps)
    else:
        content = dumps(arguments)
    return [{"role": "user", "parts": [{"type": "text", "content": content}]}]


def assistant_message(result: Any, dumps: Any) -> list[dict[str, Any]]:
    """The turn's answer as one assistant message with a text part."""
    return [{"role": "assistant", "parts": [{"type": "text", "content": text_of(result, dumps)}]}]


def chat_input(arguments: dict[str, Any], dumps: Any) -> list[dict[str, Any]]:
    """A model call's input: an OpenAI-style `messages` argument converted to GenAI parts, else the arguments."""
    messages = arguments.get("messages")
    if isinstance(messages, (list, tuple)) and all(isinstance(m, Mapping) and "role" in m for m in messages):
        out = []
        for m in messages:
            parts: list[dict[str, Any]] = []
            content = m.get("content")
            if content is not None:
                parts.append({"type": "text", "content": text_of(content, dumps)})
            for call in m.get("tool_calls") or []:
                parts.append(_tool_call_part(call))
            if m.get("role") == "tool":
                parts = [{"type": "tool_call_response", "id": m.get("tool_call_id"), "response": content}]
            out.append({"role": str(m.get("role")), "parts": parts})
        return out
    return user_message(arguments, dumps)


def chat_output(result: Any, dumps: Any) -> list[dict[str, Any]]:
    """A model call's output: the first choice of an OpenAI-style response, else the value as text."""
    choices = _get(result, "choices")
    if isinstance(choices, (list, tuple)) and choices:
        choice = choices[0]
        message = _get(choice, "message")
        parts: list[dict[str, Any]] = []
        content = _get(message, "content")
        if content is not None:
            parts.append({"type": "text", "content": text_of(content, dumps)})
        for call in _get(message, "tool_calls") or []:
            parts.append(_tool_call_part(call))
        out: dict[str, Any] = {"role": "assistant", "parts": parts}
        finish = _get(choice, "finish_reason")
        if finish is not None:
            out["finish_reason"] = str(finish)
        return [out]
    return assistant_message(result, dumps)


def _tool_call_part(call: Any) -> dict[str, Any]:
    function = _get(call, "function")
    name = _get(function, "name") if function is not None else _get(call, "name")
    arguments = _get(function, "arguments") if function is not None else _get(call, "arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):  # kept as the text the model wrote
            pass
    return {"type": "tool_call", "id": _get(call, "id"), "name": name, "arguments": arguments}


def usage_of(result: Any) -> UsageInfo | None:
    """Model and token counts of an OpenAI-style, Anthropic or Gemini response (object or dict), or None if it
    has none."""
    if result is None or isinstance(result, (str, bytes, int, float, bool, list, tuple)):
        return None
    try:
        usage = _get(result, "usage")
        model = _get(result, "model")
        if usage is None and model is None:
            return _gemini_usage(result)
        info = UsageInfo(
            model=model if isinstance(model, str) else None, input_tokens=None, output_tokens=None
        )
        if usage is not None:
            tokens_in = _first_int(usage, "prompt_tokens", "input_tokens")
            info.output_tokens = _first_int(usage, "completion_tokens", "output_tokens")
            info.input_tokens, info.cache_read_input_tokens, info.cache_creation_input_tokens = prompt_cache(
                usage, tokens_in
            )
        return info
    except Exception:
        log.debug("could not read usage from %r", type(result), exc_info=True)
        return None


def _gemini_usage(result: Any) -> UsageInfo | None:
    """Gemini's `usage_metadata` (Google's GenAI SDK): the prompt's tokens (its cached ones among them), the
    candidates' and the thoughts' (billed as output); the model its `model_version`."""
    meta = _get(result, "usage_metadata")
    if meta is None:
        return None
    model = _get(result, "model_version")
    output = _first_int(meta, "candidates_token_count")
    thoughts = _first_int(meta, "thoughts_token_count")
    return UsageInfo(
        model=model if isinstance(model, str) else None,
        input_tokens=_first_int(meta, "prompt_token_count"),
        output_tokens=None if output is None and thoughts is None else (output or 0) + (thoughts or 0),
        cache_read_input_tokens=_first_int(meta, "cached_content_token_count"),
    )
