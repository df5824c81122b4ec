"""pass^k over units: τ-bench's estimator by exact fractions, the intervals against independent computations.

References used here and nowhere in the code: `fractions.Fraction` and `math.comb` for the estimator, scipy's
`betabinom` likelihood on a fine grid of its own for the hierarchical posterior, `scipy.special.beta` for the
Beta moments, bisection on `betainc` for the nonparametric interval, numerical integration for regressions.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter, defaultdict
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate
from scipy import stats as sps
from scipy.special import betaln

from agentwatch.stats.units import (
    HULL_UNITS,
    SMALL_UNITS,
    Distribution,
    UnitCounts,
    UnitsPosterior,
    _attempts_variance,
    alike_bounds,
    intervals_batch,
    regression_probability,
    unbiased_mean,
)
from agentwatch.stats.units_grid import GridPosterior, Kind
from tests.support import published_runs
from tests.support.metrics_reference import beta_quantile_by_bisection, exact_beta_moment


def tau_bench_units() -> dict[int, tuple[int, int]]:
    """task id -> (trials, successes) of the dev data, success as τ-bench counts it (reward 1 within 1e-6)."""
    runs = json.loads(gzip.decompress(published_runs.require(published_runs.AIRLINE).read_bytes()))
    out: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for run in runs:
        out[run["task_id"]][0] += 1
        out[run["task_id"]][1] += int(abs(run["reward"] - 1.0) <= 1e-6)
    return {task: (n, c) for task, (n, c) in out.items()}


def exact_mean(units: list[tuple[int, int]], k: int, kind: str) -> Fraction:
    """τ-bench's estimator in exact fractions: mean over units with n >= k."""
    vals = [
        Fraction(math.comb(c, k), math.comb(n, k))
        if kind == "pow"
        else 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
        for n, c in units
        if n >= k
    ]
    return sum(vals, Fraction(0)) / len(vals)


def _value(n: int, x: int, k: int, kind: str) -> Fraction:
    """A unit's unbiased value at k after x passes in n attempts."""
    if kind == "pow":
        return Fraction(math.comb(x, k), math.comb(n, k))
    return 1 - Fraction(math.comb(n - x, k), math.comb(n, k))


def beta_binomial_floor(units: list[tuple[int, int]], k: int, kind: str) -> Fraction:
    """s₀² in exact fractions: the mean over units with n >= k of their value's variance at k under the
    Beta-binomial law of the pooled rate r and the intra-unit correlation ρ = max(0, (X² − (units − 1)) / Σ(n − 1))
    (X² = Σ (c − n·r)² / (n·r·(1 − r)), Pearson's), each law P(x) = C(n, x)·(a)_x·(b)_{n−x} / (a + b)_n summed over
    every count of passes (a = r·κ, b = (1 − r)·κ, κ = (1 − ρ)/ρ; ρ = 0: Binomial(n, r))."""
    rate = Fraction(sum(c for _, c in units), sum(n for n, _ in units))
    if rate in (0, 1):
        return Fraction(0)
    x2 = sum(((Fraction(c) - n * rate) ** 2 / (n * rate * (1 - rate)) for n, c in units), Fraction(0))
    extra = sum(n - 1 for n, _ in units)
    rho = min(Fraction(1), max(Fraction(0), (x2 - (len(units) - 1)) / extra)) if extra else Fraction(0)

    def rising(x: Fraction, j: int) -> Fraction:
        return math.prod((x + i for i in range(j)), start=Fraction(1))

    def law(n: int) -> list[Fraction]:
        if rho == 0:
            return [math.comb(n, x) * rate**x * (1 - rate) ** (n - x) for x in range(n + 1)]
        if rho == 1:  # every unit always passes or always fails
            return [1 - rate] + [Fraction(0)] * (n - 1) + [rate]
        kappa = Fraction(1 - rho) / rho
        a, b = rate * kappa, (1 - rate) * kappa
        return [math.comb(n, x) * rising(a, x) * rising(b, n - x) / rising(kappa, n) for x in range(n + 1)]

    total, counted = Fraction(0), 0
    for n, _ in units:
        if n < k:
            continue
        probs = law(n)
        mean = sum((q * _value(n, x, k, kind) for x, q in enumerate(probs)), Fraction(0))
        second = sum((q * _value(n, x, k, kind) ** 2 for x, q in enumerate(probs)), Fraction(0))
        total += second - mean**2
        counted += 1
    return total / counted if counted else Fraction(0)


