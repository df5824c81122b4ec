"""Identity (agent, conversation id), revised scores, failure-evidence rates, sample and label ratios."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from agentwatch.config import load_settings
from agentwatch.exporters.estimator import Estimator
from agentwatch.wire.schema import EVIDENCE
from tests.support.metrics_reference import beta_bounds_by_bisection, beta_quantile_by_bisection
from tests.support.scores import T0, Clock, find, make_score


def estimator(now: float = T0 + 60, **overrides) -> tuple[Estimator, Clock]:
    clock = Clock(now)
    return Estimator(load_settings(**overrides), clock=clock), clock


def _view(e) -> tuple:
    """Everything a window's estimate says (the exposition cache excluded)."""
    return (
        e.agent,
        e.version,
        e.task,
        e.window,
        e.conversations,
        e.scored,
        e.passed,
        e.outcomes,
        e.success,
        e.pass_at_k,
        e.pass_pow_k,
        e.asr,
        e.tool,
        e.outcome_ratio,
        e.failure_ratio,
        e.scored_ratio,
        e.cost_quantiles,
        e.over_budget_ratio,
        e.duration_quantiles,
        e.evidence_rate,
        e.sampled_ratio,
        e.label_ratio,
        [(r.k, r.baseline_version, r.probability) for r in e.regression],
    )


def _snapshot(est: Estimator) -> list[tuple]:
    return sorted((_view(e) for e in est.snapshot()), key=lambda v: v[:4])


# --------------------------------------------------------------------------- revisions


def test_revision_replaces_in_every_window_and_the_aggregate() -> None:
    est, _ = estimator()
    other = [make_score(f"o{i}", passed=i % 2 == 0, task="billing", ended_at=T0 - 30) for i in range(5)]
    for s in other:
        assert est.add(s)
    first = make_score(
        "c1",
        passed=False,
        evidence=["error", "no_answer"],
        reasons=["error: boom"],
        cost_usd=0.5,
        duration_s=30.0,
    )
    revised = make_score(
        "c1",
        passed=True,
        revision=1,
        label="complete",
        review_sampled=True,
        graded_by=["label"],
        cost_usd=0.5,
        duration_s=30.0,
    )
    assert est.add(first)
    assert est.add(revised)
    # The same windows as an estimator that only ever saw the revision.
    ref, _ = estimator()
    for s in [*other, revised]:
        ref.add(s)
    assert _snapshot(est) == _snapshot(ref)
    snap = est.snapshot()
    for window in ("1h", "24h", "7d"):
        for task in ("refund", "*"):
            e = find(snap, window, task=task)
            n_all = 1 if task == "refund" else 6
            assert e.conversations == n_all, (window, task)
            assert e.outcomes["partial_incorrect"] == (0 if task == "refund" else 2)
            assert e.evidence_rate["error"].mean == pytest.approx(1 / (2 + n_all))
            assert e.label_ratio["complete"] == pytest.approx(1 / n_all)
            assert e.failure_ratio.get("error", 0.0) == 0.0
        assert find(snap, window, task="refund").passed == 1
        assert find(snap, window, task="*").passed == 1 + 3
    c = est.counters()
    assert c.revisions == 1
    assert c.rejected["duplicate"] == 0
    # Since-start counters count the conversation once, as it first arrived.
    assert c.series[("bot", "v1", "refund")].outcomes == {"partial_incorrect": 1}
    assert c.series[("bot", "v1", "refund")].cost.count == 1


def test_equal_or_lower_revision_is_a_duplicate_and_changes_nothing() -> None:
    est, _ = estimator()
    assert est.add(make_score("c1", passed=False))
    assert est.add(make_score("c1", passed=True, revision=2))
    before = _snapshot(est)
    assert not est.add(make_score("c1", passed=False, revision=2))
    assert not est.add(make_score("c1", passed=False, revision=1))
    assert not est.add(make_score("c1", passed=False, revision=0))
    assert _snapshot(est) == before
    c = est.counters()
    assert (c.rejected["duplicate"], c.revisions, c.consumed) == (3, 1, 5)
    assert find(est.snapshot(), "1h", task="refund").passed == 1


def test_revisions_chain_keeps_only_the_latest() -> None:
    est, _ = estimator()
    for rev, passed in enumerate([False, True, None, False]):
        assert est.add(make_score("c1", passed=passed, revision=rev))
    e = find(est.snapshot(), "24h", task="*")
    assert (e.conversations, e.scored, e.passed) == (1, 1, 0)
    assert est.counters().revisions == 3


