"""Drift CUSUM: increments against exact log-ratios, ARL0 against simulation, order-free state, simulator."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from _score_factory import T0, make_score
from agentwatch.exporters.drift import SCALE, DriftParams, arl, design, information_bound, kl, llr
from agentwatch.exporters.estimator import Estimator

from agentwatch.config import Settings


def test_increments_are_the_exact_log_ratios_rounded() -> None:
    d = design(0.8, DriftParams())
    assert d.p1 == pytest.approx((0.8**3 - 0.15) ** (1 / 3))
    assert d.up / SCALE == pytest.approx(math.log((1 - d.p1) / 0.2), abs=0.5 / SCALE)
    assert d.down / SCALE == pytest.approx(math.log(d.p1 / 0.8), abs=0.5 / SCALE)
    assert llr(0.8, 0.68) == pytest.approx((math.log(0.32 / 0.2), math.log(0.68 / 0.8)))
    assert kl(0.68, 0.8) == pytest.approx(0.68 * math.log(0.68 / 0.8) + 0.32 * math.log(0.32 / 0.2))
    assert information_bound(1e6, 0.8, 0.68) == pytest.approx(math.log(1e6) / kl(0.68, 0.8))


def _simulated_run_lengths(p: float, up: int, down: int, h: int, runs: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    s = np.zeros(runs, dtype=np.int64)
    length = np.zeros(runs, dtype=np.int64)
    alive = np.ones(runs, dtype=bool)
    while alive.any():
        x = np.where(rng.random(runs) < p, down, up)
        s = np.where(alive, np.maximum(0, s + x), s)
        length += alive
        alive &= s < h
    return length


def test_threshold_meets_the_arl0_target_by_simulation() -> None:
    params = DriftParams(arl0=2000.0)
    d = design(0.8, params)
    exact = arl(0.8, d.up, d.down, d.h)
    assert exact >= 2000 > arl(0.8, d.up, d.down, d.h - 1)
    runs = _simulated_run_lengths(0.8, d.up, d.down, d.h, 4000, seed=7)
    # Run lengths are roughly geometric: the mean of 4000 has a relative standard error of about 1.6%.
    assert runs.mean() == pytest.approx(exact, rel=0.06)
    # The threshold is the smallest integer one reaching the target: the ARL0 is above it, not far above.
    assert 0.95 * 2000 <= runs.mean() <= 1.3 * 2000
    # Out of control (p1): the Markov chain and the simulation agree too.
    short = _simulated_run_lengths(d.p1, d.up, d.down, d.h, 4000, seed=8)
    assert short.mean() == pytest.approx(arl(d.p1, d.up, d.down, d.h), rel=0.05)


def _estimator(now: list[float], **exporter) -> Estimator:
    settings = Settings(exporter={"drift_baseline_min_conversations": 100, **exporter})
    return Estimator(settings, clock=lambda: now[0])


def test_state_is_independent_of_arrival_order_and_follows_revisions() -> None:
    rng = np.random.default_rng(3)
    scores = []
    for i in range(600):
        t = T0 + i * 12.0
        version = "v2" if i % 2 else "v1"
        p = 0.8 if version == "v1" or i < 300 else 0.5
        scores.append(make_score(f"c{i}", bool(rng.random() < p), version=version, ended_at=t))
    now = [T0 + 600 * 12.0]
    a, b = _estimator(now), _estimator(now)
    for s in scores:
        a.add(s)
    for s in reversed(scores):
        b.add(s)
    da, db = a.drift(), b.drift()
    assert da and da == db
    assert da[("bot", "v2", "refund")].reference_version == "v1"
    # A revision that flips a failure to a pass equals having had the pass in the first place.
    fail = next(s for s in scores if s.version == "v2" and s.passed is False)
    fixed = make_score(fail.conversation_id, True, version="v2", ended_at=fail.ended_at.timestamp(), revision=1)
    assert a.add(fixed)
    c = _estimator(now)
    for s in scores:
        c.add(s if s is not fail else fixed)
    assert a.drift()[("bot", "v2", "refund")].statistic == c.drift()[("bot", "v2", "refund")].statistic


def test_simulator_small_run() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import alerts  # type: ignore[import-not-found]

    settings = Settings()
    sc = next(s for s in alerts.scenarios() if s.name.startswith("pass^3 -0.2, 5/min"))
    r = alerts.delays(sc, settings, runs=2, seed=1, for_minutes=2, max_minutes=600)
    assert r["missed"] == 0 and all(0 < c < 600 for c in r["conversations"])
