"""Do agentwatch's verdicts agree with real outcomes? Published benchmark runs, graded blind.

Each file (τ-bench or τ²-bench results, gzip or not, any number of them) is imported as `agentwatch import
tau-bench` does and graded as `agentwatch score --config policies.yaml --no-labels` does: the outcome labels
(the benchmark's reward) are taken off, the conversations graded by the generated task policies with every
detector on, the verdicts compared with the rewards. Printed per run and pooled: the confusion matrix,
agreement, Cohen's κ with a 95% interval (tasks resampled whole), pass^k from the rewards beside pass^k from the
verdicts, each detector's false-fail rate on real successes (exact 95% interval) and catch rate on real
failures — which decides `scoring.failing_evidence` (at most 1% pooled) — and the leading reasons of
disagreement.

    python -m benchmarks.validity [RESULTS.json[.gz] ...] [--show 20] [--logged-as DIALECT] [--tasks TASKS.json]

Without files: the dev runs under ../shared/data/agent-benchmark/ (tests.support.published_runs).
`--logged-as` first rewrites every τ-bench run as another agent strategy or API would have logged the same steps
(`react`, `act`; `anthropic`, `responses`, `gemini`, `langchain`: tests.support.dialects); τ²-bench runs are
graded as they are.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from agentwatch.config import Settings
from agentwatch.importers.results_files import load_results
from agentwatch.report.validity import Agreement, RunValidity, pooled, validate_run
from agentwatch.wire.transcripts import file_stem
from tests.support import published_runs
from tests.support.dialects import DIALECTS, tau_bench_as_react, tau_bench_in

FALSE_FAIL_LIMIT = 0.01  # a detector may fail conversations by default up to this false-fail rate, pooled


def _agreement(title: str, a: Agreement, show: int) -> None:
    lo, hi = a.kappa_interval
    print(f"\n== {title}")
    print(f"   {'':>14} {'real success':>13} {'real failure':>13}")
    print(f"   {'verdict pass':>14} {a.true_pass:>13} {a.false_pass:>13}")
    print(f"   {'verdict fail':>14} {a.false_fail:>13} {a.true_fail:>13}")
    if a.unscored:
        print(f"   unscored (left out): {a.unscored}")
    if a.n == 0:
        print("   no conversation graded")
        return
    if math.isnan(a.kappa):  # chance agreement 1: every outcome, or every verdict, is one class
        kappa = "Cohen's kappa undefined (the outcomes or the verdicts are all one class)"
    else:
        kappa = f"Cohen's kappa {a.kappa:.3f}, " + (
            "95% interval undefined (no resample of the tasks has both classes)"
            if math.isnan(lo)
            else f"95% interval [{lo:.3f}, {hi:.3f}] (tasks resampled)"
        )
    print(f"   agreement {a.agreement:.1%} ({a.true_pass + a.true_fail}/{a.n}); {kappa}")
    if a.false_fail_reasons:
        leading = ", ".join(f"{code} {n}" for code, n in a.false_fail_reasons.most_common(6))
        print(f"   failed but really succeeded, reasons (conversations): {leading}")
    if a.false_pass_tasks:
        print(
            f"   passed but really failed: {', '.join(f'task {t} ×{n}' for t, n in sorted(a.false_pass_tasks.items()))}"
        )
    for cid, kind, codes in a.disagreements[:show]:
        print(f"     {cid}: {kind}: {', '.join(codes) or '—'}")


def _detectors(a: Agreement, failing: set[str]) -> None:
    print(
        f"   {'detector':<14} {'fails':>6} {'fired on real successes (false-fail rate, 95%)':>48} {'on real failures':>17}"
    )
    for name, r in a.detectors.items():
        lo, hi = r.false_fail_interval()
        share = f"{r.on_success}/{r.successes}" + (
            f" = {r.false_fail_rate:.1%} [{lo:.1%}, {hi:.1%}]" if r.successes else " (no real success)"
        )
        catches = f"{r.on_failure}/{r.failures}" + (f" = {r.catch_rate:.1%}" if r.failures else " (none)")
        print(f"   {name:<14} {'yes' if name in failing else 'no':>6} {share:>48} {catches:>17}")


def _pass_k(run: RunValidity) -> None:
    for k in range(1, min(run.max_attempts, 4) + 1):
        reward, verdict = run.pass_pow_k(k)
        if reward.value is None or verdict.value is None:
            continue
        print(
            f"   pass^{k} over {reward.units} tasks: rewards {reward.value:.3f} [{reward.lower:.3f}, {reward.upper:.3f}]"
            f", verdicts {verdict.value:.3f} [{verdict.lower:.3f}, {verdict.upper:.3f}]"
        )


def _logged_as(path: Path, dialect: str, folder: Path) -> Path:
    """The τ-bench run at `path` rewritten as `dialect` logs it, in `folder` (a τ²-bench run: `path` itself)."""
    document = load_results(path)
    if not isinstance(document, list):
        return path
    if dialect in ("react", "act"):
        rewritten = tau_bench_as_react(document, reasoning=dialect == "react")
    else:
        rewritten = tau_bench_in(document, dialect)
    out = folder / f"{file_stem(path)}-{dialect}.json"
    out.write_text(json.dumps(rewritten), encoding="utf-8")
    return out


def _graded(
    files: list[Path], settings: Settings, tasks: Any = None
) -> tuple[list[RunValidity], list[tuple[Path, str]]]:
    """Each file's graded run, and the files that could not be read as a run, with why: one such file in a
    batch is reported, not the end of the batch. `tasks`: τ²-bench tasks for those a file lacks."""
    runs, refused = [], []
    for path in files:
        try:
            runs.append(validate_run(path, settings, tasks=tasks))
        except (OSError, ValueError) as exc:  # not a results file, not JSON, not there
            refused.append((path, f"{type(exc).__name__}: {exc}"))
    return runs, refused


def main() -> None:
    """Grade every run, print per run and pooled."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "results",
        nargs="*",
        type=Path,
        help="τ-bench / τ²-bench results files (or τ²-bench runs saved as directories)",
    )
    parser.add_argument("--show", type=int, default=20, help="disagreements listed per run")
    parser.add_argument(
        "--logged-as",
        choices=["react", "act", *sorted(DIALECTS)],
        help="rewrite each τ-bench run as this agent strategy or API logs the same steps, then grade it",
    )
    parser.add_argument(
        "--tasks",
        type=Path,
        help="τ²-bench's tasks file, for runs published without their tasks (leaderboard trajectory files)",
    )
    args = parser.parse_args()
    tasks = load_results(args.tasks) if args.tasks else None
    files = args.results or [published_runs.locate(name) for name in published_runs.ALL]
    settings = Settings()
    failing = set(settings.scoring.failing_evidence)

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        if args.logged_as:
            files = [_logged_as(path, args.logged_as, Path(folder)) for path in files]
        runs, refused = _graded(files, settings, tasks)
    seconds = time.perf_counter() - started
    for path, why in refused:
        print(f"\n# {path}: not graded: {why}")
    for run in runs:
        successes = sum(run.truth)
        print(
            f"\n# {run.name} ({run.format}): {len(run.scores)} conversations, {successes} real successes, "
            f"{len({s.task for s in run.scores})} tasks"
            + (f", {run.skipped} records skipped" if run.skipped else "")
        )
        if run.ungraded:
            print(f"   {len(run.ungraded)} task(s) without a policy, not graded:")
            for task, why in list(run.ungraded.items())[: args.show]:
                print(f"     task {task}: {why}")
        _agreement(run.name, run.agreement, args.show)
        _pass_k(run)
        _detectors(run.agreement, failing)
    every = pooled(runs)
    _agreement(f"pooled over {len(runs)} runs", every, 0)
    _detectors(every, failing)
    over = [n for n in failing if every.detectors[n].false_fail_rate > FALSE_FAIL_LIMIT]
    print(
        f"\n   default detectors above a {FALSE_FAIL_LIMIT:.0%} false-fail rate pooled: {', '.join(over) or 'none'}"
        f"\n(graded {sum(len(r.scores) for r in runs)} conversations of {len(runs)} runs in {seconds:.1f} s)"
    )


if __name__ == "__main__":
    main()
