"""What `agentwatch score` holds a conversation for until its report is written: bytes per conversation.

Run: `python -m benchmarks.score_memory [--n 20000]`. Scores `benchmarks.score`'s synthetic conversations (3
turns, 2 tool calls each) and every conversation of the published dev runs under the policies their import
writes, and prints the bytes `tracemalloc` counts as held after scoring, per conversation: keeping each
full `ConversationScore` (what `agentwatch score` kept before its rows), and keeping the compact row
`agentwatch score` keeps now (`agentwatch.report.rows.ScoreRow`, from one `RowMaker`, whose tables of shared
values are counted too). Prints figures; asserts nothing.
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
from agentwatch.report.rows import RowMaker
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation, ConversationScore
from benchmarks.score import synthetic
from tests.support import published_runs


def held_bytes(
    score: Callable[[Conversation], ConversationScore], convs: list[Conversation], rows: bool
) -> float:
    """Bytes held per conversation when every score of `convs` is kept (`rows`: its `ScoreRow` instead; the
    conversations themselves excluded)."""
    score(convs[0])  # caches filled before counting
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept: list[object]
    if rows:
        maker = RowMaker()  # made inside the count: its tables of shared values are held too
        kept = [maker.row(score(c)) for c in convs]
    else:
        kept = [score(c) for c in convs]
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(kept) == len(convs)
    return held / len(convs)


def _line(name: str, convs: list[Conversation], score: Callable[[Conversation], ConversationScore]) -> str:
    turns = sum(len(c.turns) for c in convs) / len(convs)
    full, row = held_bytes(score, convs, rows=False), held_bytes(score, convs, rows=True)
    return f"{name:<40} {len(convs):>7,} {turns:>6.1f} {full:>10,.0f} {full / turns:>9,.0f} {row:>8,.0f}"


def main() -> None:
    """Print bytes per conversation kept (full score, and row), synthetic and published runs."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20_000, help="synthetic conversations (default 20000)")
    args = parser.parse_args()
    print(f"{'conversations':<40} {'convs':>7} {'turns':>6} {'B/score':>10} {'B/turn':>9} {'B/row':>8}")
    convs = [synthetic(i) for i in range(args.n)]
    print(_line("benchmarks.score (3 turns, 2 calls each)", convs, ConversationScorer().score))
    for name in published_runs.ALL:
        document = load_document(gzip.decompress(published_runs.locate(name).read_bytes()))
        imported = import_results(document, "agent", name, name)
        policies = [TaskPolicy.model_validate(p) for p in imported.policies]
        scorer = ConversationScorer(Settings(policies=policies), labels="ignore")
        run = [Conversation.model_validate(line) for line in imported.lines]
        print(_line(name.removeprefix("more/"), run, scorer.score))


if __name__ == "__main__":
    main()
