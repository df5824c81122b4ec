"""Turn window totals into estimates: Beta posteriors, pass@k / pass^k, ASR, tool means, quantiles.

The Beta quantiles and posterior means of all series come from one call each of `agentwatch.stats`, vectorised
over the series. The ASR interval is `agentwatch.stats.bootstrap.bootstrap_counts_interval` over the window's distinct
(rounded) credit values and their counts: the same distribution as resampling the conversations. When some unit
has two or more credited attempts, ASR is the offline report's over units instead: the mean over units of each
unit's mean credit, its interval the expanded bootstrap over units (`bootstrap_units_interval`, drawn as
multinomial counts over the distinct unit means) widened to what the units' attempts alone give
(`units_widened`: the credits' variance from the window's credit sketch, the units' attempts from their counts).

Failure evidence rates are over all conversations in the window (graded or not): for x conversations with a code
among n, the posterior Beta(α + x, β + n − x) with the stats prior, every code of `EVIDENCE` (zeros included),
all series and codes in one `beta_interval` call as well.

pass@k and pass^k: when some unit of the window has two or more graded attempts, over units
(`agentwatch.stats.units`, the offline report's estimator: τ-bench's value and its interval; a k no unit has
attempted k times has no estimate), memoised on the window's unit histogram; otherwise under exchangeability,
the Beta posterior of one pooled success probability (posterior mean and transformed quantiles).

When the window's graded conversations were sampled at different probabilities (a judge rate that changed, a
policy's conversations beside the judge sample's), the Beta posterior is on Kish's effective counts of the
Hájek-weighted share (`agentwatch.stats.inclusion.effective_counts`), and so is every figure derived from it. A
window whose automatically graded conversations include review-sample labels gets the corrected estimates
(`agentwatch.stats.corrected.correct`, the offline report's), computed only when the window changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentwatch.exporters.buckets import (
    ASR_RESOLUTION,
    EVIDENCE,
    ONE_ATTEMPT,
    OUTCOMES,
    SAMPLES,
    TOOL_DIMENSIONS,
    UNSCORED,
    Bucket,
    sketch_quantile,
)
from agentwatch.exporters.memo import memo
from agentwatch.stats.beta import beta_interval, beta_power_means
from agentwatch.stats.bootstrap import (
    CreditSums,
    bootstrap_counts_interval,
    bootstrap_units_interval,
    flat_widened,
    units_widened,
)
from agentwatch.stats.corrected import CorrectedEstimates, correct
from agentwatch.stats.inclusion import effective_counts
from agentwatch.stats.pass_k import pass_at_k_plugin
from agentwatch.stats.units import Kind, TaskEstimate, UnitCounts, UnitsPosterior

QUANTILES: tuple[float, ...] = (0.5, 0.9, 0.99)


@dataclass(slots=True, frozen=True)
class Interval:
    """A point estimate with an equal-tailed interval."""

    mean: float
    lower: float
    upper: float


@dataclass(slots=True, frozen=True)
class Regression:
    """Probability that pass^k of this version is below its baseline's by more than the margin."""

    k: int
    baseline_version: str
    probability: float
    method: str = "exchangeable"  # "tasks": over both versions' units; "exchangeable": pooled Beta posteriors


@dataclass(slots=True)
class SeriesEstimate:
    """Every rolling estimate of one series (agent, version, task) over one window. Treat as read-only."""

    agent: str
    version: str
    task: str
    window: str
    conversations: int
    scored: int
    passed: int
    outcomes: dict[str, int]
    success: Interval | None  # None when nothing is scored
    pass_at_k: dict[int, Interval]
    pass_pow_k: dict[int, Interval]
    asr: Interval | None
    tool: dict[str, float]
    outcome_ratio: dict[str, float]
    failure_ratio: dict[str, float]
    scored_ratio: float
    cost_quantiles: dict[float, float]
    over_budget_ratio: float | None
    duration_quantiles: dict[float, float]
    evidence_rate: dict[str, Interval] = field(default_factory=dict)  # every code of EVIDENCE, over all
    sampled_ratio: dict[str, float] = field(default_factory=dict)  # judge / review sample share of all
    label_ratio: dict[str, float] = field(
        default_factory=dict
    )  # share of all carrying a label of that outcome
    method: str = "exchangeable"  # pass@k / pass^k over units ("tasks") or of one pooled p ("exchangeable")
    units: int = 0  # units with a graded conversation in the window (a conversation without one counts alone)
    repeated_units: int = 0  # units with two or more graded conversations
    asr_units: int = 0  # units the ASR interval resamples (0: it resamples conversations)
    unit_pairs: tuple[tuple[int, int, int], ...] = ()  # (n, c, units) histogram, when method is "tasks"
    effective: tuple[float, float] | None = None  # Kish's (n, c) when sampled at different probabilities
    correction: CorrectedEstimates | None = (
        None  # with two or more review-sample labels on automated verdicts
    )
    correction_predictions: int = 0  # conversations with an automated verdict
    judged: dict[str, int] = field(default_factory=dict)  # judge -> conversations it graded in the window
    regression: list[Regression] = field(default_factory=list)
    alerts: tuple[
        Any, ...
    ] = ()  # exporters.alert_rules.Alert of a real series, on its longest-window estimate
    rendered: tuple[str, ...] | None = field(default=None, repr=False, compare=False)  # exposition cache

    @property
    def series(self) -> tuple[str, str, str]:
        """(agent, version, task)."""
        return (self.agent, self.version, self.task)

    @property
    def counts(self) -> tuple[float, float]:
        """(n, c) of the pooled posterior: Kish's effective counts when weighted, else scored and passed."""
        return self.effective if self.effective is not None else (self.scored, self.passed)


