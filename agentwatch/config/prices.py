"""The price table read as a lookup: a model's USD per million tokens, by exact name or prefix.

The scorers price a conversation's model calls with it and the judge prices its own calls: it belongs to the
configuration both read, not to either.
"""

from __future__ import annotations

import re

from agentwatch.config.scoring import ModelPrice

# What may follow a table entry in the name of a snapshot of that model: a date ("-2024-08-06", "-20250929",
# "@20250514", "-2025-01"), a revision ("-001", "-v1:0") or "-latest". Anything else names another model.
_SNAPSHOT = re.compile(r"(?:[-@](?:\d{4}-?\d{2}(?:-?\d{2})?|\d{3}|v\d+(?::\d+)?|latest))+")


# Bedrock's model ids: the vendor before the model, after a cross-region profile's region
# ("anthropic.claude-…", "us.anthropic.claude-…", "global.…"); letters only, so "gpt-4.1" is not one
_BEDROCK_VENDOR = re.compile(r"(?:(?:us|eu|apac|global|us-gov|jp|au|ca)\.)?[a-z]+\.(?=[a-z])")


class PriceLookup:
    """Price of a model: exact name first, then the longest entry of which it names a snapshot; cached.

    "gpt-4o-2024-08-06" and "claude-sonnet-4-20250514" are priced as "gpt-4o" and "claude-sonnet-4", but
    "claude-opus-4-5-20251101" is not priced as "claude-opus-4", nor "gemini-2.0-flash-lite" as
    "gemini-2.0-flash": a newer or smaller model of a family is another model, often at another price, and a
    cost read off its elder's would be wrong where unknown is honest. A name the table does not price is tried
    without its provider ("openai/gpt-4o-mini" as "gpt-4o-mini") or Bedrock's vendor and region
    ("us.anthropic.claude-sonnet-4-20250514-v1:0" as "claude-sonnet-4-20250514-v1:0").
    """

    __slots__ = ("_cache", "_exact", "_prefixes")

    def __init__(self, prices: dict[str, ModelPrice]) -> None:
        self._exact = dict(prices)
        self._prefixes = sorted(self._exact, key=len, reverse=True)
        self._cache: dict[str, ModelPrice | None] = {}

    def __call__(self, model: str) -> ModelPrice | None:
        """The model's prices (USD per million tokens), or None if the model is not in the table."""
        if model in self._cache:
            return self._cache[model]
        price = self._exact.get(model)
        if price is None:
            price = next(
                (
                    self._exact[p]
                    for p in self._prefixes
                    if model.startswith(p) and _SNAPSHOT.fullmatch(model, len(p))
                ),
                None,
            )
        if price is None and "/" in model:  # a router's or gateway's "provider/model" (LiteLLM, OpenRouter)
            price = self(model.rsplit("/", 1)[1])
        if price is None and (vendor := _BEDROCK_VENDOR.match(model)):
            price = self(model[vendor.end() :])
        if len(self._cache) < 65_536:
            self._cache[model] = price
        return price
