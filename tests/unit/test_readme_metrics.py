"""Every metric agentwatch exposes is documented in the README and in docs/metrics.md."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import CollectorRegistry
from prometheus_client.registry import Collector

from agentwatch.collector.metrics import PipelineStats, register
from agentwatch.config import load_settings
from agentwatch.exporters.estimator import Estimator
from agentwatch.exporters.exposition import Exposition
from tests.support.scores import T0, make_score

ROOT = Path(__file__).resolve().parents[2]


def _exposed_families() -> set[str]:
    settings = load_settings()
    est = Estimator(settings, clock=lambda: T0 + 60)
    for i in range(40):
        est.add(
            make_score(
                f"a{i}",
                i % 5 != 0,
                version="v1",
                cost_usd=0.01,
                duration_s=2.0,
                reasons=["loop: turn 0"] if i % 7 == 0 else [],
            )
        )
    for i in range(40):
        est.add(
            make_score(f"b{i}", i % 3 != 0, version="v2", ended_at=T0 + 30, cost_usd=0.02, budget_usd=0.015)
        )
    registry = CollectorRegistry()
    register(PipelineStats(), registry)
    registry.register(_review_metrics())
    text = Exposition(lambda: est, registry).render().decode()
    return set(re.findall(r"^# TYPE (agentwatch_\w+) ", text, re.MULTILINE))


def _review_metrics() -> Collector:
    """The review service's families over an in-memory SQLite store with one conversation in the queue."""
    import time

    from agentwatch.review.metrics import ReviewMetrics, ReviewStats
    from agentwatch.review.store import Store
    from tests.support.review import conversation, judged, record, scored

    store = Store("sqlite://")
    conv = conversation("in-queue")
    store.ingest(record(conv, scored(conv, verdict=judged())), time.time(), 86400)
    return ReviewMetrics(store, ReviewStats(), lambda: 0)


def test_every_exposed_metric_is_documented():
    families = _exposed_families()
    assert len(families) >= 30  # estimates, counters, histograms, estimator and pipeline health
    readme = (ROOT / "README.md").read_text()
    metrics_doc = (ROOT / "docs" / "metrics.md").read_text()
    missing_readme = sorted(f for f in families if f not in readme)
    missing_doc = sorted(f for f in families if f not in metrics_doc)
    assert missing_readme == []
    assert missing_doc == []
