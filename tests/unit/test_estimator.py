"""Rolling estimator: posteriors, dedup, sliding windows, aggregate, folding, clamping, vanishing series."""

from __future__ import annotations

import hashlib
import random
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from agentwatch.config import load_settings
from agentwatch.exporters.estimator import Estimator
from agentwatch.exporters.labels import failure_mode, sanitize_label
from agentwatch.wire.schema import ToolScore, TurnScore
from tests.support.metrics_reference import beta_bounds_by_bisection, exact_beta_moment
from tests.support.scores import T0, Clock, find, make_score


def estimator(now: float = T0 + 60, **overrides) -> tuple[Estimator, Clock]:
    clock = Clock(now)
    return Estimator(load_settings(**overrides), clock=clock), clock


def test_thirty_conversations_24_passes_exact_pass_pow_3() -> None:
    est, _ = estimator()
    for i in range(30):
        assert est.add(make_score(f"c{i}", passed=i < 24))
    e = find(est.snapshot(), "1h", task="refund")
    assert (e.scored, e.passed, e.conversations) == (30, 24, 30)
    exact = Fraction(25 * 26 * 27, 32 * 33 * 34)
    assert e.pass_pow_k[3].mean == pytest.approx(float(exact), abs=1e-12)
    lo, hi = beta_bounds_by_bisection(24, 30)
    assert e.pass_pow_k[3].lower == pytest.approx(lo**3, abs=1e-12)
    assert e.pass_pow_k[3].upper == pytest.approx(hi**3, abs=1e-12)
    assert e.success.mean == pytest.approx(25 / 32, abs=1e-15)


def test_estimates_of_many_series_against_exact_moments_and_bisection() -> None:
    rng = random.Random(7)
    est, _ = estimator()
    truth = {}
    for s in range(40):
        n = rng.randint(1, 300)
        c = rng.randint(0, n)
        truth[f"t{s}"] = (n, c)
        for i in range(n):
            est.add(make_score(f"{s}-{i}", passed=i < c, task=f"t{s}"))
    snap = est.snapshot()
    for task, (n, c) in truth.items():
        e = find(snap, "24h", task=task)
        lo, hi = beta_bounds_by_bisection(c, n)
        assert (e.success.lower, e.success.upper) == pytest.approx((lo, hi), abs=1e-12)
        for k in (1, 3, 5):
            pow_mean = exact_beta_moment(1 + c, 1 + n - c, k)
            fail_mean = exact_beta_moment(1 + n - c, 1 + c, k)  # E[(1-p)^k]: 1 - p ~ Beta(1 + n - c, 1 + c)
            assert e.pass_pow_k[k].mean == pytest.approx(float(pow_mean), abs=1e-12)
            assert e.pass_at_k[k].mean == pytest.approx(1 - float(fail_mean), abs=1e-12)
            assert (e.pass_pow_k[k].lower, e.pass_pow_k[k].upper) == pytest.approx((lo**k, hi**k), abs=1e-12)
            assert (e.pass_at_k[k].lower, e.pass_at_k[k].upper) == pytest.approx(
                (1 - (1 - lo) ** k, 1 - (1 - hi) ** k), abs=1e-12
            )


def test_duplicate_conversation_counts_once() -> None:
    est, _ = estimator()
    assert est.add(make_score("same", passed=True))
    assert not est.add(make_score("same", passed=False))
    e = find(est.snapshot(), "1h", task="refund")
    assert (e.scored, e.passed) == (1, 1)
    c = est.counters()
    assert c.rejected["duplicate"] == 1 and c.consumed == 2


def test_windows_slide_with_the_clock() -> None:
    est, clock = estimator(now=T0)
    est.add(make_score("a", ended_at=T0))
    clock.t = T0 + 3599
    assert find(est.snapshot(), "1h", task="refund").scored == 1
    clock.t = T0 + 3600  # the bucket [T0, T0+60) leaves the 1h window
    snap = est.snapshot()
    assert find(snap, "1h", task="refund") is None
    assert find(snap, "24h", task="refund").scored == 1
    est.add(make_score("b", passed=False, ended_at=T0 + 3600))
    snap = est.snapshot()
    assert (find(snap, "1h", task="refund").scored, find(snap, "24h", task="refund").scored) == (1, 2)
    assert find(snap, "1h", task="refund").passed == 0
    assert find(snap, "24h", task="refund").passed == 1


