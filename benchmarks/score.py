"""Benchmark the scorers: conversations/s and turns/s over synthetic conversations (3 turns × 2 tool calls).

Usage: python -m benchmarks.score [--n 100000]
"""

from __future__ import annotations

import argparse
import time

from agentwatch.config import ScoringConfig, Settings
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation
from benchmarks.calibration import calibration_us


def synthetic(i: int) -> Conversation:
    """One realistic conversation: 3 turns, 2 tool calls each, expectations, usage; some fail."""
    turns = []
    for t in range(3):
        order = f"ORD-{1000 + (i * 3 + t) % 9000}"
        total = round(10 + (i % 97) * 1.25, 2)
        wrong = (i + t) % 7 == 0
        turns.append(
            {
                "input": f"What is the status and total of order {order}?",
                "answer": f"Order {order} has shipped and the total is ${total:.2f}.",
                "tool_calls": [
                    {
                        "name": "functions.lookup_customer",
                        "arguments": {"order_id": order},
                        "result": {"customer": {"id": f"C{i}", "email": f"user{i}@example.com"}},
                    },
                    {
                        "name": "get-order",
                        "arguments": {"order_id": order, "fields": ["status", "total"] if not wrong else []},
                        "result": {"status": "shipped", "total": total, "items": [{"sku": "A1", "qty": 2}]},
                    },
                ],
                "expected": {
                    "tools": [
                        {"name": "lookup_customer", "arguments": {"order_id": order}},
                        {
                            "name": "get_order",
                            "arguments": {"order_id": order, "fields": ["status", "total"]},
                        },
                    ],
                    "reference_answer": f"Order {order} has shipped; total ${total:.2f}.",
                    "forbidden_tools": ["cancel_order"],
                },
                "usage": [{"model": "gpt-4o-mini", "input_tokens": 800 + t, "output_tokens": 120}],
                "duration_ms": 900.0 + t,
            }
        )
    return Conversation.model_validate(
        {"conversation_id": f"c{i}", "agent": "shop", "version": "1.0", "task": "orders", "turns": turns}
    )


def main() -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100_000, help="conversations to score (default 100000)")
    parser.add_argument(
        "--no-hallucination-checks", action="store_true", help="score with scoring.hallucination_checks off"
    )
    args = parser.parse_args()
    distinct = min(args.n, 1000)
    convs = [synthetic(i) for i in range(distinct)]
    settings = Settings(scoring=ScoringConfig(hallucination_checks=not args.no_hallucination_checks))
    scorer = ConversationScorer(settings)
    for c in convs[:50]:  # warm caches
        scorer.score(c)
    calib_before = calibration_us()
    start = time.perf_counter()
    cpu_start = time.process_time()
    outcomes: dict[str, int] = {}
    for i in range(args.n):
        s = scorer.score(convs[i % distinct])
        outcomes[s.outcome.value] = outcomes.get(s.outcome.value, 0) + 1
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    turns = sum(len(convs[i % distinct].turns) for i in range(args.n))
    print(f"scored {args.n} conversations ({turns} turns, {distinct} distinct) in {elapsed:.2f} s")
    print(
        f"{args.n / elapsed:,.0f} conversations/s, {turns / elapsed:,.0f} turns/s, "
        f"{elapsed / args.n * 1e6:.1f} µs per conversation"
    )
    print(
        f"CPU time {cpu:.2f} s: {cpu / args.n * 1e6:.1f} µs per conversation "
        f"({args.n / cpu:,.0f} conversations/s of CPU; wall and CPU differ when the machine is shared)"
    )
    calib = (calib_before + calibration_us()) / 2
    print(
        f"calibration: sum(range(1000)) took {calib:.1f} µs of CPU before and after (≈ 9.5 on a quiet machine; "
        "higher means the machine was busy)"
    )
    print("outcomes:", dict(sorted(outcomes.items())))


if __name__ == "__main__":
    main()
