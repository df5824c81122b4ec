"""Regression probability of a version against its baseline, checked by Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest

from agentwatch.config import load_settings
from agentwatch.exporters.estimator import Estimator
from tests.support.scores import T0, find, make_score


def feed(est: Estimator, version: str, n: int, c: int, t: float, task: str = "refund") -> None:
    for i in range(n):
        est.add(make_score(f"{version}-{task}-{i}", passed=i < c, version=version, ended_at=t, task=task))


def monte_carlo(
    new: tuple[int, int], base: tuple[int, int], k: int, margin: float, draws: int = 2_000_000
) -> float:
    rng = np.random.default_rng(5)
    p_new = rng.beta(1 + new[1], 1 + new[0] - new[1], draws)
    p_base = rng.beta(1 + base[1], 1 + base[0] - base[1], draws)
    return float(np.mean(p_new**k < p_base**k - margin))


def test_regression_probability_matches_monte_carlo() -> None:
    now = T0 + 600
    est = Estimator(load_settings(), clock=lambda: now)
    feed(est, "v1", 60, 54, T0)  # baseline: first seen earlier
    feed(est, "v2", 40, 28, T0 + 300)
    snap = est.snapshot()
    new = find(snap, "1h", version="v2", task="refund")
    base = find(snap, "1h", version="v1", task="refund")
    assert base.regression == []  # nothing before v1
    [r] = new.regression
    assert (r.k, r.baseline_version) == (3, "v1")
    assert r.probability == pytest.approx(monte_carlo((40, 28), (60, 54), 3, 0.05), abs=0.003)
    # the aggregate task="*" has the same comparison (one task only)
    [agg] = find(snap, "1h", version="v2", task="*").regression
    assert agg.probability == pytest.approx(r.probability, abs=1e-12)


def test_no_baseline_without_enough_conversations_and_fallback_to_older_version() -> None:
    now = T0 + 900
    est = Estimator(load_settings(exporter={"regression_min_conversations": 30}), clock=lambda: now)
    feed(est, "v1", 50, 45, T0)
    feed(est, "v2", 10, 9, T0 + 100)  # too little data to be a baseline
    feed(est, "v3", 35, 20, T0 + 200)
    snap = est.snapshot()
    assert find(snap, "1h", version="v2", task="refund").regression[0].baseline_version == "v1"
    [r] = find(snap, "1h", version="v3", task="refund").regression
    assert r.baseline_version == "v1"
    assert r.probability == pytest.approx(monte_carlo((35, 20), (50, 45), 3, 0.05), abs=0.003)

    est2 = Estimator(load_settings(exporter={"regression_min_conversations": 30}), clock=lambda: now)
    feed(est2, "v1", 20, 18, T0)
    feed(est2, "v2", 40, 10, T0 + 100)
    assert find(est2.snapshot(), "1h", version="v2", task="refund").regression == []


def test_regression_ks_and_margin_from_config() -> None:
    now = T0 + 600
    est = Estimator(
        load_settings(exporter={"regression_ks": [1, 5]}, gate={"regression_margin": 0.1}), clock=lambda: now
    )
    feed(est, "v1", 80, 70, T0)
    feed(est, "v2", 50, 30, T0 + 10)
    regs = {r.k: r.probability for r in find(est.snapshot(), "1h", version="v2", task="refund").regression}
    assert set(regs) == {1, 5}
    for k in (1, 5):
        assert regs[k] == pytest.approx(monte_carlo((50, 30), (80, 70), k, 0.1), abs=0.003)
