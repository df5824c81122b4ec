"""Cost of a conversation (reported, or tokens × price table), its budget ceiling and the ASR cost penalty."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agentwatch.config import CostConfig, ModelPrice
from agentwatch.schema import Conversation, Turn

_NO_MODEL = "cost_unknown: a model call reported tokens but no model name"


_BOUNDARY = frozenset("-_.:@/ ")
_UNSEEN = object()  # a model not looked up yet (None: looked up, not priced)


class PriceLookup:
    """Price of a model: exact name first, then the longest entry that prefixes it at a separator; cached.

    "gpt-4o-2024-08-06" is priced as "gpt-4o", but "mystery" is not priced as "m": the prefix must end where
    the name has a separator (`-_.:@/` or space).
    """

    __slots__ = ("_cache", "_exact", "_prefixes")

    def __init__(self, prices: dict[str, ModelPrice]) -> None:
        self._exact = {name: (p.input_per_mtok, p.output_per_mtok) for name, p in prices.items()}
        self._prefixes = sorted(self._exact, key=len, reverse=True)
        self._cache: dict[str, tuple[float, float] | None] = {}

    def __call__(self, model: str) -> tuple[float, float] | None:
        """(input, output) USD per million tokens, or None if the model is not in the table."""
        price = self._cache.get(model, _UNSEEN)
        if price is not _UNSEEN:
            return price  # type: ignore[return-value]
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
        if len(self._cache) < 65_536:
            self._cache[model] = price
        return price


@dataclass(slots=True)
class CostResult:
    """A conversation's cost: the known total (None if nothing known), why parts are unknown, and its tokens."""

    cost_usd: float | None = None
    reasons: list[str] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0


def turn_cost(turn: Turn, prices: PriceLookup, reasons: list[str]) -> float | None:
    """Cost of one turn: `turn.cost_usd`, else the sum over usage of reported or priced cost; None if unknown."""
    if turn.cost_usd is not None:
        return turn.cost_usd
    total: float | None = None
    for usage in turn.usage:
        if usage.cost_usd is not None:
            cost = usage.cost_usd
        elif usage.input_tokens == 0 and usage.output_tokens == 0:
            cost = 0.0
        elif usage.model is None:
            if _NO_MODEL not in reasons:
                reasons.append(_NO_MODEL)
            continue
        else:
            price = prices(usage.model)
            if price is None:
                reason = f"cost_unknown: model {usage.model} not in price table"
                if reason not in reasons:
                    reasons.append(reason)
                continue
            cost = (usage.input_tokens * price[0] + usage.output_tokens * price[1]) / 1_000_000
        total = cost if total is None else total + cost
    return total


def conversation_cost(turns: Sequence[Turn], prices: PriceLookup) -> CostResult:
    """Sum of known turn costs (unknown parts are left out and named in `reasons`) and of the tokens used."""
    result = CostResult()
    total: float | None = None
    input_tokens = output_tokens = 0
    for turn in turns:
        for usage in turn.usage:
            input_tokens += usage.input_tokens
            output_tokens += usage.output_tokens
        cost = turn_cost(turn, prices, result.reasons)
        if cost is not None:
            total = cost if total is None else total + cost
    result.cost_usd = total
    result.input_tokens = input_tokens
    result.output_tokens = output_tokens
    return result


def budget_ceiling(conv: Conversation, config: CostConfig) -> float | None:
    """Ceiling: the conversation's own budget, else the task's, else the default; None if none."""
    if conv.budget_usd is not None:
        return conv.budget_usd
    ceiling = config.budgets.get(conv.task)
    if ceiling is not None:
        return ceiling
    return config.default_budget_usd


def cost_penalty(cost: float | None, ceiling: float | None) -> float:
    """min(1, max(0, (cost − ceiling) / ceiling)); 0 without a cost or a ceiling; 1 over a zero ceiling."""
    if cost is None or ceiling is None:
        return 0.0
    if ceiling <= 0:
        return 1.0 if cost > 0 else 0.0
    return min(1.0, max(0.0, (cost - ceiling) / ceiling))
