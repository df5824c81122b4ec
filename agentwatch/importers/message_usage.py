"""The usage of the model call an agent message records (τ²-bench through LiteLLM: `usage` with prompt and
completion tokens, `cost` in USD, the model in `raw_data`), as `Usage` fields; read by `importers.openai_chat`."""

from __future__ import annotations

from typing import Any

from agentwatch.wire.conversation import MAX_COST_USD_PER_CALL, MAX_TOKENS_PER_CALL
from agentwatch.wire.provider_usage import prompt_cache


def _tokens(value: Any) -> int | None:
    """A token count as recorded: absent is 0; None for what no call counts (negative, past the cap)."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS_PER_CALL:
        return value
    return None


def message_usage(message: dict[str, Any]) -> dict[str, Any] | None:
    """The `Usage` fields of the model call an agent message records (`usage` with prompt and completion tokens,
    `cost` in USD, the model in `raw_data` or `model`: τ²-bench through LiteLLM); None when it records neither, or
    values no call has (negative, past the plausibility caps)."""
    usage, reported = message.get("usage"), message.get("cost")
    cost = float(reported) if isinstance(reported, (int, float)) and not isinstance(reported, bool) else None
    if not isinstance(usage, dict) and cost is None:
        return None
    if cost is not None and not 0 <= cost <= MAX_COST_USD_PER_CALL:  # NaN too
        return None
    counts = usage if isinstance(usage, dict) else {}
    tokens_in = _tokens(counts.get("prompt_tokens", counts.get("input_tokens")))
    tokens_out = _tokens(counts.get("completion_tokens", counts.get("output_tokens")))
    if tokens_in is None or tokens_out is None:
        return None
    raw = message.get("raw_data")
    model = message.get("model") or (raw.get("model") if isinstance(raw, dict) else None)
    found = {
        "model": model if isinstance(model, str) and model else None,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost_usd": cost,
    }
    counted, read, write = prompt_cache(counts, tokens_in)
    if read or write:  # prompt-cache tokens, among the input tokens
        read, write, counted = _tokens(read), _tokens(write), _tokens(counted)
        if read is None or write is None or counted is None or read + write > counted:
            return None
        found.update(input_tokens=counted, cache_read_input_tokens=read, cache_creation_input_tokens=write)
    return found
