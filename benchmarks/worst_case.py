"""Scoring time of conversations shaped to make the scorers work hardest: CPU seconds for one conversation each.

Run: `python -m benchmarks.worst_case [--only NAME ...]`. Prints figures; asserts nothing. Each shape is what some
check's work grows with — the square of a conversation's length for the hallucination and utilization checks
(each answer against everything before it), the product of two sizes for the rest — at sizes a collector can
receive (10,000 spans, 64 kB attributes) or a transcript file can hold. A collector that takes five minutes over
one poll leaves its consumer group and the next instance gets the same conversation, so no shape may take long.
"""

from __future__ import annotations

import argparse
import random
import string
import time
from collections.abc import Callable
from typing import Any

from agentwatch.config import Settings, TaskPolicy
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation
from benchmarks.calibration import calibration_line, calibration_us


def _words(rnd: random.Random, count: int) -> str:
    return " ".join("".join(rnd.choices(string.ascii_lowercase, k=rnd.randint(2, 12))) for _ in range(count))


def _numbers_text(rnd: random.Random) -> str:
    """60 kB of words, a fifth of them followed by a number of up to seven digits (ids to the checks)."""
    parts = []
    for _ in range(7_000):
        parts.append("".join(rnd.choices(string.ascii_letters, k=rnd.randint(2, 12))))
        if rnd.random() < 0.2:
            parts.append(str(rnd.randint(0, 10**6)))
    return " ".join(parts)[:60_000]


def long_texts(rnd: random.Random) -> dict[str, Any]:
    """50 turns of 60 kB inputs, arguments, results and answers, each answer holding ~1,200 numbers found nowhere."""
    turns = [
        {
            "input": _numbers_text(rnd),
            "answer": _numbers_text(rnd),
            "tool_calls": [
                {"name": "get", "arguments": {"q": _numbers_text(rnd)}, "result": _numbers_text(rnd)}
            ],
        }
        for _ in range(50)
    ]
    return {"conversation_id": "long_texts", "turns": turns}


def many_amounts(rnd: random.Random) -> dict[str, Any]:
    """One answer of 100,000 amounts against a result of 100,000 numbers."""
    answer = " ".join(f"${rnd.randint(1, 10**6) / 100:.2f}" for _ in range(100_000))
    result = " ".join(str(rnd.randint(1, 10**6) / 100) for _ in range(100_000))
    turn = {
        "input": "q",
        "answer": answer,
        "tool_calls": [{"name": "get", "arguments": {}, "result": result}],
    }
    return {"conversation_id": "many_amounts", "turns": [turn]}


def many_turns(rnd: random.Random) -> dict[str, Any]:
    """3,000 turns of one call each, every answer naming an id found nowhere."""
    turns = [
        {
            "input": f"q {i} {_words(rnd, 1)}",
            "answer": f"The value is R{i} and {i * 1.5} and ORD-{i}",
            "tool_calls": [{"name": "get", "arguments": {"id": i}, "result": {"v": f"R{i}", "n": i * 1.5}}],
        }
        for i in range(3_000)
    ]
    return {"conversation_id": "many_turns", "turns": turns}


def named_items(rnd: random.Random) -> dict[str, Any]:
    """1,000 turns, each a list of 200 items, every answer naming two of them and an amount found nowhere."""
    turns = []
    for t in range(1_000):
        items = [{"item_id": f"{t:04d}{i:06d}", "price": 10.0 + i} for i in range(200)]
        turns.append(
            {
                "input": "q",
                "answer": f"Items {t:04d}000001 and {t:04d}000002: the refund is ${1234.56 + t:.2f}.",
                "tool_calls": [{"name": "get", "arguments": {"id": t}, "result": {"items": items}}],
            }
        )
    return {"conversation_id": "named_items", "turns": turns}


def large_results(rnd: random.Random) -> dict[str, Any]:
    """20 turns, each a result of 10,000 values against a 60 kB answer holding none, utilization expected."""
    result = {f"k{i}": _words(rnd, 1) + str(i) for i in range(10_000)}
    turns = [
        {
            "input": "q",
            "answer": _words(rnd, 10_000)[:60_000],
            "tool_calls": [{"name": "get", "arguments": {}, "result": result}],
            "expected": {"tools": [{"name": "get"}], "uses_tool_results": True},
        }
        for _ in range(20)
    ]
    return {"conversation_id": "large_results", "turns": turns}


def long_sequence(rnd: random.Random) -> dict[str, Any]:
    """5,000 calls against 5,000 expected calls of 97 names, in another order, the order graded."""
    calls = [{"name": f"t{i % 97}", "arguments": {"id": i}} for i in range(5_000)]
    expected = [{"name": f"t{(i * 7) % 97}", "arguments": {"id": i}} for i in range(5_000)]
    turn = {
        "input": "q",
        "answer": "ok",
        "tool_calls": calls,
        "expected": {"tools": expected, "sequence_matters": True},
    }
    return {"conversation_id": "long_sequence", "turns": [turn]}


def one_name(rnd: random.Random) -> dict[str, Any]:
    """3,000 calls of one tool against 3,000 expected calls of it, arguments to pair."""
    calls = [{"name": "get", "arguments": {"id": i, "x": i * 2}} for i in range(3_000)]
    expected = [{"name": "get", "arguments": {"id": i}} for i in range(3_000)]
    turn = {"input": "q", "answer": "ok", "tool_calls": calls, "expected": {"tools": expected}}
    return {"conversation_id": "one_name", "turns": [turn]}


def policy_writes(rnd: random.Random) -> dict[str, Any]:
    """10,000 calls of 10 write tools against a task policy of 1,000 expected writes of them, most not made."""
    calls = [
        {"name": f"update_{j % 10}", "arguments": {"id": f"R{rnd.randrange(2_000)}", "n": j % 1_000}}
        for j in range(10_000)
    ]
    turn = {"input": "q", "answer": "ok", "tool_calls": calls}
    return {"conversation_id": "policy_writes", "agent": "a", "task": "writes", "turns": [turn]}


# The task policies a shape is graded by.
POLICIES: dict[str, dict[str, Any]] = {
    "policy_writes": {
        "id": "writes",
        "task": "writes",
        "tools": [{"name": f"update_{i % 10}", "arguments": {"id": f"R{i}", "n": i}} for i in range(1_000)],
        "read_only_tools": ["*", *(f"!update_{i}" for i in range(10))],
    }
}


SHAPES: dict[str, Callable[[random.Random], dict[str, Any]]] = {
    "long_texts": long_texts,
    "many_amounts": many_amounts,
    "many_turns": many_turns,
    "named_items": named_items,
    "large_results": large_results,
    "long_sequence": long_sequence,
    "one_name": one_name,
    "policy_writes": policy_writes,
}


def main() -> None:
    """Score one conversation of each shape and print its CPU seconds."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", choices=sorted(SHAPES), help="these shapes only")
    args = parser.parse_args()
    policies = [TaskPolicy.model_validate(p) for p in POLICIES.values()]
    scorer = ConversationScorer(Settings(policies=policies))
    before = calibration_us()
    for name in args.only or SHAPES:
        conv = Conversation.model_validate(SHAPES[name](random.Random(1)))
        start = time.process_time()
        score = scorer.score(conv)
        seconds = time.process_time() - start
        notes = sum(r.startswith("note:") for r in score.reasons)
        print(
            f"{name:14} {seconds:8.2f} s CPU   {score.outcome.value:18} {notes} notes   {SHAPES[name].__doc__}"
        )
    print(calibration_line(before))


if __name__ == "__main__":
    main()
