"""Production-like transcripts with a known truth: no expectations, no reference answers.

One task (`order_status`) of one agent: the user asks where an order is, the agent looks it up and answers
from the result. Each conversation is one of:
- `fine`: the tool is called with the order id from the input, the answer quotes the result;
- `error`: the turn raises after the lookup (no answer);
- `loop`: the agent calls the lookup three times with identical arguments, each refused (it timed out), then
  answers anyway (a lookup repeated that returns its result each time is no failure: real agents that did so
  were rewarded);
- `silent`: a failure with no evidence: the agent answers without looking anything up.
"""

from __future__ import annotations

import random
from typing import Any

POLICY = {
    "id": "order-status",
    "version": "3",
    "agent": "support-*",
    "task": "order_status",
    "tools": [{"name": "lookup_order", "arguments": {"order_id": {"from_input": True}}}],
    "grounding": ["lookup_order"],
    "max_tool_calls": 4,
}


def conversation(cid: str, kind: str, rng: random.Random, version: str = "2.0") -> dict[str, Any]:
    """One transcript line of the given kind."""
    order = f"ORD-{rng.randint(10000, 99999)}"
    result = {"order_id": order, "status": "shipped", "carrier": "DHL"}
    lookup = {"name": "lookup_order", "arguments": {"order_id": order}, "result": result}
    turn: dict[str, Any] = {
        "input": f"Hi, where is my order {order}?",
        "usage": [{"model": "gpt-4o-mini", "input_tokens": rng.randint(300, 900), "output_tokens": 60}],
        "duration_ms": rng.randint(800, 4000),
    }
    answer = f"Order {order} is shipped with DHL."
    if kind == "fine":
        turn.update(tool_calls=[lookup], answer=answer)
    elif kind == "error":
        turn.update(tool_calls=[lookup], answer=None, error="TimeoutError: upstream model timed out")
    elif kind == "loop":
        refused = {**lookup, "result": None, "error": "TimeoutError: order service timed out"}
        turn.update(tool_calls=[refused, refused, refused], answer=answer)
    elif kind == "silent":
        turn.update(tool_calls=[], answer="Your order should arrive soon.")
    else:
        raise ValueError(kind)
    return {
        "conversation_id": cid,
        "agent": "support-bot",
        "version": version,
        "task": "order_status",
        "turns": [turn],
    }


def scenario(n: int = 200, seed: int = 7) -> list[dict[str, Any]]:
    """The issue's scenario: exactly 85% fine, 10% ending in a turn error, 5% looping, shuffled."""
    rng = random.Random(seed)
    kinds = ["fine"] * round(n * 0.85) + ["error"] * round(n * 0.10)
    kinds += ["loop"] * (n - len(kinds))
    rng.shuffle(kinds)
    return [conversation(f"prod-{i:05d}", kind, rng) for i, kind in enumerate(kinds)]
