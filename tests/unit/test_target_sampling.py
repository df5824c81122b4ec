"""Sampling to a target: the judge rate of each series adapts to its traffic, and the estimates weigh each
conversation by the rate it was sampled at, so they stay unbiased when traffic and the rate change within a
window."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentwatch.config import SamplingConfig
from agentwatch.judge.verdict import JudgeVerdict
from agentwatch.scorers.sampling import Sampler
from agentwatch.scorers.target_rate import TargetRates, grid_rate
from agentwatch.stats.beta import beta_interval
from agentwatch.stats.corrected import CorrectionPoint, CorrectionSums, correct
from agentwatch.stats.inclusion import effective_counts
from agentwatch.wire.schema import Conversation


def test_grid_rates_are_powers_of_a_fourth_root_of_two() -> None:
    assert grid_rate(1.7) == 1.0 and grid_rate(0.5) == 0.5
    assert grid_rate(0.3) == pytest.approx(2**-1.75)  # log2(0.3) = -1.737: nearest quarter step
    for rate in np.geomspace(1e-4, 1, 50):
        g = grid_rate(float(rate))
        assert abs(math.log2(g) - math.log2(rate)) <= 0.125 + 1e-12
        assert (-math.log2(g) * 4) == pytest.approx(round(-math.log2(g) * 4))


def test_rate_follows_traffic_stays_inside_its_bounds_and_is_decided_once_per_period() -> None:
    rates = TargetRates(period_s=60)
    series = ("a", "1", "t")
    assert rates.rate(series, 0.0, 300, ceiling=1.0, floor=0.001) == 1.0  # nothing seen yet
    for i in range(599):
        assert rates.rate(series, i / 10, 300, 1.0, 0.001) == 1.0  # the same period, the same rate
    # 600 a minute = 36,000 an hour: 300 / 36,000 on the grid
    decided = rates.rate(series, 60.0, 300, 1.0, 0.001)
    assert decided == grid_rate(300 / 36_000) == 2**-7
    assert rates.rate(series, 119.0, 300, 1.0, 0.001) == decided
    assert rates.current() == {series: decided}
    # a floor (the review rate) holds; the ceiling (the configured rate) holds
    floor_rates = TargetRates(60)
    for i in range(6000):
        floor_rates.rate(series, i / 100, 10, 1.0, 0.05)
    assert floor_rates.rate(series, 61, 10, 1.0, 0.05) == 0.05
    low = TargetRates(60)
    for i in range(3):
        low.rate(series, float(i), 300, 0.25, 0.0)
    assert low.rate(series, 61, 300, 0.25, 0.0) == 0.25  # 180 an hour is below the target: the ceiling
    # a collector reading half the partitions sees half the traffic and must judge as if it saw all of it
    half = TargetRates(60)
    half.share = 0.5
    for i in range(300):
        half.rate(series, i / 10, 300, 1.0, 0.001)
    assert half.rate(series, 60, 300, 1.0, 0.001) == decided


def test_sampler_decides_once_and_keeps_the_review_sample_inside_the_judge_sample() -> None:
    sampler = Sampler(SamplingConfig(target_judged_per_hour=60, review_rate=0.02, target_interval_s=60))
    for i in range(3000):
        sampler.decide(f"c{i}", "a", "t", "1", i / 50)  # 50 a second
    later = [sampler.decide(f"d{i}", "a", "t", "1", 100 + i / 50) for i in range(1000)]
    assert {d.judge_rate for d in later} == {0.02}  # the target asks for less; the review rate is the floor
    assert all(d.judge for d in later if d.review)
    first = sampler.decide("d5", "a", "t", "1", 100.1)
    assert first == later[5]  # asked again: the same decision, not counted twice


def _simulate(rng: np.random.Generator, target: float) -> tuple[float, tuple, tuple, tuple, int]:
    """One hour of one series: 20 minutes at 20 conversations a minute with success 0.9, then 40 minutes at
    200 a minute with success 0.6; a judge rate aiming at `target` judged an hour; a person's label on a 2%
    review sample; a judge passing 95% of successes and 45% of failures. Returns the truth, the Hájek-weighted
    success rate of a grader that is right (value, lower, upper) and its unweighted one, the weighted PPI of
    the biased judge (value, lower, upper), and the judged count."""
    sampler = Sampler(SamplingConfig(target_judged_per_hour=target, review_rate=0.02, target_interval_s=60))
    minutes = [(20, 0.9)] * 20 + [(200, 0.6)] * 40
    by_rate: dict[float, list[int]] = {}
    sums = CorrectionSums()
    truth = []
    seed = int(rng.integers(1 << 30))
    judged = 0
    for m, (traffic, p) in enumerate(minutes):
        ok = rng.random(traffic) < p
        verdict = np.where(ok, rng.random(traffic) < 0.95, rng.random(traffic) < 0.45)
        for i in range(traffic):
            cid = f"{seed}-{m}-{i}"
            d = sampler.decide(cid, "a", "t", "1", m * 60 + i * 60 / traffic)
            truth.append(ok[i])
            if not d.judge:
                continue
            judged += 1
            nc = by_rate.setdefault(d.judge_rate, [0, 0])
            nc[0] += 1
            nc[1] += bool(ok[i])
            label = (0 if ok[i] else 2) if d.review else None
            sums.add(
                CorrectionPoint(
                    (d.judge_rate, min(d.review_rate, d.judge_rate)),
                    0 if verdict[i] else 2,
                    float(verdict[i]),
                    label,
                    None if label is None else float(ok[i]),
                )
            )
    effective = effective_counts({r: (n, c) for r, (n, c) in by_rate.items()})
    assert effective is not None  # two judge rates in the hour
    n_eff, c_eff = effective
    lo, hi = beta_interval(np.array([1 + c_eff]), np.array([1 + n_eff - c_eff]), 0.95)
    n, c = sum(v[0] for v in by_rate.values()), sum(v[1] for v in by_rate.values())
    ulo, uhi = beta_interval(np.array([1 + c]), np.array([1 + n - c]), 0.95)
    corrected = correct(sums)
    assert corrected is not None and corrected.success is not None
    s = corrected.success
    return (
        float(np.mean(truth)),
        (c_eff / n_eff, float(lo[0]), float(hi[0])),
        (c / n, float(ulo[0]), float(uhi[0])),
        (s.value, s.lower, s.upper),
        judged,
    )


def test_weighted_estimates_stay_unbiased_when_traffic_and_rate_change_within_the_window() -> None:
    """200 simulated hours: the judged count is near the target whatever the traffic, the Hájek-weighted
    success rate and the weighted PPI are unbiased (mean error within 0.01) and cover at their level, where
    the
    unweighted rate is off by 0.1 and never covers."""
    rng = np.random.default_rng(20)
    reps, target = 200, 600
    errors = np.zeros(3)
    covered = np.zeros(3)
    judged = []
    for _ in range(reps):
        truth, hajek, unweighted, ppi, count = _simulate(rng, target)
        judged.append(count)
        for i, (value, lo, hi) in enumerate((hajek, unweighted, ppi)):
            errors[i] += value - truth
            covered[i] += lo <= truth <= hi
    errors /= reps
    covered /= reps
    # 8,400 conversations an hour; the first minute is judged in full (400 a minute seen, 20 judged), the rate
    # then follows the traffic, overshooting for one period when it jumps tenfold
    assert 0.8 * target <= np.median(judged) <= 1.6 * target, np.median(judged)
    assert abs(errors[0]) < 0.01 and abs(errors[2]) < 0.01, errors
    assert errors[1] > 0.05 and covered[1] < 0.05, (errors, covered)
    assert 0.92 <= covered[0] <= 0.985 and 0.92 <= covered[2] <= 0.985, covered
    print(
        f"judged per hour: median {np.median(judged):.0f} (target {target}); "
        f"mean error Hájek {errors[0]:+.4f}, unweighted {errors[1]:+.4f}, weighted PPI {errors[2]:+.4f}; "
        f"coverage {covered[0]:.3f}, {covered[1]:.3f}, {covered[2]:.3f}"
    )


LONG = 60_000  # characters of a hostile name or id (span attributes are cut at 65,536)


def _long(n: int) -> str:
    return f"{n:08d}" + "x" * LONG


def test_long_names_and_ids_are_remembered_by_digest_and_decide_as_before() -> None:
    """Agent and task names and conversation ids come from span attributes: remembered as they are, 500 agents of
    60,000-character names held 30 MB in the rules' memory, 500 such conversation ids 60 MB in the decisions'."""
    from agentwatch.collector.metrics import JudgeMetrics, PipelineStats
    from agentwatch.judge.runner import JudgeRunner
    from agentwatch.wire.kept import kept
    from tests.support.memory import kept_by

    plain = Sampler(SamplingConfig(judge_rate=0.5))
    assert kept_by(lambda: [plain.decide(f"c{n}", _long(n), _long(n)) for n in range(500)]) < 2 * 1024 * 1024
    targeted = Sampler(SamplingConfig(target_judged_per_hour=100))
    first: dict[int, object] = {}

    def feed() -> None:
        for n in range(500):
            first[n] = targeted.decide(_long(n), _long(n), "task", "1.0", t=float(n))

    assert kept_by(feed) < 2 * 1024 * 1024
    # a decision is still made once per conversation: asked again (a new string), it is the same
    assert all(targeted.decide(_long(n), _long(n), "task", "1.0", t=1e6) == first[n] for n in range(500))
    # the series rates name a long agent by its digest, short names as they are
    stats = PipelineStats(judge_rates=targeted.targets.current())
    runner = JudgeRunner(_Unused(), concurrency=1)
    families = {f.name: f for f in JudgeMetrics(runner, stats, 0.1).collect()}
    labels = [s.labels for s in families["agentwatch_judge_series_rate"].samples]
    assert len(labels) == 500
    assert {"agent": "sha256:" + kept(_long(7))[-64:], "version": "1.0", "task": "task"} in labels


class _Unused:
    """A judge the test never calls (`JudgeMetrics` reads its runner's counters)."""

    judge_id = "unused:judge:v1"

    def fingerprint(self, conversation: Conversation) -> str:
        raise AssertionError("not called")

    def judge(self, conversation: Conversation) -> JudgeVerdict:
        raise AssertionError("not called")
