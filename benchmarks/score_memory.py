"""What `agentwatch score` holds a conversation for until its report is written: bytes per score kept.

Run: `python -m benchmarks.score_memory [--n 20000]`. Scores `benchmarks.score`'s synthetic conversations (3
turns, 2 tool calls each) and every conversation of the published dev runs under the policies their import
writes, keeps every score as `agentwatch score` does, and prints the bytes `tracemalloc` counts as held after
scoring, per score and per turn. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import tracemalloc
from collections.abc import Callable

from agentwatch.config import Settings, TaskPolicy
from agentwatch.importers.results_files import load_document
from agentwatch.importers.tau_bench import import_results
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation, ConversationScore
from benchmarks.score import synthetic
from tests.support import published_runs


def held_bytes(score: Callable[[Conversation], ConversationScore], convs: list[Conversation]) -> float:
    """Bytes held per score when every score of `convs` is kept (the conversations themselves excluded)."""
    score(convs[0])  # caches filled before counting
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = [score(c) for c in convs]
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(kept) == len(convs)
    return held / len(convs)


def _line(name: str, convs: list[Conversation], per_score: float) -> str:
    turns = sum(len(c.turns) for c in convs) / len(convs)
    return f"{name:<40} {len(convs):>7,} {turns:>6.1f} {per_score:>10,.0f} {per_score / turns:>9,.0f}"


def main() -> None:
    """Print bytes per score kept, synthetic and published runs."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20_000, help="synthetic conversations (default 20000)")
    args = parser.parse_args()
    print(f"{'conversations':<40} {'scores':>7} {'turns':>6} {'B/score':>10} {'B/turn':>9}")
    convs = [synthetic(i) for i in range(args.n)]
    print(
        _line(
            "benchmarks.score (3 turns, 2 calls each)", convs, held_bytes(ConversationScorer().score, convs)
        )
    )
    for name in published_runs.ALL:
        document = load_document(gzip.decompress(published_runs.locate(name).read_bytes()))
        imported = import_results(document, "agent", name, name)
        policies = [TaskPolicy.model_validate(p) for p in imported.policies]
        scorer = ConversationScorer(Settings(policies=policies), labels="ignore")
        run = [Conversation.model_validate(line) for line in imported.lines]
        print(_line(name.removeprefix("more/"), run, held_bytes(scorer.score, run)))


if __name__ == "__main__":
    main()
