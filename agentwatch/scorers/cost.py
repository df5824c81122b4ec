"""Cost of a conversation (reported, or tokens × price table), its budget ceiling and the ASR cost penalty."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agentwatch.config import CostConfig
from agentwatch.config.prices import PriceLookup
from agentwatch.config.scoring import LongContextPrice, ModelPrice
from agentwatch.wire.schema import Conversation, Turn, Usage

_NO_MODEL = "cost_unknown: a model call reported tokens but no model name"
_NO_TOKENS = "cost_unknown: a model call reported no token usage"


@dataclass(slots=True)
class CostResult:
    """A conversation's cost: the known total (None if nothing known), why parts are unknown, and its tokens."""

    cost_usd: float | None = None
    reasons: list[str] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0


def conversation_cost(turns: Sequence[Turn], prices: PriceLookup) -> CostResult:
    """Sum of known turn costs (unknown parts are left out and named in `reasons`) and of the tokens used.

    A turn's cost is `turn.cost_usd`, else the sum over its model calls of the reported or priced cost; None
    if nothing is known.
    """
    reasons: list[str] = []
    total: float | None = None
    input_tokens = output_tokens = cached = 0
    for turn in turns:
        turn_total = turn.cost_usd
        priced = turn_total is None  # a reported turn cost wins over its model calls
        for usage in turn.usage:
            inp = usage.input_tokens
            out = usage.output_tokens
            input_tokens += inp
            output_tokens += out
            cached += usage.cache_read_input_tokens
            if not priced:
                continue
            cost = usage.cost_usd
            if cost is None:
                if inp == 0 and out == 0:  # a call that reported no usage is unknown, not free
                    reason = _NO_TOKENS
                else:
                    model = usage.model
                    if model is None:
                        reason = _NO_MODEL
                    else:
                        cost, reason = _priced(usage, model, prices(model))
                if cost is None:
                    if reason not in reasons:
                        reasons.append(reason)
                    continue
            turn_total = cost if turn_total is None else turn_total + cost
        if turn_total is not None:
            total = turn_total if total is None else total + turn_total
    return CostResult(total, reasons, input_tokens, output_tokens, cached)


def _priced(usage: Usage, model: str, price: ModelPrice | None) -> tuple[float | None, str]:
    """A model call's cost by the price table, or None and why not. Input tokens read from or written to the
    prompt cache are priced at the cache's prices (a tenth of the input price to a quarter more, by vendor):
    without them in the table the call's cost is unknown, not its input priced in full. A call whose input is
    past the entry's long context is priced, all of it, at those rates."""
    if price is None:
        return None, f"cost_unknown: model {model} not in price table"
    inp, read, write = usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens
    rates: ModelPrice | LongContextPrice = price
    cache_read, cache_write = price.cache_read_per_mtok, price.cache_write_per_mtok
    long = price.long_context
    if long is not None and inp > long.above_input_tokens:
        rates = long
        cache_read = cache_read if long.cache_read_per_mtok is None else long.cache_read_per_mtok
        cache_write = cache_write if long.cache_write_per_mtok is None else long.cache_write_per_mtok
    cost = usage.output_tokens * rates.output_per_mtok
    if read or write:
        if read and cache_read is None:
            return None, f"cost_unknown: model {model} has no cache-read price in the price table"
        if write and cache_write is None:
            return None, f"cost_unknown: model {model} has no cache-write price in the price table"
        cost += read * (cache_read or 0.0) + write * (cache_write or 0.0)
    cost += max(0, inp - read - write) * rates.input_per_mtok
    return cost / 1_000_000, ""


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
