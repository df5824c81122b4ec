"""`scripts/price_table.py`: the price table made from LiteLLM's price list, on a list shaped like it."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import yaml

from agentwatch.config.scoring import LongContextPrice, ModelPrice, PriceTable
from scripts.price_table import from_litellm, render


def _entry(provider: str, inp: float, out: float, mode: str = "chat", **more: Any) -> dict[str, Any]:
    return {
        "litellm_provider": provider,
        "mode": mode,
        "input_cost_per_token": inp,
        "output_cost_per_token": out,
        **more,
    }


SOURCE = {
    "sample_spec": {"litellm_provider": "openai"},  # LiteLLM's own description of an entry
    "gpt-4o": _entry("openai", 2.5e-06, 1e-05, cache_read_input_token_cost=1.25e-06),
    "gpt-4o-2024-08-06": _entry("openai", 2.5e-06, 1e-05, cache_read_input_token_cost=1.25e-06),
    "gpt-4o-2024-05-13": _entry("openai", 5e-06, 1.5e-05),  # a snapshot at its own price
    "ft:gpt-4o-2024-08-06": _entry("openai", 3.75e-06, 1.5e-05),
    "text-embedding-3-small": _entry("openai", 2e-08, 0.0, mode="embedding"),
    "azure/gpt-4o": _entry("azure", 2.5e-06, 1e-05),
    "claude-sonnet-4-5": _entry(
        "anthropic",
        3e-06,
        1.5e-05,
        cache_read_input_token_cost=3e-07,
        cache_creation_input_token_cost=3.75e-06,
    ),
    "gemini-2.5-pro": _entry(
        "vertex_ai-language-models",
        1.25e-06,
        1e-05,
        cache_read_input_token_cost=1.25e-07,
        input_cost_per_token_above_200k_tokens=2.5e-06,
        output_cost_per_token_above_200k_tokens=1.5e-05,
        cache_read_input_token_cost_above_200k_tokens=2.5e-07,
        input_cost_per_token_above_200k_tokens_priority=4.5e-06,  # another tier: not a length
    ),
    "gpt-5-nano": _entry("openai", 5e-08, 4e-07, cache_read_input_token_cost=5e-11),  # 0.00005 a million
    "gemini-embedding-001": _entry("vertex_ai-language-models", 1.5e-07, 0.0, mode="embedding"),
    "medlm-large": _entry("vertex_ai-language-models", 5e-06, 1.5e-05),
    "anthropic.claude-3-7-sonnet-20240620-v1:0": _entry("bedrock", 3.6e-06, 1.8e-05),
    "anthropic.claude-3-7-sonnet-20250219-v1:0": _entry("bedrock_converse", 3e-06, 1.5e-05),
    "anthropic.claude-sonnet-4-5-20250929-v1:0": _entry("bedrock_converse", 3.3e-06, 1.65e-05),
    "no-price": {"litellm_provider": "openai", "mode": "chat"},
}


def test_the_vendors_chat_models_one_entry_each_with_bedrocks_for_retired_claudes_and_the_kept_ones() -> None:
    kept = {"gemini-2.0-flash": ModelPrice(input_per_mtok=0.1, output_per_mtok=0.4)}
    table = from_litellm(SOURCE, kept)
    assert list(table) == [
        "claude-3-7-sonnet",  # Bedrock's newest snapshot, the list price
        "claude-sonnet-4-5",  # Anthropic's own, not Bedrock's
        "gemini-2.0-flash",  # kept: the list lacks it
        "gemini-2.5-pro",
        "gpt-4o",
        "gpt-4o-2024-05-13",
        "gpt-5-nano",
    ]
    assert table["gpt-4o"] == ModelPrice(input_per_mtok=2.5, output_per_mtok=10, cache_read_per_mtok=1.25)
    assert table["claude-3-7-sonnet"] == ModelPrice(input_per_mtok=3, output_per_mtok=15)
    assert table["claude-sonnet-4-5"].cache_write_per_mtok == 3.75
    assert table["gemini-2.5-pro"].long_context == LongContextPrice(
        above_input_tokens=200_000, input_per_mtok=2.5, output_per_mtok=15, cache_read_per_mtok=0.25
    )
    assert table["gpt-4o"].long_context is None


def test_the_written_table_reads_back_as_the_settings_read_it() -> None:
    table = from_litellm(SOURCE, {})
    text = render(table, "litellm 0.0.0", date(2026, 11, 29))
    read = PriceTable.model_validate(yaml.safe_load(text))
    assert read.models == table and read.as_of == date(2026, 11, 29)
    assert "litellm 0.0.0" in text
    assert re.search(r"\de-\d", text) is None  # 0.005, not 5e-03 (YAML 1.1 reads that as text)
