"""Build the offline `Report` from a list of `ConversationScore`: estimates overall, per task, per tag
(`group_stats`), and the gate."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from agentwatch.config import Settings
from agentwatch.report.failure_modes import has_loop
from agentwatch.report.group_stats import correction_of, group_stats
from agentwatch.report.label_agreement import label_agreement
from agentwatch.report.model import MALFORMED_GATE, Gate, Readiness, Report
from agentwatch.report.ordering import natural_key
from agentwatch.report.pass_k import (
    GATE_ESTIMATES,
    counts,
    k_estimates,
    latest_revisions,
    per_task_counts,
    pick,
)
from agentwatch.stats.inclusion import effective_counts, graded_by_probability
from agentwatch.wire.score_view import ScoreView

EXAMPLES_PER_MODE = 10  # conversations listed per failure mode (--examples)
__all__ = [
    "GATE_ESTIMATES",
    "build_report",
    "counts",
    "gate_value",
    "group_stats",
    "latest_revisions",
    "per_task_counts",
]


def gate_value(
    scores: Sequence[ScoreView], settings: Settings, k: int, kind: str, estimate: str
) -> float | None:
    """pass@k (kind 'at') or pass^k ('pow') of `scores` by the named estimate; None without enough data."""
    weighted = effective_counts(graded_by_probability(list(scores)))
    at, pw, _units = k_estimates(scores, settings, [k], weighted, correction_of(scores, settings, [k]))
    return pick((at if kind == "at" else pw)[str(k)], estimate)


def gate_scope(scores: Sequence[ScoreView], settings: Settings) -> tuple[str, list[ScoreView], str]:
    """The conversations the gate applies to: core-tagged ones, or all of them when none is tagged core."""
    g = settings.gate
    core = [s for s in scores if s.tags.get(g.core_tag) in g.core_values]
    values = "|".join(g.core_values)
    if core:
        return "core", core, f"gated on core tasks ({g.core_tag}={values})"
    return "all", list(scores), f"no conversation tagged {g.core_tag}={values}: gated on all conversations"


def _gate(name: str, value: float | None, threshold: float, op: str) -> Gate:
    """A gate check; a missing value never passes."""
    passed = value is not None and (value >= threshold if op == ">=" else value <= threshold)
    return Gate(name=name, value=value, threshold=threshold, op=op, passed=passed)


def readiness(scores: Sequence[ScoreView], settings: Settings) -> Readiness:
    """Readiness tier and release gate (pass@1, pass^3 on core tasks, loops) for `scores`."""
    g = settings.gate
    estimate = g.estimate
    scope, chosen, note = gate_scope(scores, settings)
    n, c = counts(chosen)
    weighted = effective_counts(graded_by_probability(chosen))
    at, pw, units = k_estimates(
        chosen, settings, [1, 3], weighted, correction_of(chosen, settings, [1, 3]), unit_rows=True
    )
    at1, pow3 = at["1"], pw["3"]
    loops = sum(1 for s in scores if has_loop(s))
    gates = [
        _gate("pass@1", pick(at1, estimate), g.pass_at_1_min, ">="),
        _gate("pass^3", pick(pow3, estimate), g.pass_pow_3_min, ">="),
        _gate("loops", float(loops), float(g.max_loops), "<="),
    ]
    gates[0].method, gates[1].method = at1.method, pow3.method
    if pow3.method == "tasks" and pow3.value is None:
        gates[1].note = f"pass^3 not identified: at most {units.max_attempts} graded attempts at one unit"
    if n < g.min_conversations:  # too little evidence to ship on, whatever the estimates say
        why = f"not enough conversations: {n} graded, at least {g.min_conversations} needed (gate.min_conversations)"
        for gate in gates[:2]:
            gate.passed, gate.note = False, why
    tier = "unknown"
    if n > 0:

        def reaches(value: float | None, minimum: float) -> bool:
            return minimum <= 0 or (value is not None and value >= minimum)

        tier = next(
            (
                t.name
                for t in settings.tiers
                if reaches(at1.value, t.pass_at_1_min) and reaches(pow3.value, t.pass_pow_3_min)
            ),
            "none",
        )
    safe = all(gate.passed for gate in gates)
    return Readiness(
        tier=tier,
        scope=scope,
        scope_note=note,
        scope_conversations=len(chosen),
        scope_scored=n,
        scope_passed=c,
        scope_units=units,
        estimate=estimate,
        gates=gates,
        safe_to_ship=safe,
        verdict="SAFE TO SHIP" if safe else "DO NOT SHIP",
    )


def gate_malformed(rd: Readiness, malformed: int, maximum: int) -> None:
    """Add to `rd` the check that at most `maximum` transcript lines could not be read (`gate.max_malformed`):
    a gate computed on part of the input says so rather than passing on what was left."""
    check = _gate(MALFORMED_GATE, float(malformed), float(maximum), "<=")
    if not check.passed:
        check.note = (
            f"{malformed} transcript line(s) could not be read: the figures rest on part of the input"
        )
    rd.gates.append(check)
    rd.safe_to_ship = all(g.passed for g in rd.gates)
    rd.verdict = "SAFE TO SHIP" if rd.safe_to_ship else "DO NOT SHIP"


def build_report(
    scores: Sequence[ScoreView],
    settings: Settings,
    ks: Sequence[int] | None = None,
    examples: int = EXAMPLES_PER_MODE,
) -> Report:
    """The report of `scores`: overall, by task, by tag, readiness (baseline is added by `compare_baseline`).

    A conversation scored more than once (a later label publishes a revision) counts once, at its latest revision.
    Each failure mode lists its first `examples` conversations.
    """
    ks = sorted(set(ks if ks is not None else settings.stats.ks))
    scores = latest_revisions(scores)
    overall = group_stats(scores, settings, ks, examples, unit_rows=True)
    by_task_groups: dict[str, list[ScoreView]] = defaultdict(list)
    by_tag_groups: dict[str, dict[str, list[ScoreView]]] = defaultdict(lambda: defaultdict(list))
    for s in scores:
        by_task_groups[s.task].append(s)
        for key, value in s.tags.items():
            by_tag_groups[key][value].append(s)
    return Report(
        **overall.model_dump(),
        by_task={
            t: group_stats(by_task_groups[t], settings, ks) for t in sorted(by_task_groups, key=natural_key)
        },
        by_tag={
            key: {v: group_stats(values[v], settings, ks) for v in sorted(values, key=natural_key)}
            for key, values in sorted(by_tag_groups.items())
        },
        readiness=readiness(scores, settings),
        label_agreement=label_agreement(scores, settings.stats.level, examples),
    )
