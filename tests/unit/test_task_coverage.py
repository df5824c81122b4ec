"""Coverage of the pass^k intervals over units at known truths: the acceptance test of the estimator.

A representative subset of `benchmarks/coverage.py` (the full grid and its figures: docs/scoring.md), with
fixed seeds and 1,000 repetitions per configuration (standard error of a coverage near 0.95: 0.007, so the
93–97% band is ±3 standard errors). Units differ: their success probabilities are drawn from U-shaped and
skewed Beta shapes, and from a two-point distribution no Beta fits. Each configuration checks pass^k and pass@k
for every identified k.
"""

from __future__ import annotations

import pytest

from benchmarks.coverage import EQUAL, MIRRORED, TRUTHS, UNEQUAL, Truth, simulate

REPS = 1000
CASES = [
    # (truth, units, attempts, seed): hierarchical intervals (with their hull) below 50 units, nonparametric from 50
    ("Beta(0.3,0.3)", 10, 4, 101),
    ("Beta(0.7,0.5)", 40, 4, 102),  # the shape and size where pooled p^3 intervals covered 0 of 80
    ("Beta(5,1)", 40, 4, 103),
    ("Beta(0.7,0.5)", 40, UNEQUAL, 104),  # 1 to 8 attempts per unit
    ("Beta(1,1)", 200, 8, 105),
    ("two-point 0.2 or 0.9", 1000, 8, 106),  # no Beta fits: the nonparametric interval still holds
]


@pytest.mark.parametrize(("truth", "units", "attempts", "seed"), CASES, ids=lambda x: str(x))
def test_95_percent_intervals_cover_93_to_97_percent(
    truth: str, units: int, attempts: int, seed: int
) -> None:
    """pass^k within 93-97%; pass@k within 93-99% (where no Beta fits, the nonparametric interval errs wide at
    the k where few units fail every attempt: 98.2% at pass@5 of 1,000 two-point units).

    With 1 to 8 attempts, only a few of 40 units have k near 8, and the interval there is widened to hold the
    nonparametric one of those few: it errs wide (up to 99.9% at pass^8), so that case is held to 93-100% and
    to at most 3 times the width of the hierarchical interval alone. Where the units' values are expected to
    sum to less than 1 (pass@4 of 40 Beta(5, 1) units: 0.3 units expected to fail all 4), an interval that
    covers then covers almost always: there the band's top is 1."""
    top = 8 if attempts == UNEQUAL else attempts
    ks = list(range(1, top + 1))
    t = TRUTHS[truth]
    cells = simulate(t, units, attempts, REPS, seed, ks)
    wanted = [(kind, k) for kind in ("pow", "at") for k in ks]
    assert set(wanted) <= set(cells)
    coverage = {key: round(cells[key].coverage, 3) for key in wanted}

    def top_band(kind: str, k: int) -> float:
        rare = units * (t.pow_mean(k) if kind == "pow" else 1.0 - t.at_mean(k)) < 1.0
        if attempts == UNEQUAL or rare:
            return 1.0
        return 0.97 if kind == "pow" else 0.99

    outside = {(kind, k): c for (kind, k), c in coverage.items() if not 0.93 <= c <= top_band(kind, k)}
    assert not outside, f"coverage outside 93-97% (pass^k), 93-99% (pass@k) or the lifted band: {outside}"
    if attempts == UNEQUAL:
        bare = simulate(t, units, attempts, REPS, seed, ks, hull=False)
        wider = {key: round(cells[key].width / bare[key].width, 2) for key in wanted}
        assert max(wider.values()) <= 3.0, wider


@pytest.mark.parametrize(
    ("truth", "seed"),
    [(TRUTHS["two-point 0.2 or 0.9"], 110), (MIRRORED, 111)],
    ids=["0.2 or 0.9", "0.1 or 0.8"],
)
def test_where_many_units_differ_and_few_have_k_attempts_the_intervals_still_cover(
    truth: Truth, seed: int
) -> None:
    """200 two-point units of 1 to 8 attempts: about 25 have 8, so the interval at k = 8 is the hierarchical
    one, and the Beta that 200 units fit tightly does not fit them. Alone, with these seeds, it covered 64.0%
    (pass@8 of units at 0.2 or 0.9) and 62.3% (pass^8 at 0.1 or 0.8); widened to hold the nonparametric
    interval it covers at every k."""
    cells = simulate(truth, 200, UNEQUAL, REPS, seed, list(range(1, 9)))
    wanted = [(kind, k) for kind in ("pow", "at") for k in range(1, 9)]
    coverage = {key: round(cells[key].coverage, 3) for key in wanted}
    outside = {key: c for key, c in coverage.items() if not 0.93 <= c <= 0.995}
    assert not outside, f"coverage outside 93-99.5%: {outside}"


