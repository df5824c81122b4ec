"""Validity: how often agentwatch's verdicts agree with real outcomes, on conversations whose outcome is known.

A published benchmark run (τ-bench, τ²-bench) is imported as `agentwatch import tau-bench` does and graded as
`agentwatch score --config policies.yaml --no-labels` does: blind (the outcome labels, the benchmark's reward,
are taken off before scoring), by the task policies the importer wrote from the ground truth. The verdicts
(`passed`) are compared with the rewards (`complete` = success).

Reported per run and pooled over runs: the confusion matrix, agreement, Cohen's κ with a bootstrap interval
over tasks (conversations of one task are correlated, so tasks are resampled whole, not conversations), the
reason codes behind each kind of disagreement, pass^k from the rewards beside pass^k from the verdicts, and for
each detector how often it fired on real successes (its false-fail rate, were its finding to fail a
conversation: what `scoring.failing_evidence` is decided by) and on real failures (its catch rate).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import betaincinv

from agentwatch.config import Settings, TaskPolicy
from agentwatch.importers.results_files import load_results, run_name
from agentwatch.importers.tau2_tasks import with_tasks
from agentwatch.importers.tau_bench import import_results
from agentwatch.scorers.turn import NEVER_FAILS
from agentwatch.stats import agreement as agreement_stats
from agentwatch.stats.units import TaskEstimate, UnitCounts, UnitsPosterior
from agentwatch.wire.contract import DETECTORS
from agentwatch.wire.schema import Conversation, ConversationScore, Outcome


def blind(conversations: Sequence[Conversation]) -> tuple[list[Conversation], list[bool]]:
    """The conversations without their outcome labels, and the truth each label gave (complete = success)."""
    truth = [c.outcome is Outcome.COMPLETE for c in conversations]
    return [c.model_copy(update={"outcome": None}) for c in conversations], truth


def grade(conversations: Sequence[Conversation], settings: Settings | None = None) -> list[ConversationScore]:
    """Score every conversation (blind: their labels must already be off)."""
    from agentwatch.scorers import ConversationScorer

    scorer = ConversationScorer(settings or Settings())
    return [scorer.score(c) for c in conversations]


def exact_interval(hits: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Clopper–Pearson interval of a rate of `hits` in `n` (exact: the Beta quantiles of the binomial tails)."""
    tail = (1.0 - level) / 2.0
    lo = 0.0 if hits == 0 else float(betaincinv(hits, n - hits + 1, tail))
    hi = 1.0 if hits == n else float(betaincinv(hits + 1, n - hits, 1.0 - tail))
    return lo, hi


@dataclass(slots=True)
class DetectorRates:
    """How often one detector fired on real successes and on real failures (graded conversations)."""

    on_success: int = 0
    successes: int = 0
    on_failure: int = 0
    failures: int = 0

    @property
    def false_fail_rate(self) -> float:
        """Share of real successes it fired on: the conversations its finding would fail wrongly."""
        return self.on_success / self.successes if self.successes else math.nan

    @property
    def catch_rate(self) -> float:
        """Share of real failures it fired on."""
        return self.on_failure / self.failures if self.failures else math.nan

    def false_fail_interval(self, level: float = 0.95) -> tuple[float, float]:
        """Exact interval of the false-fail rate."""
        return exact_interval(self.on_success, self.successes, level)

    def add(self, other: DetectorRates) -> None:
        """Add another run's counts."""
        self.on_success += other.on_success
        self.successes += other.successes
        self.on_failure += other.on_failure
        self.failures += other.failures


@dataclass(slots=True)
class Agreement:
    """Verdicts against the truth: counts, agreement, κ and what the disagreements were about."""

    true_pass: int = 0  # verdict pass, really succeeded
    false_pass: int = 0  # verdict pass, really failed
    false_fail: int = 0  # verdict fail, really succeeded
    true_fail: int = 0
    unscored: int = 0  # no verdict (left out of the agreement)
    kappa: float = math.nan
    kappa_interval: tuple[float, float] = (math.nan, math.nan)
    false_fail_reasons: Counter[str] = field(default_factory=Counter)  # reason codes, once per conversation
    true_fail_reasons: Counter[str] = field(default_factory=Counter)
    false_pass_tasks: Counter[str] = field(default_factory=Counter)
    disagreements: list[tuple[str, str, list[str]]] = field(default_factory=list)  # (id, kind, reasons)
    detectors: dict[str, DetectorRates] = field(
        default_factory=lambda: {d: DetectorRates() for d in DETECTORS}
    )

    @property
    def n(self) -> int:
        """Conversations with a verdict."""
        return self.true_pass + self.false_pass + self.false_fail + self.true_fail

    @property
    def agreement(self) -> float:
        """Share of verdicts equal to the truth."""
        return (self.true_pass + self.true_fail) / self.n if self.n else math.nan

    @property
    def successes(self) -> int:
        """Conversations that really succeeded (with a verdict)."""
        return self.true_pass + self.false_fail


def _could_fail(detector: str, reasons: Sequence[str]) -> bool:
    """Whether `detector`'s finding would fail the conversation were it in `scoring.failing_evidence`: not only
    findings that are evidence whatever that setting says (a lookup's or a handoff's loop, none refused)."""
    return any(
        r.startswith(f"{detector}:")
        or (r.startswith(f"evidence: {detector}:") and not r.endswith(NEVER_FAILS))
        for r in reasons
    )


