"""Instructions per unit of work of each hot stage, counted by valgrind's callgrind: figures that do not swing with
the machine, for comparing two builds where CPU time swings 2× minute to minute.

Run: `python -m benchmarks.instructions [--stage STAGE ...] [--n N]` (needs `valgrind`: `apt-get install
valgrind`). Each stage runs twice under `valgrind --tool=callgrind`, with N units of work and with none, in a fresh
interpreter each; the difference over N is the cost of one unit, set-up and interpreter start cancelled out.
Prints figures; asserts nothing. Compare another tree by running it from there, or with `PYTHONPATH=<tree>`.
Every run has the same hash seed; two runs of one build still differ by up to 1.5% (object addresses vary), so
a smaller difference between builds is no difference.

Stages and their unit:
- `parse`, `decode`, `rebuild`, `pipeline`: one ten-span conversation of `benchmarks.collector`'s workload (one
  OTLP message): the raw protobuf parse (the ceiling), `decode_message`, decode → assemble → rebuild, and decode →
  assemble → rebuild → score.
- `score`: `ConversationScorer.score` of one `benchmarks.score` conversation (3 turns, 2 tool calls each).
- `estimator`, `estimator-busy`: one `Estimator.add`, scores over 2,000 series as `benchmarks.exporter`'s, and
  over 100 series in five minutes (whose per-minute counts fill up).
- `trace`, `raw-span`: one call of a `@trace(kind="tool")` function, and of the hand-written OpenTelemetry span
  `benchmarks.sdk_overhead` compares it with.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable

STAGES: dict[str, int] = {  # stage -> default N
    "parse": 400,
    "decode": 400,
    "rebuild": 300,
    "pipeline": 300,
    "score": 300,
    "estimator": 2000,
    "estimator-busy": 2000,
    "trace": 2000,
    "raw-span": 2000,
}
_COLLECTED = re.compile(r"Collected : (\d+)")
_WARM = 20  # calls made before the counted ones in both runs: what loads lazily is cancelled out


def _collector_stage(stage: str, size: int, n: int) -> None:
    from benchmarks.collector import _decode_once, _raw_parse_once, _run_pipeline, _scorer, make_workload

    w = make_workload(size)
    score = _scorer() if stage == "pipeline" else None  # warmed on a conversation of its own
    w.messages = w.messages[:n]
    if stage == "parse":
        _raw_parse_once(w)
    elif stage == "decode":
        _decode_once(w)
    else:
        _run_pipeline(w, score)


def _score_stage(size: int, n: int) -> None:
    from agentwatch.scorers import ConversationScorer
    from benchmarks.score import synthetic

    convs = [synthetic(i) for i in range(max(size, _WARM))]
    scorer = ConversationScorer()
    for c in convs[:_WARM]:
        scorer.score(c)
    for c in convs[:n]:
        scorer.score(c)


def _estimator_stage(size: int, n: int, busy: bool) -> None:
    from agentwatch.exporters.estimator import Estimator
    from benchmarks.exporter import NOW, load_settings, scores

    batch = scores(size, 100, spread_s=300) if busy else scores(size, 2000)
    est = Estimator(load_settings(exporter={"max_tasks": 1000}), clock=lambda: NOW)
    for s in batch[:n]:
        est.add(s)


def _sdk_stage(n: int, traced: bool) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agentwatch.sdk import configure, trace
    from benchmarks.sdk_overhead import lookup, raw_span

    provider = TracerProvider()
    configure(InMemorySpanExporter(), tracer_provider=provider)
    fn: Callable[..., object] = (
        trace(kind="tool")(lookup) if traced else raw_span(provider.get_tracer("bench"))
    )
    for _ in range(_WARM):
        fn("Paris", units="metric")
    for _ in range(n):
        fn("Paris", units="metric")
    provider.shutdown()


def run_stage(stage: str, size: int, n: int) -> None:
    """Set up `size` units of `stage`'s work and do the first `n` of them (n <= size)."""
    if stage in ("parse", "decode", "rebuild", "pipeline"):
        _collector_stage(stage, size, n)
    elif stage == "score":
        _score_stage(size, n)
    elif stage in ("estimator", "estimator-busy"):
        _estimator_stage(size, n, busy=stage == "estimator-busy")
    elif stage in ("trace", "raw-span"):
        _sdk_stage(n, traced=stage == "trace")
    else:
        raise ValueError(f"unknown stage {stage!r}")


def instructions(stage: str, size: int, n: int) -> int:
    """Instructions callgrind counts for a fresh interpreter setting up `size` units of `stage` and doing `n`."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        "-m",
        "benchmarks.instructions",
        "--child",
        stage,
        str(size),
        str(n),
    ]
    # One hash seed for every run: string hashes decide dict and set layouts, whose probing changes the count.
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return int(found.group(1))


def per_unit(stage: str, n: int) -> float:
    """Instructions of one unit of `stage`: the difference between n units and none, over n."""
    return (instructions(stage, n, n) - instructions(stage, n, 0)) / n


def main() -> None:
    """Count each chosen stage and print its instructions per unit."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", action="append", choices=sorted(STAGES), help="repeatable; default: all")
    parser.add_argument("--n", type=int, default=0, help="units of work per stage (default: the stage's own)")
    parser.add_argument("--child", nargs=3, metavar=("STAGE", "SIZE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_stage(args.child[0], int(args.child[1]), int(args.child[2]))
        return
    if shutil.which("valgrind") is None:
        print("valgrind not found: install it (apt-get install valgrind) to count instructions")
        return
    counted: dict[str, float] = {}
    for stage in args.stage or list(STAGES):
        n = args.n or STAGES[stage]
        counted[stage] = per_unit(stage, n)
        print(f"{stage:15} {counted[stage]:>14,.0f} instructions per unit  (n = {n})", flush=True)
    if "parse" in counted and "pipeline" in counted:
        print(
            f"decode → score by instructions: {counted['parse'] / counted['pipeline']:.1%} of the raw parse"
        )
    if "trace" in counted and "raw-span" in counted:
        print(f"@trace / raw span by instructions: {counted['trace'] / counted['raw-span']:.2f}×")


if __name__ == "__main__":
    main()
