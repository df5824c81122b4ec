"""The judge's metrics (`agentwatch_judge_*`): calls, latency, spend against its cap, failures, sample rates."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from agentwatch.wire.kept import shown

if TYPE_CHECKING:
    from agentwatch.collector.metrics import PipelineStats

MAX_RATE_SERIES = 1000  # series shown by agentwatch_judge_series_rate (first by agent, version, task)


class JudgeMetrics(Collector):
    """Yields the `agentwatch_judge_*` families from a judge runner's stats (calls, latency, spend, failures)."""

    def __init__(self, runner: Any, pipeline: PipelineStats, judge_rate: float) -> None:
        self._runner = runner
        self._pipeline = pipeline
        self._judge_rate = judge_rate

    def collect(self) -> Iterator[Metric]:
        """Fresh judge families."""
        snap = self._runner.stats.snapshot()
        yield CounterMetricFamily(
            "agentwatch_judge_calls",
            "Judge calls made (cache hits and refused calls excluded).",
            snap["calls"],
        )
        yield CounterMetricFamily(
            "agentwatch_judge_cache_hits", "Verdicts served from the cache.", snap["cache_hits"]
        )
        yield CounterMetricFamily(
            "agentwatch_judge_verdicts", "Verdicts that graded a conversation.", snap["graded"]
        )
        fam = CounterMetricFamily("agentwatch_judge_tokens", "Tokens of judge calls.", labels=["direction"])
        fam.add_metric(["input"], snap["input_tokens"])
        fam.add_metric(["output"], snap["output_tokens"])
        yield fam
        yield CounterMetricFamily(
            "agentwatch_judge_spend_usd",
            "Spend on judge calls (USD, from the price table).",
            snap["spend_usd"],
        )
        yield from _spend_against_cap(self._runner.cap)
        fam = CounterMetricFamily(
            "agentwatch_judge_failures",
            "Judged conversations left unscored, by reason (judge_timeout, judge_bad_output, judge_unavailable, "
            "judge_budget_exhausted, judge_tls_certificate).",
            labels=["reason"],
        )
        for reason, n in sorted(snap["failures"].items()):
            fam.add_metric([reason], n)
        yield fam
        hist = HistogramMetricFamily("agentwatch_judge_latency_seconds", "Latency of judge calls (s).")
        buckets = [
            ("+Inf" if ub == float("inf") else repr(float(ub)), n)
            for ub, n in snap["latency_buckets"].items()
        ]
        hist.add_metric([], buckets, snap["latency_sum_s"])
        yield hist
        yield GaugeMetricFamily(
            "agentwatch_judge_pending",
            "Conversations waiting for a verdict.",
            value=self._pipeline.judge_pending,
        )
        yield CounterMetricFamily(
            "agentwatch_judge_pauses",
            "Times consumption paused because too many verdicts were pending.",
            self._pipeline.judge_pauses,
        )
        yield GaugeMetricFamily(
            "agentwatch_judge_sample_rate",
            "Default judge sample rate (sampling.judge_rate; rules may differ per agent/task).",
            value=self._judge_rate,
        )
        rates = GaugeMetricFamily(
            "agentwatch_judge_series_rate",
            "Judge sample rate in force per series (sampling.target_judged_per_hour).",
            labels=["agent", "version", "task"],
        )
        with self._pipeline.lock:
            current = dict(self._pipeline.judge_rates)
        for (agent, version, task), rate in sorted(current.items())[:MAX_RATE_SERIES]:
            # names past wire.kept's length are remembered by digest: shown as such
            rates.add_metric([shown(agent), shown(version), shown(task)], rate)
        yield rates


def _spend_against_cap(cap: Any) -> Iterator[Metric]:
    """Spend over the sliding hour and day as the spend cap counts it, and the caps that are set."""
    hour, day = cap.spent()
    spent = GaugeMetricFamily(
        "agentwatch_judge_spend_window_usd",
        "Judge spend over the sliding hour / 24 hours, as the spend cap counts it.",
        labels=["period"],
    )
    spent.add_metric(["hour"], hour)
    spent.add_metric(["day"], day)
    yield spent
    caps = GaugeMetricFamily(
        "agentwatch_judge_spend_cap_usd",
        "Spend cap of the judge (judge.hourly_usd, judge.daily_usd; absent if not set).",
        labels=["period"],
    )
    for period, value in (("hour", cap.hourly_usd), ("day", cap.daily_usd)):
        if value is not None:
            caps.add_metric([period], value)
    yield caps