def kappa(true_pass: int, false_pass: int, false_fail: int, true_fail: int) -> float:
    """Cohen's κ of a 2×2 table of verdicts against the truth; NaN when chance agreement is 1 or nothing is rated."""
    return agreement_stats.kappa(np.array([[true_pass, false_fail], [false_pass, true_fail]]))


def agreement(
    scores: Sequence[ConversationScore],
    truth: Sequence[bool],
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    groups: Sequence[str] | None = None,
) -> Agreement:
    """Compare verdicts with the truth (see the module docstring); `groups`: the unit resampled whole, one per
    score (default: its task)."""
    out = Agreement()
    real_fail: list[int] = []  # class 0: passed / really succeeded, 1: failed
    verdict_fail: list[int] = []
    resampled: list[str] = []
    for i, (score, real) in enumerate(zip(scores, truth, strict=True)):
        if score.passed is None:
            out.unscored += 1
            continue
        codes = sorted({r.split(":", 1)[0] for r in score.reasons})
        for name, rates in out.detectors.items():
            fired = name in score.evidence and _could_fail(name, score.reasons)
            if real:
                rates.successes += 1
                rates.on_success += fired
            else:
                rates.failures += 1
                rates.on_failure += fired
        if score.passed and real:
            out.true_pass += 1
        elif score.passed:
            out.false_pass += 1
            out.false_pass_tasks[score.task] += 1
            out.disagreements.append((score.conversation_id, "passed, really failed", codes))
        elif real:
            out.false_fail += 1
            out.false_fail_reasons.update(codes)
            out.disagreements.append((score.conversation_id, "failed, really succeeded", codes))
        else:
            out.true_fail += 1
            out.true_fail_reasons.update(codes)
        real_fail.append(0 if real else 1)
        verdict_fail.append(0 if score.passed else 1)
        resampled.append(groups[i] if groups is not None else score.task)
    out.kappa = kappa(out.true_pass, out.false_pass, out.false_fail, out.true_fail)
    if resampled:  # tasks resampled whole: a task's conversations are not independent
        out.kappa_interval = agreement_stats.kappa_interval(
            real_fail, verdict_fail, 2, resampled, level=level, resamples=resamples, seed=seed
        )
    return out


@dataclass(slots=True)
class RunValidity:
    """One published run graded blind: what was read, the scores, the truth, and their agreement."""

    name: str
    format: str
    scores: list[ConversationScore]
    truth: list[bool]
    agreement: Agreement
    skipped: int  # records the importer could not read
    ungraded: dict[str, str] = field(default_factory=dict)  # tasks without a policy, and why

    def pass_pow_k(self, k: int, level: float = 0.95) -> tuple[TaskEstimate, TaskEstimate]:
        """pass^k over tasks from the rewards and from the verdicts (graded conversations only)."""
        return (
            _over_tasks([(s.task, real) for s, real in zip(self.scores, self.truth, strict=True)], k, level),
            _over_tasks([(s.task, s.passed) for s in self.scores if s.passed is not None], k, level),
        )

    @property
    def max_attempts(self) -> int:
        """The most conversations of one task."""
        return max(Counter(s.task for s in self.scores).values(), default=0)


def _over_tasks(outcomes: Sequence[tuple[str, bool]], k: int, level: float) -> TaskEstimate:
    per_task: dict[str, list[int]] = {}
    for task, ok in outcomes:
        per_task.setdefault(task, [0, 0])
        per_task[task][0] += 1
        per_task[task][1] += int(ok)
    counts = UnitCounts.from_units((n, c) for n, c in per_task.values())
    if not counts.pairs:
        return TaskEstimate(None, None, None, 0, None)
    return UnitsPosterior(counts).estimates([k], level)["pow"][k]


def validate_run(
    path: Path, settings: Settings | None = None, resamples: int = 2000, tasks: Any = None
) -> RunValidity:
    """Import a τ-bench or τ²-bench results file (or a τ²-bench run saved as a directory), grade it blind by its
    generated policies, compare; `tasks`: τ²-bench tasks for those the file lacks (`with_tasks`)."""
    name = run_name(path)
    document = load_results(path)
    imported = import_results(document if tasks is None else with_tasks(document, tasks), "agent", name, name)
    conversations = [Conversation.model_validate(line) for line in imported.lines]
    unlabelled, truth = blind(conversations)
    policies = [TaskPolicy.model_validate(p) for p in imported.policies]
    graded = grade(unlabelled, (settings or Settings()).model_copy(update={"policies": policies}))
    return RunValidity(
        name,
        imported.format,
        graded,
        truth,
        agreement(graded, truth, resamples=resamples),
        len(imported.errors),
        imported.ungraded,
    )


def pooled(runs: Sequence[RunValidity], resamples: int = 2000) -> Agreement:
    """The agreement of every run's verdicts together, tasks of different runs kept apart in the bootstrap."""
    scores = [s for run in runs for s in run.scores]
    truth = [t for run in runs for t in run.truth]
    groups = [f"{run.name}/{s.task}" for run in runs for s in run.scores]
    return agreement(scores, truth, resamples=resamples, groups=groups)