@dataclass(slots=True, frozen=True)
class StatsParams:
    """The statistics settings the summaries need."""

    prior_alpha: float = 1.0
    prior_beta: float = 1.0
    level: float = 0.95
    ks: tuple[int, ...] = (1, 3, 5)
    resamples: int = 1000
    seed: int = 0


def _asr(total: Bucket, p: StatsParams) -> tuple[Interval | None, int]:
    """ASR and its interval, and the units that interval resamples (0: over conversations). Attempts at one unit
    are correlated, so with repeated attempts the value is the mean over units of their mean credit and the
    interval resamples units, as the offline report's (`report.group_stats`)."""
    if not total.asr:
        return None, 0
    per_unit = total.unit_credit_means()
    units = sum(per_unit[0].values()) if per_unit is not None else 0
    n = float(sum(total.asr.values()))
    prior = (p.prior_alpha, p.prior_beta)
    keys = np.fromiter(total.asr.keys(), dtype=np.float64, count=len(total.asr))
    counts = np.fromiter(total.asr.values(), dtype=np.float64, count=len(total.asr))
    values = keys / ASR_RESOLUTION
    if per_unit is not None and units >= 2:
        histogram = tuple(sorted(per_unit[0].items()))
        found = _asr_over_units(histogram, p.level, p.resamples, p.seed)
        # as `units_credit_interval`: at least what the units' attempts alone give, and where every unit's mean
        # credit is the same, what the conversations' credits give
        sums = CreditSums(n, float(total.asr_sum), float(values**2 @ counts))
        lo, hi = units_widened(
            found.mean, (found.lower, found.upper), units, per_unit[1], sums, prior, p.level
        )
        return Interval(found.mean, lo, hi), units
    mean = float(total.asr_sum / n)
    lo, hi = bootstrap_counts_interval(values, counts, p.level, p.resamples, p.seed)
    shift = mean - float(values @ counts / n)  # undo the rounding of credits in the bounds
    lo, hi = min(1.0, max(0.0, lo + shift)), min(1.0, max(0.0, hi + shift))
    return Interval(mean, *flat_widened(lo, hi, float(total.asr_sum), n, prior, p.level)), 0


@memo(4096)
def _asr_over_units(
    histogram: tuple[tuple[float, int], ...], level: float, resamples: int, seed: int
) -> Interval:
    """ASR over the units of a histogram {unit mean credit: units} (memoised: windows share histograms)."""
    means = np.fromiter((m for m, _ in histogram), dtype=np.float64, count=len(histogram))
    units = np.fromiter((n for _, n in histogram), dtype=np.float64, count=len(histogram))
    return Interval(*bootstrap_units_interval(means, level, resamples, seed, counts=units))


@memo(4096)
def over_units(
    pairs: tuple[tuple[int, int, int], ...], ks: tuple[int, ...], level: float
) -> dict[Kind, dict[int, TaskEstimate]]:
    """pass^k ("pow") and pass@k ("at") over the units of a histogram (memoised: windows share histograms)."""
    return UnitsPosterior(UnitCounts(pairs)).estimates(ks, level)


def _intervals(found: dict[int, TaskEstimate]) -> dict[int, Interval]:
    return {
        k: Interval(e.value, e.lower, e.upper)
        for k, e in found.items()
        if e.value is not None and e.lower is not None and e.upper is not None
    }