def _assert_nonparametric_interval(
    units: list[tuple[int, int]], k: int, mean: Fraction, floor: Fraction
) -> None:
    """pass^k of `units` is the nonparametric interval around `mean` whose variance is `floor`, bisected: Jeffreys'
    Beta, holding Clopper-Pearson's where at most two effective successes or failures are seen."""
    m = len(units)
    n_eff = m * max(1.0, float(mean * (1 - mean) / floor))
    x, f = float(mean) * n_eff, (1 - float(mean)) * n_eff
    lower = beta_quantile_by_bisection(0.5 + x, 0.5 + f, 0.025)
    upper = beta_quantile_by_bisection(0.5 + x, 0.5 + f, 0.975)
    if min(x, f) <= 2:
        lower = min(lower, beta_quantile_by_bisection(x, f + 1, 0.025) if x > 0 else 0.0)
        upper = max(upper, beta_quantile_by_bisection(x + 1, f, 0.975) if f > 0 else 1.0)
    e = UnitsPosterior(UnitCounts.from_units(units)).estimates([k], 0.95)["pow"][k]
    assert e.interval == "nonparametric" and e.value == pytest.approx(float(mean), abs=1e-15)
    assert (e.lower, e.upper) == pytest.approx((lower, upper), abs=1e-9)


def test_unbiased_mean_equals_exact_fractions_on_random_groups() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        units = [
            (int(n), int(rng.integers(0, n + 1))) for n in rng.integers(1, 9, size=int(rng.integers(1, 30)))
        ]
        counts = UnitCounts.from_units(units)
        for k in range(1, 9):
            for kind in ("pow", "at"):
                got = unbiased_mean(counts, k, kind)
                if all(n < k for n, _ in units):
                    assert got is None
                else:
                    assert got == pytest.approx(float(exact_mean(units, k, kind)), abs=1e-14)


def test_the_per_unit_value_is_unbiased_by_enumeration() -> None:
    """Σ_c P(c | n, p) C(c,k)/C(n,k) = p^k exactly, for rational p (the estimator's defining property)."""
    for p in (Fraction(1, 3), Fraction(7, 10), Fraction(1, 1)):
        for n in range(1, 7):
            for k in range(1, n + 1):
                expect = sum(
                    math.comb(n, c) * p**c * (1 - p) ** (n - c) * Fraction(math.comb(c, k), math.comb(n, k))
                    for c in range(n + 1)
                )
                assert expect == p**k
                units = UnitCounts.from_units([(n, c) for c in range(n + 1)])
                weights = [math.comb(n, c) * p**c * (1 - p) ** (n - c) for c in range(n + 1)]
                one = [UnitCounts.from_units([(n, c)]) for n, c, _m in units.pairs]
                values = [unbiased_mean(u, k, "pow") for u in one]
                got = sum(float(w) * float(v) for w, v in zip(weights, values, strict=True) if v is not None)
                assert got == pytest.approx(float(p**k), abs=1e-12)


def test_dev_data_tasks_0_to_24_equal_the_benchmarks_formula() -> None:
    units = tau_bench_units()
    assert len(units) == 25 and all(n == 4 for n, _ in units.values())
    counts = UnitCounts.from_units(units.values())
    found = UnitsPosterior(counts).estimates([1, 2, 3, 4, 5], 0.95)
    for k in (1, 2, 3, 4):
        # τ-bench: pass^k = mean over tasks of comb(c, k) / comb(n, k)
        expected = sum(Fraction(math.comb(c, k), math.comb(n, k)) for n, c in units.values()) / len(units)
        e = found["pow"][k]
        assert e.value == pytest.approx(float(expected), abs=1e-15)
        assert e.units == 25 and e.interval == "hierarchical"
        assert e.value is not None and e.lower is not None and e.upper is not None
        assert e.lower < e.value < e.upper
    assert [found["pow"][k].value for k in (1, 2, 3, 4)] == pytest.approx([0.31, 29 / 150, 0.17, 0.16])
    assert found["pow"][5].value is None and found["pow"][5].lower is None  # 4 trials identify k <= 4 only


