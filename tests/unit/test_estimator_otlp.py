"""OTLP metrics push carries the same numbers as /metrics (in-memory metric reader)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from scipy import stats as sps

from agentwatch.config import load_settings
from agentwatch.exporters.estimator import Estimator
from agentwatch.exporters.otlp_metrics import meter_provider
from tests.support.scores import T0, make_score


def points(reader: InMemoryMetricReader) -> dict[str, list]:
    data = reader.get_metrics_data()
    assert data is not None
    out: dict[str, list] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                out.setdefault(m.name, []).extend(m.data.data_points)
    return out


def test_otlp_gauges_and_counters_equal_exact_values() -> None:
    est = Estimator(load_settings(), clock=lambda: T0 + 60)
    for i in range(30):
        est.add(make_score(f"c{i}", passed=i < 24))
    est.add(make_score("c0", passed=False))  # duplicate
    reader = InMemoryMetricReader()
    provider = meter_provider(lambda: est, reader)
    try:
        got = points(reader)
    finally:
        provider.shutdown()
    want = {"agent": "bot", "version": "v1", "task": "refund", "window": "1h", "k": "3"}
    by_stat = {
        p.attributes["stat"]: p.value
        for p in got["agentwatch_pass_pow_k"]
        if all(p.attributes.get(k) == v for k, v in want.items())
    }
    lo, hi = sps.beta.ppf(0.025, 25, 7), sps.beta.ppf(0.975, 25, 7)
    assert by_stat["mean"] == pytest.approx(float(Fraction(25 * 26 * 27, 32 * 33 * 34)), abs=1e-12)
    assert by_stat["lower"] == pytest.approx(lo**3, abs=1e-12)
    assert by_stat["upper"] == pytest.approx(hi**3, abs=1e-12)
    [dup] = [
        p.value for p in got["agentwatch_scores_rejected_total"] if p.attributes["reason"] == "duplicate"
    ]
    assert dup == 1
    [consumed] = [p.value for p in got["agentwatch_scores_consumed_total"]]
    assert consumed == 31
    assert "agentwatch_conversation_cost_usd" not in got  # histograms are /metrics only