def test_series_vanish_after_the_longest_window_with_their_counters() -> None:
    est, clock = estimator(now=T0)
    est.add(make_score("a", ended_at=T0, version="old"))
    clock.t = T0 + 6 * 86400
    est.add(make_score("b", ended_at=clock.t, version="new"))
    clock.t = T0 + 7 * 86400 + 3 * 3600  # 7d buckets are 2.8 h wide: "a" is gone after at most 7d
    snap = est.snapshot()
    assert {e.version for e in snap} == {"new"}
    assert set(est.counters().series) == {("bot", "new", "refund")}


def test_too_old_rejected_and_future_clamped() -> None:
    est, clock = estimator(now=T0 + 10 * 86400)
    assert not est.add(make_score("old", ended_at=T0))
    assert est.add(make_score("future", ended_at=clock.t + 3600))
    c = est.counters()
    assert c.rejected["too_old"] == 1
    assert c.clamped == 1
    assert c.last_score_timestamp == clock.t  # clamped to now
    assert find(est.snapshot(), "1h", task="refund").scored == 1


def test_missing_end_time_uses_now() -> None:
    est, clock = estimator(now=T0 + 500)
    est.add(make_score("x", ended_at=None))
    assert est.counters().last_score_timestamp == clock.t


def test_aggregate_over_tasks_pools_counts() -> None:
    est, _ = estimator()
    plan = {"refund": (40, 30), "billing": (10, 2), "login": (5, 5)}
    for task, (n, c) in plan.items():
        for i in range(n):
            est.add(make_score(f"{task}{i}", passed=i < c, task=task))
    est.add(make_score("u1", passed=None, task="login"))
    snap = est.snapshot()
    agg = find(snap, "1h", task="*")
    n, c = sum(v[0] for v in plan.values()), sum(v[1] for v in plan.values())
    assert (agg.scored, agg.passed, agg.conversations) == (n, c, n + 1)
    assert agg.pass_pow_k[3].mean == pytest.approx(float(exact_beta_moment(1 + c, 1 + n - c, 3)), abs=1e-12)
    assert agg.pass_pow_k[3].lower == pytest.approx(beta_bounds_by_bisection(c, n)[0] ** 3, abs=1e-12)
    assert agg.scored_ratio == pytest.approx(n / (n + 1))
    assert find(snap, "1h", task="login").scored_ratio == pytest.approx(5 / 6)
    # counters since start exist for real tasks only
    assert ("bot", "v1", "*") not in est.counters().series


def test_unknown_tasks_fold_into_other_with_configured_list() -> None:
    est, _ = estimator(exporter={"tasks": ["refund", "billing"]})
    est.add(make_score("1", task="refund"))
    est.add(make_score("2", task="shipping"))
    est.add(make_score("3", task="returns", passed=False))
    snap = est.snapshot()
    other = find(snap, "1h", task="other")
    assert (other.scored, other.passed) == (2, 1)
    assert find(snap, "1h", task="shipping") is None
    assert est.counters().folded == {
        "agent": 0,
        "version": 0,
        "task": 2,
        "mode": 0,
        "judge": 0,
        "series": 0,
        "rates": 0,
    }


def test_task_cap_folds_new_tasks_beyond_max() -> None:
    est, _ = estimator(exporter={"max_tasks": 2})
    for i, task in enumerate(["a", "b", "c", "d", "a"]):
        est.add(make_score(str(i), task=task))
    tasks = {e.task for e in est.snapshot() if e.window == "1h"}
    assert tasks == {"a", "b", "other", "*"}
    assert est.counters().folded["task"] == 2


def test_label_values_sanitised_and_capped() -> None:
    est, _ = estimator()
    est.add(make_score("1", agent='evil"agent\n{x}', version="1.2.3+build", task="t" * 200))
    e = next(iter(est.snapshot()))
    digest = hashlib.sha256(b'evil"agent\n{x}').hexdigest()[:8]
    assert e.agent == f"evil_agent__x__{digest}"
    assert e.version == "1.2.3+build"
    tasks = {x.task for x in est.snapshot()}
    long_task = next(t for t in tasks if t != "*")
    assert len(long_task) == 64
    assert long_task == "t" * 55 + "_" + hashlib.sha256(b"t" * 200).hexdigest()[:8]
    assert sanitize_label("") == "unknown"
    assert failure_mode("Loop: search called 3x") == "loop"
    assert failure_mode("forbidden-tool: delete_user") == "forbidden_tool"


