"""Transcript files of known kinds and `agentwatch score` run in process: what the CLI tests share."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from typer.testing import CliRunner

from agentwatch.cli import app

# The kinds of the mixed file, in order: what each conversation is built to be.
KINDS = ["good"] * 12 + ["partial"] * 2 + ["hallucinated"] * 2 + ["abandoned"] * 2 + ["over_budget"] * 2
KINDS += ["unscored"] * 2


def conversation(kind: str, i: int, category: str = "core", version: str = "2") -> dict:
    """A one-turn support conversation of a known kind (ids encode the kind)."""
    order = str(4100 + i)
    lookup = {
        "name": "lookup_order",
        "arguments": {"order_id": order},
        "result": {"order_id": order, "status": "shipped", "eta": "2026-05-20"},
    }
    turn: dict = {
        "input": f"Where is my order {order}?",
        "tool_calls": [lookup],
        "expected": {
            "tools": [{"name": "lookup_order", "arguments": {"order_id": order}}],
            "reference_answer": f"Order {order} has shipped and arrives on 2026-05-20.",
        },
        "answer": f"Your order {order} has shipped and will arrive on 2026-05-20.",
        "cost_usd": 0.005 * (i + 1),
    }
    if kind == "partial":
        turn["tool_calls"] = [{**lookup, "arguments": {"order_id": "9"}}]
    elif kind == "hallucinated":
        turn["answer"] = f"Your order {order} was merged into ORD-77{i:03d}; it has shipped."
    elif kind == "abandoned":
        turn["tool_calls"] = [
            {"name": "lookup_order", "arguments": {"order_id": order}, "error": "TimeoutError"}
        ]
        turn["answer"], turn["error"] = None, "TimeoutError"
    elif kind == "over_budget":
        turn["cost_usd"] = 0.30  # ceiling 0.20: penalty 0.5
    elif kind == "unscored":
        turn.pop("expected")
        turn["tool_calls"], turn["answer"] = [], "Happy to help!"
    return {
        "conversation_id": f"{kind}-{i}",
        "agent": "bot",
        "version": version,
        "task": f"task{i % 3}",
        "tags": {"category": category, "difficulty": ["easy", "hard"][i % 2]},
        "budget_usd": 0.20,
        "turns": [turn],
    }


def failing_hallucinations(folder: Path) -> Path:
    """A configuration in which a hallucination fails a graded conversation (by default it is evidence only),
    so that the `hallucinated` kind is that outcome."""
    path = folder / "hallucination-fails.yaml"
    path.write_text("scoring:\n  failing_evidence: [error, no_answer, loop, hallucination]\n")
    return path


def write(path: Path, convs: list[dict], malformed_at: int | None = None, gz: bool = False) -> Path:
    lines = [json.dumps(c) for c in convs]
    if malformed_at is not None:
        lines.insert(malformed_at - 1, '{"conversation_id": "x", "turns": [')
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def run(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, ["score", *map(str, args)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


runner = CliRunner()
