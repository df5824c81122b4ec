"""The rolling estimator over units: the offline report's figures, bounded memory, revisions, expiry."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest

from agentwatch.config import Settings, load_settings
from agentwatch.exporters.estimator import Estimator
from agentwatch.exporters.exposition import Exposition
from agentwatch.report.build import build_report
from tests.support.metrics_reference import exact_beta_moment
from tests.support.scores import T0, find, make_score

# (task, instance) -> outcomes of its attempts, as in a replayed benchmark: tasks differ a lot.
PLAN = {
    ("refund", "r1"): [1, 1, 1, 1],
    ("refund", "r2"): [0, 0, 0, 0],
    ("refund", "r3"): [1, 0, 1, 1],
    ("refund", "r4"): [1, 1, 0],
    ("billing", "b1"): [1, 1, 1, 1],
    ("billing", "b2"): [0, 1, 0, 0],
}


def plan_scores(version: str = "v1", t: float = T0, **extra: Any) -> list:
    return [
        make_score(
            f"{version}-{task}-{inst}-{a}",
            bool(ok),
            version=version,
            task=task,
            instance=inst,
            attempt=a,
            ended_at=t,
            **extra,
        )
        for (task, inst), outcomes in PLAN.items()
        for a, ok in enumerate(outcomes)
    ]


def estimator(**overrides: Any) -> Estimator:
    return Estimator(load_settings(**overrides), clock=lambda: T0 + 60)


def test_series_and_rollup_equal_the_offline_headline() -> None:
    est = estimator()
    scores = plan_scores()
    for s in scores:
        assert est.add(s)
    snap = est.snapshot()
    settings = Settings()
    for task in ("*", "refund", "billing"):
        live = find(snap, "1h", task=task)
        members = [s for s in scores if task in ("*", s.task)]
        offline = build_report(members, settings, settings.stats.ks)
        assert live.method == "tasks" and offline.pass_pow_k["3"].method == "tasks"
        assert live.units == len({(s.task, s.instance) for s in members})
        assert live.repeated_units == live.units
        for k in settings.stats.ks:
            for kind in ("pow", "at"):
                head = (offline.pass_pow_k if kind == "pow" else offline.pass_at_k)[str(k)]
                got = (live.pass_pow_k if kind == "pow" else live.pass_at_k).get(k)
                if head.value is None:
                    assert got is None  # k = 5 > 4 attempts: not identified, no sample
                    continue
                assert (got.mean, got.lower, got.upper) == pytest.approx(
                    (head.value, head.lower, head.upper), abs=1e-12
                )
    # the roll-up's pass^3 is τ-bench's: mean over units with >= 3 attempts of C(c,3)/C(n,3)
    units = [(len(o), sum(o)) for o in PLAN.values()]
    tau = sum(Fraction(math.comb(c, 3), math.comb(n, 3)) for n, c in units) / len(units)
    assert find(snap, "1h", task="*").pass_pow_k[3].mean == pytest.approx(float(tau), abs=1e-15)


def test_without_units_the_pooled_posterior_stays_exchangeable() -> None:
    est = estimator()
    for i in range(20):
        est.add(make_score(f"c{i}", passed=i < 15))
    e = find(est.snapshot(), "1h", task="refund")
    assert e.method == "exchangeable" and (e.units, e.repeated_units) == (20, 0)
    assert e.pass_pow_k[3].mean == pytest.approx(float(exact_beta_moment(16, 6, 3)), abs=1e-12)
    text = Exposition(lambda: est).render().decode()
    series = 'agent="bot",version="v1",task="refund",window="1h"'
    assert f'agentwatch_pass_pow_k{{{series},k="3",method="exchangeable",stat="mean"}}' in text


def test_metrics_carry_the_method_and_the_units() -> None:
    est = estimator()
    for s in plan_scores():
        est.add(s)
    text = Exposition(lambda: est).render().decode()
    assert 'task="*",window="1h",k="3",method="tasks",stat="lower"}' in text
    assert 'agentwatch_window_units{agent="bot",version="v1",task="*",window="1h"} 6' in text
    assert 'agentwatch_window_repeated_units{agent="bot",version="v1",task="refund",window="1h"} 4' in text
    assert "agentwatch_units_folded_total 0" in text


def test_units_beyond_the_bound_count_alone_and_are_counted() -> None:
    est = estimator(exporter={"max_units": 2})
    for s in plan_scores():
        est.add(s)
    assert est.counters().units_folded == sum(len(o) for o in list(PLAN.values())[2:])
    e = find(est.snapshot(), "1h", task="*")
    # r1 and r2 keep their identity (4 attempts each); the 15 other conversations are units of one attempt
    assert e.unit_pairs == ((1, 0, 5), (1, 1, 10), (4, 0, 1), (4, 4, 1))
    assert e.units == 17 and e.repeated_units == 2
    assert "agentwatch_units_folded_total 15" in Exposition(lambda: est).render().decode()


def test_a_revision_moves_its_unit_counts_and_expiry_frees_units() -> None:
    clock = [T0 + 60]
    est = Estimator(load_settings(exporter={"windows": ["1h"]}), clock=lambda: clock[0])
    for s in plan_scores():
        est.add(s)
    first = find(est.snapshot(), "1h", task="refund")
    before, before_1 = first.pass_pow_k[3].mean, first.pass_pow_k[1].mean
    revised = make_score(
        "v1-refund-r2-0", True, task="refund", instance="r2", attempt=0, ended_at=T0, revision=1
    )
    assert est.add(revised)
    after = find(est.snapshot(), "1h", task="refund")
    assert {(n, c): m for n, c, m in after.unit_pairs}[(4, 1)] == 1  # r2: 1 pass of 4 now
    assert after.pass_pow_k[3].mean == before  # C(1,3) = 0: pass^3 of r2 is still 0
    assert after.pass_pow_k[1].mean == pytest.approx(
        before_1 + 0.25 / 4
    )  # r2's pass rate 0 -> 1/4, over 4 units
    clock[0] = T0 + 2 * 3600
    est.add(make_score("late", True, ended_at=clock[0], instance="x", attempt=0))
    e = find(est.snapshot(), "1h", task="refund")
    assert e.units == 1 and e.method == "exchangeable"  # the old units left the window with their buckets
    assert est._caps.units_seen == {("bot", "v1"): {("refund", "x"): clock[0]}}
