"""Every estimate of the report for one set of conversations (`GroupStats`): success rate, its correction by
people's labels, pass@k and pass^k, ASR, failure evidence rates, tool correctness, cost and failure modes."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from agentwatch.config import Settings
from agentwatch.report.failure_modes import failure_modes, ungraded
from agentwatch.report.model import (
    BootstrapEstimate,
    CorrectedFigure,
    Correction,
    CostStats,
    Estimate,
    GroupStats,
    JudgeOnly,
    KEstimate,
    RateEstimate,
    SuccessMethod,
)
from agentwatch.report.pass_k import counts, k_estimates, unit_credit_means
from agentwatch.stats import corrected
from agentwatch.stats.beta import BetaPosterior, posterior
from agentwatch.stats.bootstrap import (
    CreditSums,
    bootstrap_mean_interval,
    flat_widened,
    units_credit_interval,
)
from agentwatch.stats.inclusion import effective_counts, graded_by_probability
from agentwatch.wire.schema import EVIDENCE, GRADERS, Outcome
from agentwatch.wire.score_view import ScoreView

TOOL_DIMENSIONS = ("selection", "parameters", "sequence", "utilization", "overall", "binary")


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


def _headline(
    figure: CorrectedFigure | KEstimate,
    method: SuccessMethod,
    labels: int,
    judge: JudgeOnly | None,
    note: str | None = None,
) -> Estimate:
    """The success rate taken whole from another figure (its value as plug-in and mean, its interval)."""
    return Estimate(
        plugin=figure.value,
        mean=figure.value,
        lower=figure.lower,
        upper=figure.upper,
        method=method,
        labels=labels,
        judge_only=judge,
        note=note,
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
        return _headline(correction.success, "corrected", labels, judge)
    note = not_corrected_note(correction) if correction is not None else None
    if pass_1 is not None and pass_1.method == "tasks" and weighted is None:
        # Attempts at one unit succeed together more often than independent draws would: the pooled Beta
        # interval would be too narrow, so the success rate is pass^1 over units (docs/scoring.md).
        return _headline(pass_1, "tasks", labels, judge, note)
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
    scores: Sequence[ScoreView], settings: Settings, correction: corrected.CorrectedEstimates | None
) -> BootstrapEstimate:
    if correction is not None and correction.asr_enough and correction.asr is not None:
        f = correction.asr
        return BootstrapEstimate(
            value=f.value, lower=f.lower, upper=f.upper, method="corrected", judge_only=_judge_only(f)
        )
    st = settings.stats
    credits = np.array([s.asr_credit for s in scores if s.scored and s.asr_credit is not None], dtype=float)
    prior = (st.prior_alpha, st.prior_beta)
    per_unit = unit_credit_means(scores)
    if per_unit is not None and len(per_unit) >= 2:
        # Attempts at one unit are correlated: resample units, as pass^k's interval is over units; the value
        # is the mean over units of their mean credit, as the success rate is pass^1 over units then. (One
        # unit alone, e.g. a task's line: its attempts are draws of that unit, resampled below.)
        means, attempts = zip(*per_unit, strict=True)
        value, lo, hi = units_credit_interval(
            means, attempts, CreditSums.of(credits), prior, st.level, st.bootstrap_resamples, st.seed
        )
        return BootstrapEstimate(
            value=value,
            lower=None if math.isnan(lo) else lo,
            upper=None if math.isnan(hi) else hi,
            method="units",
            units=len(per_unit),
        )
    if credits.size == 0:
        return BootstrapEstimate(value=None, lower=None, upper=None)
    value, lo, hi = bootstrap_mean_interval(credits, st.level, st.bootstrap_resamples, st.seed)
    lo, hi = flat_widened(lo, hi, float(credits.sum()), credits.size, prior, st.level)
    return BootstrapEstimate(value=value, lower=lo, upper=hi)


def correction_of(
    scores: Sequence[ScoreView], settings: Settings, ks: Sequence[int] = ()
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


def _tool_correctness(scores: Sequence[ScoreView]) -> dict[str, float | None]:
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


def _cost(scores: Sequence[ScoreView]) -> CostStats:
    costs = np.array([s.cost_usd for s in scores if s.cost_usd is not None], dtype=float)
    budgeted = [
        (s.cost_usd, s.budget_usd) for s in scores if s.cost_usd is not None and s.budget_usd is not None
    ]
    ratio = sum(1 for cost, budget in budgeted if cost > budget) / len(budgeted) if budgeted else None
    if costs.size == 0:
        return CostStats(p50=None, p90=None, p99=None, over_budget_ratio=ratio)
    p50, p90, p99 = np.percentile(costs, [50, 90, 99])
    return CostStats(p50=float(p50), p90=float(p90), p99=float(p99), over_budget_ratio=ratio)


def _rate(x: int, n: int, settings: Settings) -> RateEstimate:
    if n == 0:
        return RateEstimate(count=x, rate=None, mean=None, lower=None, upper=None)
    st = settings.stats
    post = posterior(n, x, st.prior_alpha, st.prior_beta)
    lo, hi = post.interval(st.level)
    return RateEstimate(count=x, rate=x / n, mean=post.mean(), lower=lo, upper=hi)


def failure_rates(scores: Sequence[ScoreView], settings: Settings) -> dict[str, RateEstimate]:
    """Each kind of failure evidence as a rate over all of `scores`, with a Beta credible interval."""
    found = Counter(e for s in scores for e in set(s.evidence))
    return {e: _rate(found.get(e, 0), len(scores), settings) for e in EVIDENCE}


def group_stats(
    scores: Sequence[ScoreView],
    settings: Settings,
    ks: Sequence[int],
    examples: int = 0,
    unit_rows: bool = False,
) -> GroupStats:
    """Every estimate of the report for one set of conversations; `examples` ids listed per failure mode;
    `unit_rows`: each unit's counts listed (the report's own, not its groups': a baseline pairs with those)."""
    n, c = counts(scores)
    weighted = effective_counts(graded_by_probability(list(scores)))
    correction = correction_of(scores, settings, ks)
    pass_at, pass_pow, units = k_estimates(scores, settings, ks, weighted, correction, unit_rows)
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
        failure_modes=failure_modes(scores, examples),
        ungraded=ungraded(scores),
    )
