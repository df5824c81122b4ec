"""How long `agentwatch score` takes on a one-conversation file, in fresh processes: the start a CI release gate
pays on every run, beside a bare interpreter's.

Run: `python -m benchmarks.cli_start [--runs 11]`. Prints the medians; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.score import synthetic


def median_run_s(argv: list[str], runs: int) -> float:
    """Median wall seconds of `runs` fresh processes of `argv` (its output discarded)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    """Time the command and a bare interpreter; print both."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="fresh processes of each (default 11)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "one.jsonl"
        path.write_text(synthetic(0).model_dump_json(exclude_none=True) + "\n")
        bare = median_run_s([sys.executable, "-c", "pass"], args.runs)
        score = median_run_s([sys.executable, "-m", "agentwatch", "score", str(path), "--no-gate"], args.runs)
    print(
        f"agentwatch score, one conversation: {1e3 * score:.0f} ms; a bare interpreter: {1e3 * bare:.0f} ms "
        f"(medians of {args.runs} fresh processes)"
    )


if __name__ == "__main__":
    main()
