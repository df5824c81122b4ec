"""pass^k of the dev data (τ-bench's airline run with gpt-4o, tasks 0–24, 4 trials each), as reported.

Converts the runs to transcript lines as the benchmark importer writes them (task = the task id, attempt = the
trial, the reward as the outcome label), scores them with `agentwatch score`'s scorer and report, prints for
k = 1..4 the headline (τ-bench's estimator and its interval over tasks) beside p^k of the pooled success rate
(what the report showed before it knew about repeated attempts).

    python -m benchmarks.dev_data [--out transcripts.jsonl]
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

from agentwatch.config import Settings
from agentwatch.report.build import build_report
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation
from tests.support import published_runs


def transcripts() -> list[dict]:
    """One transcript line per run of the dev data."""
    lines = []
    for run in json.loads(gzip.decompress(published_runs.locate(published_runs.AIRLINE).read_bytes())):
        passed = abs(run["reward"] - 1.0) <= 1e-6
        lines.append(
            {
                "conversation_id": f"airline-{run['task_id']}-{run['trial']}",
                "agent": "airline",
                "version": "gpt-4o",
                "task": str(run["task_id"]),
                "attempt": run["trial"],
                "outcome": "complete" if passed else "partial_incorrect",
                "turns": [
                    {"input": run["traj"][1]["content"] if len(run["traj"]) > 1 else "", "answer": "done"}
                ],
            }
        )
    return lines


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=None, help="also write the transcript lines here")
    args = parser.parse_args()
    lines = transcripts()
    if args.out is not None:
        args.out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    settings = Settings()
    scorer = ConversationScorer(settings, labels="truth")
    scores = [scorer.score(Conversation.model_validate(line)) for line in lines]
    start = time.perf_counter()
    report = build_report(scores, settings, [1, 2, 3, 4])
    seconds = time.perf_counter() - start
    units = report.units
    assert units is not None
    print(
        f"# {len(lines)} runs, {units.units} tasks, {units.max_attempts} attempts each; report built in "
        f"{seconds:.2f} s"
    )
    print(
        "| k | pass^k (τ-bench) | 95% interval | interval | pass@k | p^k of the pooled rate "
        "| its 95% interval |"
    )
    print("|---|---|---|---|---|---|---|")
    for k in ("1", "2", "3", "4"):
        e, a = report.pass_pow_k[k], report.pass_at_k[k]
        print(
            f"| {k} | {e.value:.4f} | [{e.lower:.3f}, {e.upper:.3f}] | {e.interval} | {a.value:.4f} "
            f"| {e.pooled_mean:.4f} | [{e.pooled_lower:.3f}, {e.pooled_upper:.3f}] |"
        )
    # ASR beside them: over units (the report's figure) and, as it was shown before, over conversations
    from agentwatch.stats.bootstrap import bootstrap_mean_interval

    asr = report.asr
    st = settings.stats
    credits = [s.asr_credit for s in scores if s.scored and s.asr_credit is not None]
    _value, lo, hi = bootstrap_mean_interval(credits, st.level, st.bootstrap_resamples, st.seed)
    print(
        f"success rate {report.success_rate.mean:.3f} [{report.success_rate.lower:.3f}, "
        f"{report.success_rate.upper:.3f}] ({report.success_rate.method}); ASR {asr.value:.3f} "
        f"[{asr.lower:.3f}, {asr.upper:.3f}] ({asr.method}, {asr.units} units); over conversations it would read "
        f"[{lo:.3f}, {hi:.3f}]"
    )


if __name__ == "__main__":
    main()
