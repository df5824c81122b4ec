"""Prompt-cache tokens, from each place they come in to the cost: spans (the conventions count them among the
input tokens; Anthropic's own count does not), the SDK's reading of providers' responses, logged agent messages
(LiteLLM), and the price table (cache prices, or an unknown cost where it has none)."""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from agentwatch.collector.call_usage import calls_usage
from agentwatch.collector.decode import SpanRecord
from agentwatch.collector.turns import Gaps
from agentwatch.config import Settings
from agentwatch.config.prices import PriceLookup
from agentwatch.config.scoring import LongContextPrice, ModelPrice
from agentwatch.importers.openai_chat import message_usage
from agentwatch.scorers.cost import conversation_cost
from agentwatch.sdk.genai import usage_of
from agentwatch.wire.schema import Turn, Usage


def _usage(attrs: dict[str, Any]) -> dict[str, Any]:
    span = SpanRecord("t" * 32, "s" * 16, None, "chat", 1, 2, None, {"gen_ai.request.model": "m", **attrs})
    (found,) = calls_usage([span], [span], 0, Gaps())
    return found


def _counts(found: dict[str, Any]) -> tuple[int, int, int]:
    return (
        found["input_tokens"],
        found.get("cache_read_input_tokens", 0),
        found.get("cache_creation_input_tokens", 0),
    )


@pytest.mark.parametrize(
    ("attrs", "counts"),
    [
        # the conventions: among the input tokens
        (
            {"gen_ai.usage.input_tokens": 1200, "gen_ai.usage.cache_read.input_tokens": 1024},
            (1200, 1024, 0),
        ),
        (
            {
                "llm.token_count.prompt": 1200,
                "llm.token_count.prompt_details.cache_read": 1000,
                "llm.token_count.prompt_details.cache_write": 150,
            },
            (1200, 1000, 150),
        ),
        # OpenLLMetry's and Strands' older names
        (
            {
                "gen_ai.usage.input_tokens": 900,
                "gen_ai.usage.cache_read_input_tokens": 100,
                "gen_ai.usage.cache_write_input_tokens": 50,
            },
            (900, 100, 50),
        ),
        # more cached than input: a source that counts the cache apart (Anthropic's own count)
        (
            {"gen_ai.usage.input_tokens": 176, "gen_ai.usage.cache_read.input_tokens": 1024},
            (1200, 1024, 0),
        ),
        # fewer, but a total that counts them apart
        (
            {
                "gen_ai.usage.input_tokens": 1100,
                "gen_ai.usage.output_tokens": 20,
                "gen_ai.usage.cache_creation.input_tokens": 100,
                "gen_ai.usage.total_tokens": 1220,
            },
            (1200, 0, 100),
        ),
        # a total that counts them in
        (
            {
                "gen_ai.usage.input_tokens": 1100,
                "gen_ai.usage.output_tokens": 20,
                "gen_ai.usage.cache_creation.input_tokens": 100,
                "gen_ai.usage.total_tokens": 1120,
            },
            (1100, 0, 100),
        ),
        # the Vercel AI SDK 6's keys
        ({"gen_ai.usage.input_tokens": 40, "ai.usage.inputTokenDetails.cacheReadTokens": 16}, (40, 16, 0)),
        # no input count: cache counts alone are no call's input (an AI SDK loop span's totals)
        ({"ai.usage.cachedInputTokens": 16, "gen_ai.usage.output_tokens": 3}, (0, 0, 0)),
        # nothing cached: no cache fields
        ({"gen_ai.usage.input_tokens": 40, "gen_ai.usage.cache_read.input_tokens": 0}, (40, 0, 0)),
    ],
)
def test_cache_tokens_on_a_model_span(attrs: dict[str, Any], counts: tuple[int, int, int]) -> None:
    assert _counts(_usage(attrs)) == counts


def test_cache_counts_past_the_plausibility_cap_drop_the_calls_counts() -> None:
    found = _usage({"gen_ai.usage.input_tokens": 5, "gen_ai.usage.cache_read.input_tokens": 10_000_000})
    assert _counts(found) == (0, 0, 0)


# ---------------------------------------------------------------------------------------------- cost
PRICE = ModelPrice(input_per_mtok=3, output_per_mtok=15, cache_read_per_mtok=0.3, cache_write_per_mtok=3.75)