def test_identity_collision_across_agents_is_two_conversations() -> None:
    est, _ = estimator()
    assert est.add(make_score("1", passed=True, agent="alpha"))
    assert est.add(make_score("1", passed=False, agent="beta"))
    assert est.add(make_score("2", passed=True, agent="alpha"))
    assert est.add(make_score("2", passed=True, agent="beta"))
    snap = est.snapshot()
    for agent, (n, c) in {"alpha": (2, 2), "beta": (2, 1)}.items():
        for task in ("refund", "*"):
            e = find(snap, "1h", agent=agent, task=task)
            assert (e.scored, e.passed) == (n, c)
    # A revision of beta's "1" does not touch alpha's "1".
    assert est.add(make_score("1", passed=True, agent="beta", revision=1))
    snap = est.snapshot()
    assert find(snap, "1h", agent="alpha", task="*").passed == 2
    assert find(snap, "1h", agent="beta", task="*").passed == 2
    # The same agent reusing an id under another version is the same conversation.
    assert not est.add(make_score("2", passed=False, agent="alpha", version="v2"))
    assert est.counters().rejected["duplicate"] == 1


def test_revision_applies_only_where_the_original_still_is() -> None:
    est, clock = estimator()
    assert est.add(make_score("c1", passed=False, ended_at=T0, evidence=["error"]))
    clock.t = T0 + 2 * 3600 + 60  # c1's bucket has left the 1h window, not the 24h and 7d ones
    assert est.add(make_score("keep", passed=True, ended_at=T0 + 2 * 3600))
    assert est.add(make_score("c1", passed=True, revision=1, ended_at=None))  # no end time: the original's
    snap = est.snapshot()
    one = find(snap, "1h", task="refund")
    assert (one.conversations, one.scored, one.passed) == (1, 1, 1)  # only "keep"
    assert one.evidence_rate["error"].mean == pytest.approx(1 / 3)  # Beta(1, 2): nothing in the 1h window
    for window in ("24h", "7d"):
        e = find(snap, window, task="refund")
        assert (e.conversations, e.scored, e.passed) == (2, 2, 2)
        assert e.evidence_rate["error"].mean == pytest.approx(1 / 4)


def test_identities_expire_with_the_longest_window() -> None:
    est, clock = estimator()
    est.add(make_score("c1", passed=False, ended_at=T0))
    est.add(make_score("c1", passed=True, revision=1, ended_at=T0))
    assert len(est._seen) == 1
    clock.t = T0 + 7 * 86400 + 3600
    est.snapshot()
    assert est._seen == {} and est._id_heap == [] and est._series == {}
    # A revision arriving after the horizon is too old: it cannot come back as a new conversation.
    assert not est.add(make_score("c1", passed=True, revision=2, ended_at=T0))
    assert est.counters().rejected["too_old"] == 1


