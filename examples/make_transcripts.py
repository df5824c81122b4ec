"""Write the example transcript files: a realistic mix for two versions of a support agent.

    python examples/make_transcripts.py            # writes examples/transcripts.jsonl (v2.4.0)
                                                   # and examples/transcripts-v2.3.0.jsonl (baseline)

Deterministic (seeded). Kinds: good, partial (wrong tool arguments), hallucinated (an order id no tool
returned), abandoned (a tool error / a loop / no answer), over budget, unscored (nothing to grade), labelled,
plus one malformed line. Tags: difficulty (easy|medium|hard) and category (core|edge).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).parent
TASKS = {  # task -> (category, difficulty, budget USD)
    "order_lookup": ("core", "easy", 0.10),
    "cancellation": ("core", "medium", 0.15),
    "returns": ("core", "hard", 0.20),
    "policy_edge_cases": ("edge", "hard", 0.25),
}


def _usage(rng: random.Random, scale: float = 1.0) -> list[dict]:
    return [
        {
            "model": "claude-sonnet-4",
            "input_tokens": int(rng.randint(900, 2500) * scale),
            "output_tokens": int(rng.randint(80, 300) * scale),
        }
    ]


def conversation(kind: str, i: int, task: str, version: str, rng: random.Random) -> dict:
    """One conversation of the given kind."""
    category, difficulty, budget = TASKS[task]
    order = str(4100 + i)
    lookup = {
        "name": "lookup_order",
        "arguments": {"order_id": order},
        "result": {"order_id": order, "status": "shipped", "eta": "2026-05-20"},
    }
    expected = {
        "tools": [{"name": "lookup_order", "arguments": {"order_id": order}}],
        "reference_answer": f"Order {order} has shipped and arrives on 2026-05-20.",
    }
    answer = f"Your order {order} has shipped and will arrive on 2026-05-20."
    cost = round(rng.uniform(0.02, 0.6 * budget), 4)
    turn: dict = {
        "input": f"Where is my order {order}?",
        "tool_calls": [lookup],
        "expected": expected,
        "answer": answer,
        "usage": _usage(rng),
        "cost_usd": cost,
        "duration_ms": rng.randint(1500, 9000),
    }
    conv: dict = {
        "conversation_id": f"{version}-{task}-{i:03d}",
        "agent": "support-bot",
        "version": version,
        "task": task,
        "tags": {"category": category, "difficulty": difficulty},
        "budget_usd": budget,
        "turns": [turn],
    }
    if kind == "partial":
        turn["tool_calls"] = [{**lookup, "arguments": {"order_id": str(int(order) + 1)}}]
    elif kind == "hallucinated":
        turn["answer"] = f"Your order {order} was merged into ORD-77{i:03d}; it has shipped."
    elif kind == "abandoned_error":
        turn["tool_calls"] = [
            {"name": "lookup_order", "arguments": {"order_id": order}, "error": "TimeoutError"}
        ]
        turn["answer"] = None
        turn["error"] = "TimeoutError: order service did not answer in 30 s"
    elif kind == "loop":
        turn["tool_calls"] = [lookup, lookup, lookup]
        turn["answer"] = None
    elif kind == "over_budget":
        turn["cost_usd"] = round(budget * rng.uniform(1.6, 3.0), 4)
        turn["usage"] = _usage(rng, 8.0)
    elif kind == "unscored":
        turn.pop("expected")
        turn["tool_calls"] = []
        turn["answer"] = "Happy to help! Anything else?"
    elif kind == "labelled":
        conv["outcome"] = "partial-correct"
    return conv


def mix(version: str, seed: int, weights: dict[str, int]) -> list[str]:
    """Lines of one file: conversations of each kind spread over the tasks, shuffled, plus a malformed line."""
    rng = random.Random(seed)
    kinds = [k for k, n in weights.items() for _ in range(n)]
    rng.shuffle(kinds)
    tasks = list(TASKS)
    lines = [
        json.dumps(conversation(kind, i, tasks[i % len(tasks)], version, rng)) for i, kind in enumerate(kinds)
    ]
    lines.insert(len(lines) // 2, '{"conversation_id": "broken-1", "turns": [ {"input": "truncated')
    return lines


def main() -> None:
    new = {
        "good": 30,
        "partial": 3,
        "hallucinated": 2,
        "abandoned_error": 2,
        "over_budget": 3,
        "unscored": 3,
        "labelled": 1,
    }
    old = {
        "good": 24,
        "partial": 5,
        "hallucinated": 4,
        "abandoned_error": 3,
        "loop": 1,
        "over_budget": 2,
        "unscored": 2,
        "labelled": 1,
    }
    (HERE / "transcripts.jsonl").write_text("\n".join(mix("2.4.0", 24, new)) + "\n", encoding="utf-8")
    (HERE / "transcripts-v2.3.0.jsonl").write_text("\n".join(mix("2.3.0", 23, old)) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