def _cost(usages: list[Usage], price: ModelPrice = PRICE) -> tuple[float | None, list[str]]:
    found = conversation_cost([Turn(usage=usages)], PriceLookup({"m": price}))
    return found.cost_usd, found.reasons


def test_cached_tokens_are_priced_at_the_cache_prices() -> None:
    usage = Usage(
        model="m",
        input_tokens=10_000,
        output_tokens=500,
        cache_read_input_tokens=8_000,
        cache_creation_input_tokens=1_500,
    )
    expected = (500 * 3 + 8_000 * Fraction("0.3") + 1_500 * Fraction("3.75") + 500 * 15) / 10**6
    cost, reasons = _cost([usage])
    assert cost == pytest.approx(float(expected), rel=1e-12) and reasons == []


def test_more_cached_than_input_prices_no_uncached_input() -> None:
    """A transcript whose cache counts outnumber its input tokens: the cache at its prices, no input below 0."""
    usage = Usage(model="m", input_tokens=10, output_tokens=0, cache_read_input_tokens=100)
    assert _cost([usage])[0] == pytest.approx(100 * 0.3 / 10**6, rel=1e-12)


@pytest.mark.parametrize(
    ("price", "fields", "missing"),
    [
        (ModelPrice(input_per_mtok=3, output_per_mtok=15), {"cache_read_input_tokens": 10}, "cache-read"),
        (
            ModelPrice(input_per_mtok=3, output_per_mtok=15, cache_read_per_mtok=0.3),
            {"cache_creation_input_tokens": 10},
            "cache-write",
        ),
    ],
)
def test_a_cache_the_table_has_no_price_for_makes_the_call_cost_unknown(
    price: ModelPrice, fields: dict[str, int], missing: str
) -> None:
    """Not the input price: a tenth of it, or a quarter more, by vendor; unknown is honest, a guess is not. The
    call the table can price still counts."""
    cached = Usage(model="m", input_tokens=100, output_tokens=10, **fields)
    plain = Usage(model="m", input_tokens=100, output_tokens=10)
    cost, reasons = _cost([cached, plain], price)
    assert reasons == [f"cost_unknown: model m has no {missing} price in the price table"]
    assert cost == pytest.approx((100 * 3 + 10 * 15) / 10**6, rel=1e-12)


LONG = ModelPrice(
    input_per_mtok=1.25,
    output_per_mtok=10,
    cache_read_per_mtok=0.125,
    long_context=LongContextPrice(above_input_tokens=200_000, input_per_mtok=2.5, output_per_mtok=15),
)


@pytest.mark.parametrize(
    ("inp", "read", "rates"),
    [
        (200_000, 0, ("1.25", "10", "0.125")),  # at the length: not past it
        (200_001, 0, ("2.5", "15", "0.125")),  # past it: the whole call at the long rates
        (
            250_000,
            240_000,
            ("2.5", "15", "0.125"),
        ),  # cached tokens count in the length; their price the base's
    ],
)
def test_a_call_past_the_long_context_is_priced_all_at_its_rates(
    inp: int, read: int, rates: tuple[str, str, str]
) -> None:
    rin, rout, rread = (Fraction(r) for r in rates)
    usage = Usage(model="m", input_tokens=inp, output_tokens=1_000, cache_read_input_tokens=read)
    expected = ((inp - read) * rin + read * rread + 1_000 * rout) / 10**6
    assert _cost([usage], LONG)[0] == pytest.approx(float(expected), rel=1e-12)


def test_a_negative_cache_price_fails_at_start_naming_its_key() -> None:
    with pytest.raises(ValidationError, match="cache_read_per_mtok"):
        Settings.model_validate(
            {
                "cost": {
                    "prices": {
                        "as_of": "2026-11-29",
                        "models": {
                            "m": {"input_per_mtok": 1, "output_per_mtok": 1, "cache_read_per_mtok": -1}
                        },
                    }
                }
            }
        )


def test_the_shipped_table_reads_from_the_cache_for_less_than_its_input() -> None:
    for name, price in Settings().cost.prices.models.items():
        if price.cache_read_per_mtok is not None:
            assert price.cache_read_per_mtok <= price.input_per_mtok, name


