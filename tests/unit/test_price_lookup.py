"""Model names as vendors and gateways write them, against the shipped price table: a snapshot of a model is
priced as that model, another model of its family is not (its cost is unknown, not its elder's)."""

from __future__ import annotations

import pytest

from agentwatch.config import Settings
from agentwatch.config.prices import PriceLookup

TABLE = Settings().cost.prices.models


@pytest.mark.parametrize(
    ("model", "entry"),
    [
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),  # the longest entry
        ("o3-mini-2025-01-31", "o3-mini"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-opus-4-5-20251101", "claude-opus-4-5"),  # not claude-opus-4, three times its price
        ("claude-sonnet-4@20250514", "claude-sonnet-4"),  # Vertex AI's snapshot names
        ("claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
        ("gemini-2.0-flash-001", "gemini-2.0-flash"),
        ("openai/gpt-4o-mini", "gpt-4o-mini"),  # a gateway's provider/model
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet"),  # Bedrock's model ids
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4"),
        ("gpt-4.1-2025-04-14", "gpt-4.1"),  # a dot in a model's name is no vendor
    ],
)
def test_a_snapshot_is_priced_as_its_model(model: str, entry: str) -> None:
    assert PriceLookup(TABLE)(model) == TABLE[entry]


@pytest.mark.parametrize(
    "model",
    [
        "claude-opus-4-9-20270101",  # a newer model than the table knows: not claude-opus-4's price
        "gemini-2.0-flash-lite",  # not gemini-2.0-flash
        "gpt-4o-audio-preview",
        "gpt-4o-mini-tts",
        "gpt-4o-2024-08-06-ft",
    ],
)
def test_another_model_of_a_family_is_not_priced(model: str) -> None:
    assert PriceLookup(TABLE)(model) is None