def _independent_posterior(
    units: list[tuple[int, int]], grid: int = 400
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(α, β, weight) atoms of the hierarchical posterior: uniform μ and ρ, scipy's Beta-binomial."""
    t = (np.arange(grid) + 0.5) / grid
    mu, rho = np.meshgrid(t, t, indexing="ij")
    kappa = 1 / rho - 1
    a, b = mu * kappa, (1 - mu) * kappa
    loglik = np.zeros_like(mu)
    for (n, c), m in Counter(units).items():
        loglik += m * sps.betabinom.logpmf(c, n, a, b)
    w = np.exp(loglik - loglik.max())
    return a.ravel(), b.ravel(), (w / w.sum()).ravel()


def _moment(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """E[p^k] under Beta(a, b) = B(a + k, b) / B(a, b)."""
    moment: np.ndarray = np.exp(betaln(a + k, b) - betaln(a, b))
    return moment


def _atom_quantile(values: np.ndarray, w: np.ndarray, q: float) -> float:
    order = np.argsort(values)
    cdf = np.cumsum(w[order])
    return float(values[order][np.searchsorted(cdf, q)])


@pytest.mark.parametrize(
    "units",
    [
        [(4, 0)] * 10 + [(4, 1)] * 8 + [(4, 2)] * 2 + [(4, 3)] + [(4, 4)] * 4,  # the dev data
        [(2, 0)] * 4 + [(2, 2)] * 5 + [(2, 1)],
        [(8, 8)] * 4 + [(8, 7)] * 3 + [(8, 5)] * 2 + [(8, 2)] + [(3, 1)] * 3 + [(1, 1)] * 2,
    ],
    ids=["dev-shape", "10x2", "unequal"],
)
def test_hierarchical_bounds_match_an_independent_fine_grid(units: list[tuple[int, int]]) -> None:
    """The hierarchical interval alone (no hull) against the independent grid; the reported interval holds it."""
    counts = UnitCounts.from_units(units)
    model = UnitsPosterior(counts)
    found = model.estimates([1, 2, 3], 0.95)
    n, c, m = zip(*counts.pairs, strict=True)
    bare = intervals_batch(
        n, c, np.array([m], dtype=float), [1, 2, 3], 0.95, small_units=math.inf, hull=False
    )
    a, b, w = _independent_posterior(units)
    for k in range(1, min(3, max(n for n, _ in units)) + 1):
        pow_k = _moment(a, b, k)
        at_k = 1 - _moment(b, a, k)  # 1 - E[(1-p)^k]
        kinds: list[tuple[Kind, np.ndarray]] = [("pow", pow_k), ("at", at_k)]
        for kind, values in kinds:
            e, h = found[kind][k], bare[(kind, k)]
            assert e.value is not None and e.lower is not None and e.upper is not None
            lo, hi = _atom_quantile(values, w, 0.025), _atom_quantile(values, w, 0.975)
            assert h.lower[0] == pytest.approx(min(lo, e.value), abs=3e-3), (kind, k)
            assert h.upper[0] == pytest.approx(max(hi, e.value), abs=3e-3), (kind, k)
            assert e.lower <= h.lower[0] + 1e-12 and e.upper >= h.upper[0] - 1e-12
            assert float(model.grid.mean(k, kind)[0]) == pytest.approx(float(values @ w), abs=2e-3)


@pytest.mark.parametrize(("passes", "alike"), [((4, 4, 4), True), ((2, 4, 6), True), ((2, 3, 7), False)])
def test_units_look_alike_unless_their_dispersion_is_significant_at_5_percent(
    passes: tuple[int, ...], alike: bool
) -> None:
    """Three units of 8 attempts, 12 passes in all: Pearson's X² = Σ (c - 4)² / 2 over 2 degrees of freedom,
    whose p-value is exactly exp(-X²/2): X² = 0 and 4 look alike (p 1 and 0.135), X² = 7 does not (0.030).
    The pooled rate's Jeffreys bounds are Beta(12.5, 12.5)'s, found by bisection."""
    x2 = sum((c - 4) ** 2 for c in passes) / 2
    assert (math.exp(-x2 / 2) > 0.05) is alike
    found = alike_bounds(np.full(3, 8.0), np.array(passes, dtype=float), np.ones((1, 3)), 0.025)
    assert bool(found.alike[0]) is alike
    lo, hi = beta_quantile_by_bisection(12.5, 12.5, 0.025), beta_quantile_by_bisection(12.5, 12.5, 0.975)
    assert (float(found.lower[0]), float(found.upper[0])) == pytest.approx((lo, hi), abs=1e-9)
    pow3, at3 = found.at(3, "pow"), found.at(3, "at")
    assert (float(pow3[0][0]), float(pow3[1][0])) == pytest.approx((lo**3, hi**3), abs=1e-9)
    assert (float(at3[0][0]), float(at3[1][0])) == pytest.approx(
        (1 - (1 - lo) ** 3, 1 - (1 - hi) ** 3), abs=1e-9
    )


def test_units_alike_get_at_least_the_interval_one_p_would_give() -> None:
    """40 units of 8 attempts whose passes spread as Binomial(8, 1/2) draws do (X² = 34 over 39 degrees of
    freedom: alike). The hierarchical posterior (an independent fine grid here) expects units to differ; the
    interval also holds the Jeffreys bounds of the 160 passes in 320 attempts raised to the k-th power, found by
    bisection, and is the hull of the two."""
    spread = {1: 1, 2: 4, 3: 9, 4: 12, 5: 9, 6: 4, 7: 1}
    units = [(8, c) for c, count in spread.items() for _ in range(count)]
    assert sum(count * (c - 4) ** 2 for c, count in spread.items()) / 2 == 34  # chi2(39) p-value about 0.7
    found = UnitsPosterior(UnitCounts.from_units(units)).estimates(range(1, 9), 0.95)
    a, b, w = _independent_posterior(units)
    lo_p = beta_quantile_by_bisection(160.5, 160.5, 0.025)
    hi_p = beta_quantile_by_bisection(160.5, 160.5, 0.975)
    above = []
    for k in range(1, 9):
        e = found["pow"][k]
        assert e.interval == "hierarchical" and e.value is not None
        assert e.lower is not None and e.upper is not None
        grid_lo = _atom_quantile(_moment(a, b, k), w, 0.025)
        grid_hi = _atom_quantile(_moment(a, b, k), w, 0.975)
        assert e.lower == pytest.approx(min(grid_lo, lo_p**k, e.value), abs=3e-3), k
        assert e.upper == pytest.approx(max(grid_hi, hi_p**k, e.value), abs=3e-3), k
        assert e.lower <= lo_p**k + 1e-12 and e.upper >= hi_p**k - 1e-12, k
        if grid_lo > lo_p**k:
            above.append(k)
            assert e.holds == "alike", k  # the report says what widened it
    assert above  # where the hierarchical interval alone starts above what one p gives


def test_grid_estimand_is_the_exact_beta_moment() -> None:
    a = np.array([[[1.0, 2.0], [3.0, 5.0]]])
    b = np.array([[[1.0, 4.0], [2.0, 1.0]]])
    grid = GridPosterior(a, b, np.full((1, 2, 2), 0.25))
    for k in (1, 2, 5):
        got = grid.values(k, "pow")
        for i in range(2):
            for j in range(2):
                assert got[0, i, j] == pytest.approx(
                    float(exact_beta_moment(int(a[0, i, j]), int(b[0, i, j]), k)), rel=1e-12
                )
        at = grid.values(k, "at")[0, 1, 1]  # Beta(5, 1): 1 - E[(1-p)^k] = 1 - B(5, 1+k)/B(5, 1)
        assert at == pytest.approx(1 - float(exact_beta_moment(1, 5, k)), rel=1e-12)


def test_nonparametric_interval_from_fifty_units_by_bisection() -> None:
    units = [(4, 0)] * 20 + [(4, 1)] * 10 + [(4, 3)] * 12 + [(4, 4)] * 18 + [(2, 1)] * 5
    found = UnitsPosterior(UnitCounts.from_units(units)).estimates([1, 3], 0.95)
    for k in (1, 3):
        values = [float(Fraction(math.comb(c, k), math.comb(n, k))) for n, c in units if n >= k]
        m = len(values)
        assert m >= SMALL_UNITS
        mean = sum(values) / m
        s2 = sum((v - mean) ** 2 for v in values) / (m - 1)
        s2 = max(s2, float(beta_binomial_floor(units, k, "pow")))
        n_eff = m * max(1.0, mean * (1 - mean) / s2)
        lo = beta_quantile_by_bisection(0.5 + mean * n_eff, 0.5 + (1 - mean) * n_eff, 0.025)
        hi = beta_quantile_by_bisection(0.5 + mean * n_eff, 0.5 + (1 - mean) * n_eff, 0.975)
        e = found["pow"][k]
        assert e.interval == "nonparametric" and e.units == m
        assert (e.value, e.lower, e.upper) == pytest.approx((mean, lo, hi), abs=1e-9)


def test_units_varying_less_than_their_attempts_alone_would_get_the_attempts_variance() -> None:
    """59 units of 8 attempts passed 4, one passed 7: at k = 7 the values are 0 but one 1/8, whose sample
    variance is far below what 8 attempts at the pooled rate give each unit; the interval takes the latter,
    computed here in exact fractions (the binomial law at the pooled rate 243/480) and bisected."""
    units = [(8, 4)] * 59 + [(8, 7)]
    k, m = 7, 60
    rate = Fraction(59 * 4 + 7, 480)
    law = {c: math.comb(8, c) * rate**c * (1 - rate) ** (8 - c) for c in range(9)}
    value_of = {c: Fraction(math.comb(c, k), math.comb(8, k)) for c in range(9)}
    floor = sum(law[c] * value_of[c] ** 2 for c in range(9)) - rate ** (2 * k)
    values = [value_of[c] for _, c in units]
    mean = sum(values, Fraction(0)) / m
    sample = sum(((v - mean) ** 2 for v in values), Fraction(0)) / (m - 1)
    assert sample < floor  # the case: the units vary less than their attempts alone make them
    _assert_nonparametric_interval(units, k, mean, floor)


@pytest.mark.parametrize("kind", ["pow", "at"])
@pytest.mark.parametrize(
    "pairs",
    [
        [(3, 1, 4), (6, 5, 2), (40, 13, 1), (2, 2, 3)],  # the units differ: ρ > 0
        [(8, 4, 59), (8, 7, 1)],  # alike: ρ = 0, the binomial law at the pooled rate
        [(4, 0, 5), (4, 4, 5), (1, 1, 2)],  # all or nothing: ρ = 1
    ],
    ids=["differ", "alike", "all-or-nothing"],
)
def test_the_attempts_variance_is_the_beta_binomial_law_summed_in_exact_fractions(
    kind: Kind, pairs: list[tuple[int, int, int]]
) -> None:
    """s₀² of (n, c, units) pairs at k = 1..3, against the Beta-binomial law of the pooled rate and the units'
    measured intra-unit correlation summed over every count of passes in exact fractions."""
    n = np.array([p[0] for p in pairs])
    c = np.array([p[1] for p in pairs])
    m = np.array([[float(p[2]) for p in pairs]])
    units = [(size, passed) for size, passed, count in pairs for _ in range(count)]
    for k in (1, 2, 3):
        expected = beta_binomial_floor(units, k, kind)
        assert _attempts_variance(n, c, m, k, kind)[0] == pytest.approx(float(expected), rel=1e-12, abs=1e-15)


def test_rare_units_near_one_widen_the_nonparametric_interval() -> None:
    """60 units of 8 attempts that differ, mostly failing: pass^6's value rests on the one unit with 6 passes
    (1/28), while a unit with 8 (value 1) is what the population holds and the sample lacks. The interval's
    variance is at least the Beta-binomial law's at the units' measured dispersion (exact fractions), bisected."""
    spread = {0: 24, 1: 14, 2: 10, 3: 6, 4: 3, 5: 2, 6: 1}
    units = [(8, c) for c, count in spread.items() for _ in range(count)]
    k, m = 6, len(units)
    values = [_value(8, c, k, "pow") for _, c in units]
    mean = sum(values, Fraction(0)) / m
    sample = sum(((v - mean) ** 2 for v in values), Fraction(0)) / (m - 1)
    floor = beta_binomial_floor(units, k, "pow")
    assert floor > 10 * sample  # the case: what the sample shows is far below what such units give
    _assert_nonparametric_interval(units, k, mean, floor)


@pytest.mark.parametrize(("a", "b", "kind"), [(2, 8, "pow"), (5, 1, "at")])
def test_units_with_rare_values_near_one_are_covered_at_200_units(a: int, b: int, kind: Kind) -> None:
    """200 units of 8 attempts from Beta(2, 8) (pass^k) and from Beta(5, 1) (pass@k: its failures are Beta(1, 5)):
    at k of 5 to 7 a unit's value is mostly 0 and rarely large; with every unit at the pooled rate as the floor,
    95% intervals covered 69% (pass^6) and 61% (pass@6). Truths E[p^k] and 1 − E[(1 − p)^k] exact; 1,000
    repetitions (standard error of a coverage near 0.95: 0.007). Where the units' values are expected to sum to
    less than 1 (pass^8 of Beta(2, 8): 0.07), nearly every sample holds no success or one, and an interval that
    covers then covers almost always: there the band's top is 1."""
    rng = np.random.default_rng(2)
    reps, size, n = 1000, 200, 8
    c = rng.binomial(n, rng.beta(a, b, size=(reps, size)))
    hist = np.stack([(c == x).sum(axis=1) for x in range(n + 1)], axis=1).astype(np.float64)
    ks = list(range(1, n + 1))
    found = intervals_batch([n] * (n + 1), list(range(n + 1)), hist, ks, 0.95, at_ks=ks)
    for k in ks:
        truth = exact_beta_moment(a, b, k) if kind == "pow" else 1 - exact_beta_moment(b, a, k)
        batch = found[(kind, k)]
        assert not batch.hierarchical.any()
        coverage = float(np.mean((batch.lower <= truth) & (truth <= batch.upper)))
        rare = size * (truth if kind == "pow" else 1 - truth) < 1
        assert 0.93 <= coverage <= (1.0 if rare else 0.995), (k, coverage)


def test_every_unit_passing_reaches_the_value() -> None:
    """Every attempt passed: units as alike as can be, so the interval reaches 1 as one p's would (the
    hierarchical posterior's bound stays below 1: it needs no widening any more)."""
    few = UnitsPosterior(UnitCounts.from_units([(3, 3)] * 12)).estimates([1, 2, 3], 0.95)
    for k in (1, 2, 3):
        e = few["pow"][k]
        assert e.value == 1.0 and e.upper == 1.0 and e.interval == "hierarchical"
        assert e.lower is not None and 0.5 < e.lower < 1.0
    many = UnitsPosterior(UnitCounts.from_units([(2, 0)] * 80)).estimates([2], 0.95)["pow"][2]
    assert (many.value, many.lower, many.interval, many.widened) == (0.0, 0.0, "nonparametric", False)
    assert many.upper is not None and 0 < many.upper < 0.05


def test_a_million_units_cost_what_their_distinct_pairs_cost() -> None:
    """The hierarchical fit reads the histogram: a million units in four pairs resolve a narrow posterior."""
    pairs = {(2, 2): 400_000, (2, 0): 300_000, (2, 1): 300_000, (1, 1): 9}
    counts = UnitCounts.from_histogram(pairs)
    assert counts.units == 1_000_009 and len(counts.pairs) == 4
    model = UnitsPosterior(counts)
    post = model.grid
    e = model.estimates([2], 0.95)["pow"][2]
    assert e.interval == "nonparametric" and e.value == pytest.approx(0.4, abs=1e-6)
    assert e.upper is not None and e.lower is not None
    assert e.upper - e.lower == pytest.approx(2 * 1.96 * math.sqrt(0.4 * 0.6 / 1_000_000), rel=0.02)
    # the hierarchical posterior of the same data is as narrow: its zoomed grid resolved it
    mean = float(post.mean(2, "pow")[0])
    assert mean == pytest.approx(0.4, abs=2e-3)


def test_batch_and_single_group_give_the_same_intervals() -> None:
    rng = np.random.default_rng(11)
    pairs = [(n, c) for n in range(1, 6) for c in range(n + 1)]
    m = rng.integers(0, 4, size=(6, len(pairs))).astype(float)
    m[0] *= 0
    m[0, -1] = 60  # one group large enough for the nonparametric interval
    m[1, :3] = (30, 20, 25)  # 75 units of one attempt and a few of more: the hull at k >= 2
    ns, cs = zip(*pairs, strict=True)
    batch = intervals_batch(ns, cs, m, [1, 2, 3, 5], 0.95)
    for i in range(m.shape[0]):
        counts = UnitCounts.from_histogram({p: int(x) for p, x in zip(pairs, m[i], strict=True)})
        single = UnitsPosterior(counts).estimates([1, 2, 3, 5], 0.95)
        for (kind, k), b in batch.items():
            e = single[kind][k]
            if e.value is None:
                assert math.isnan(b.value[i])
                continue
            assert (b.value[i], b.lower[i], b.upper[i]) == pytest.approx(
                (e.value, e.lower, e.upper), abs=1e-12
            )
            assert bool(b.hierarchical[i]) == (e.interval == "hierarchical")


def test_regression_probability_of_two_nonparametric_distributions_by_integration() -> None:
    new = UnitsPosterior(UnitCounts.from_units([(3, 3)] * 25 + [(3, 0)] * 35))
    base = UnitsPosterior(UnitCounts.from_units([(3, 3)] * 40 + [(3, 1)] * 20))
    d_new, d_base = new.distribution(3, "pow"), base.distribution(3, "pow")
    assert d_new is not None and d_base is not None
    (a1, b1, *_), (a2, b2, *_) = new._beta(3, "pow", 0.025), base._beta(3, "pow", 0.025)
    exact, _err = integrate.quad(
        lambda x: sps.beta.pdf(x, float(a2), float(b2)) * sps.beta.cdf(x - 0.05, float(a1), float(b1)),
        0,
        1,
        limit=200,
    )
    assert regression_probability(d_new, d_base, 0.05) == pytest.approx(exact, abs=3e-3)
    assert regression_probability(d_base, d_base, 0.0) == pytest.approx(0.5, abs=2e-3)


def _bare_hierarchical(units: list[tuple[int, int]], k: int) -> Distribution:
    """The hierarchical posterior's distribution of pass^k, not widened."""
    points, cdf = UnitsPosterior(UnitCounts.from_units(units)).grid.cdf_points(k, "pow")
    return Distribution(points[0], cdf[0])


def test_regression_probability_of_two_hierarchical_posteriors_against_independent_atoms() -> None:
    new_units = [(4, 0)] * 12 + [(4, 2)] * 5 + [(4, 4)] * 3
    base_units = [(4, 4)] * 10 + [(4, 3)] * 6 + [(4, 0)] * 4
    got = regression_probability(_bare_hierarchical(new_units, 3), _bare_hierarchical(base_units, 3), 0.05)
    atoms = []
    for units in (new_units, base_units):
        a, b, w = _independent_posterior(units, grid=200)
        atoms.append((_moment(a, b, 3), w))
    (x_new, w_new), (x_base, w_base) = atoms
    order = np.argsort(x_new)
    cdf_new = np.cumsum(w_new[order])
    below = np.searchsorted(x_new[order], x_base - 0.05)
    expected = float(np.sum(w_base * np.where(below > 0, cdf_new[np.maximum(below - 1, 0)], 0.0)))
    assert got == pytest.approx(expected, abs=0.01)
    assert got > 0.9


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="0 <= c <= n"):
        UnitCounts.from_units([(2, 3)])
    with pytest.raises(ValueError, match="level"):
        UnitsPosterior(UnitCounts.from_units([(2, 1)])).estimates([1], 1.5)
    with pytest.raises(ValueError, match="no unit"):
        UnitsPosterior(UnitCounts.from_units([]))


@pytest.mark.parametrize(
    ("units", "k", "with_k"),
    [
        # 60 units of one attempt and 12 of five: the Beta is fitted on 72 units, the value at k = 5 on 12
        ([(1, 0)] * 30 + [(1, 1)] * 30 + [(5, 0)] * 4 + [(5, 1)] * 2 + [(5, 4)] * 2 + [(5, 5)] * 4, 5, 12),
        # 40 units of five attempts, two kinds: a Beta fits them no better
        ([(5, 0)] * 12 + [(5, 1)] * 8 + [(5, 4)] * 9 + [(5, 5)] * 11, 5, 40),
    ],
    ids=["72 units, 12 at k", "40 units"],
)
def test_units_that_differ_get_the_hull_of_both_intervals(
    units: list[tuple[int, int]], k: int, with_k: int
) -> None:
    """Fewer than 50 units with k attempts, and they differ: the interval holds both the hierarchical and the
    nonparametric one, and is "hierarchical"."""
    counts = UnitCounts.from_units(units)
    e = UnitsPosterior(counts).estimates([k], 0.95)
    n, c, m = zip(*counts.pairs, strict=True)
    alone = intervals_batch(n, c, np.array([m], dtype=float), [k], 0.95, small_units=math.inf, hull=False)
    nonparametric = intervals_batch(n, c, np.array([m], dtype=float), [k], 0.95, small_units=0)
    chosen = intervals_batch(n, c, np.array([m], dtype=float), [k], 0.95)
    for kind in ("pow", "at"):
        got = e[kind][k]
        h, p = alone[(kind, k)], nonparametric[(kind, k)]
        assert got.interval == "hierarchical" and got.units == with_k and got.holds == "nonparametric"
        assert (chosen[(kind, k)].lower[0], chosen[(kind, k)].upper[0]) == pytest.approx(
            (got.lower, got.upper)
        )
        assert got.lower == pytest.approx(min(h.lower[0], p.lower[0]), abs=1e-12)
        assert got.upper == pytest.approx(max(h.upper[0], p.upper[0]), abs=1e-12)
        assert (got.lower, got.upper) != pytest.approx((h.lower[0], h.upper[0]), abs=1e-6)


def test_fewer_than_hull_units_that_differ_keep_the_hierarchical_interval() -> None:
    """12 units of five attempts, two kinds: below `HULL_UNITS` the hierarchical interval stands alone, and the
    distribution regression probabilities read is the bare posterior's."""
    units = [(5, 0)] * 4 + [(5, 1)] * 2 + [(5, 4)] * 2 + [(5, 5)] * 4
    counts = UnitCounts.from_units(units)
    assert counts.units < HULL_UNITS
    model = UnitsPosterior(counts)
    e = model.estimates([5], 0.95)
    n, c, m = zip(*counts.pairs, strict=True)
    alone = intervals_batch(n, c, np.array([m], dtype=float), [5], 0.95, small_units=math.inf, hull=False)
    for kind in ("pow", "at"):
        h = alone[(kind, 5)]
        assert (e[kind][5].lower, e[kind][5].upper) == pytest.approx((h.lower[0], h.upper[0]), abs=1e-12)
        assert e[kind][5].holds is None
    bare, d = _bare_hierarchical(units, 3), model.distribution(3, "pow")
    assert d is not None and np.array_equal(d.points, bare.points) and np.array_equal(d.cdf, bare.cdf)


@pytest.mark.parametrize("m", [60, 200])
def test_the_nonparametric_interval_of_pass_or_fail_units_covers_near_0_and_1_exactly(m: int) -> None:
    """m units of one attempt each: the interval is of X successes in m. Its coverage at q, exactly: the binomial
    probability of every X whose interval holds q (math.comb). Jeffreys' interval alone dips to 87.8-88.4% near
    0 and 1 (no success reads an upper bound too low, one success a lower bound too high), and with Clopper-
    Pearson's bounds at none or one success only to 91.2% (m = 60): its upper bound at one or two is low too."""
    bounds = []
    for x in range(m + 1):
        e = UnitsPosterior(UnitCounts.from_histogram({(1, 1): x, (1, 0): m - x})).estimates([1], 0.95)["pow"][
            1
        ]
        assert e.interval == "nonparametric" and e.lower is not None and e.upper is not None
        bounds.append((e.lower, e.upper))
    qs = [j / (40 * m) for j in range(1, 40 * 12)]  # up to 12 expected successes, where Jeffreys' dips lie
    qs += [1 - q for q in qs]
    worst = min(
        math.fsum(
            math.comb(m, x) * q**x * (1 - q) ** (m - x) for x, (lo, hi) in enumerate(bounds) if lo <= q <= hi
        )
        for q in qs
    )
    assert worst >= 0.925


@pytest.mark.parametrize(
    "units",
    [
        [(4, 0)] * 10 + [(4, 1)] * 8 + [(4, 2)] * 2 + [(4, 3)] + [(4, 4)] * 4,  # the dev data: they differ
        [(5, 0)] * 12 + [(5, 1)] * 8 + [(5, 4)] * 9 + [(5, 5)] * 11,  # two kinds of units
        [(3, 1)] * 10 + [(3, 2)] * 10 + [(3, 0)] * 3 + [(3, 3)] * 3,  # alike
        [(1, 0)] * 30 + [(1, 1)] * 30 + [(3, 0)] * 6 + [(3, 3)] * 6,  # 72 units, 12 with 3 attempts
    ],
    ids=["dev data", "two kinds", "alike", "few at k"],
)
def test_the_distribution_regression_probabilities_read_has_the_intervals_bounds(
    units: list[tuple[int, int]],
) -> None:
    """Below 50 units with k attempts the interval is a hull; the distribution P(regression) reads has that
    interval's bounds as its 2.5% and 97.5% quantiles, not the bare hierarchical posterior's."""
    model = UnitsPosterior(UnitCounts.from_units(units))
    found = model.estimates([3], 0.95)
    bare = _bare_hierarchical(units, 3)
    for kind in ("pow", "at"):
        e, d = found[kind][3], model.distribution(3, kind)
        assert d is not None and e.lower is not None and e.upper is not None and e.units < SMALL_UNITS
        assert np.all(np.diff(d.points) >= 0) and d.cdf[0] == 0.0 and d.cdf[-1] == 1.0
        lo, hi = np.interp([0.025, 0.975], d.cdf, d.points)
        assert (lo, hi) == pytest.approx((e.lower, e.upper), abs=1e-3), kind
    lo, hi = np.interp([0.025, 0.975], bare.cdf, bare.points)
    assert abs(hi - found["pow"][3].upper) > 1e-3 or abs(lo - found["pow"][3].lower) > 1e-3  # it was widened