@pytest.mark.parametrize(("units", "seed"), [(20, 112), (45, 113)])
def test_below_50_units_that_differ_the_intervals_still_cover(units: int, seed: int) -> None:
    """Two-point units (0.2 or 0.9) of 8 attempts, fewer than 50: the Beta does not fit them and the hierarchical
    interval alone covered pass@8 81.7% at 49 units and 90.7% at 20 (`benchmarks.coverage_hull --attempts 8`);
    widened to hold the nonparametric interval it covers at every k."""
    ks = list(range(1, 9))
    cells = simulate(TRUTHS["two-point 0.2 or 0.9"], units, 8, REPS, seed, ks)
    coverage = {(kind, k): round(cells[(kind, k)].coverage, 3) for kind in ("pow", "at") for k in ks}
    outside = {key: c for key, c in coverage.items() if not 0.93 <= c <= 0.995}
    assert not outside, f"coverage outside 93-99.5%: {outside}"


@pytest.mark.parametrize(
    ("truth", "units", "kind", "seed"),
    [(TRUTHS["two-point 0.2 or 0.9"], 54, "at", 114), (MIRRORED, 55, "pow", 115)],
    ids=["pass@k, 54 units", "pass^k, 55 units"],
)
def test_where_few_units_fail_every_attempt_the_intervals_still_cover(
    truth: Truth, units: int, kind: str, seed: int
) -> None:
    """Two-point units of 8 attempts, 54 and 55 of them (the nonparametric interval): pass@8 of units at 0.2 or
    0.9 rests on the 4-5 units expected to fail all 8, pass^8 of units at 0.1 or 0.8 on those passing all 8.
    Jeffreys' bound there (Clopper-Pearson's at none or one only) covered 90.6-91.5%; holding Clopper-Pearson's
    up to two effective successes or failures, 95.0-95.6% (4,000 repetitions). At k = 7 and 8."""
    cells = simulate(truth, units, 8, REPS, seed, [7, 8])
    coverage = {k: round(cells[(kind, k)].coverage, 3) for k in (7, 8)}
    outside = {k: c for k, c in coverage.items() if not 0.93 <= c <= 0.995}
    assert not outside, f"coverage outside 93-99.5%: {outside}"


@pytest.mark.parametrize(("attempts", "seed"), [(8, 107), (UNEQUAL, 108)], ids=["8 attempts", "1-8 attempts"])
def test_where_every_unit_has_the_same_p_the_intervals_still_cover(attempts: int, seed: int) -> None:
    """200 units all at p = 0.5: at a k near the most attempts the units' values are mostly 0 with a rare 1,
    and a sample without a 1 measured a small variance around a value too low (pass^7 of 200 units of 8
    attempts covered 72.7%, pass^6 of 1-8 attempts 77.9%). The truth is 0.5^k exactly."""
    truth = EQUAL["every unit 0.5"]
    cells = simulate(truth, 200, attempts, REPS, seed, list(range(1, 9)), at_ks=[1])
    coverage = {key: round(cells[key].coverage, 3) for key in [("pow", k) for k in range(1, 9)] + [("at", 1)]}
    # pass^8: 200 units of 8 attempts expect 0.78 units passing all 8, of 1-8 attempts 0.1: where no success or
    # one is the rule, an interval that covers covers almost always
    rare = {("pow", 8)}
    outside = {key: c for key, c in coverage.items() if not 0.93 <= c <= (1.0 if key in rare else 0.995)}
    assert not outside, f"coverage outside 93-99.5% (pass^8: 93-100%): {outside}"


def test_where_forty_units_have_the_same_p_the_hierarchical_interval_covers() -> None:
    """40 units of 8 attempts, all at p = 0.5: the hierarchical prior expects units to differ, and its interval
    alone sat above 0.5^k (pass^4 to pass^7 covered 88.6-89.9% in benchmarks.coverage --equal); units that look
    alike also get the interval one p gives."""
    cells = simulate(EQUAL["every unit 0.5"], 40, 8, REPS, 109, list(range(1, 9)), at_ks=[1])
    coverage = {key: round(cells[key].coverage, 3) for key in [("pow", k) for k in range(1, 9)] + [("at", 1)]}
    outside = {key: c for key, c in coverage.items() if not 0.93 <= c <= 0.995}
    assert not outside, f"coverage outside 93-99.5%: {outside}"
