"""Do agentwatch's verdicts agree with real outcomes? A published benchmark run, graded blind.

Imports a τ-bench (or τ²-bench) results file as `agentwatch import tau-bench` does, takes the outcome
labels (the benchmark's reward) off the conversations, grades them, and compares the verdicts with the
rewards, twice:

- defaults: each conversation carries the task's ground truth as it is — every action as an expected call,
  plain argument values, the required outputs — as a conversation-level expectation, scored with the default
  settings (lookups free, expected lookups optional, nested objects as subsets, handoffs and goodbyes are
  endings);
- policies: the task policies the importer writes (`policies.yaml`), scored with the default settings.

Every other check stays on (errors, loops, no answer, hallucinations, utilization). Prints the confusion
matrix, agreement, Cohen's κ with a 95% interval (tasks resampled), the leading reasons of disagreement and
the hallucination check's false-alarm rate on conversations that really succeeded.

    python -m benchmarks.validity [RESULTS.json[.gz]] [--show 40]
"""

from __future__ import annotations

import argparse
import gzip
import time
from pathlib import Path

from agentwatch.config import Settings
from agentwatch.importers.tau_bench import import_results, load_document
from agentwatch.report.validity import Agreement, agreement, blind, expectation_from_actions, grade
from agentwatch.wire.schema import Conversation
from tests.support import published_runs


def load(path: Path) -> tuple[list[Conversation], list[dict], dict[str, tuple[list[dict], list[str]]]]:
    """Conversations (with their labels), the generated policies, and each task's raw ground truth."""
    with open(path, "rb") as fh:
        raw = fh.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    document = load_document(raw)
    imported = import_results(document, "agent", path.name.split(".")[0], "dev")
    conversations = [Conversation.model_validate(line) for line in imported.lines]
    truth: dict[str, tuple[list[dict], list[str]]] = {}
    for entry in document if isinstance(document, list) else []:
        task = entry["info"]["task"]
        truth.setdefault(
            str(entry["task_id"]),
            (
                [{"name": a["name"], "arguments": a["kwargs"]} for a in task["actions"]],
                task.get("outputs") or [],
            ),
        )
    return conversations, imported.policies, truth


def report(title: str, result: Agreement, show: int) -> None:
    """Print one variant's figures."""
    lo, hi = result.kappa_interval
    fa_lo, fa_hi = result.false_alarm_interval()
    print(f"\n== {title}")
    print(f"   {'':>22} {'real success':>13} {'real failure':>13}")
    print(f"   {'verdict pass':>22} {result.true_pass:>13} {result.false_pass:>13}")
    print(f"   {'verdict fail':>22} {result.false_fail:>13} {result.true_fail:>13}")
    if result.unscored:
        print(f"   unscored (left out): {result.unscored}")
    print(
        f"   agreement {result.agreement:.1%} ({result.true_pass + result.true_fail}/{result.n}); "
        f"Cohen's kappa {result.kappa:.3f}, 95% interval [{lo:.3f}, {hi:.3f}] (tasks resampled)"
    )
    print(
        f"   hallucination flagged on {result.hallucination_on_success}/{result.successes} real successes "
        f"(false-alarm rate {result.hallucination_on_success / max(1, result.successes):.1%}, "
        f"95% interval [{fa_lo:.1%}, {fa_hi:.1%}]) and on {result.hallucination_on_failure} real failures"
    )
    if result.true_fail_reasons:
        caught = ", ".join(f"{code} {n}" for code, n in result.true_fail_reasons.most_common(8))
        print(f"   real failures were failed for (conversations): {caught}")
    if result.false_fail_reasons:
        leading = ", ".join(f"{code} {n}" for code, n in result.false_fail_reasons.most_common(8))
        print(f"   failed but really succeeded — reasons (conversations): {leading}")
    if result.false_pass_tasks:
        tasks = ", ".join(f"task {t} ×{n}" for t, n in sorted(result.false_pass_tasks.items()))
        print(f"   passed but really failed: {tasks}")
    for cid, kind, codes in result.disagreements[:show]:
        print(f"     {cid}: {kind}: {', '.join(codes) or '—'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", type=Path, default=None)
    parser.add_argument("--show", type=int, default=40, help="disagreements listed per variant")
    args = parser.parse_args()
    if args.results is None:
        args.results = published_runs.locate(published_runs.AIRLINE)

    conversations, policies, truth = load(args.results)
    unlabelled, real = blind(conversations)
    print(
        f"{args.results.name}: {len(conversations)} conversations, {sum(real)} real successes, "
        f"{len(policies)} tasks; graded without labels"
    )

    started = time.perf_counter()
    with_truth = [
        c.model_copy(update={"expected": expectation_from_actions(*truth[c.task])}) if c.task in truth else c
        for c in unlabelled
    ]
    report(
        "defaults: ground truth as a conversation expectation", agreement(grade(with_truth), real), args.show
    )
    policy_settings = Settings.model_validate({"policies": policies})
    report(
        "policies: generated by the importer", agreement(grade(unlabelled, policy_settings), real), args.show
    )
    print(f"\n(graded {2 * len(conversations)} conversations in {time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