# ---------------------------------------------------------------------------------------------- the SDK
@pytest.mark.parametrize(
    ("result", "counts"),
    [
        # Chat Completions: cached among the prompt tokens
        (
            {
                "model": "gpt-4o",
                "usage": {
                    "prompt_tokens": 1200,
                    "completion_tokens": 5,
                    "prompt_tokens_details": {"cached_tokens": 1024},
                },
            },
            (1200, 1024, None),
        ),
        # Responses
        (
            {
                "model": "gpt-4o",
                "usage": {
                    "input_tokens": 1200,
                    "output_tokens": 5,
                    "input_tokens_details": {"cached_tokens": 1024},
                },
            },
            (1200, 1024, None),
        ),
        # Anthropic's Messages, an object as its SDK returns: apart from the input tokens
        (
            SimpleNamespace(
                model="claude-sonnet-4-5",
                usage=SimpleNamespace(
                    input_tokens=5,
                    output_tokens=9,
                    cache_read_input_tokens=1024,
                    cache_creation_input_tokens=171,
                ),
            ),
            (1200, 1024, 171),
        ),
        # LiteLLM: Anthropic's fields beside its own prompt tokens, which count them
        (
            {
                "model": "claude-sonnet-4-5",
                "usage": {
                    "prompt_tokens": 1200,
                    "completion_tokens": 9,
                    "cache_read_input_tokens": 1024,
                    "cache_creation_input_tokens": 171,
                },
            },
            (1200, 1024, 171),
        ),
        ({"model": "gpt-4o", "usage": {"prompt_tokens": 12, "completion_tokens": 5}}, (12, None, None)),
        # Gemini's usage metadata: cached among the prompt's tokens
        (
            SimpleNamespace(
                model_version="gemini-2.5-pro",
                usage_metadata=SimpleNamespace(
                    prompt_token_count=1200,
                    candidates_token_count=9,
                    thoughts_token_count=40,
                    cached_content_token_count=1024,
                ),
            ),
            (1200, 1024, None),
        ),
    ],
)
def test_the_sdk_reads_cache_tokens_from_a_providers_response(
    result: Any, counts: tuple[int, int | None, int | None]
) -> None:
    usage = usage_of(result)
    assert usage is not None
    assert (usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == counts


# ---------------------------------------------------------------------------------------------- logged messages
def test_a_logged_agent_message_keeps_its_cache_tokens() -> None:
    message = {
        "usage": {
            "prompt_tokens": 1200,
            "completion_tokens": 9,
            "prompt_tokens_details": {"cached_tokens": 1024},
        },
        "model": "gpt-4o",
    }
    found = message_usage(message)
    assert found is not None and _counts(found) == (1200, 1024, 0)


def test_a_logged_message_with_more_cached_than_prompt_tokens_records_no_call() -> None:
    message = {"usage": {"prompt_tokens": 10, "completion_tokens": 9, "cache_read_input_tokens": 1024}}
    assert message_usage(message) is None


# ---------------------------------------------------------------------------------------------- the table
def _prices(table: dict[str, Any]) -> dict[str, ModelPrice]:
    return Settings.model_validate({"cost": {"prices": {"as_of": "2026-11-29", **table}}}).cost.prices.models


def test_a_configured_price_table_adds_to_the_shipped_one() -> None:
    """A team pricing its own model keeps every vendor's price, and its price of a vendor's model wins."""
    mine = ModelPrice(input_per_mtok=1, output_per_mtok=2)
    found = _prices({"models": {"acme-ft-1": mine.model_dump(), "gpt-4o": mine.model_dump()}})
    shipped = Settings().cost.prices.models
    assert found["acme-ft-1"] == found["gpt-4o"] == mine
    assert {name: found[name] for name in shipped if name != "gpt-4o"} == {
        name: price for name, price in shipped.items() if name != "gpt-4o"
    }


def test_a_configured_price_table_alone_when_it_says_so() -> None:
    mine = ModelPrice(input_per_mtok=1, output_per_mtok=2)
    assert _prices({"with_shipped": False, "models": {"acme-ft-1": mine.model_dump()}}) == {"acme-ft-1": mine}


def test_the_sdk_counts_geminis_thoughts_as_output() -> None:
    """Thinking tokens are billed as output tokens; Gemini counts them apart from the candidates'."""
    meta = {"prompt_token_count": 10, "candidates_token_count": 9, "thoughts_token_count": 40}
    usage = usage_of({"model_version": "gemini-2.5-flash", "usage_metadata": meta})
    assert usage is not None and (usage.model, usage.output_tokens) == ("gemini-2.5-flash", 49)
