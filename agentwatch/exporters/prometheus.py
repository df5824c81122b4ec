"""Which `agentwatch_*` samples the estimator yields: names, types, help and labels of every family.

Names, types and labels are those of docs/metrics.md. `estimate_samples` and `counter_samples` are the one
place that says which samples an estimate and a series' counters yield; the /metrics text (`exposition.py`)
and the OTLP push (`otlp_metrics.py`) both read them, so a series that leaves the windows vanishes from both.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from agentwatch.exporters.buckets import CLASSES, OUTCOMES
from agentwatch.exporters.counters import EstimatorCounters, Histogram, SeriesCounters
from agentwatch.exporters.judge_agreement import JudgeAgreement
from agentwatch.exporters.summary import QUANTILES, SeriesEstimate
from agentwatch.stats.corrected import CorrectedFigure

SERIES = ("agent", "version", "task")
STATS = ("mean", "lower", "upper")

# (name, help, labels after agent/version/task/window) of the gauge families, in exposition order.
GAUGES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("agentwatch_success_rate", "Posterior of the per-conversation pass probability.", ("stat",)),
    (
        "agentwatch_pass_at_k",
        "pass@k: over units with repeated attempts (method tasks) or 1-(1-p)^k of one pooled p (exchangeable).",
        ("k", "method", "stat"),
    ),
    (
        "agentwatch_pass_pow_k",
        "pass^k: over units with repeated attempts (method tasks) or p^k of one pooled p (exchangeable).",
        ("k", "method", "stat"),
    ),
    ("agentwatch_asr", "Agent Success Rate (mean credit) with bootstrap interval.", ("stat",)),
    (
        "agentwatch_asr_units",
        "Units the ASR interval resamples when attempts repeat (its value the mean over units); 0: conversations.",
        (),
    ),
    ("agentwatch_tool_correctness", "Mean tool correctness over tool-graded turns.", ("dimension",)),
    (
        "agentwatch_regression_probability",
        "P(pass^k of this version < pass^k of its baseline - margin).",
        ("k", "baseline_version", "method"),
    ),
    ("agentwatch_window_conversations", "Conversations in the window by outcome.", ("outcome",)),
    ("agentwatch_window_scored", "Scored conversations in the window (n).", ()),
    ("agentwatch_window_passed", "Passed conversations in the window (c).", ()),
    ("agentwatch_window_units", "Units (task instances) with a graded conversation in the window.", ()),
    ("agentwatch_window_repeated_units", "Units with two or more graded conversations in the window.", ()),
    ("agentwatch_outcome_ratio", "Share of scored conversations with that outcome.", ("outcome",)),
    ("agentwatch_failure_ratio", "Share of conversations with that failure mode.", ("mode",)),
    ("agentwatch_scored_ratio", "Graded coverage: graded (scored) / all conversations in the window.", ()),
    ("agentwatch_cost_usd", "Cost quantiles in the window (USD).", ("quantile",)),
    ("agentwatch_over_budget_ratio", "Share of conversations over their cost ceiling.", ()),
    ("agentwatch_duration_seconds", "Duration quantiles in the window (s).", ("quantile",)),
    (
        "agentwatch_failure_evidence_rate",
        "Share of all conversations (graded or not) with that failure evidence: Beta posterior.",
        ("evidence", "stat"),
    ),
    ("agentwatch_sampled_ratio", "Share of all conversations in the judge or review sample.", ("sample",)),
    ("agentwatch_label_ratio", "Share of all conversations carrying a label of that outcome.", ("outcome",)),
    (
        "agentwatch_alert_statistic",
        "CUSUM statistic S of a quality alert rule (nats).",
        ("rule", "reference_version"),
    ),
    (
        "agentwatch_alert_threshold",
        "Threshold h of a quality alert rule from the fleet's false-page budget (nats).",
        ("rule", "reference_version"),
    ),
    (
        "agentwatch_alert_alarm",
        "1 while the rule's alarm is on: S reached h and has not returned to 0 since.",
        ("rule", "reference_version"),
    ),
    (
        "agentwatch_alert_reference",
        "Reference of a quality alert rule: success rate (pass), ASR (asr), else the rate of its bad observation.",
        ("rule", "reference_version"),
    ),
    # Corrected by people's labels (docs/metrics.md, "Corrected estimates"): estimate = corrected |
    # judge_only.
    (
        "agentwatch_corrected_success_rate",
        "Success rate corrected by review-sample labels (PPI++), beside the automated verdicts alone.",
        ("estimate", "stat"),
    ),
    (
        "agentwatch_corrected_pass_pow_k",
        "p^k under exchangeability of the corrected success rate.",
        ("k", "estimate", "stat"),
    ),
    (
        "agentwatch_corrected_pass_at_k",
        "1-(1-p)^k under exchangeability of the corrected success rate.",
        ("k", "estimate", "stat"),
    ),
    (
        "agentwatch_corrected_asr",
        "ASR corrected by review-sample labels (PPI++), beside the automated credits.",
        ("estimate", "stat"),
    ),
    (
        "agentwatch_corrected_outcome_ratio",
        "Share of an outcome class corrected by review-sample labels, beside the automated verdicts alone.",
        ("outcome", "estimate", "stat"),
    ),
    (
        "agentwatch_correction_labels",
        "Review-sample labels on automatically graded conversations, by the automated verdict.",
        ("verdict",),
    ),
    ("agentwatch_correction_predictions", "Conversations with an automated verdict.", ()),
    (
        "agentwatch_correction_enough",
        "1 when the figure rests on enough labels to be called corrected.",
        ("figure",),
    ),
    ("agentwatch_judged_conversations", "Conversations the judge graded.", ("judge",)),
)
# (name as exposed, help, labels after agent/version/task) of the per-series counters since start.
COUNTERS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("agentwatch_conversations_total", "Conversations consumed since start.", ("outcome",)),
    ("agentwatch_failures_total", "Conversations with that failure mode since start.", ("mode",)),
)
# (name, help) of the per-series histograms since start, cost then duration.
HISTOGRAMS: tuple[tuple[str, str], ...] = (
    ("agentwatch_conversation_cost_usd", "Cost per conversation (USD)."),
    ("agentwatch_conversation_duration_seconds", "Duration per conversation (s)."),
)
(
    SUCCESS,
    AT_K,
    POW_K,
    ASR,
    ASR_UNITS,
    TOOL,
    REGRESSION,
    CONVERSATIONS,
    SCORED,
    PASSED,
    UNITS,
    REPEATED_UNITS,
    OUTCOME_RATIO,
    FAILURE_RATIO,
    SCORED_RATIO,
    COST,
    OVER_BUDGET,
    DURATION,
    EVIDENCE_RATE,
    SAMPLED_RATIO,
    LABEL_RATIO,
    ALERT_STATISTIC,
    ALERT_THRESHOLD,
    ALERT_ALARM,
    ALERT_REFERENCE,
    CORRECTED_SUCCESS,
    CORRECTED_POW_K,
    CORRECTED_AT_K,
    CORRECTED_ASR,
    CORRECTED_OUTCOME,
    CORRECTION_LABELS,
    CORRECTION_PREDICTIONS,
    CORRECTION_ENOUGH,
    JUDGED,
) = range(len(GAUGES))


def _fmt(x: float) -> str:
    return repr(float(x)) if x != int(x) else str(x)


_QUANTILE_LABELS = {q: _fmt(q) for q in QUANTILES}

Sample = tuple[int, tuple[str, ...], float]  # (gauge index, extra label values, value)


def estimate_samples(e: SeriesEstimate, with_regression: bool = True) -> Iterator[Sample]:
    """Every gauge sample of one estimate (regression samples only if `with_regression`)."""
    if e.success is not None:
        iv = e.success
        yield from ((SUCCESS, (s,), v) for s, v in zip(STATS, (iv.mean, iv.lower, iv.upper), strict=True))
        method = e.method
        for fam, intervals in ((AT_K, e.pass_at_k), (POW_K, e.pass_pow_k)):
            for k, iv in intervals.items():
                ks = str(k)
                yield fam, (ks, method, "mean"), iv.mean
                yield fam, (ks, method, "lower"), iv.lower
                yield fam, (ks, method, "upper"), iv.upper
    if e.asr is not None:
        iv = e.asr
        yield from ((ASR, (s,), v) for s, v in zip(STATS, (iv.mean, iv.lower, iv.upper), strict=True))
        yield ASR_UNITS, (), e.asr_units
    for dim, v in e.tool.items():
        yield TOOL, (dim,), v
    if with_regression:
        yield from regression_samples(e)
    for outcome, n in e.outcomes.items():
        yield CONVERSATIONS, (outcome,), n
    yield SCORED, (), e.scored
    yield PASSED, (), e.passed
    yield UNITS, (), e.units
    yield REPEATED_UNITS, (), e.repeated_units
    for outcome, v in e.outcome_ratio.items():
        yield OUTCOME_RATIO, (outcome,), v
    for mode, v in e.failure_ratio.items():
        yield FAILURE_RATIO, (mode,), v
    yield SCORED_RATIO, (), e.scored_ratio
    for q, v in e.cost_quantiles.items():
        yield COST, (_QUANTILE_LABELS[q],), v
    if e.over_budget_ratio is not None:
        yield OVER_BUDGET, (), e.over_budget_ratio
    for q, v in e.duration_quantiles.items():
        yield DURATION, (_QUANTILE_LABELS[q],), v
    for code, iv in e.evidence_rate.items():
        yield EVIDENCE_RATE, (code, "mean"), iv.mean
        yield EVIDENCE_RATE, (code, "lower"), iv.lower
        yield EVIDENCE_RATE, (code, "upper"), iv.upper
    for sample, v in e.sampled_ratio.items():
        yield SAMPLED_RATIO, (sample,), v
    for outcome, v in e.label_ratio.items():
        yield LABEL_RATIO, (outcome,), v
    yield from correction_samples(e)


def _pair(family: int, extra: tuple[str, ...], f: CorrectedFigure, corrected: bool) -> Iterator[Sample]:
    """The judge-only figure, and the corrected one when it may be called corrected."""
    if corrected:
        yield family, (*extra, "corrected", "mean"), f.value
        yield family, (*extra, "corrected", "lower"), f.lower
        yield family, (*extra, "corrected", "upper"), f.upper
    yield family, (*extra, "judge_only", "mean"), f.judge_only
    yield family, (*extra, "judge_only", "lower"), f.judge_only_lower
    yield family, (*extra, "judge_only", "upper"), f.judge_only_upper


def correction_samples(e: SeriesEstimate) -> Iterator[Sample]:
    """Corrected figures beside the judge-only ones (from two review-sample labels on), what they rest on, and
    the conversations each judge graded."""
    for judge, n in e.judged.items():
        yield JUDGED, (judge,), n
    if not e.correction_predictions:
        return
    yield CORRECTION_PREDICTIONS, (), e.correction_predictions
    c = e.correction
    if c is None:
        return
    yield CORRECTION_LABELS, ("passed",), c.labels_judge_passed
    yield CORRECTION_LABELS, ("failed",), c.labels_judge_failed
    yield CORRECTION_ENOUGH, ("success",), float(c.enough)
    yield CORRECTION_ENOUGH, ("asr",), float(c.asr_enough)
    if c.success is not None:
        yield from _pair(CORRECTED_SUCCESS, (), c.success, c.enough)
    for outcome, f in c.outcome_share.items():
        yield from _pair(CORRECTED_OUTCOME, (outcome,), f, c.enough)
    if c.asr is not None:
        yield from _pair(CORRECTED_ASR, (), c.asr, c.asr_enough)
    if e.method == "exchangeable":  # over units, pass^k is not corrected (docs/metrics.md)
        for k, f in c.pass_pow_k.items():
            yield from _pair(CORRECTED_POW_K, (str(k),), f, c.enough)
        for k, f in c.pass_at_k.items():
            yield from _pair(CORRECTED_AT_K, (str(k),), f, c.enough)


def regression_samples(e: SeriesEstimate) -> Iterator[Sample]:
    """The samples that change without the window changing: regression probability and the alert rules."""
    for r in e.regression:
        yield REGRESSION, (str(r.k), r.baseline_version, r.method), r.probability
    for a in e.alerts:
        labels = (a.rule, a.reference_version)
        yield ALERT_STATISTIC, labels, a.statistic
        yield ALERT_THRESHOLD, labels, a.threshold
        yield ALERT_ALARM, labels, float(a.alarm)
        yield ALERT_REFERENCE, labels, a.reference


def histogram_buckets(h: Histogram) -> list[tuple[str, float]]:
    """Cumulative (le, count) pairs of a histogram, +Inf last."""
    out: list[tuple[str, float]] = []
    running = 0
    for ub, n in zip((*h.bounds, float("inf")), h.counts, strict=True):
        running += n
        out.append(("+Inf" if ub == float("inf") else _fmt(ub), running))
    return out


def counter_samples(c: SeriesCounters) -> Iterator[Sample]:
    """The counter samples of one series since start: (index into COUNTERS, extra label values, value)."""
    for outcome in OUTCOMES:
        if outcome in c.outcomes:
            yield 0, (outcome,), c.outcomes[outcome]
    for mode, n in sorted(c.modes.items()):
        yield 1, (mode,), n


def agreement_families(found: list[JudgeAgreement], min_kappa: float, min_labels: int) -> list[Metric]:
    """Judge–human agreement per judge and window: kappa with its interval, the labels it rests on, the
    confusion of labels (rows) with verdicts; and the alert's threshold and minimum of labels (from the
    configuration)."""
    kappa = GaugeMetricFamily(
        "agentwatch_judge_agreement_kappa",
        "Cohen's kappa of the judge's verdicts with review-sample labels, with its interval.",
        labels=["judge", "window", "stat"],
    )
    labels = GaugeMetricFamily(
        "agentwatch_judge_agreement_labels",
        "Review-sample labels on conversations the judge graded.",
        labels=["judge", "window"],
    )
    confusion = GaugeMetricFamily(
        "agentwatch_judge_confusion",
        "Review-sample labels (label) against the judge's verdicts (verdict).",
        labels=["judge", "window", "label", "verdict"],
    )
    for a in found:
        labels.add_metric([a.judge, a.window], a.labels)
        if not a.labels:
            continue
        if a.kappa == a.kappa:  # defined (not NaN)
            for stat, v in zip(STATS, (a.kappa, a.lower, a.upper), strict=True):
                kappa.add_metric([a.judge, a.window, stat], v)
        for i, n in enumerate(a.cells):
            confusion.add_metric([a.judge, a.window, OUTCOMES[i // CLASSES], OUTCOMES[i % CLASSES]], n)
    threshold = GaugeMetricFamily(
        "agentwatch_judge_min_kappa", "judge.min_kappa: agreement below it alerts.", value=min_kappa
    )
    needed = GaugeMetricFamily(
        "agentwatch_judge_min_kappa_labels",
        "judge.min_kappa_labels: labels the agreement alert needs.",
        value=min_labels,
    )
    return [kappa, labels, confusion, threshold, needed]


def _counter_by(name: str, documentation: str, label: str, counts: dict[str, int]) -> CounterMetricFamily:
    """A counter family with one sample per key of `counts`, the key as the value of `label`."""
    family = CounterMetricFamily(name, documentation, labels=[label])
    for key, n in counts.items():
        family.add_metric([key], n)
    return family


def health_families(c: EstimatorCounters) -> list[Metric]:
    """Estimator health: consumed, rejected, clamped, folded, revisions, units folded, newest event time."""
    folded = _counter_by(
        "agentwatch_labels_folded",
        "Label values folded into 'other' by the caps, by label.",
        "label",
        c.folded,
    )
    consumed = CounterMetricFamily(
        "agentwatch_scores_consumed", "Scores read by the estimator.", value=c.consumed
    )
    rejected = _counter_by(
        "agentwatch_scores_rejected", "Scores not counted, by reason.", "reason", c.rejected
    )
    clamped = CounterMetricFamily(
        "agentwatch_scores_clamped", "Scores with a future timestamp, clamped to now.", value=c.clamped
    )
    revisions = CounterMetricFamily(
        "agentwatch_score_revisions",
        "Revised scores that replaced an earlier score of the same conversation.",
        value=c.revisions,
    )
    units = CounterMetricFamily(
        "agentwatch_units_folded",
        "Conversations of a unit beyond exporter.max_units, max_units_total or max_unit_entries, each a unit "
        "of its own.",
        value=c.units_folded,
    )
    ignored = _counter_by(
        "agentwatch_score_values_ignored",
        "Costs and durations of counted scores taken as unknown: negative, not finite or past 1e12, by field.",
        "field",
        c.ignored,
    )
    forgotten = CounterMetricFamily(
        "agentwatch_exporter_conversations_forgotten",
        "Conversations forgotten, oldest first, to remember at most exporter.max_conversations.",
        value=c.forgotten,
    )
    families: list[Metric] = [folded, consumed, rejected, clamped, revisions, units, ignored, forgotten]
    if c.last_score_timestamp is not None:
        families.append(
            GaugeMetricFamily(
                "agentwatch_estimator_last_score_timestamp_seconds",
                "Event time of the newest counted score.",
                value=c.last_score_timestamp,
            )
        )
    return families
