"""Quality alert rules in the estimator: order-free state, revisions, references, the budget's shares, the
populations each rule counts, ASR binarisation."""

from __future__ import annotations

import math
from types import ModuleType

import numpy as np
import pytest
from scipy import stats

from agentwatch.config import AlertsConfig, Settings
from agentwatch.exporters.alert_rules import (
    CHANNELS,
    MONTH_S,
    AlertParams,
    Minutes,
    credit_point,
    observation,
)
from agentwatch.exporters.contribution import Contributions
from agentwatch.exporters.estimator import Estimator
from agentwatch.exporters.labels import LabelCaps
from agentwatch.scorers.sampling import sample_point
from tests.support.scores import T0, make_score


def _estimator(now: list[float], **alerts) -> Estimator:
    settings = Settings(alerts=AlertsConfig.model_validate({"min_reference": 100, **alerts}))
    return Estimator(settings, clock=lambda: now[0])


def _contributions() -> Contributions:
    settings = Settings()
    return Contributions(LabelCaps(settings.exporter), settings.scoring.credits)


def _stream(n: int = 600, seed: int = 3) -> list:
    """v1 steady (p = 0.8, 2% errors), v2 the same until half-way, then p = 0.5 and 20% errors."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        version = "v2" if i % 2 else "v1"
        late = version == "v2" and i >= n // 2
        errors = ["error"] if rng.random() < (0.2 if late else 0.02) else []
        out.append(
            make_score(
                f"c{i}",
                bool(rng.random() < (0.5 if late else 0.8)),
                version=version,
                ended_at=T0 + i * 12.0,
                evidence=errors,
            )
        )
    return out


def test_state_is_independent_of_arrival_order_and_follows_revisions() -> None:
    scores = _stream()
    now = [T0 + 600 * 12.0]
    a, b = _estimator(now), _estimator(now)
    for s in scores:
        a.add(s)
    for s in reversed(scores):
        b.add(s)
    da, db = a.alerts(), b.alerts()
    assert da and da == db
    v2 = {x.rule: x for x in da[("bot", "v2", "refund")]}
    assert {x.reference_version for x in v2.values()} == {"v1"}
    assert v2["pass"].alarm and v2["error"].alarm and v2["asr"].alarm
    assert not any(x.alarm for x in da[("bot", "v1", "refund")])
    # A revision that flips a failure to a pass equals having had the pass in the first place.
    fail = next(s for s in scores if s.version == "v2" and s.passed is False)
    fixed = make_score(
        fail.conversation_id, True, version="v2", ended_at=fail.ended_at.timestamp(), revision=1
    )
    assert a.add(fixed)
    c = _estimator(now)
    for s in scores:
        c.add(s if s is not fail else fixed)
    assert a.alerts()[("bot", "v2", "refund")] == c.alerts()[("bot", "v2", "refund")]


def test_gauges_sit_on_the_longest_window_of_real_series_only() -> None:
    now = [T0 + 600 * 12.0]
    est = _estimator(now)
    for s in _stream():
        est.add(s)
    snap = est.snapshot()
    with_alerts = {(e.series, e.window) for e in snap if e.alerts}
    assert with_alerts == {(("bot", "v1", "refund"), "7d"), (("bot", "v2", "refund"), "7d")}


def test_rules_count_their_own_populations() -> None:
    """Failure evidence is over all conversations, success-type rules over the graded sample."""
    now = [T0 + 3600]
    est = _estimator(now, min_reference=150)
    for i in range(200):  # nobody grades these: only the evidence rules have 200 observations
        est.add(make_score(f"u{i}", None, ended_at=T0 + i, evidence=["no_answer"] if i % 10 == 0 else []))
    for i in range(100):
        est.add(make_score(f"g{i}", i % 5 != 0, ended_at=T0 + 300 + i))
    rules = {x.rule: x for x in est.alerts()[("bot", "v1", "refund")]}
    assert set(rules) == {"error", "no_answer", "loop", "hallucination", "over_budget"}
    # The reference is the posterior mean over all 300 conversations (rounded up on the design grid).
    assert rules["no_answer"].reference == pytest.approx((1 + 20) / (2 + 300), rel=0.011)
    assert rules["no_answer"].reference >= (1 + 20) / (2 + 300)
    est2 = _estimator(now, min_reference=100)
    for i in range(100):
        est2.add(make_score(f"g{i}", i % 5 != 0, ended_at=T0 + 300 + i))
    assert {x.rule for x in est2.alerts()[("bot", "v1", "refund")]} == set(Settings().alerts.rules)


def test_reference_is_the_baseline_with_enough_else_the_series_itself() -> None:
    now = [T0 + 2 * 86400]
    est = _estimator(now, min_reference=300)
    for i in range(400):
        est.add(make_score(f"a{i}", i % 5 != 0, version="v1", ended_at=T0 + i))
    for i in range(320):
        est.add(make_score(f"b{i}", i % 4 != 0, version="v2", ended_at=T0 + 3600 + i))
    for i in range(40):  # a third version: its baseline v2 has enough, itself not
        est.add(make_score(f"c{i}", True, version="v3", ended_at=T0 + 7200 + i))
    got = {key[1]: {x.reference_version for x in alerts} for key, alerts in est.alerts().items()}
    assert got == {"v1": {"v1"}, "v2": {"v1"}, "v3": {"v2"}}


def test_the_budget_is_shared_equally_and_scaled_by_each_series_traffic() -> None:
    now = [T0 + 86400]
    est = _estimator(now, false_pages_per_month=4.0, exporter_instances=2, rules=["pass", "error"])
    for i in range(300):  # v1: 300 conversations over the day before `now`
        est.add(make_score(f"a{i}", i % 5 != 0, version="v1", ended_at=T0 + i * 288.0))
    for i in range(150):  # another task, first seen 3 hours before `now`
        est.add(make_score(f"b{i}", i % 5 != 0, task="billing", ended_at=now[0] - 3 * 3600 + i * 72.0))
    alerts = est.alerts()
    pairs = sum(len(v) for v in alerts.values())
    assert pairs == 4
    for key, found in alerts.items():
        covered = 86400.0 if key[2] == "refund" else 3 * 3600.0
        n = 300 if key[2] == "refund" else 150
        for x in found:
            d = x.design
            assert d.share <= 4.0 / 2 / pairs and d.share > 4.0 / 2 / pairs / 10**0.05
            assert d.observations >= n / covered * MONTH_S
            assert d.observations < n / covered * MONTH_S * 10**0.05 + 1e-6
            assert d.pages <= d.share
    # Leaving a rule out gives its share to the others.
    fewer = _estimator(now, false_pages_per_month=4.0, exporter_instances=2, rules=["pass"])
    for i in range(300):
        fewer.add(make_score(f"a{i}", i % 5 != 0, version="v1", ended_at=T0 + i * 288.0))
    (only,) = fewer.alerts()[("bot", "v1", "refund")]
    assert only.design.share > 4.0 / 2 / 1 / 10**0.05


def test_credit_points_are_uniform_and_independent_of_the_sampling_point() -> None:
    ids = [f"conv-{i}" for i in range(4000)]
    points = np.array([credit_point(c) for c in ids])
    assert stats.kstest(points, "uniform").pvalue > 0.001
    sampled = np.array([sample_point(c) for c in ids])
    assert abs(np.corrcoef(points, sampled)[0, 1]) < 0.06
    # Within a judge sample of 30%, the points are still uniform: the binarised credit keeps its mean there.
    assert stats.kstest(points[sampled < 0.3], "uniform").pvalue > 0.001


def test_binarised_credits_keep_the_mean_credit() -> None:
    credits = np.array([1.0, 0.4, 0.0, 0.7])
    contributions = _contributions()
    earned = np.zeros(len(credits))
    n = 3000
    for i in range(n):
        for j, x in enumerate(credits):
            score = make_score(f"k{i}-{j}", x >= 0.7, asr_credit=float(x))
            v = observation(contributions.of(score, T0, None), credit_point(score.conversation_id))
            assert v[CHANNELS.index("credited")] == 1
            earned[j] += 1 - v[CHANNELS.index("credit_missed")]
    assert earned[0] == n and earned[2] == 0
    for j in (1, 3):  # a binomial count: within 4 standard deviations of n x
        assert abs(earned[j] - n * credits[j]) < 4 * math.sqrt(n * credits[j] * (1 - credits[j]))


def test_observation_channels() -> None:
    contributions = _contributions()
    ungraded = observation(contributions.of(make_score("u", None, evidence=["error", "loop"]), T0, None), 0.5)
    assert dict(zip(CHANNELS, ungraded.tolist(), strict=True)) == {
        "all": 1,
        "graded": 0,
        "failed": 0,
        "credited": 0,
        "credit_missed": 0,
        "abandoned": 0,
        "error": 1,
        "no_answer": 0,
        "loop": 1,
        "hallucination": 0,
        "over_budget": 0,
    }
    abandoned = make_score("a", False, outcome="abandoned", evidence=["over_budget"])
    v = dict(zip(CHANNELS, observation(contributions.of(abandoned, T0, None), 0.5).tolist(), strict=True))
    assert (
        v["graded"],
        v["failed"],
        v["abandoned"],
        v["credited"],
        v["credit_missed"],
        v["over_budget"],
    ) == (1, 1, 1, 1, 1, 1)


def test_minutes_ring_forgets_old_minutes_and_widens_its_counts() -> None:
    ring = Minutes(3)
    one = np.ones(len(CHANNELS), dtype=np.int32)
    ring.add(T0, one, 1, T0)
    ring.add(T0 + 60, one, 1, T0 + 60)
    assert ring.ordered(T0 + 60)[:, 0].tolist() == [0, 1, 1]
    assert ring.ordered(T0 + 180)[:, 0].tolist() == [1, 0, 0]  # T0's minute left the window
    ring.add(T0 - 600, one, 1, T0 + 60)  # too old: ignored
    ring.add(T0 + 60, one, -1, T0 + 60)
    assert ring.ordered(T0 + 60)[:, 0].tolist() == [0, 1, 0]
    full = int(T0 // 60) % 3
    ring.counts[full, 0] = 65_535  # a minute holding the most 16 bits can count
    ring.added[full] = 65_535
    ring.add(T0, one, 1, T0 + 60)
    assert ring.counts.dtype == np.int32 and int(ring.ordered(T0 + 60)[1, 0]) == 65_536


def test_params_from_settings() -> None:
    p = AlertParams.from_settings(Settings(alerts=AlertsConfig(rate_ratios={"error": 2}, window="2h")))
    assert p.minutes == 120
    named = dict(zip(p.rules, p.alternatives, strict=True))
    assert named["error"](0.1) == pytest.approx(2 * 0.1 / (0.9 + 2 * 0.1))
    assert named["loop"](0.1) == pytest.approx(3 * 0.1 / (0.9 + 3 * 0.1))
    assert named["loop"](0.001) == pytest.approx(0.011)  # at least rate_min_increase above
    assert named["pass"](0.2) == pytest.approx(1 - (0.8**3 - 0.15) ** (1 / 3))
    assert named["asr"](0.3) == pytest.approx(0.4)


def _benchmark() -> ModuleType:
    """The fleet simulation of benchmarks/alerts.py (imported on use: it is a script with heavy imports)."""
    from benchmarks import alerts

    return alerts


def test_a_short_fleet_simulation_pages_within_the_budget() -> None:
    """40 unchanged series for 1.5 days with a budget large enough to expect pages: at most the budget (plus
    three Poisson standard deviations); the same fleet designed as if its 2,000-conversation references were
    exact pages well above the estimated-reference design (why the threshold averages over the posterior)."""
    alerts = _benchmark()
    settings = Settings(alerts=AlertsConfig(false_pages_per_month=3000))
    months = 0.05
    budget = 3000 * months
    own = sum(alerts.fleet(settings, 40, months, "own", None, False, 2, 3).pages.values())
    assert own <= budget + 3 * math.sqrt(budget)
    averaged = sum(alerts.fleet(settings, 40, months, "baseline", 2000, False, 2, 3).pages.values())
    plug_in = sum(alerts.fleet(settings, 40, months, "baseline", 2000, True, 2, 3).pages.values())
    assert averaged <= budget + 3 * math.sqrt(budget)
    assert plug_in > averaged + 3 * math.sqrt(plug_in + averaged)


def test_the_delay_simulation_detects_a_tripled_error_rate() -> None:
    alerts = _benchmark()
    sc = next(s for s in alerts.scenarios() if s.rule == "error")
    settings = Settings(
        alerts=AlertsConfig(false_pages_per_month=1 / 50)
    )  # the share of a pair in a fleet of 100
    r = alerts.delays(sc, settings, runs=2, warm_days=0.5, for_minutes=2, seed=1, max_minutes=1440)
    assert r["missed"] == 0 and all(0 < m < 1440 for m in r["minutes"])
