"""Build the offline `Report` from a list of `ConversationScore`: estimates overall, per task, per tag, and the gate."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np

from agentwatch.config import Settings
from agentwatch.report.model import (
    BootstrapEstimate,
    CorrectedFigure,
    Correction,
    CostStats,
    Estimate,
    FailureMode,
    Gate,
    GroupStats,
    JudgeOnly,
    KEstimate,
    RateEstimate,
    Readiness,
    Report,
)
from agentwatch.report.ordering import natural_key
from agentwatch.report.pass_k import (
    GATE_ESTIMATES,
    counts,
    k_estimates,
    latest_revisions,
    per_task_counts,
    pick,
    unit_credit_means,
)
from agentwatch.stats import corrected
from agentwatch.stats.beta import BetaPosterior, posterior
from agentwatch.stats.bootstrap import bootstrap_mean_interval, bootstrap_units_interval
from agentwatch.stats.inclusion import effective_counts, graded_by_probability
from agentwatch.wire.contract import INFORMATIONAL_REASONS
from agentwatch.wire.schema import EVIDENCE, GRADERS, ConversationScore, Outcome

_UNSAFE = re.compile(r"[^a-z0-9_]")
TOOL_DIMENSIONS = ("selection", "parameters", "sequence", "utilization", "overall", "binary")
INFORMATIONAL_CODES = INFORMATIONAL_REASONS
# Why a conversation is outside the graded sample: coverage (reported under `ungraded`), not failure modes.
COVERAGE_CODES = frozenset(
    {
        "no_grader",
        "judge_timeout",
        "judge_bad_output",
        "judge_unavailable",
        "judge_budget_exhausted",
        "scorer_error",
    }
)
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


def failure_code(reason: str) -> str:
    """The failure mode of a reason: the short code before the first colon ("loop: ..." -> "loop")."""
    head = reason.split(":", 1)[0].strip().lower().split()
    return _UNSAFE.sub("_", head[0].replace("-", "_"))[:64] if head else "unknown"


def failure_modes_of(score: ConversationScore) -> set[str]:
    """The failure modes of a conversation: the codes of its reasons that fail (not a label's, not why it was
    not graded); a conversation that failed with none of them failed by its label (`label`), or for no
    reason given (`failed`)."""
    codes = {failure_code(r) for r in score.reasons} - INFORMATIONAL_CODES - COVERAGE_CODES
    if not codes and score.passed is False:
        by_label = any(failure_code(r) in INFORMATIONAL_CODES for r in score.reasons)
        return {"label"} if by_label else {"failed"}
    return codes


def has_loop(score: ConversationScore) -> bool:
    """Whether any turn looped or a reason has the code `loop`."""
    return any(t.loop for t in score.turn_scores) or any(failure_code(r) == "loop" for r in score.reasons)


def _judge_only(figure: CorrectedFigure | None) -> JudgeOnly | None:
    if figure is None:
        return None
    return JudgeOnly(mean=figure.judge_only, lower=figure.judge_only_lower, upper=figure.judge_only_upper)


def not_corrected_note(c: corrected.CorrectedEstimates) -> str:
    """Why a figure with labels is not called corrected."""
    return (
        f"not corrected: {c.labels} review-sample labels ({c.labels_judge_passed} where the graders "
        f"passed, {c.labels_judge_failed} where they failed); a correction needs {corrected.MIN_LABELS}, "
        f"with labels on both sides"
    )


def _success_rate(
    n: int,
    c: int,
    settings: Settings,
    weighted: tuple[float, float] | None,
    correction: corrected.CorrectedEstimates | None,
    pass_1: KEstimate | None = None,
) -> Estimate:
    """The success rate's headline; `pass_1`, pass^1 over units when there are repeated attempts."""
    if n == 0:
        return Estimate(plugin=None, mean=None, lower=None, upper=None)
    st = settings.stats
    labels = correction.labels if correction is not None else 0
    judge = _judge_only(correction.success if correction is not None else None)
    if correction is not None and correction.enough and correction.success is not None:
        f = correction.success
        return Estimate(
            plugin=f.value,
            mean=f.value,
            lower=f.lower,
            upper=f.upper,
            method="corrected",
            labels=labels,
            judge_only=judge,
        )
    note = not_corrected_note(correction) if correction is not None else None
    if pass_1 is not None and pass_1.method == "tasks" and weighted is None:
        # Attempts at one unit succeed together more often than independent draws would: the pooled Beta
        # interval would be too narrow, so the success rate is pass^1 over units (docs/scoring.md).
        return Estimate(
            plugin=pass_1.value,
            mean=pass_1.value,
            lower=pass_1.lower,
            upper=pass_1.upper,
            method="tasks",
            labels=labels,
            judge_only=judge,
            note=note,
        )
    if weighted is not None:
        n_eff, c_eff = weighted
        post = BetaPosterior(st.prior_alpha + c_eff, st.prior_beta + n_eff - c_eff)
        lo, hi = post.interval(st.level)
        return Estimate(
            plugin=c_eff / n_eff,
            mean=post.mean(),
            lower=lo,
            upper=hi,
            method="weighted",
            labels=labels,
            judge_only=judge,
            note=note,
        )
    post = posterior(n, c, st.prior_alpha, st.prior_beta)
    lo, hi = post.interval(st.level)
    return Estimate(
        plugin=c / n, mean=post.mean(), lower=lo, upper=hi, labels=labels, judge_only=judge, note=note
    )