def summarise(items: list[tuple[tuple[str, str, str], str, Bucket]], p: StatsParams) -> list[SeriesEstimate]:
    """Estimates for each (series, window name, window total); Beta parts vectorised over all items."""
    if not items:
        return []
    effective = [
        effective_counts(t.graded_by_probability()) if len(t.graded_p) > 1 else None for _, _, t in items
    ]
    n = np.array([t.scored if e is None else e[0] for (_, _, t), e in zip(items, effective, strict=True)])
    c = np.array([t.passed if e is None else e[1] for (_, _, t), e in zip(items, effective, strict=True)])
    a = p.prior_alpha + c
    b = p.prior_beta + n - c
    lo, hi = beta_interval(a, b, p.level)
    pow_means, fail_means = beta_power_means(a, b, max(p.ks))  # row k-1: E[p^k], E[(1-p)^k]
    at_bounds = {k: (pass_at_k_plugin(lo, k), pass_at_k_plugin(hi, k)) for k in p.ks}
    # Failure evidence: rows = items, columns = EVIDENCE codes, over all conversations of the window.
    total = np.array([t.total for _, _, t in items], dtype=np.float64)[:, None]
    x = np.array([t.evidence for _, _, t in items], dtype=np.float64).reshape(len(items), len(EVIDENCE))
    ea = p.prior_alpha + x
    eb = p.prior_beta + total - x
    elo, ehi = beta_interval(ea, eb, p.level)
    emean = ea / (ea + eb)
    out: list[SeriesEstimate] = []
    for j, (key, window, t) in enumerate(items):
        success = None
        at_k: dict[int, Interval] = {}
        pow_k: dict[int, Interval] = {}
        if t.scored > 0:
            low, high = float(lo[j]), float(hi[j])
            success = Interval(float(a[j] / (a[j] + b[j])), low, high)
            for k in p.ks:
                pow_k[k] = Interval(float(pow_means[k - 1, j]), low**k, high**k)
                at_lo, at_hi = at_bounds[k]
                at_k[k] = Interval(float(1.0 - fail_means[k - 1, j]), float(at_lo[j]), float(at_hi[j]))
        est = _one(key, window, t, success, at_k, pow_k, p)
        if t.scored > 0 and t.repeated:
            units = UnitCounts.from_histogram(t.unit_histogram())
            found = over_units(units.pairs, p.ks, p.level)
            est.pass_pow_k, est.pass_at_k = _intervals(found["pow"]), _intervals(found["at"])
            est.method, est.unit_pairs = "tasks", units.pairs
        est.units = len(t.units) + t.alone
        est.repeated_units = sum(m for packed, m in (t.pairs or {}).items() if packed >= 2 * ONE_ATTEMPT)
        est.evidence_rate = {
            code: Interval(float(emean[j, i]), float(elo[j, i]), float(ehi[j, i]))
            for i, code in enumerate(EVIDENCE)
        }
        est.effective = effective[j]
        if t.corrections:
            est.correction_predictions = t.corrections.predictions
            est.correction = correct(t.corrections, p.level, (p.prior_alpha, p.prior_beta), p.ks)
        if t.judges:
            est.judged = {judge: row[-1] for judge, row in t.judges.items()}
        out.append(est)
    return out


def _one(
    key: tuple[str, str, str],
    window: str,
    t: Bucket,
    success: Interval | None,
    at_k: dict[int, Interval],
    pow_k: dict[int, Interval],
    p: StatsParams,
) -> SeriesEstimate:
    scored_outcomes = t.total - t.outcomes[UNSCORED]
    outcome_ratio = (
        {name: t.outcomes[i] / scored_outcomes for i, name in enumerate(OUTCOMES) if i != UNSCORED}
        if scored_outcomes > 0
        else {}
    )
    tool = {
        dim: t.tool_sums[i] / t.tool_counts[i]
        for i, dim in enumerate(TOOL_DIMENSIONS)
        if t.tool_counts[i] > 0
    }
    cost_q = {q: v for q in QUANTILES if (v := sketch_quantile(t.cost, q)) is not None}
    dur_q = {q: v for q in QUANTILES if (v := sketch_quantile(t.duration, q)) is not None}
    asr, asr_units = _asr(t, p)
    return SeriesEstimate(
        agent=key[0],
        version=key[1],
        task=key[2],
        window=window,
        conversations=t.total,
        scored=t.scored,
        passed=t.passed,
        outcomes=dict(zip(OUTCOMES, t.outcomes, strict=True)),
        success=success,
        pass_at_k=at_k,
        pass_pow_k=pow_k,
        asr=asr,
        asr_units=asr_units,
        tool=tool,
        outcome_ratio=outcome_ratio,
        failure_ratio={m: n / t.total for m, n in sorted(t.modes.items())},
        scored_ratio=t.scored / t.total,
        cost_quantiles=cost_q,
        over_budget_ratio=t.over_budget / t.budgeted if t.budgeted else None,
        duration_quantiles=dur_q,
        sampled_ratio=dict(
            zip(SAMPLES, (t.judge_sampled / t.total, t.review_sampled / t.total), strict=True)
        ),
        label_ratio={name: t.labels[i] / t.total for i, name in enumerate(OUTCOMES) if i != UNSCORED},
    )
