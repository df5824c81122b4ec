"""The paired regression check: per-unit differences checked with exact fractions, the t posterior against
closed forms and numerical integration, its decision error simulated at fixed true values, and the report's
baseline comparison choosing it."""

from __future__ import annotations

import math
from fractions import Fraction
from fractions import Fraction as F

import numpy as np
import pytest

from agentwatch.config import Settings
from agentwatch.report.baseline import compare_baseline, load_baseline
from agentwatch.report.build import build_report
from agentwatch.report.text import render_text
from agentwatch.stats.paired import (
    MIN_SHARED_UNITS,
    PairedDifference,
    paired_difference,
    paired_regression_probability,
)
from agentwatch.wire.schema import ConversationScore, Outcome, OutcomeSource
from benchmarks.paired import Run, paired_flagged, runs, true_drop, unpaired_flagged


def _pow3(n: int, c: int) -> Fraction:
    return Fraction(math.comb(c, 3), math.comb(n, 3))


def test_differences_of_the_unbiased_pass_pow_k_on_shared_units_only() -> None:
    new = {"a": (3, 3), "b": (4, 2), "c": (5, 4), "d": (3, 1), "only-new": (3, 3), "short": (2, 2)}
    base = {"a": (3, 2), "b": (4, 4), "c": (3, 3), "d": (6, 3), "only-base": (4, 0), "short": (3, 3)}
    diff = paired_difference(new, base, 3)
    assert diff is not None
    exact = [_pow3(*new[u]) - _pow3(*base[u]) for u in "abcd"]
    mean = sum(exact, Fraction(0)) / 4
    var = sum(((d - mean) ** 2 for d in exact), Fraction(0)) / 3
    assert diff.units == 4 and diff.mean == pytest.approx(float(mean), abs=1e-15)
    assert diff.sd == pytest.approx(math.sqrt(var), abs=1e-15)
    # "short" has 2 attempts in the new run: not identified at k = 3 there, so paired on neither side
    assert (diff.only_new, diff.only_base) == (1, 2)
    assert paired_difference({"x": (3, 3)}, {"y": (3, 3)}, 3) is None


def _t_cdf_by_integration(x: float, df: int) -> float:
    """Student's t CDF by Simpson's rule on its density (log-gamma normalised), from a far left tail."""
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    lo, steps = -60.0, 200_000
    h = (x - lo) / steps
    grid = lo + h * np.arange(steps + 1)
    dens = np.exp(log_norm - (df + 1) / 2 * np.log1p(grid**2 / df))
    weights = np.ones(steps + 1)
    weights[1:-1:2], weights[2:-1:2] = 4, 2
    return float(h / 3 * np.sum(weights * dens))


@pytest.mark.parametrize(
    ("mean", "sd", "units"), [(-0.2, 0.3, 2), (0.1, 0.5, 3), (-0.09, 0.4, 31), (0.0, 0.2, 60)]
)
def test_probability_is_the_t_posterior_of_the_mean(mean: float, sd: float, units: int) -> None:
    diff = PairedDifference(units=units, mean=mean, sd=sd, only_new=0, only_base=0)
    x = (-0.05 - mean) / (sd / math.sqrt(units))
    got = paired_regression_probability(diff, 0.05)
    if units == 2:  # one degree of freedom: Cauchy
        assert got == pytest.approx(0.5 + math.atan(x) / math.pi, abs=1e-12)
    elif units == 3:  # two: closed form
        assert got == pytest.approx(0.5 + x / (2 * math.sqrt(2 + x * x)), abs=1e-12)
    else:
        assert got == pytest.approx(_t_cdf_by_integration(x, units - 1), abs=1e-7)


def test_a_point_posterior_and_bad_arguments() -> None:
    same = PairedDifference(units=40, mean=-0.1, sd=0.0, only_new=0, only_base=0)
    assert paired_regression_probability(same, 0.05) == 1.0
    assert paired_regression_probability(same, 0.1) == 0.0  # exactly at the margin is not below it
    with pytest.raises(ValueError, match="margin"):
        paired_regression_probability(same, 1.0)
    with pytest.raises(ValueError, match="two shared units"):
        paired_regression_probability(PairedDifference(1, 0.0, 0.0, 0, 0), 0.05)


def _paired_rate(draws: list[Run], margin: float) -> float:
    """How often the paired P(drop > margin) reaches 0.95."""
    return sum(paired_flagged(r, margin) for r in draws) / len(draws)