def _asr(
    scores: Sequence[ConversationScore], settings: Settings, correction: corrected.CorrectedEstimates | None
) -> BootstrapEstimate:
    if correction is not None and correction.asr_enough and correction.asr is not None:
        f = correction.asr
        return BootstrapEstimate(
            value=f.value, lower=f.lower, upper=f.upper, method="corrected", judge_only=_judge_only(f)
        )
    st = settings.stats
    per_unit = unit_credit_means(scores)
    if per_unit is not None and len(per_unit) >= 2:
        # Attempts at one unit are correlated: resample units, as pass^k's interval is over units; the value
        # is the mean over units of their mean credit, as the success rate is pass^1 over units then. (One
        # unit alone, e.g. a task's line: its attempts are draws of that unit, resampled below.)
        value, lo, hi = bootstrap_units_interval(per_unit, st.level, st.bootstrap_resamples, st.seed)
        return BootstrapEstimate(
            value=value,
            lower=None if math.isnan(lo) else lo,
            upper=None if math.isnan(hi) else hi,
            method="units",
            units=len(per_unit),
        )
    credits = np.array([s.asr_credit for s in scores if s.scored and s.asr_credit is not None], dtype=float)
    if credits.size == 0:
        return BootstrapEstimate(value=None, lower=None, upper=None)
    value, lo, hi = bootstrap_mean_interval(credits, st.level, st.bootstrap_resamples, st.seed)
    return BootstrapEstimate(value=value, lower=lo, upper=hi)


def correction_of(
    scores: Sequence[ConversationScore], settings: Settings, ks: Sequence[int] = ()
) -> corrected.CorrectedEstimates | None:
    """The correction of `scores` by the labels of the blind review sample (None with fewer than two)."""
    st = settings.stats
    sums = corrected.sums_of(scores, settings.scoring.credits)
    return corrected.correct(sums, st.level, (st.prior_alpha, st.prior_beta), ks)


def _correction_summary(c: corrected.CorrectedEstimates) -> Correction:
    if c.enough:
        note = (
            f"corrected by {c.labels} labels of the blind review sample ({c.labels_judge_passed} where "
            f"the graders passed, {c.labels_judge_failed} where they failed) over {c.predictions} "
            f"automated verdicts (PPI++)"
        )
    else:
        note = not_corrected_note(c)
    return Correction(
        labels=c.labels,
        predictions=c.predictions,
        labels_judge_passed=c.labels_judge_passed,
        labels_judge_failed=c.labels_judge_failed,
        enough=c.enough,
        min_labels=corrected.MIN_LABELS,
        asr_enough=c.asr_enough,
        min_asr_labels=corrected.MIN_ASR_LABELS,
        lam=c.lam,
        note=note,
        success_rate=c.success,
        asr=c.asr,
        outcome_share=dict(c.outcome_share),
    )


def _tool_correctness(scores: Sequence[ConversationScore]) -> dict[str, float | None]:
    values: dict[str, list[float]] = {d: [] for d in TOOL_DIMENSIONS}
    for s in scores:
        for t in s.turn_scores:
            if t.tool is None:
                continue
            values["selection"].append(t.tool.selection)
            values["parameters"].append(t.tool.parameters)
            values["sequence"].append(t.tool.sequence)
            if t.tool.utilization is not None:
                values["utilization"].append(t.tool.utilization)
            values["overall"].append(t.tool.overall)
            values["binary"].append(1.0 if t.tool.binary else 0.0)
    return {d: (math.fsum(v) / len(v) if v else None) for d, v in values.items()}


def _cost(scores: Sequence[ConversationScore]) -> CostStats:
    costs = np.array([s.cost_usd for s in scores if s.cost_usd is not None], dtype=float)
    budgeted = [
        (s.cost_usd, s.budget_usd) for s in scores if s.cost_usd is not None and s.budget_usd is not None
    ]
    ratio = sum(1 for cost, budget in budgeted if cost > budget) / len(budgeted) if budgeted else None
    if costs.size == 0:
        return CostStats(p50=None, p90=None, p99=None, over_budget_ratio=ratio)
    p50, p90, p99 = np.percentile(costs, [50, 90, 99])
    return CostStats(p50=float(p50), p90=float(p90), p99=float(p99), over_budget_ratio=ratio)


