"""ASR over units when attempts repeat: the bootstrap over units against a direct cluster bootstrap written
here, its coverage at fixed truths, and the report that uses it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from agentwatch.config import Settings
from agentwatch.report.build import build_report
from agentwatch.stats.bootstrap import bootstrap_mean_interval, bootstrap_units_interval, expanded_tail
from agentwatch.wire.schema import ConversationScore, Outcome, OutcomeSource


def _direct_cluster_bootstrap(
    conversations: list[tuple[int, float]], level: float, resamples: int, seed: int
) -> tuple[float, float, float]:
    """A cluster bootstrap over (unit, credit) pairs, written out: draw units with replacement, keep every
    conversation of each drawn unit, take the mean over the drawn units of their mean credit; the tails of the
    percentile interval expanded with scipy.stats' t and normal distributions."""
    units: dict[int, list[float]] = {}
    for unit, credit in conversations:
        units.setdefault(unit, []).append(credit)
    ids = sorted(units)
    m = len(ids)
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(resamples):
        drawn = [ids[int(i)] for i in rng.integers(0, m, size=m)]
        means.append(sum(sum(units[u]) / len(units[u]) for u in drawn) / m)
    alpha = (1 - level) / 2
    z = math.sqrt(m / (m - 1)) * stats.t.ppf(1 - alpha, m - 1)
    tail = stats.norm.cdf(-z)
    value = sum(sum(c) / len(c) for c in units.values()) / m
    lo, hi = np.quantile(means, [tail, 1 - tail])
    return value, float(lo), float(hi)


def _attempts(rng: np.random.Generator, m: int, n: int, a: float, b: float) -> list[tuple[int, float]]:
    """m units with Beta(a, b) success probabilities, n attempts each; credit 1 for a success, 0.4 for a
    partial success (a third of the failures), else 0."""
    out = []
    for u, p in enumerate(rng.beta(a, b, size=m)):
        for _ in range(n):
            ok = rng.random() < p
            out.append((u, 1.0 if ok else (0.4 if rng.random() < 1 / 3 else 0.0)))
    return out


def _unit_means(conversations: list[tuple[int, float]]) -> list[float]:
    units: dict[int, list[float]] = {}
    for unit, credit in conversations:
        units.setdefault(unit, []).append(credit)
    return [sum(c) / len(c) for c in units.values()]


@pytest.mark.parametrize(("m", "n"), [(10, 4), (25, 4), (80, 2)])
def test_the_bootstrap_over_units_agrees_with_a_direct_cluster_bootstrap(m: int, n: int) -> None:
    conversations = _attempts(np.random.default_rng(m), m, n, 0.8, 1.2)
    value, lo, hi = bootstrap_units_interval(_unit_means(conversations), 0.95, 20_000, seed=1)
    ref_value, ref_lo, ref_hi = _direct_cluster_bootstrap(conversations, 0.95, 20_000, seed=2)
    assert value == pytest.approx(ref_value, abs=1e-12)
    # two independent sets of 20,000 resamples: their quantiles differ by Monte Carlo error only
    assert lo == pytest.approx(ref_lo, abs=0.012) and hi == pytest.approx(ref_hi, abs=0.012)
    assert lo < value < hi


def test_the_expanded_tail_and_its_edges() -> None:
    for m in (2, 5, 25, 1000):
        z = math.sqrt(m / (m - 1)) * stats.t.ppf(0.975, m - 1)
        assert expanded_tail(m, 0.95) == pytest.approx(stats.norm.cdf(-z), rel=1e-9)
    assert expanded_tail(10_000, 0.95) == pytest.approx(0.025, abs=1e-4)  # plain percentile for many units
    value, lo, hi = bootstrap_units_interval([0.25], 0.95, 100)
    assert value == 0.25 and math.isnan(lo) and math.isnan(hi)  # one unit: nothing about how units differ
    assert bootstrap_units_interval([1.0, 1.0, 1.0], 0.95, 100) == (1.0, 1.0, 1.0)
    assert all(math.isnan(x) for x in bootstrap_units_interval([], 0.95, 100))


@pytest.mark.parametrize(
    ("m", "n", "a", "b"), [(10, 4, 2.0, 5.0), (25, 4, 0.5, 0.5), (25, 2, 0.3, 1.5), (60, 4, 2.0, 2.0)]
)
def test_coverage_at_fixed_truths(m: int, n: int, a: float, b: float) -> None:
    """Units' success probabilities drawn from Beta(a, b): the truth, the mean credit over the population of
    units, is E[p] + 0.4 · (1 − E[p]) / 3. 95% intervals cover it 92–97.5% of the time in 800 repetitions
    (the plain percentile bootstrap over 10 units covers 89–90%)."""
    rng = np.random.default_rng(100 * m + n)
    truth = a / (a + b) + 0.4 * (1 - a / (a + b)) / 3
    reps = 800
    covered = 0
    for rep in range(reps):
        _, lo, hi = bootstrap_units_interval(_unit_means(_attempts(rng, m, n, a, b)), 0.95, 1000, seed=rep)
        covered += lo <= truth <= hi
    assert 0.92 <= covered / reps <= 0.975, covered / reps


def _score(cid: str, task: str, attempt: int | None, credit: float) -> ConversationScore:
    outcome = Outcome.COMPLETE if credit == 1.0 else Outcome.PARTIAL_INCORRECT
    return ConversationScore(
        conversation_id=cid,
        agent="a",
        version="1",
        task=task,
        attempt=attempt,
        turns=1,
        passed=credit == 1.0,
        outcome=outcome,
        outcome_source=OutcomeSource.RULES,
        asr_credit=credit,
    )


def test_the_report_gives_asr_over_units_when_attempts_repeat() -> None:
    # 30 tasks, 4 attempts each, tasks either always or never succeed: a strong correlation within tasks
    scores = [
        _score(f"t{t}-{i}", f"t{t}", i, 1.0 if t % 3 == 0 else 0.0) for t in range(30) for i in range(4)
    ]
    report = build_report(scores, Settings())
    asr = report.asr
    assert asr.method == "units" and asr.units == 30 and asr.value == pytest.approx(1 / 3)
    assert asr.lower is not None and asr.upper is not None
    # over conversations the interval pretends to 120 independent draws: about half as wide
    _, lo, hi = bootstrap_mean_interval([s.asr_credit or 0.0 for s in scores], 0.95, 1000, 0)
    assert asr.upper - asr.lower > 1.7 * (hi - lo)
    # the direct cluster bootstrap of the same conversations, to within the bootstrap's noise
    direct = _direct_cluster_bootstrap(
        [(int(s.task[1:]), s.asr_credit or 0.0) for s in scores], 0.95, 4000, 3
    )
    assert (asr.lower, asr.upper) == pytest.approx(direct[1:], abs=0.04)
    assert report.success_rate.method == "tasks"  # the success rate is over units too
    # without repeats: over conversations, as before
    alone = [_score(f"c{i}", f"t{i}", None, 1.0 if i % 3 == 0 else 0.0) for i in range(120)]
    plain = build_report(alone, Settings()).asr
    assert plain.method == "bootstrap" and plain.units is None
    # one task's own line: its attempts are draws of that one unit, resampled as conversations
    one = build_report(scores, Settings()).by_task["t3"].asr
    assert one.method == "bootstrap" and one.value == 1.0 and one.lower == one.upper == 1.0
    # unequal attempts: the value weighs every unit once
    uneven = [_score("x-0", "x", 0, 1.0), *(_score(f"y-{i}", "y", i, 0.0) for i in range(3))]
    assert build_report(uneven, Settings()).asr.value == pytest.approx(0.5)
