"""pass@k and pass^k of a group of conversations: the headline over units when attempts repeat, else p^k under
exchangeability, with the pooled detail beside it.

A conversation's unit is (task, instance) when it names an instance, (task) when it names only an attempt; a
graded conversation naming neither is a unit of its own with one attempt, so it counts at k = 1 only (and
informs the hierarchical model's mean). Units are also told apart by agent and version. A group *has repeats*
when some unit has two or more graded conversations; then `pass_pow_k[k]` and `pass_at_k[k]` are
`agentwatch.stats.units` over the units (method `tasks`). Without repeats pass^k of the same task is not
identified, and the headline is p^k (or 1 - (1-p)^k) of one pooled success probability under exchangeability:
the posterior mean and interval of the pooled Beta posterior (method `exchangeable`).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Literal, TypeVar

from agentwatch.config import Settings
from agentwatch.report.model import JudgeOnly, KEstimate, UnitsSummary
from agentwatch.stats.beta import BetaPosterior, posterior
from agentwatch.stats.corrected import CorrectedEstimates, CorrectedFigure
from agentwatch.stats.pass_k import (
    pass_at_k_plugin,
    pass_at_k_unbiased,
    pass_pow_k_plugin,
    pass_pow_k_unbiased,
    task_mean,
)
from agentwatch.stats.units import TaskEstimate, UnitCounts, UnitsPosterior
from agentwatch.wire.score_view import ScoreView

Kind = Literal["at", "pow"]
S = TypeVar("S", bound=ScoreView)
GATE_ESTIMATES = ("value", "lower", "plugin", "unbiased", "task_mean", "mean")


def _num(x: float | None) -> float | None:
    """None for missing or NaN values, else a float."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def counts(scores: Iterable[ScoreView]) -> tuple[int, int]:
    """(n, c): scored conversations and passed ones."""
    n = c = 0
    for s in scores:
        if s.passed is not None:
            n += 1
            c += bool(s.passed)
    return n, c


def per_task_counts(scores: Iterable[ScoreView]) -> dict[str, tuple[int, int]]:
    """task -> (n, c)."""
    groups: dict[str, list[ScoreView]] = defaultdict(list)
    for s in scores:
        groups[s.task].append(s)
    return {task: counts(group) for task, group in groups.items()}


def unit_counts(scores: Iterable[ScoreView], rows: bool = False) -> tuple[UnitCounts, UnitsSummary]:
    """The graded conversations' units as (n, c) counts, and their summary for the report (`rows`: with each
    unit's counts, `by_unit`, for a later report to pair with)."""
    per_unit: dict[tuple[str, str, str, str | None], list[int]] = {}
    alone = Counter[int]()  # passed -> graded conversations without a unit
    for s in scores:
        if s.passed is None:
            continue
        unit = s.unit
        if unit is None:
            alone[int(s.passed)] += 1
            continue
        nc = per_unit.setdefault((s.agent, s.version, *unit), [0, 0])
        nc[0] += 1
        nc[1] += bool(s.passed)
    histogram = Counter((n, c) for n, c in per_unit.values())
    histogram[(1, 1)] += alone[1]
    histogram[(1, 0)] += alone[0]
    unit_set = UnitCounts.from_histogram(histogram)
    summary = UnitsSummary(
        units=unit_set.units,
        repeated=unit_set.units_with(2),
        max_attempts=unit_set.max_attempts,
        without_unit=alone[0] + alone[1],
        pairs=list(unit_set.pairs),
        by_unit=[(agent, task, instance, n, c) for (agent, _v, task, instance), (n, c) in per_unit.items()]
        if rows
        else [],
    )
    return unit_set, summary


def unit_credit_means(scores: Iterable[ScoreView]) -> list[tuple[float, int]] | None:
    """Each unit's mean ASR credit over its graded conversations with a credit, and how many those are (units as
    in `unit_counts`: a conversation naming neither instance nor attempt is a unit of its own); None when no unit
    has two such conversations (ASR is then over conversations)."""
    per_unit: dict[tuple[str, str, str, str | None], list[float]] = {}
    alone: list[float] = []
    for s in scores:
        if s.passed is None or s.asr_credit is None:
            continue
        unit = s.unit
        if unit is None:
            alone.append(s.asr_credit)
        else:
            per_unit.setdefault((s.agent, s.version, *unit), []).append(s.asr_credit)
    if not any(len(credits) >= 2 for credits in per_unit.values()):
        return None
    return [(math.fsum(c) / len(c), len(c)) for c in per_unit.values()] + [(c, 1) for c in alone]


def _pooled(n: int, c: int, k: int, kind: Kind, post: BetaPosterior, level: float) -> dict[str, float | None]:
    if kind == "at":
        lo, hi = post.pass_at_k_interval(k, level)
        return {
            "pooled_unbiased": _num(pass_at_k_unbiased(n, c, k)),
            "pooled_plugin": pass_at_k_plugin(c / n, k),
            "pooled_mean": post.pass_at_k_mean(k),
            "pooled_lower": lo,
            "pooled_upper": hi,
        }
    lo, hi = post.pass_pow_k_interval(k, level)
    return {
        "pooled_unbiased": _num(pass_pow_k_unbiased(n, c, k)),
        "pooled_plugin": pass_pow_k_plugin(c / n, k),
        "pooled_mean": post.pass_pow_k_mean(k),
        "pooled_lower": lo,
        "pooled_upper": hi,
    }