def _topic(n: int = 240, seed: int = 5) -> list:
    """A scores topic: conversations over 3 days, then revisions of some of them (once or twice)."""
    rng = random.Random(seed)
    out, later = [], []
    for i in range(n):
        ended = T0 - rng.uniform(0, 3 * 86400)
        agent = ("alpha", "beta")[i % 2]
        cid = str(i // 2)  # every id used by both agents
        evidence = rng.sample(list(EVIDENCE), rng.choice([0, 0, 1, 2]))
        base: dict[str, Any] = {
            "agent": agent,
            "task": rng.choice(["refund", "billing"]),
            "ended_at": ended,
            "evidence": evidence,
            "judge_sampled": rng.random() < 0.3,
            "review_sampled": rng.random() < 0.2,
        }
        out.append(make_score(cid, passed=rng.choice([True, False, None]), **base))
        for rev in range(1, rng.choice([1, 1, 2, 3])):
            later.append(
                make_score(cid, passed=rng.choice([True, False]), revision=rev, label="abandoned", **base)
            )
    return out + later  # revisions arrive hours after their originals


def test_replay_after_restart_gives_the_same_windows() -> None:
    topic = _topic()
    # Live: scores arrive while the clock moves (revisions later than their originals).
    live, clock = estimator(now=T0 - 3 * 86400)
    start = clock.t
    for j, s in enumerate(topic):
        clock.t = max(start + j * 60.0, s.ended_at.timestamp())
        live.add(s)
    clock.t = T0 + 5 * 3600
    # Restart at the same time: replay the whole topic in order, then in another order.
    replay, _ = estimator(now=clock.t)
    for s in topic:
        replay.add(s)
    assert _snapshot(replay) == _snapshot(live)
    assert replay.counters().revisions == live.counters().revisions > 0
    shuffled, _ = estimator(now=clock.t)
    order = topic[:]
    random.Random(1).shuffle(order)
    for s in order + order[:40]:
        shuffled.add(s)
    assert [v[:7] + v[19:22] for v in _snapshot(shuffled)] == [v[:7] + v[19:22] for v in _snapshot(live)]


# --------------------------------------------------------------------------- evidence, samples, labels


def test_failure_evidence_rates_over_all_conversations_with_zero_codes_present() -> None:
    est, _ = estimator(stats={"prior_alpha": 0.5, "prior_beta": 0.5, "level": 0.9})
    specs = [  # (passed, evidence)
        (False, ["error", "no_answer"]),
        (None, ["error"]),
        (None, ["error", "loop"]),
        (None, []),
        (True, []),
        (None, ["unknown_code"]),
        (None, []),
        (True, []),
        (None, []),
        (False, ["loop"]),
    ]
    for i, (passed, evidence) in enumerate(specs):
        assert est.add(make_score(f"c{i}", passed=passed, evidence=evidence))
    e = find(est.snapshot(), "1h", task="refund")
    assert e.conversations == 10 and e.scored == 4
    assert set(e.evidence_rate) == set(EVIDENCE)
    counts = {
        "error": 3,
        "no_answer": 1,
        "loop": 2,
        "hallucination": 0,
        "over_budget": 0,
        "forbidden_tool": 0,
    }
    for code, x in counts.items():
        a, b = 0.5 + x, 0.5 + 10 - x
        iv = e.evidence_rate[code]
        assert iv.mean == pytest.approx(a / (a + b), abs=1e-15), code
        assert iv.lower == pytest.approx(beta_quantile_by_bisection(a, b, 0.05), abs=1e-10), code
        assert iv.upper == pytest.approx(beta_quantile_by_bisection(a, b, 0.95), abs=1e-10), code
        assert 0 < iv.lower < iv.mean < iv.upper < 1


def test_zero_evidence_interval_in_closed_form_with_the_uniform_prior() -> None:
    est, _ = estimator()
    for i in range(25):
        est.add(make_score(f"c{i}", passed=None))
    e = find(est.snapshot(), "7d", task="*")
    # Beta(1, 26): CDF 1 - (1 - x)^26, so the q-quantile is 1 - (1 - q)^(1/26).
    for code in EVIDENCE:
        iv = e.evidence_rate[code]
        assert iv.mean == pytest.approx(1 / 27)
        assert iv.lower == pytest.approx(1 - 0.975 ** (1 / 26), rel=1e-9)
        assert iv.upper == pytest.approx(1 - 0.025 ** (1 / 26), rel=1e-9)
    assert e.success is None  # nothing graded: no success rate, still evidence rates


def test_evidence_rates_are_vectorised_across_series_and_windows() -> None:
    rng = random.Random(3)
    est, _ = estimator()
    truth = {}
    for s in range(30):
        n = rng.randint(1, 80)
        x = rng.randint(0, n)
        truth[f"t{s}"] = (n, x)
        for i in range(n):
            est.add(
                make_score(f"{s}-{i}", passed=None, task=f"t{s}", evidence=["over_budget"] if i < x else [])
            )
    snap = est.snapshot()
    for task, (n, x) in truth.items():
        iv = find(snap, "24h", task=task).evidence_rate["over_budget"]
        lo, hi = beta_bounds_by_bisection(x, n)
        assert (iv.lower, iv.upper) == pytest.approx((lo, hi), abs=1e-10)
        assert math.isclose(iv.mean, (1 + x) / (2 + n))


def test_sample_and_label_ratios_over_all_conversations() -> None:
    est, _ = estimator()
    rows = [  # (passed, judge_sampled, review_sampled, label)
        (True, True, False, None),
        (False, True, True, "abandoned"),
        (None, False, False, "abandoned"),  # negative feedback on a conversation not graded
        (None, False, True, None),
        (None, False, False, "complete"),
        (True, False, True, None),
        (None, False, False, None),
        (None, False, False, None),
    ]
    for i, (passed, judge, review, label) in enumerate(rows):
        est.add(make_score(f"c{i}", passed=passed, judge_sampled=judge, review_sampled=review, label=label))
    e = find(est.snapshot(), "1h", task="refund")
    assert e.sampled_ratio == {"judge": 2 / 8, "review": 3 / 8}
    assert e.label_ratio == {
        "complete": 1 / 8,
        "partial_correct": 0.0,
        "partial_incorrect": 0.0,
        "hallucinated": 0.0,
        "abandoned": 2 / 8,
    }
    assert e.scored_ratio == 3 / 8
    # A late label arrives as a revision: counted once, replacing the unlabelled score.
    est.add(make_score("c6", passed=None, label="abandoned", revision=1))
    e = find(est.snapshot(), "1h", task="refund")
    assert e.label_ratio["abandoned"] == 3 / 8 and e.conversations == 8