def test_order_independent_state_replay() -> None:
    scores = [
        make_score(f"c{i}", passed=i % 3 != 0, ended_at=T0 - i * 97.0, task=f"t{i % 4}") for i in range(300)
    ]
    a, _ = estimator()
    b, _ = estimator()
    for s in scores:
        a.add(s)
    shuffled = scores[:]
    random.Random(3).shuffle(shuffled)
    for s in shuffled + shuffled[:50]:  # replay with duplicates
        b.add(s)

    def key(e: Any) -> tuple[str, str]:
        return (e.task, e.window)

    sa, sb = sorted(a.snapshot(), key=key), sorted(b.snapshot(), key=key)
    assert [(e.task, e.window, e.scored, e.passed) for e in sa] == [
        (e.task, e.window, e.scored, e.passed) for e in sb
    ]
    assert [e.pass_pow_k[3] for e in sa] == [e.pass_pow_k[3] for e in sb]
    assert [e.asr for e in sa] == [e.asr for e in sb]


def test_window_aggregates_asr_tools_cost_duration_failures() -> None:
    rng = np.random.default_rng(11)
    est, _ = estimator()
    credits, costs, durations, over, tools = [], [], [], 0, []
    outcomes = ["complete", "partial_correct", "partial_incorrect", "hallucinated", "abandoned"]
    for i in range(200):
        outcome = outcomes[i % 5]
        credit = {"complete": 1.0, "partial_correct": 0.4}.get(outcome, 0.0)
        cost = float(rng.lognormal(-3, 1))
        penalty = min(1.0, max(0.0, (cost - 0.05) / 0.05))
        credit = max(0.0, credit - penalty)
        dur = float(rng.uniform(0.1, 100))
        sel, par = float(rng.uniform()), float(rng.uniform())
        turn = TurnScore(
            index=0,
            tool=ToolScore(
                selection=sel,
                parameters=par,
                sequence=1.0,
                utilization=None,
                overall=(sel + par) / 2,
                binary=sel > 0.5,
                passed=False,
            ),
        )
        tools.append((sel, par, sel > 0.5))
        est.add(
            make_score(
                f"c{i}",
                passed=outcome == "complete",
                outcome=outcome,
                asr_credit=credit,
                cost_usd=cost,
                budget_usd=0.05,
                duration_s=dur,
                turn_scores=[turn],
                reasons=(
                    ["loop: again", "label: set by a person"]
                    if i % 4 == 0
                    else ["hallucination: x", "loop: y"][: i % 2]
                ),
            )
        )
        credits.append(credit)
        costs.append(cost)
        durations.append(dur)
        over += cost > 0.05
    e = find(est.snapshot(), "1h", task="refund")
    assert e.asr.mean == pytest.approx(np.mean(credits), abs=1e-12)
    # scipy's own percentile bootstrap over the conversations, an independent implementation
    ref = sps.bootstrap(
        (np.array(credits),), np.mean, n_resamples=4000, method="percentile", rng=np.random.default_rng(1)
    ).confidence_interval
    assert e.asr.lower == pytest.approx(ref.low, abs=0.02)
    assert e.asr.upper == pytest.approx(ref.high, abs=0.02)
    assert e.asr.lower < e.asr.mean < e.asr.upper
    for q in (0.5, 0.9, 0.99):
        assert e.cost_quantiles[q] == pytest.approx(np.quantile(costs, q, method="inverted_cdf"), rel=0.0101)
        assert e.duration_quantiles[q] == pytest.approx(
            np.quantile(durations, q, method="inverted_cdf"), rel=0.0101
        )
    assert e.over_budget_ratio == pytest.approx(over / 200)
    assert e.tool["selection"] == pytest.approx(np.mean([t[0] for t in tools]), abs=1e-12)
    assert e.tool["parameters"] == pytest.approx(np.mean([t[1] for t in tools]), abs=1e-12)
    assert e.tool["binary"] == pytest.approx(np.mean([t[2] for t in tools]), abs=1e-12)
    assert "utilization" not in e.tool
    assert e.outcome_ratio == {o: pytest.approx(0.2) for o in outcomes}
    assert e.failure_ratio["loop"] == pytest.approx(sum(i % 4 == 0 for i in range(200)) / 200)
    assert e.failure_ratio["hallucination"] == pytest.approx(sum(i % 2 == 1 for i in range(200)) / 200)
    assert "label" not in e.failure_ratio  # informational, not a failure mode


def test_failure_modes_capped_fold_into_other() -> None:
    est, _ = estimator(exporter={"max_failure_modes": 2})
    for i, reason in enumerate(["loop: a", "error: b", "no_answer: c", "judge_failed: d", "loop: e"]):
        est.add(make_score(str(i), passed=False, reasons=[reason]))
    e = find(est.snapshot(), "1h", task="refund")
    assert e.failure_ratio == {
        "loop": pytest.approx(0.4),
        "error": pytest.approx(0.2),
        "other": pytest.approx(0.4),
    }