def _empty() -> KEstimate:
    return KEstimate(
        value=None,
        lower=None,
        upper=None,
        method="exchangeable",
        interval=None,
        units=None,
        pooled_unbiased=None,
        pooled_plugin=None,
        pooled_mean=None,
        pooled_lower=None,
        pooled_upper=None,
        task_mean=None,
    )


def _headline(pooled: dict[str, float | None], over_units: TaskEstimate | None) -> dict[str, object]:
    """The headline fields: over units when there are repeats, else the pooled posterior's."""
    if over_units is not None:
        return {
            "value": over_units.value,
            "lower": over_units.lower,
            "upper": over_units.upper,
            "method": "tasks",
            "interval": over_units.interval if over_units.value is not None else None,
            "units": over_units.units,
            "widened": over_units.widened,
            "holds": over_units.holds,
        }
    value, lo, hi = pooled["pooled_mean"], pooled["pooled_lower"], pooled["pooled_upper"]
    assert value is not None and lo is not None and hi is not None
    return {
        "value": value,
        "lower": min(lo, value),
        "upper": max(hi, value),
        "method": "exchangeable",
        "interval": "beta",
        "units": None,
        "widened": not lo <= value <= hi,
    }


def _corrected(estimate: KEstimate, figure: CorrectedFigure) -> KEstimate:
    """The exchangeable headline replaced by the transform of the corrected success rate."""
    judge = JudgeOnly(mean=figure.judge_only, lower=figure.judge_only_lower, upper=figure.judge_only_upper)
    return estimate.model_copy(
        update={
            "value": figure.value,
            "lower": min(figure.lower, figure.value),
            "upper": max(figure.upper, figure.value),
            "corrected": True,
            "judge_only": judge,
            "widened": not figure.lower <= figure.value <= figure.upper,
        }
    )


def k_estimates(
    scores: Sequence[ScoreView],
    settings: Settings,
    ks: Sequence[int],
    weighted: tuple[float, float] | None = None,
    correction: CorrectedEstimates | None = None,
    unit_rows: bool = False,
) -> tuple[dict[str, KEstimate], dict[str, KEstimate], UnitsSummary]:
    """pass@k and pass^k keyed by k as a string, and the units they were computed over.

    `weighted`: Kish's effective (n, c) when the graded conversations were sampled at different rates (the
    pooled posterior is then theirs); `correction`: with enough labels, the exchangeable headline is the
    transform of the corrected success rate; `unit_rows`: the summary lists each unit's counts."""
    n, c = counts(scores)
    graded = [s for s in scores if s.scored]
    unit_set, summary = unit_counts(graded, unit_rows)
    if n == 0:
        return {str(k): _empty() for k in ks}, {str(k): _empty() for k in ks}, summary
    st = settings.stats
    if weighted is None:
        post = posterior(n, c, st.prior_alpha, st.prior_beta)
    else:
        post = BetaPosterior(st.prior_alpha + weighted[1], st.prior_beta + weighted[0] - weighted[1])
    per_task = per_task_counts(graded)
    over_units = UnitsPosterior(unit_set).estimates(ks, st.level) if unit_set.repeated else None
    out: dict[Kind, dict[str, KEstimate]] = {"at": {}, "pow": {}}
    for kind in ("at", "pow"):
        for k in ks:
            pooled = _pooled(n, c, k, kind, post, st.level)
            units = over_units[kind][k] if over_units is not None else None
            estimate = KEstimate.model_validate(
                {**_headline(pooled, units), **pooled, "task_mean": task_mean(per_task, k, kind)}
            )
            figures = (
                None
                if correction is None or not correction.enough
                else (correction.pass_at_k if kind == "at" else correction.pass_pow_k)
            )
            if figures is not None and units is None and k in figures:
                estimate = _corrected(estimate, figures[k])
            out[kind][str(k)] = estimate
    return out["at"], out["pow"], summary


MAX_DEFAULT_K = 8


def default_ks(scores: Sequence[ScoreView], configured: Sequence[int]) -> list[int]:
    """The k values to report: 1 up to the most attempts at one unit (at most 8) when some unit has repeats,
    else the configured ones (`stats.ks`)."""
    units, _summary = unit_counts(latest_revisions(scores))
    if not units.repeated:
        return sorted(set(configured))
    return list(range(1, min(MAX_DEFAULT_K, units.max_attempts) + 1))


def latest_revisions(scores: Iterable[S]) -> list[S]:
    """One score per conversation (agent, version, id): the highest revision, the later one on a tie; in
    first-seen order. The version is part of the key offline: a file holding two versions' runs of the same
    benchmark reuses conversation ids, and each version's conversation counts in its own section."""
    kept: dict[tuple[str, str, str], S] = {}
    for s in scores:
        key = (s.agent, s.version, s.conversation_id)
        old = kept.get(key)
        if old is None or s.revision >= old.revision:
            kept[key] = s
    return list(kept.values())


def pick(estimate: KEstimate, which: str) -> float | None:
    """The estimate `gate.estimate` names: value or lower of the headline, or a pooled detail."""
    fields = {
        "value": estimate.value,
        "lower": estimate.lower,
        "plugin": estimate.pooled_plugin,
        "unbiased": estimate.pooled_unbiased,
        "task_mean": estimate.task_mean,
        "mean": estimate.pooled_mean,
    }
    if which not in fields:
        raise ValueError(f"unknown gate estimate {which!r}; choose one of {GATE_ESTIMATES}")
    return fields[which]
