"""Benchmark the statistics and the offline report: timings of each estimator and of `build_report`.

Usage: python benchmarks/report.py [--n 50000]

Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from agentwatch.exporters.report.build import build_report
from agentwatch.exporters.report.text import render_text

from agentwatch.config import Settings
from agentwatch.schema import ConversationScore
from agentwatch.stats import (
    bootstrap_mean_interval,
    pass_at_k_unbiased,
    pass_pow_k_unbiased,
    posterior,
    regression_probability,
)
from agentwatch.transcripts import iter_conversations

OUTCOMES = ["complete"] * 6 + [
    "partial_correct",
    "partial_incorrect",
    "hallucinated",
    "abandoned",
    "unscored",
]


def timed(label: str, fn, repeat: int = 1) -> None:
    """Run fn `repeat` times and print the mean wall time."""
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    per = (time.perf_counter() - start) / repeat
    print(f"{label:<58} {per * 1e3:10.3f} ms")


def scores(n: int) -> list[ConversationScore]:
    """n synthetic scores over 20 tasks, 2 tags."""
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        outcome = OUTCOMES[int(rng.integers(len(OUTCOMES)))]
        passed = None if outcome == "unscored" else outcome == "complete"
        out.append(
            ConversationScore(
                conversation_id=str(i),
                agent="bot",
                version="1",
                task=f"task{i % 20}",
                tags={"category": ["core", "edge"][i % 2], "difficulty": ["easy", "medium", "hard"][i % 3]},
                turns=2,
                passed=passed,
                outcome=outcome,
                outcome_source="rules",
                reasons=[] if passed else ["answer: turn 0: low"],
                cost_usd=float(rng.gamma(2.0, 0.05)),
                budget_usd=0.2,
                asr_credit=None if passed is None else float(passed),
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=50_000)
    args = parser.parse_args()

    timed("pass_at_k_unbiased(n=1e6, c=5e5, k=10)", lambda: pass_at_k_unbiased(10**6, 500_000, 10), 1000)
    timed(
        "pass_pow_k_unbiased(n=1e6, c=9e5, k=1e5)", lambda: pass_pow_k_unbiased(10**6, 900_000, 100_000), 20
    )
    post = posterior(1000, 700)
    timed(
        "BetaPosterior: mean + interval of pass^3 and pass@3",
        lambda: (post.pass_pow_k_mean(3), post.pass_pow_k_interval(3), post.pass_at_k_interval(3)),
        200,
    )
    new, base = posterior(200, 150), posterior(200, 170)
    timed(
        "regression_probability(n=200, k=3, margin=0.05)",
        lambda: regression_probability(new, base, 3, 0.05),
        20,
    )
    big_new, big_base = posterior(10**6, 600_000), posterior(10**6, 601_000)
    timed(
        "regression_probability(n=1e6, k=3, margin=0)",
        lambda: regression_probability(big_new, big_base, 3, 0),
        5,
    )
    values = np.random.default_rng(1).uniform(size=10_000)
    timed("bootstrap_mean_interval(10k values, 1000 resamples)", lambda: bootstrap_mean_interval(values), 3)

    data = scores(args.n)
    settings = Settings()
    report = None

    def build() -> None:
        nonlocal report
        report = build_report(data, settings)

    timed(f"build_report({args.n} scores, 20 tasks, 5 tag groups)", build)
    timed("render_text", lambda: render_text(report))

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl.gz"
        line = {
            "conversation_id": "x",
            "task": "t",
            "turns": [
                {
                    "input": "hi",
                    "answer": "hello",
                    "tool_calls": [{"name": "lookup", "arguments": {"id": 1}, "result": {"ok": True}}],
                }
            ],
        }
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            for i in range(args.n):
                line["conversation_id"] = str(i)
                fh.write(json.dumps(line) + "\n")
        start = time.perf_counter()
        count = sum(1 for _ in iter_conversations(path, []))
        elapsed = time.perf_counter() - start
        print(f"{'read gzip transcripts':<58} {count / elapsed:10.0f} conversations/s")


if __name__ == "__main__":
    main()