def _failure_modes(scores: Sequence[ConversationScore], examples: int) -> list[FailureMode]:
    counter: Counter[str] = Counter()
    listed: dict[str, list[str]] = defaultdict(list)
    first: dict[str, str] = {}  # the first reason of each mode, with its conversation
    for s in scores:
        codes = failure_modes_of(s)
        counter.update(codes)
        for code in codes:
            if len(listed[code]) < examples:
                listed[code].append(s.conversation_id)
            if code not in first:
                reason = next(
                    (r for r in s.reasons if failure_code(r) == code), code
                )  # label: no reason of its own
                first[code] = f"{s.conversation_id}: {reason}"
    return [
        FailureMode(mode=m, count=n, conversations=listed.get(m, []), example=first.get(m))
        for m, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def _ungraded(scores: Sequence[ConversationScore]) -> dict[str, int]:
    """Conversations outside the graded sample, by the coverage code of why (`other` when none says)."""
    counter: Counter[str] = Counter()
    for s in scores:
        if not s.scored:
            codes = {failure_code(r) for r in s.reasons} & COVERAGE_CODES
            counter.update(codes or {"other"})
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def _rate(x: int, n: int, settings: Settings) -> RateEstimate:
    if n == 0:
        return RateEstimate(count=x, rate=None, mean=None, lower=None, upper=None)
    st = settings.stats
    post = posterior(n, x, st.prior_alpha, st.prior_beta)
    lo, hi = post.interval(st.level)
    return RateEstimate(count=x, rate=x / n, mean=post.mean(), lower=lo, upper=hi)


def failure_rates(scores: Sequence[ConversationScore], settings: Settings) -> dict[str, RateEstimate]:
    """Each kind of failure evidence as a rate over all of `scores`, with a Beta credible interval."""
    found = Counter(e for s in scores for e in set(s.evidence))
    return {e: _rate(found.get(e, 0), len(scores), settings) for e in EVIDENCE}


def group_stats(
    scores: Sequence[ConversationScore], settings: Settings, ks: Sequence[int], examples: int = 0
) -> GroupStats:
    """Every estimate of the report for one set of conversations; `examples` ids listed per failure mode."""
    n, c = counts(scores)
    weighted = effective_counts(graded_by_probability(list(scores)))
    correction = correction_of(scores, settings, ks)
    pass_at, pass_pow, units = k_estimates(scores, settings, ks, weighted, correction)
    pass_1 = pass_pow.get("1")
    if pass_1 is None and units.repeated:
        pass_1 = k_estimates(scores, settings, [1], weighted, correction)[1]["1"]
    outcomes = Counter(s.outcome.value for s in scores)
    graded_by = Counter(g for s in scores if s.scored for g in set(s.graded_by))
    labels = Counter(s.label.value for s in scores if s.label is not None)
    return GroupStats(
        conversations=len(scores),
        scored=n,
        passed=c,
        failure_rates=failure_rates(scores, settings),
        graded_by={g: graded_by[g] for g in GRADERS if graded_by.get(g)},
        sampled={
            "judge": sum(1 for s in scores if s.judge_sampled),
            "review": sum(1 for s in scores if s.review_sampled),
        },
        labels={o.value: labels[o.value] for o in Outcome if labels.get(o.value)},
        success_rate=_success_rate(n, c, settings, weighted, correction, pass_1),
        correction=_correction_summary(correction) if correction is not None else None,
        units=units,
        pass_at_k=pass_at,
        pass_pow_k=pass_pow,
        asr=_asr(scores, settings, correction),
        outcomes={o.value: outcomes.get(o.value, 0) for o in Outcome},
        tool_correctness=_tool_correctness(scores),
        cost=_cost(scores),
        failure_modes=_failure_modes(scores, examples),
        ungraded=_ungraded(scores),
    )


def gate_value(
    scores: Sequence[ConversationScore], settings: Settings, k: int, kind: str, estimate: str
) -> float | None:
    """pass@k (kind 'at') or pass^k ('pow') of `scores` by the named estimate; None without enough data."""
    weighted = effective_counts(graded_by_probability(list(scores)))
    at, pw, _units = k_estimates(scores, settings, [k], weighted, correction_of(scores, settings, [k]))
    return pick((at if kind == "at" else pw)[str(k)], estimate)


def gate_scope(
    scores: Sequence[ConversationScore], settings: Settings
) -> tuple[str, list[ConversationScore], str]:
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


def readiness(scores: Sequence[ConversationScore], settings: Settings) -> Readiness:
    """Readiness tier and release gate (pass@1, pass^3 on core tasks, loops) for `scores`."""
    g = settings.gate
    estimate = g.estimate
    scope, chosen, note = gate_scope(scores, settings)
    n, c = counts(chosen)
    weighted = effective_counts(graded_by_probability(chosen))
    at, pw, units = k_estimates(chosen, settings, [1, 3], weighted, correction_of(chosen, settings, [1, 3]))
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


def build_report(
    scores: Sequence[ConversationScore],
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
    overall = group_stats(scores, settings, ks, examples)
    by_task_groups: dict[str, list[ConversationScore]] = defaultdict(list)
    by_tag_groups: dict[str, dict[str, list[ConversationScore]]] = defaultdict(lambda: defaultdict(list))
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
    )