def test_sanitize_keeps_clean_values_and_suffixes_changed_ones() -> None:
    assert sanitize_label("support-bot_v2.1:prod@eu/x+y") == "support-bot_v2.1:prod@eu/x+y"
    cafe1, cafe2 = sanitize_label("café"), sanitize_label("cafè")
    assert cafe1 != cafe2
    assert cafe1.startswith("caf__") and len(cafe1) == len("caf__") + 8
    assert sanitize_label("café") == cafe1  # stable
    assert sanitize_label("a b") != sanitize_label("a_b") == "a_b"
    assert sanitize_label("x" * 65) != sanitize_label("x" * 66)
    assert len(sanitize_label("x" * 65)) == 64 and sanitize_label("x" * 64) == "x" * 64
    # a value that already looks hash-suffixed, and the reserved fold value, are suffixed too
    assert sanitize_label("caf__" + cafe1[-8:]) not in (cafe1, "caf__" + cafe1[-8:])
    assert sanitize_label("other") != "other"
    assert sanitize_label("*") != "*"


_names = st.text(min_size=1, max_size=80) | st.from_regex(r"[A-Za-z0-9_.:/@+\-]{1,70}", fullmatch=True)


@settings(max_examples=400, deadline=None)
@given(a=_names, b=_names, max_length=st.integers(16, 80))
def test_two_distinct_names_never_share_a_label_value(a: str, b: str, max_length: int) -> None:
    la, lb = sanitize_label(a, max_length), sanitize_label(b, max_length)
    assert (la == lb) == (a == b)
    assert 0 < len(la) <= max_length
    assert la.isascii() and all(c.isalnum() or c in "_.:/@+-" for c in la)


def test_suffix_collision_attempts_stay_distinct() -> None:
    originals = ["café", "cafè", "caf_", "caf__", "other", "unknown", "a" * 64, "a" * 65, "a" * 100]
    originals += ["caf__" + sanitize_label("café")[-8:], sanitize_label("cafè"), sanitize_label("a" * 65)]
    labels = [sanitize_label(o) for o in originals]
    assert len(set(labels)) == len(set(originals))


def test_agent_and_version_caps_fold_into_other_and_count() -> None:
    est, _ = estimator(exporter={"max_agents": 2, "max_versions_per_agent": 2})
    for i, (agent, version) in enumerate(
        [
            ("a", "1"),
            ("b", "1"),
            ("c", "1"),
            ("a", "2"),
            ("a", "3"),
            ("b", "2"),
            ("b", "9"),
            ("c", "2"),
            ("a", "1"),
        ]
    ):
        assert est.add(make_score(str(i), agent=agent, version=version))
    series = {(e.agent, e.version) for e in est.snapshot() if e.window == "1h" and e.task == "refund"}
    assert series == {
        ("a", "1"),
        ("a", "2"),
        ("a", "other"),
        ("b", "1"),
        ("b", "2"),
        ("b", "other"),
        ("other", "1"),
        ("other", "2"),
    }
    assert est.counters().folded == {
        "agent": 2,
        "version": 2,
        "task": 0,
        "mode": 0,
        "judge": 0,
        "series": 0,
        "rates": 0,
    }
    other = find(est.snapshot(), "1h", agent="other", version="1", task="refund")
    assert other.conversations == 1


def test_caps_are_first_come_within_the_longest_window() -> None:
    est, clock = estimator(exporter={"max_agents": 1, "windows": ["1h"]})
    est.add(make_score("1", agent="old", ended_at=T0))
    est.add(make_score("2", agent="new", ended_at=T0))
    assert {e.agent for e in est.snapshot()} == {"old", "other"}
    clock.t = T0 + 3 * 3600  # "old" has left the longest window: the slot is free again
    est.add(make_score("3", agent="new", ended_at=clock.t))
    assert {e.agent for e in est.snapshot()} == {"new"}
    assert est.counters().folded["agent"] == 1


def test_folds_are_exposed_per_label() -> None:
    from agentwatch.exporters.exposition import Exposition

    est, _ = estimator(exporter={"max_versions_per_agent": 1, "max_failure_modes": 1})
    est.add(make_score("1", version="v1", passed=False, reasons=["loop: x"]))
    est.add(make_score("2", version="v2", passed=False, reasons=["error: y"]))
    text = Exposition(lambda: est).render().decode()
    assert 'agentwatch_labels_folded_total{label="version"} 1.0' in text
    assert 'agentwatch_labels_folded_total{label="mode"} 1.0' in text
    assert 'agentwatch_labels_folded_total{label="agent"} 0.0' in text
    assert "agentwatch_tasks_folded" not in text
