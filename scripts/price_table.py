"""Write agentwatch's price table (`agentwatch/data/prices.yaml`) from LiteLLM's model price list.

LiteLLM keeps the vendors' list prices, cache prices included, in `model_prices_and_context_window.json` (MIT;
shipped in its wheel as `litellm/model_prices_and_context_window_backup.json`). This script takes the chat models
OpenAI, Anthropic and Google sell under their own names, one entry per model (a dated snapshot only where its
price differs from its model's), with their cache prices and their long-context rates (where a call past an
input length is charged more), Anthropic models retired from Anthropic's own API at the list price Bedrock keeps
for them, and the entries of the table it replaces that the list lacks:

    pip download litellm --no-deps -d /tmp/litellm && unzip -o /tmp/litellm/litellm-*.whl \\
        'litellm/model_prices_and_context_window_backup.json' -d /tmp/litellm
    python -m scripts.price_table /tmp/litellm/litellm/model_prices_and_context_window_backup.json \\
        --source "litellm 1.110.2" --as-of 2026-11-29 --keep agentwatch/data/prices.yaml \\
        > /tmp/prices.yaml && mv /tmp/prices.yaml agentwatch/data/prices.yaml
"""

from __future__ import annotations

import json
import re
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import click
import yaml

from agentwatch.config.prices import PriceLookup
from agentwatch.config.scoring import ModelPrice, PriceTable

_VENDORS = {"openai": "", "anthropic": "", "vertex_ai-language-models": "gemini-"}  # provider: name prefix
_MODES = {"chat", "responses"}
_BEDROCK = re.compile(r"anthropic\.(claude-[a-z0-9-]+?)-\d{8}-v\d+:\d+")
_LONG = re.compile(r"input_cost_per_token_above_(\d+)k_tokens")
_FIELDS = {
    "input_per_mtok": "input_cost_per_token",
    "output_per_mtok": "output_cost_per_token",
    "cache_read_per_mtok": "cache_read_input_token_cost",
    "cache_write_per_mtok": "cache_creation_input_token_cost",
}


def _per_mtok(value: Any) -> float | None:
    """A per-token price as USD per million tokens, exactly as written (2.5e-06 → 2.5, not 2.4999999999999996)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return float(Decimal(str(value)) * 1_000_000)


def _price(entry: dict[str, Any]) -> ModelPrice | None:
    """An entry's prices, or None without an input and an output price."""
    found: dict[str, Any] = {ours: _per_mtok(entry.get(theirs)) for ours, theirs in _FIELDS.items()}
    if found["input_per_mtok"] is None or found["output_per_mtok"] is None:
        return None
    found["long_context"] = _long_context(entry, found)
    return ModelPrice.model_validate(found)


def _long_context(entry: dict[str, Any], base: dict[str, Any]) -> dict[str, Any] | None:
    """The prices past an input length (`…_above_200k_tokens`), where the entry has one length; each price it
    lacks there is its base price (the cache's left to the model's own)."""
    lengths = {int(m[1]) for key in entry if (m := _LONG.fullmatch(key))}
    if len(lengths) != 1:
        return None
    (length,) = lengths
    found = {
        ours: _per_mtok(entry.get(f"{theirs}_above_{length}k_tokens")) for ours, theirs in _FIELDS.items()
    }
    if found["input_per_mtok"] is None:
        return None
    if found["output_per_mtok"] is None:
        found["output_per_mtok"] = base["output_per_mtok"]
    return {"above_input_tokens": length * 1000, **found}


def from_litellm(source: dict[str, Any], kept: dict[str, ModelPrice]) -> dict[str, ModelPrice]:
    """The table's models: the vendors' own, then Bedrock's Anthropic models they lack, then `kept` entries."""
    chosen: dict[str, ModelPrice] = {}
    for name, entry in source.items():
        prefix = _VENDORS.get(entry.get("litellm_provider", "")) if isinstance(entry, dict) else None
        if prefix is None or not name.startswith(prefix) or entry.get("mode") not in _MODES:
            continue
        if "/" in name or name.startswith("ft:"):  # routed names; fine-tuned models, priced per organisation
            continue
        if (price := _price(entry)) is not None:
            chosen[name] = price
    retired: dict[str, ModelPrice] = {}
    for name in sorted(source):  # the newest snapshot Bedrock lists last, so kept
        match, entry = _BEDROCK.fullmatch(name), source[name]
        if match and match[1] not in chosen and str(entry.get("litellm_provider")).startswith("bedrock"):
            if (price := _price(entry)) is not None:
                retired[match[1]] = price
    chosen.update(retired)
    for name, price in kept.items():
        chosen.setdefault(name, price)
    return _without_repeated_snapshots(chosen)


def _without_repeated_snapshots(table: dict[str, ModelPrice]) -> dict[str, ModelPrice]:
    """`table` less the snapshots the lookup prices as their model at the same price."""
    out: dict[str, ModelPrice] = {}
    for name in sorted(table, key=len):  # a model before its snapshots
        if PriceLookup(out)(name) != table[name]:
            out[name] = table[name]
    return dict(sorted(out.items()))


def render(table: dict[str, ModelPrice], source: str, as_of: date) -> str:
    """The YAML of the price table, with where its prices come from."""
    lines = [
        f"# USD per million tokens, from LiteLLM's model price list ({source}; scripts/price_table.py).",
        "# Prices change: entries of cost.prices in your config file add to this table and replace its entries of",
        "# the same name (cost.prices.with_shipped: false to price by yours alone); keep their `as_of` honest.",
        "# Model names are matched exactly first, then by the longest entry of which the name is a snapshot: the",
        '# entry followed by dates, revisions or "-latest" only ("gpt-4o-2024-08-06" is priced as "gpt-4o", but',
        '# "gpt-4o-mini-tts" is not priced at all). A call that read from or wrote to the prompt cache is priced',
        "# only where the entry has the cache's prices; a call whose input is past `long_context.above_input_tokens`",
        "# at the long-context rates, all of it.",
        f"as_of: {as_of.isoformat()}",
        "models:",
    ]
    for name, price in table.items():
        lines.append(f"  {name}: {_flow(price.model_dump(exclude_none=True))}")
    return "\n".join(lines) + "\n"


def _flow(fields: dict[str, Any]) -> str:
    """A mapping in YAML's flow style, numbers without exponents (which YAML 1.1 reads as strings)."""
    inner = []
    for key, value in fields.items():
        if isinstance(value, dict):
            inner.append(f"{key}: {_flow(value)}")
        else:
            text = f"{value:.12f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)
            inner.append(f"{key}: {text}")
    return "{" + ", ".join(inner) + "}"


@click.command()
@click.argument("litellm_json", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--source", required=True, help='what the list is, e.g. "litellm 1.110.2"')
@click.option("--as-of", "as_of", required=True, type=click.DateTime(["%Y-%m-%d"]), help="the list's date")
@click.option("--keep", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="a table to keep")
def main(litellm_json: Path, source: str, as_of: Any, keep: Path | None) -> None:
    """Print the price table made from LITELLM_JSON."""
    kept = PriceTable.model_validate(yaml.safe_load(keep.read_text())).models if keep else {}
    table = from_litellm(json.loads(litellm_json.read_text()), kept)
    click.echo(render(table, source, as_of.date()), nl=False)


if __name__ == "__main__":
    main()
