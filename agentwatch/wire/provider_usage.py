"""Token usage as model providers' responses give it (objects or dicts): OpenAI's, Anthropic's, LiteLLM's.

Read by the SDK from a traced model call's result and by the importers from logged agent messages; standard
library only, as the SDK requires.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def field_of(obj: Any, name: str) -> Any:
    """`obj[name]` of a mapping, else `obj.name`; None when absent."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def first_int(obj: Any, *names: str) -> int | None:
    """The first of `names` that `obj` has as an integer (not a boolean), else None."""
    for name in names:
        value = field_of(obj, name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def prompt_cache(usage: Any, input_tokens: int | None) -> tuple[int | None, int | None, int | None]:
    """(input tokens counting the prompt cache, cache reads, cache writes) of a usage object or dict: OpenAI's
    `cached_tokens` (in the details of Chat Completions and Responses, among the input tokens), LiteLLM's and
    Anthropic's `cache_read_input_tokens` and `cache_creation_input_tokens` (Anthropic's apart from its
    `input_tokens`, which has no `prompt_tokens` beside it: added, as the GenAI conventions count)."""
    read = first_int(usage, "cache_read_input_tokens")
    write = first_int(usage, "cache_creation_input_tokens")
    if read is None and write is None:
        for name in ("prompt_tokens_details", "input_tokens_details"):
            details = field_of(usage, name)
            if details is not None:
                return input_tokens, first_int(details, "cached_tokens"), None
        return input_tokens, None, None
    if input_tokens is not None and first_int(usage, "prompt_tokens") is None:
        input_tokens += (read or 0) + (write or 0)
    return input_tokens, read, write
