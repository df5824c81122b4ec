"""A prometheus-client `Collector` that builds fresh `agentwatch_*` families from the estimator on every scrape.

One `Estimator.snapshot()` per scrape feeds every family, so a series that leaves the windows stops being
yielded. Names, types and labels are those of docs/metrics.md.
"""

from __future__ import annotations

from collections.abc import Iterator

from agentwatch.exporters.estimator import EstimatorCounters, Histogram
from agentwatch.exporters.summary import QUANTILES, SeriesEstimate
from agentwatch.exporters.windows import OUTCOMES
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

SERIES = ["agent", "version", "task"]
STATS = ("mean", "lower", "upper")


def _fmt(x: float) -> str:
    return repr(float(x)) if x != int(x) else str(x)


_QUANTILE_LABELS = {q: _fmt(q) for q in QUANTILES}


def _gauge(name: str, doc: str, extra: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=SERIES + extra)


def estimate_families(estimates: list[SeriesEstimate]) -> list[Metric]:
    """Gauge families of the rolling estimates."""
    success = _gauge("agentwatch_success_rate", "Posterior of the per-conversation pass probability.",
                     ["window", "stat"])
    at_k = _gauge("agentwatch_pass_at_k", "Posterior of 1-(1-p)^k.", ["window", "k", "stat"])
    pow_k = _gauge("agentwatch_pass_pow_k", "Posterior of p^k.", ["window", "k", "stat"])
    asr = _gauge("agentwatch_asr", "Agent Success Rate (mean credit) with bootstrap interval.", ["window", "stat"])
    tool = _gauge("agentwatch_tool_correctness", "Mean tool correctness over tool-graded turns.",
                  ["window", "dimension"])
    regression = _gauge(
        "agentwatch_regression_probability",
        "P(pass^k of this version < pass^k of its baseline - margin).",
        ["window", "k", "baseline_version"],
    )
    conversations = _gauge("agentwatch_window_conversations", "Conversations in the window by outcome.",
                           ["window", "outcome"])
    scored = _gauge("agentwatch_window_scored", "Scored conversations in the window (n).", ["window"])
    passed = _gauge("agentwatch_window_passed", "Passed conversations in the window (c).", ["window"])
    outcome_ratio = _gauge("agentwatch_outcome_ratio", "Share of scored conversations with that outcome.",
                           ["window", "outcome"])
    failure_ratio = _gauge("agentwatch_failure_ratio", "Share of conversations with that failure mode.",
                           ["window", "mode"])
    scored_ratio = _gauge("agentwatch_scored_ratio", "Scored / all conversations in the window.", ["window"])
    cost = _gauge("agentwatch_cost_usd", "Cost quantiles in the window (USD).", ["window", "quantile"])
    over = _gauge("agentwatch_over_budget_ratio", "Share of conversations over their cost ceiling.", ["window"])
    duration = _gauge("agentwatch_duration_seconds", "Duration quantiles in the window (s).", ["window", "quantile"])
    for e in estimates:
        s = [e.agent, e.version, e.task, e.window]
        if e.success is not None:
            for stat, v in zip(STATS, (e.success.mean, e.success.lower, e.success.upper), strict=True):
                success.add_metric([*s, stat], v)
            for k, iv in e.pass_at_k.items():
                ks = str(k)
                at_k.add_metric([*s, ks, "mean"], iv.mean)
                at_k.add_metric([*s, ks, "lower"], iv.lower)
                at_k.add_metric([*s, ks, "upper"], iv.upper)
            for k, iv in e.pass_pow_k.items():
                ks = str(k)
                pow_k.add_metric([*s, ks, "mean"], iv.mean)
                pow_k.add_metric([*s, ks, "lower"], iv.lower)
                pow_k.add_metric([*s, ks, "upper"], iv.upper)
        if e.asr is not None:
            for stat, v in zip(STATS, (e.asr.mean, e.asr.lower, e.asr.upper), strict=True):
                asr.add_metric([*s, stat], v)
        for dim, v in e.tool.items():
            tool.add_metric([*s, dim], v)
        for r in e.regression:
            regression.add_metric([*s, str(r.k), r.baseline_version], r.probability)
        for outcome, n in e.outcomes.items():
            conversations.add_metric([*s, outcome], n)
        scored.add_metric(s, e.scored)
        passed.add_metric(s, e.passed)
        for outcome, v in e.outcome_ratio.items():
            outcome_ratio.add_metric([*s, outcome], v)
        for mode, v in e.failure_ratio.items():
            failure_ratio.add_metric([*s, mode], v)
        scored_ratio.add_metric(s, e.scored_ratio)
        for q, v in e.cost_quantiles.items():
            cost.add_metric([*s, _QUANTILE_LABELS[q]], v)
        if e.over_budget_ratio is not None:
            over.add_metric(s, e.over_budget_ratio)
        for q, v in e.duration_quantiles.items():
            duration.add_metric([*s, _QUANTILE_LABELS[q]], v)
    return [success, at_k, pow_k, asr, tool, regression, conversations, scored, passed, outcome_ratio,
            failure_ratio, scored_ratio, cost, over, duration]


