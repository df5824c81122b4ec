"""Statistics checked against exact fractions, combinatorics, bisection on the Beta CDF, numerical integration
and simulation."""

from __future__ import annotations

import math
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from scipy import integrate
from scipy import stats as sps
from scipy.special import betaln

from agentwatch.stats.beta import (
    BetaPosterior,
    beta_interval,
    beta_power_means,
    posterior,
    regression_probability,
)
from agentwatch.stats.bootstrap import bootstrap_counts_interval, bootstrap_mean_interval
from agentwatch.stats.pass_k import (
    pass_at_k_plugin,
    pass_at_k_unbiased,
    pass_pow_k_plugin,
    pass_pow_k_unbiased,
    task_mean,
)
from tests.support.metrics_reference import beta_quantile_by_bisection, exact_beta_moment


def exact_at(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(comb(n - c, k), comb(n, k))


def exact_pow(n: int, c: int, k: int) -> Fraction:
    return Fraction(comb(c, k), comb(n, k))


# --------------------------------------------------------------------------- unbiased estimators


def test_lesson_values_n10_c8() -> None:
    assert pass_pow_k_unbiased(10, 8, 2) == pytest.approx(float(Fraction(28, 45)), rel=1e-14)
    assert pass_pow_k_unbiased(10, 8, 3) == pytest.approx(float(Fraction(7, 15)), rel=1e-14)
    assert pass_at_k_unbiased(10, 8, 2) == pytest.approx(float(Fraction(44, 45)), rel=1e-14)
    assert pass_pow_k_unbiased(10, 8, 5) == pytest.approx(float(Fraction(comb(8, 5), comb(10, 5))), rel=1e-14)
    assert round(pass_pow_k_unbiased(10, 8, 5), 3) == 0.222


@pytest.mark.parametrize("n", [1, 2, 5, 13, 40])
def test_unbiased_equals_exact_fractions_everywhere(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k_unbiased(n, c, k) == pytest.approx(
                float(exact_at(n, c, k)), rel=1e-12, abs=1e-15
            )
            assert pass_pow_k_unbiased(n, c, k) == pytest.approx(
                float(exact_pow(n, c, k)), rel=1e-12, abs=1e-15
            )


def test_unbiased_is_unbiased_under_binomial_sampling() -> None:
    # E over c ~ Binomial(n, p) of the estimator equals 1-(1-p)^k and p^k exactly.
    n, p = 12, Fraction(3, 7)
    for k in (1, 2, 5, 12):
        e_at = sum(comb(n, c) * p**c * (1 - p) ** (n - c) * exact_at(n, c, k) for c in range(n + 1))
        e_pow = sum(comb(n, c) * p**c * (1 - p) ** (n - c) * exact_pow(n, c, k) for c in range(n + 1))
        assert e_at == 1 - (1 - p) ** k and e_pow == p**k
        got_at = sum(
            float(comb(n, c) * p**c * (1 - p) ** (n - c)) * pass_at_k_unbiased(n, c, k) for c in range(n + 1)
        )
        assert got_at == pytest.approx(float(e_at), rel=1e-12)


def test_large_n_matches_big_integer_arithmetic() -> None:
    n = 10**6
    for c, k in [(999_990, 10), (500_000, 7), (3, 2), (999_999, 1000), (10, 50)]:
        assert pass_pow_k_unbiased(n, c, k) == pytest.approx(float(exact_pow(n, c, k)), rel=1e-9, abs=1e-300)
        assert pass_at_k_unbiased(n, c, k) == pytest.approx(float(exact_at(n, c, k)), rel=1e-9)


def test_k_greater_than_n_is_nan_and_k_validated() -> None:
    assert math.isnan(pass_at_k_unbiased(3, 2, 4))
    assert math.isnan(pass_pow_k_unbiased(3, 3, 4))
    assert math.isnan(pass_pow_k_unbiased(0, 0, 1))
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError):
            pass_at_k_unbiased(10, 5, bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            pass_pow_k_plugin(0.5, bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        pass_pow_k_unbiased(5, 6, 1)
    with pytest.raises(ValueError):
        pass_at_k_plugin(1.2, 1)


def test_plugin_matches_paper_table_p_two_thirds() -> None:
    # Reference 000, table tab:passk (p = 2/3, k = 1..5), three decimals.
    table = {1: (0.667, 0.667), 2: (0.889, 0.444), 3: (0.963, 0.296), 4: (0.988, 0.198), 5: (0.996, 0.132)}
    p = 2 / 3
    for k, (at, pw) in table.items():
        assert round(pass_at_k_plugin(p, k), 3) == at
        assert round(pass_pow_k_plugin(p, k), 3) == pw
        assert pass_at_k_plugin(p, k) == pytest.approx(float(1 - Fraction(1, 3) ** k), rel=1e-14)


# --------------------------------------------------------------------------- Bayesian


def test_corrected_bayesian_example_of_reference_001() -> None:
    post = posterior(10, 7)
    assert (post.alpha, post.beta) == (8.0, 4.0)
    assert post.pass_at_k_mean(3) == pytest.approx(0.945, abs=5e-4)
    lo, hi = post.pass_at_k_interval(3, 0.95)
    assert lo == pytest.approx(0.774, abs=1e-3) and hi == pytest.approx(0.999, abs=1e-3)
    assert post.pass_pow_k_mean(3) == pytest.approx(0.330, abs=5e-4)
    lo, hi = post.pass_pow_k_interval(3, 0.95)
    # Exact value 0.05944 (README of the references rounds it to 0.060).
    assert lo == pytest.approx(0.060, abs=1e-3) and hi == pytest.approx(0.706, abs=1e-3)
    # Exact closed forms: E[p^3] = 8*9*10/(12*13*14), E[(1-p)^3] = 4*5*6/(12*13*14).
    assert post.pass_pow_k_mean(3) == pytest.approx(float(Fraction(8 * 9 * 10, 12 * 13 * 14)), rel=1e-14)
    assert post.pass_at_k_mean(3) == pytest.approx(float(1 - Fraction(4 * 5 * 6, 12 * 13 * 14)), rel=1e-14)


@pytest.mark.parametrize("a,b", [(1.0, 1.0), (8.0, 4.0), (0.5, 0.5), (30.5, 2.5), (2.0, 200.0)])
@pytest.mark.parametrize("level", [0.8, 0.95])
def test_intervals_are_transforms_of_the_beta_quantiles(a: float, b: float, level: float) -> None:
    post = BetaPosterior(a, b)
    qlo = beta_quantile_by_bisection(a, b, (1 - level) / 2)
    qhi = beta_quantile_by_bisection(a, b, (1 + level) / 2)
    assert post.interval(level) == pytest.approx((qlo, qhi), rel=1e-10)
    for k in (1, 3, 10):
        # The interval must hold exactly `level` of the posterior mass of p^k and of 1-(1-p)^k.
        lo, hi = post.pass_pow_k_interval(k, level)
        assert sps.beta.cdf(hi ** (1 / k), a, b) - sps.beta.cdf(lo ** (1 / k), a, b) == pytest.approx(level)
        lo, hi = post.pass_at_k_interval(k, level)
        assert (lo, hi) == pytest.approx((1 - (1 - qlo) ** k, 1 - (1 - qhi) ** k), rel=1e-10)
        if hi < 1 - 1e-6:  # otherwise 1 - hi has too few significant digits to invert
            mass = sps.beta.sf(1 - (1 - hi) ** (1 / k), a, b) - sps.beta.sf(1 - (1 - lo) ** (1 / k), a, b)
            assert -mass == pytest.approx(level, abs=1e-6)


def test_beta_interval_is_element_wise_over_broadcast_arrays() -> None:
    a = np.array([[1.0, 8.0, 0.5], [30.5, 2.0, 101.0]])
    b = np.array([4.0, 200.0, 0.5])  # broadcast over the rows of a
    lo, hi = beta_interval(a, b, 0.9)
    assert lo.shape == hi.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            assert lo[i, j] == pytest.approx(beta_quantile_by_bisection(a[i, j], b[j], 0.05), rel=1e-10)
            assert hi[i, j] == pytest.approx(beta_quantile_by_bisection(a[i, j], b[j], 0.95), rel=1e-10)
    scalar = beta_interval(8.0, 4.0, 0.9)
    assert all(type(v) is float for v in scalar)
    with pytest.raises(ValueError):
        beta_interval(a, b, 1.0)


def test_beta_power_means_equal_exact_moments_for_every_k() -> None:
    a = np.array([1, 8, 25, 3])
    b = np.array([1, 4, 7, 40])
    pow_means, fail_means = beta_power_means(a, b, 6)
    assert pow_means.shape == fail_means.shape == (6, 4)
    for k in range(1, 7):
        for j in range(4):
            assert pow_means[k - 1, j] == pytest.approx(float(exact_beta_moment(a[j], b[j], k)), rel=1e-14)
            # (1 - p) ~ Beta(b, a)
            assert fail_means[k - 1, j] == pytest.approx(float(exact_beta_moment(b[j], a[j], k)), rel=1e-14)
    pow0, _ = beta_power_means(8.0, 4.0, 3)
    assert pow0.shape == (3,)
    assert pow0[2] == pytest.approx(float(Fraction(8 * 9 * 10, 12 * 13 * 14)), rel=1e-14)
    with pytest.raises(ValueError):
        beta_power_means(a, b, 0)


def test_plugin_transforms_broadcast_and_keep_the_endpoints() -> None:
    p = np.array([0.0, 0.25, 2 / 3, 1.0])
    exact = [0.0, float(1 - Fraction(3, 4) ** 3), float(1 - Fraction(1, 27)), 1.0]
    assert pass_at_k_plugin(p, 3) == pytest.approx(exact)
    assert pass_pow_k_plugin(p, 3) == pytest.approx([0.0, 1 / 64, 8 / 27, 1.0])
    assert type(pass_at_k_plugin(1.0, 5)) is float and pass_at_k_plugin(1.0, 5) == 1.0
    with pytest.raises(ValueError):
        pass_at_k_plugin(np.array([0.5, float("nan")]), 2)


@pytest.mark.parametrize("a,b", [(1.0, 1.0), (8.0, 4.0), (0.7, 3.2), (55.0, 12.0)])
def test_posterior_means_match_numerical_integration(a: float, b: float) -> None:
    post = BetaPosterior(a, b)
    assert post.mean() == pytest.approx(sps.beta.mean(a, b), rel=1e-12)
    for k in (1, 2, 3, 7):
        pow_mean, _ = integrate.quad(lambda x, k=k: x**k * sps.beta.pdf(x, a, b), 0, 1, limit=200)
        at_mean, _ = integrate.quad(
            lambda x, k=k: (1 - (1 - x) ** k) * sps.beta.pdf(x, a, b), 0, 1, limit=200
        )
        assert post.pass_pow_k_mean(k) == pytest.approx(pow_mean, rel=1e-7)
        assert post.pass_at_k_mean(k) == pytest.approx(at_mean, rel=1e-7)


def test_posterior_prior_and_validation() -> None:
    assert posterior(10, 3, prior_alpha=0.5, prior_beta=2.0) == BetaPosterior(3.5, 9.0)
    with pytest.raises(ValueError):
        BetaPosterior(0.0, 1.0)
    with pytest.raises(ValueError):
        posterior(3, 4)
    with pytest.raises(ValueError):
        BetaPosterior(1, 1).interval(1.0)


def test_credible_intervals_cover_true_p_95_percent() -> None:
    # p drawn from the prior (Beta(1,1)): Bayesian intervals then cover exactly `level` of the time.
    rng = np.random.default_rng(12345)
    reps, n = 4000, 25
    p = rng.uniform(size=reps)
    c = rng.binomial(n, p)
    lo, hi = beta_interval(1 + c, 1 + n - c, 0.95)  # every draw in one call
    for i in range(0, reps, 397):
        assert posterior(n, int(c[i])).interval(0.95) == (lo[i], hi[i])  # the scalar is the 0-d case
        assert lo[i] == pytest.approx(beta_quantile_by_bisection(1 + c[i], 1 + n - c[i], 0.025), rel=1e-10)
    coverage = np.mean((lo <= p) & (p <= hi))
    assert 0.93 <= coverage <= 0.97
    k = 3
    cov_pow = np.mean((lo**k <= p**k) & (p**k <= hi**k))
    assert cov_pow == coverage  # monotone transform: same events


# --------------------------------------------------------------------------- task mean, bootstrap


def test_task_mean_skips_tasks_with_too_few_trials() -> None:
    per_task = {"a": (10, 8), "b": (5, 5), "c": (2, 1)}
    assert task_mean(per_task, 3, "pow") == pytest.approx(float((exact_pow(10, 8, 3) + 1) / 2))
    assert task_mean(per_task, 1, "at") == pytest.approx((0.8 + 1.0 + 0.5) / 3)
    assert task_mean(per_task, 20, "at") is None
    with pytest.raises(ValueError):
        task_mean(per_task, 1, "both")  # type: ignore[arg-type]


def test_bootstrap_against_independent_percentile_computation() -> None:
    rng = np.random.default_rng(7)
    values = rng.choice([0.0, 0.4, 1.0], size=200, p=[0.3, 0.2, 0.5])
    value, lo, hi = bootstrap_mean_interval(values, level=0.95, resamples=4000, seed=3)
    assert value == pytest.approx(values.mean(), rel=1e-12)
    ref = sps.bootstrap(
        (values,), np.mean, n_resamples=4000, method="percentile", rng=np.random.default_rng(99)
    )
    assert lo == pytest.approx(ref.confidence_interval.low, abs=0.012)
    assert hi == pytest.approx(ref.confidence_interval.high, abs=0.012)
    # Normal approximation: half-width ≈ 1.96 * sd / sqrt(n).
    half = 1.96 * values.std() / math.sqrt(values.size)
    assert (hi - lo) / 2 == pytest.approx(half, rel=0.1)
    # Seeded: same seed, same answer; chunking does not change the result's distribution.
    assert bootstrap_mean_interval(values, resamples=4000, seed=3) == (value, lo, hi)


def test_bootstrap_exact_on_tiny_sample() -> None:
    # Two values {0, 1}: resample means of n=2 are 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4.
    value, lo, hi = bootstrap_mean_interval(np.array([0.0, 1.0]), level=0.9, resamples=20000, seed=1)
    assert value == 0.5 and lo == 0.0 and hi == 1.0
    value, lo, hi = bootstrap_mean_interval(np.array([0.0, 1.0]), level=0.4, resamples=20000, seed=1)
    assert lo == hi == 0.5
    assert all(math.isnan(v) for v in bootstrap_mean_interval(np.array([])))
    assert bootstrap_mean_interval(np.full(5, 0.4)) == pytest.approx((0.4, 0.4, 0.4))


def _exact_resample_mean_quantile(values: list[Fraction], counts: list[int], q: Fraction) -> Fraction:
    """Smallest resample mean whose CDF reaches q, from the exact multinomial distribution of the resample."""
    n = sum(counts)
    dist: dict[Fraction, Fraction] = {}

    def walk(i: int, left: int, prob: Fraction, total: Fraction) -> None:
        if i == len(values) - 1:
            mean = (total + left * values[i]) / n
            dist[mean] = dist.get(mean, 0) + prob * Fraction(counts[i], n) ** left
            return
        for m in range(left + 1):
            walk(i + 1, left - m, prob * comb(left, m) * Fraction(counts[i], n) ** m, total + m * values[i])

    walk(0, n, Fraction(1), Fraction(0))
    cdf = Fraction(0)
    for mean in sorted(dist):
        cdf += dist[mean]
        if cdf >= q:
            return mean
    raise AssertionError("the distribution sums to 1")


def test_bootstrap_from_counts_against_the_exact_resampling_distribution() -> None:
    values, counts = [Fraction(0), Fraction(1, 2), Fraction(1)], [2, 1, 3]
    lo, hi = bootstrap_counts_interval(np.array([0.0, 0.5, 1.0]), np.array(counts), 0.9, 200_000, seed=5)
    assert lo == float(_exact_resample_mean_quantile(values, counts, Fraction(5, 100)))
    assert hi == float(_exact_resample_mean_quantile(values, counts, Fraction(95, 100)))
    # The same multiset given value by value resamples the same distribution.
    _, lo_v, hi_v = bootstrap_mean_interval(np.repeat([0.0, 0.5, 1.0], counts), 0.9, 200_000, seed=5)
    assert (lo_v, hi_v) == (lo, hi)
    assert bootstrap_counts_interval(np.array([0.3]), np.array([7])) == (0.3, 0.3)
    for bad_values, bad_counts in (([], []), ([0.1, 0.2], [1]), ([0.1, 0.2], [1, -1]), ([math.inf], [1])):
        with pytest.raises(ValueError):
            bootstrap_counts_interval(np.array(bad_values), np.array(bad_counts))
    with pytest.raises(ValueError):
        bootstrap_counts_interval(np.array([0.1]), np.array([1]), resamples=0)


def test_bootstrap_large_input_is_chunked_and_fast() -> None:
    values = np.random.default_rng(0).uniform(size=50_000)
    value, lo, hi = bootstrap_mean_interval(values, resamples=1000, seed=0)
    half = 1.96 * values.std() / math.sqrt(values.size)
    assert lo < value < hi and (hi - lo) / 2 == pytest.approx(half, rel=0.15)


# --------------------------------------------------------------------------- regression probability


def _miller_p_b_beats_a(aa: int, ba: int, ab: int, bb: int) -> float:
    """Closed form P(X_B > X_A), X_A ~ Beta(aa, ba), X_B ~ Beta(ab, bb), integer ab (Evan Miller)."""
    total = 0.0
    for i in range(ab):
        total += math.exp(betaln(aa + i, ba + bb) - math.log(bb + i) - betaln(1 + i, bb) - betaln(aa, ba))
    return total


@pytest.mark.parametrize(
    "new,base", [((5, 7), (9, 3)), ((30, 12), (28, 15)), ((2, 2), (2, 2)), ((61, 41), (81, 21))]
)
def test_regression_probability_closed_form_margin_zero(new: tuple[int, int], base: tuple[int, int]) -> None:
    pn, pb = BetaPosterior(*new), BetaPosterior(*base)
    expected = _miller_p_b_beats_a(new[0], new[1], base[0], base[1])  # P(p_base > p_new)
    for k in (1, 3, 5):  # p^k is monotone: P(p_new^k < p_base^k) does not depend on k.
        assert regression_probability(pn, pb, k, 0.0) == pytest.approx(expected, abs=1e-8)


def test_regression_probability_against_monte_carlo() -> None:
    rng = np.random.default_rng(2024)
    m = 400_000
    for new, base, k, margin in [
        (posterior(100, 60), posterior(100, 80), 3, 0.05),
        (posterior(40, 30), posterior(40, 31), 3, 0.05),
        (posterior(20, 18), posterior(25, 20), 1, 0.1),
        (posterior(500, 400), posterior(500, 420), 5, 0.02),
    ]:
        xn = rng.beta(new.alpha, new.beta, m)
        xb = rng.beta(base.alpha, base.beta, m)
        mc = float(np.mean(xn**k < xb**k - margin))
        se = math.sqrt(mc * (1 - mc) / m)
        assert regression_probability(new, base, k, margin) == pytest.approx(mc, abs=5 * se + 1e-4)


def test_regression_probability_edges() -> None:
    # Huge n: narrow posteriors, normal approximation of the difference.
    new, base = posterior(100_000, 60_000), posterior(100_000, 60_100)
    sd = math.sqrt(new.dist.var() + base.dist.var())
    approx = sps.norm.cdf((base.mean() - new.mean()) / sd)
    assert regression_probability(new, base, 1, 0.0) == pytest.approx(approx, abs=2e-3)
    # Margin beyond what the base can lose: no regression possible.
    assert regression_probability(posterior(10, 9), posterior(10, 1), 3, 0.9) < 1e-15
    assert regression_probability(posterior(10, 9), posterior(10, 1), 1, 0.99) == 0.0
    with pytest.raises(ValueError):
        regression_probability(new, base, 1, 1.0)


def test_bootstrap_multinomial_and_index_paths_agree() -> None:
    # Three distinct values use multinomial counts; the same data made all-distinct by a tiny jitter uses
    # index resampling. Both are the percentile bootstrap of the same (up to 1e-9) sample.
    rng = np.random.default_rng(11)
    values = rng.choice([0.0, 0.4, 1.0], size=500, p=[0.25, 0.15, 0.6])
    jittered = values + rng.uniform(0, 1e-9, size=values.size)
    assert np.unique(jittered).size == values.size
    _, lo_a, hi_a = bootstrap_mean_interval(values, resamples=5000, seed=1)
    _, lo_b, hi_b = bootstrap_mean_interval(jittered, resamples=5000, seed=2)
    assert lo_a == pytest.approx(lo_b, abs=0.006) and hi_a == pytest.approx(hi_b, abs=0.006)
