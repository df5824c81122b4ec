"""The price table read as a lookup: a model's USD per million tokens, by exact name or prefix.

The scorers price a conversation's model calls with it and the judge prices its own calls: it belongs to the
configuration both read, not to either.
"""

from __future__ import annotations

from agentwatch.config.scoring import ModelPrice

_BOUNDARY = frozenset("-_.:@/ ")


class PriceLookup:
    """Price of a model: exact name first, then the longest entry that prefixes it at a separator; cached.

    "gpt-4o-2024-08-06" is priced as "gpt-4o", but "mystery" is not priced as "m": the prefix must end where
    the name has a separator (`-_.:@/` or space). A name the table does not price is tried without its
    provider ("openai/gpt-4o-mini" as "gpt-4o-mini").
    """

    __slots__ = ("_cache", "_exact", "_prefixes")

    def __init__(self, prices: dict[str, ModelPrice]) -> None:
        self._exact = {name: (p.input_per_mtok, p.output_per_mtok) for name, p in prices.items()}
        self._prefixes = sorted(self._exact, key=len, reverse=True)
        self._cache: dict[str, tuple[float, float] | None] = {}

    def __call__(self, model: str) -> tuple[float, float] | None:
        """(input, output) USD per million tokens, or None if the model is not in the table."""
        if model in self._cache:
            return self._cache[model]
        price = self._exact.get(model)
        if price is None:
            price = next(
                (
                    self._exact[p]
                    for p in self._prefixes
                    if model.startswith(p) and model[len(p) : len(p) + 1] in _BOUNDARY
                ),
                None,
            )
        if price is None and "/" in model:  # a router's or gateway's "provider/model" (LiteLLM, OpenRouter)
            price = self(model.rsplit("/", 1)[1])
        if len(self._cache) < 65_536:
            self._cache[model] = price
        return price