def _buckets(h: Histogram) -> list[tuple[str, float]]:
    out, running = [], 0
    for ub, n in zip((*h.bounds, float("inf")), h.counts, strict=True):
        running += n
        out.append(("+Inf" if ub == float("inf") else _fmt(ub), running))
    return out


def counter_families(c: EstimatorCounters) -> list[Metric]:
    """Counter and histogram families: per-series counters since start and estimator health."""
    conversations = CounterMetricFamily("agentwatch_conversations", "Conversations consumed since start.",
                                        labels=SERIES + ["outcome"])
    failures = CounterMetricFamily("agentwatch_failures", "Conversations with that failure mode since start.",
                                   labels=SERIES + ["mode"])
    cost = HistogramMetricFamily("agentwatch_conversation_cost_usd", "Cost per conversation (USD).",
                                 labels=SERIES)
    duration = HistogramMetricFamily("agentwatch_conversation_duration_seconds",
                                     "Duration per conversation (s).", labels=SERIES)
    for key, sc in c.series.items():
        labels = list(key)
        for outcome in OUTCOMES:
            if outcome in sc.outcomes:
                conversations.add_metric([*labels, outcome], sc.outcomes[outcome])
        for mode, n in sorted(sc.modes.items()):
            failures.add_metric([*labels, mode], n)
        if sc.cost.count:
            cost.add_metric(labels, _buckets(sc.cost), sc.cost.total)
        if sc.duration.count:
            duration.add_metric(labels, _buckets(sc.duration), sc.duration.total)
    folded = CounterMetricFamily("agentwatch_tasks_folded", "Scores whose task was folded into 'other'.",
                                 value=c.folded)
    consumed = CounterMetricFamily("agentwatch_scores_consumed", "Scores read by the estimator.",
                                   value=c.consumed)
    rejected = CounterMetricFamily("agentwatch_scores_rejected", "Scores not counted, by reason.",
                                   labels=["reason"])
    for reason, n in c.rejected.items():
        rejected.add_metric([reason], n)
    clamped = CounterMetricFamily("agentwatch_scores_clamped", "Scores with a future timestamp, clamped to now.",
                                  value=c.clamped)
    families: list[Metric] = [conversations, failures, cost, duration, folded, consumed, rejected, clamped]
    if c.last_score_timestamp is not None:
        families.append(GaugeMetricFamily("agentwatch_estimator_last_score_timestamp_seconds",
                                          "Event time of the newest counted score.", value=c.last_score_timestamp))
    return families


class EstimatorCollector(Collector):
    """Yields every estimator family, built from one snapshot per scrape."""

    def __init__(self, estimator: object) -> None:
        self._estimator = estimator  # an Estimator, or anything with snapshot() and counters()

    @property
    def estimator(self) -> object:
        """The estimator read on each scrape."""
        return self._estimator

    @estimator.setter
    def estimator(self, value: object) -> None:
        self._estimator = value

    def collect(self) -> Iterator[Metric]:
        """Fresh families for this scrape."""
        est = self._estimator
        yield from estimate_families(est.snapshot())  # type: ignore[attr-defined]
        yield from counter_families(est.counters())  # type: ignore[attr-defined]

    def describe(self) -> list[Metric]:
        """Nothing: keeps registration from running a scrape."""
        return []