@pytest.mark.parametrize("name", ["mixed", "mostly easy"])
@pytest.mark.parametrize("units", [MIN_SHARED_UNITS, 100])
def test_a_drop_equal_to_the_margin_is_flagged_at_most_five_percent_of_the_time(
    name: str, units: int
) -> None:
    # 1,500 runs: the binomial standard error at 5% is 0.56 points, so 7% is more than three of them above
    margin = float(true_drop(name))  # 0.086 and 0.035
    assert _paired_rate(runs(name, units, 3, 1500, np.random.default_rng(units)), margin) <= 0.07


def test_pairing_flags_a_real_drop_more_often_than_independent_populations() -> None:
    # by hand: .3(.95³-.75³) + .2(.6³-.45³) + .1(.8³-.6³) = .13065 + .024975 + .0296
    assert true_drop("steep") == F(7409, 40000)  # 0.185, against a margin of 0.05
    draws = runs("steep", 60, 3, 200, np.random.default_rng(3))
    unpaired = sum(unpaired_flagged(r, 0.05) for r in draws) / len(draws)
    assert _paired_rate(draws, 0.05) >= unpaired + 0.1  # measured 0.63 against 0.39 (200 runs of 60 units)


def _score(i: int, task: str, version: str, passed: bool) -> ConversationScore:
    outcome = Outcome.COMPLETE if passed else Outcome.PARTIAL_INCORRECT
    return ConversationScore(
        conversation_id=f"{version}-{task}-{i}",
        agent="bot",
        version=version,
        task=task,
        attempt=i,
        turns=1,
        passed=passed,
        outcome=outcome,
        outcome_source=OutcomeSource.RULES,
    )


def _run(version: str, passes: list[int], tasks: list[str]) -> list[ConversationScore]:
    """Three attempts at each task, the first passes[t] of them passed."""
    return [_score(i, t, version, i < c) for t, c in zip(tasks, passes, strict=True) for i in range(3)]


def test_the_report_pairs_the_units_both_runs_attempted(tmp_path) -> None:
    settings = Settings()
    tasks = [f"t{i}" for i in range(40)]
    base_passes = [3] * 20 + [0] * 20  # easy and impossible tasks
    new_passes = [3] * 14 + [2] * 6 + [0] * 20  # six easy tasks now fail once in three
    base = build_report(_run("1", base_passes, tasks), settings)
    new = build_report(_run("2", new_passes, tasks), settings)
    path = tmp_path / "base.json"
    path.write_text(base.model_dump_json(), encoding="utf-8")
    check = compare_baseline(new, load_baseline(path), settings, str(path)).checks[0]
    assert check.method == "paired" and check.note is not None
    assert check.note.startswith("40 units attempted 3+ times by both: mean pass^3 difference -0.150")
    exact = [Fraction(-1)] * 6 + [Fraction(0)] * 34
    mean = sum(exact, Fraction(0)) / 40
    sd = math.sqrt(sum(((d - mean) ** 2 for d in exact), Fraction(0)) / 39)
    assert check.probability == pytest.approx(
        _t_cdf_by_integration((-0.05 - float(mean)) / (sd / math.sqrt(40)), 39), abs=1e-7
    )
    assert check.regressed  # 6 of 40 tasks lost, each all of its pass^3
    new.baseline = compare_baseline(new, base, settings, "base.json")
    assert "P(pass^3 on the units both attempted dropped by more than 0.05)" in render_text(new)

    # the same drop, unpaired: the two populations' spread hides it
    assert base.units is not None
    base.units.by_unit.clear()  # as in a report written before units were listed
    unpaired = compare_baseline(new, base, settings, "old.json").checks[0]
    assert unpaired.method == "tasks" and unpaired.probability is not None
    assert check.probability is not None and unpaired.probability < check.probability


def test_too_few_shared_units_are_compared_as_independent_populations() -> None:
    settings = Settings()
    tasks = [f"t{i}" for i in range(40)]
    base = build_report(_run("1", [3] * 40, tasks), settings)
    others = [
        f"t{i}" for i in range(40 - MIN_SHARED_UNITS + 1, 80)
    ]  # the last 29 of the baseline's, and more
    new = build_report(_run("2", [3] * len(others), others), settings)
    check = compare_baseline(new, base, settings, "base.json").checks[0]
    assert check.method == "tasks"
    assert check.note == (
        f"{MIN_SHARED_UNITS - 1} shared units with 3+ attempts on both sides, fewer than the "
        f"{MIN_SHARED_UNITS} a paired comparison needs: compared as independent populations"
    )
