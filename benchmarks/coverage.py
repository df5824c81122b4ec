"""Coverage of the pass^k / pass@k intervals over units that differ, by simulation at known truths.

Each repetition draws `units` success probabilities from a known distribution (Beta shapes, U-shaped and
skewed ones, and two that no Beta fits), `attempts` Binomial attempts per unit (or an unequal number, 1 to 8),
and computes the intervals exactly as the report and the exporter do (`agentwatch.stats.units.intervals_batch`,
the vectorised form of `UnitsPosterior.estimates`). A 95% interval covers when it holds the population mean of
p^k (or of 1 - (1-p)^k) of the distribution the units were drawn from. Prints one line per configuration:
coverage of pass^k and of pass@k for every identified k (pass@1 is pass^1), the mean interval width of pass^k at
the largest k, and which interval the units got at k = 1.

    python -m benchmarks.coverage                       # the full grid, 2,000 repetitions each (~10 min)
    python -m benchmarks.coverage --reps 500 --quick    # a smaller grid
    python -m benchmarks.coverage --alternatives        # pass^k at the largest k by the intervals not chosen
    python -m benchmarks.coverage --asr --reps 1000     # ASR's bootstrap over units (the report's)
    python -m benchmarks.coverage --equal               # every unit the same p (0.02, 0.5, 0.98)
    python -m benchmarks.coverage --equal --asr         # ASR over units where every unit has the same p
    python -m benchmarks.coverage --asr --equal 0.9 0.95  # ... at these p
    python -m benchmarks.coverage --beta                # the pooled Beta interval, exactly, near 0, 1/2 and 1
    python -m benchmarks.coverage --level 0.9 --units 10  # 90% intervals (stats.level), 10 units

`--alternatives` prints, for each configuration, the coverage of pass^k at its largest k by the hierarchical
interval alone, by the nonparametric interval alone, and by a percentile bootstrap over units (1,000
resamples): the measurements behind the choice described in docs/scoring.md.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from agentwatch.stats.units import SMALL_UNITS, intervals_batch

Draw = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]


@dataclass(frozen=True)
class Truth:
    """A distribution of unit success probabilities and its exact moments."""

    name: str
    draw: Draw
    pow_mean: Callable[[int], float]  # E[p^k]

    def at_mean(self, k: int) -> float:
        """E[1 - (1-p)^k] = 1 - Σ_j C(k,j) (-1)^j E[p^j]."""
        return 1.0 - sum(
            math.comb(k, j) * (-1.0) ** j * (self.pow_mean(j) if j else 1.0) for j in range(k + 1)
        )


def beta_truth(a: float, b: float) -> Truth:
    """Beta(a, b) units: E[p^k] = Π_{i<k} (a+i)/(a+b+i)."""
    return Truth(
        f"Beta({a:g},{b:g})",
        lambda rng, shape: rng.beta(a, b, shape),
        lambda k: math.prod((a + i) / (a + b + i) for i in range(k)),
    )


def _two_point(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    return np.where(rng.random(shape) < 0.5, 0.2, 0.9)


def _zero_one_beta(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    u = rng.random(shape)
    return np.where(u < 0.35, 0.0, np.where(u < 0.6, 1.0, rng.beta(2.0, 2.0, shape)))


TRUTHS: dict[str, Truth] = {
    t.name: t
    for t in (
        beta_truth(0.3, 0.3),
        beta_truth(0.7, 0.5),
        beta_truth(5.0, 1.0),
        beta_truth(1.0, 1.0),
        Truth("two-point 0.2 or 0.9", _two_point, lambda k: 0.5 * 0.2**k + 0.5 * 0.9**k),
        Truth(
            "35% never, 25% always, 40% Beta(2,2)",
            _zero_one_beta,
            lambda k: 0.25 + 0.4 * math.prod((2 + i) / (4 + i) for i in range(k)) if k else 1.0,
        ),
    )
}


# Two-point units mirrored (0.1 or 0.8): pass^k at a high k rests on the few units passing every attempt.
MIRRORED = Truth(
    "two-point 0.1 or 0.8",
    lambda rng, shape: np.where(rng.random(shape) < 0.5, 0.1, 0.8),
    lambda k: 0.5 * 0.1**k + 0.5 * 0.8**k,
)


# Units that do not differ: no spread for the intervals over units to learn (`--equal`).
def equal_truth(p: float) -> Truth:
    """Every unit succeeds with probability p: E[p^k] = p^k."""

    def draw(_rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        return np.full(shape, p)

    return Truth(f"every unit {p:g}", draw, lambda k: p**k)


EQUAL: dict[str, Truth] = {t.name: t for t in map(equal_truth, (0.02, 0.5, 0.98))}
UNEQUAL = 0  # attempts per unit drawn uniformly from 1..8


@dataclass(frozen=True)
class Cell:
    """Coverage of one (kind, k) in one configuration."""

    coverage: float
    width: float
    hierarchical: float  # share of repetitions that got the hierarchical interval


def simulate(
    truth: Truth,
    units: int,
    attempts: int,
    reps: int,
    seed: int,
    ks: list[int],
    level: float = 0.95,
    at_ks: list[int] | None = None,
    small_units: float = SMALL_UNITS,
    hull: bool = True,
) -> dict[tuple[str, int], Cell]:
    """Coverage of the pass^k intervals for each k in `ks` and of pass@k for each in `at_ks` (default: `ks`),
    up to the most attempts (attempts=UNEQUAL: 1..8 each)."""
    hist, ns, cs = _draw(truth, units, attempts, reps, seed)
    top = max(ns)
    wanted = [k for k in ks if k <= top]
    at_wanted = None if at_ks is None else [k for k in at_ks if k <= top]
    batches = intervals_batch(ns, cs, hist, wanted, level, at_wanted, small_units, hull)
    out: dict[tuple[str, int], Cell] = {}
    for (kind, k), b in batches.items():
        truth_k = truth.pow_mean(k) if kind == "pow" else truth.at_mean(k)
        known = ~np.isnan(b.value)
        hit = (b.lower <= truth_k) & (truth_k <= b.upper)
        out[(kind, k)] = Cell(
            float(hit[known].mean()),
            float(np.mean((b.upper - b.lower)[known])),
            float(b.hierarchical[known].mean()),
        )
    return out


def _draw(
    truth: Truth, units: int, attempts: int, reps: int, seed: int
) -> tuple[np.ndarray, tuple[int, ...], tuple[int, ...]]:
    """Histograms of simulated benchmarks: counts (reps, pairs) over the pairs (ns[j], cs[j])."""
    rng = np.random.default_rng(seed)
    p = truth.draw(rng, (reps, units))
    if attempts == UNEQUAL:
        n = rng.integers(1, 9, size=(reps, units))
    else:
        n = np.full((reps, units), attempts)
    c = rng.binomial(n, p)
    top = int(n.max())
    pairs = [(a, b) for a in range(1, top + 1) for b in range(a + 1)]  # pair (a, b) at (a-1)(a+2)/2 + b
    codes = (n - 1) * (n + 2) // 2 + c + len(pairs) * np.arange(reps)[:, None]
    hist = (
        np.bincount(codes.ravel(), minlength=reps * len(pairs)).reshape(reps, len(pairs)).astype(np.float64)
    )
    ns, cs = zip(*pairs, strict=True)
    return hist, ns, cs


def bootstrap_coverage(
    truth: Truth,
    units: int,
    attempts: int,
    reps: int,
    seed: int,
    k: int,
    resamples: int = 1000,
    level: float = 0.95,
) -> float:
    """Coverage of a percentile bootstrap of τ-bench's pass^k over units (resampled with replacement)."""
    hist, ns, cs = _draw(truth, units, attempts, reps, seed)
    values = np.array(
        [math.comb(c, k) / math.comb(n, k) if n >= k else np.nan for n, c in zip(ns, cs, strict=True)]
    )
    usable = ~np.isnan(values)
    rng = np.random.default_rng(seed + 1)
    tail = (1 - level) / 2
    hits = []
    for row in hist[:, usable]:
        m = int(row.sum())
        if m == 0:
            continue
        means = rng.multinomial(m, row / m, size=resamples) @ values[usable] / m
        lo, hi = np.quantile(means, [tail, 1 - tail])
        hits.append(lo <= truth.pow_mean(k) <= hi)
    return float(np.mean(hits))


def _coverages(cells: dict[tuple[str, int], Cell], wanted: str, first: int = 1) -> str:
    """The coverages of one kind, by k from `first`."""
    return " ".join(
        f"{c.coverage:.3f}"
        for (kind, k), c in sorted(cells.items(), key=lambda kv: kv[0][1])
        if kind == wanted and k >= first
    )


def _line(truth: str, units: int, attempts: int, cells: dict[tuple[str, int], Cell], seconds: float) -> str:
    pows = _coverages(cells, "pow")
    ats = _coverages(cells, "at", first=2) or "–"
    ks = ",".join(str(k) for (kind, k) in sorted(cells, key=lambda key: key[1]) if kind == "pow")
    width = cells[("pow", max(k for kind, k in cells if kind == "pow"))].width
    interval = cells[("pow", 1)].hierarchical
    which = (
        "hierarchical"
        if interval == 1
        else "nonparametric"
        if interval == 0
        else f"{interval:.0%} hierarchical"
    )
    n = "1-8" if attempts == UNEQUAL else str(attempts)
    return f"| {truth} | {units} | {n} | {ks} | {pows} | {ats} | {width:.3f} | {which} | {seconds:.1f} s |"


def main() -> None:
    """Run the grid and print a Markdown table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=2000, help="repetitions per configuration (default 2000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="Beta truths at 10 and 200 units only")
    parser.add_argument("--units", type=int, nargs="*", default=None, help="unit counts (default 10 40 200)")
    parser.add_argument("--truth", action="append", default=None, help="only these truths (names as printed)")
    parser.add_argument("--alternatives", action="store_true", help="coverage of the intervals not chosen")
    parser.add_argument("--asr", action="store_true", help="coverage of ASR's bootstrap over units")
    parser.add_argument(
        "--equal",
        type=float,
        nargs="*",
        default=None,
        metavar="P",
        help="truths where every unit has the same p (these, default 0.02 0.5 0.98)",
    )
    parser.add_argument("--beta", action="store_true", help="exact coverage of the pooled Beta interval")
    parser.add_argument("--level", type=float, default=0.95, help="the intervals' level (default 0.95)")
    args = parser.parse_args()
    if args.beta:
        _beta()
        return
    if args.alternatives:
        _alternatives(args)
        return
    if args.asr:
        _asr(args)
        return
    units_list = args.units or ([10, 200] if args.quick else [10, 40, 200])
    truths = _truths(args)
    print(
        f"# {args.reps} repetitions per configuration, {args.level:.0%} intervals, seed {args.seed}; hierarchical "
        f"interval below {SMALL_UNITS} units with k attempts (widened to hold the nonparametric one where the units "
        f"differ, the pooled rate's where they look alike), nonparametric from {SMALL_UNITS}"
    )
    print(
        "| units drawn from | units | attempts | k | pass^k coverage, each k | pass@k coverage, each k ≥ 2 "
        "| width at the largest k | interval | time |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    seed = args.seed
    for truth in truths:
        if args.quick and not truth.name.startswith("Beta"):
            continue
        for units in units_list:
            for attempts in (2, 4, 8, UNEQUAL):
                seed += 1
                start = time.perf_counter()
                cells = simulate(
                    truth, units, attempts, args.reps, seed, [1, 2, 3, 4, 5, 6, 7, 8], args.level
                )
                print(_line(truth.name, units, attempts, cells, time.perf_counter() - start), flush=True)
    if not args.quick and args.equal is None:
        for units in (1000, 5000):
            for truth in (TRUTHS["two-point 0.2 or 0.9"], TRUTHS["35% never, 25% always, 40% Beta(2,2)"]):
                seed += 1
                start = time.perf_counter()
                cells = simulate(truth, units, 8, max(200, args.reps // 4), seed, [1, 2, 3, 4, 8], args.level)
                print(_line(truth.name, units, 8, cells, time.perf_counter() - start), flush=True)


def _beta() -> None:
    """Coverage of the pooled posterior's equal-tailed 95% interval (the success rate without repeated attempts,
    the failure-evidence rates), exactly: the Binomial probability of every count whose interval holds p."""
    from agentwatch.stats.beta import beta_interval

    priors = {"Beta(1,1), the default": (1.0, 1.0), "Jeffreys Beta(1/2,1/2)": (0.5, 0.5)}
    print("| prior | n | " + " | ".join(f"p = {p:g}" for p in (0.02, 0.5, 0.98)) + " |")
    print("|---|---|---|---|---|")
    for name, (a, b) in priors.items():
        for n in (10, 30, 50, 100, 200):
            counts = np.arange(n + 1)
            lo, hi = beta_interval(a + counts, b + n - counts, 0.95)
            cells = []
            for p in (0.02, 0.5, 0.98):
                pmf = [math.comb(n, x) * p**x * (1 - p) ** (n - x) for x in range(n + 1)]
                cells.append(
                    f"{sum(q for q, lo_x, hi_x in zip(pmf, lo, hi, strict=True) if lo_x <= p <= hi_x):.3f}"
                )
            print(f"| {name} | {n} | " + " | ".join(cells) + " |")


def _truths(args: argparse.Namespace) -> list[Truth]:
    """The truths to simulate: those named, else every one of the grid (`--equal`: units that do not differ, at
    the p given)."""
    if args.equal:
        known = {t.name: t for t in map(equal_truth, args.equal)}
    else:
        known = EQUAL if args.equal is not None else TRUTHS
    return [known[t] for t in args.truth] if args.truth else list(known.values())


def _alternatives(args: argparse.Namespace) -> None:
    """pass^k at the largest k: the chosen interval, each interval alone, and a percentile bootstrap."""
    reps = args.reps
    print(
        f"# {reps} repetitions per configuration (bootstrap: {max(200, reps // 4)}), 95% intervals, pass^k "
        f"at the largest k, seed {args.seed}"
    )
    print(
        "| units drawn from | units | attempts | k | chosen | hierarchical alone | nonparametric alone "
        "| percentile bootstrap |"
    )
    print("|---|---|---|---|---|---|---|---|")
    seed = args.seed
    configs = [(t, u, a) for t in TRUTHS.values() for u in (10, 40, 200) for a in (2, 4, 8)]
    configs += [
        (t, u, 8)
        for u in (1000, 5000)
        for t in (TRUTHS["two-point 0.2 or 0.9"], TRUTHS["35% never, 25% always, 40% Beta(2,2)"])
    ]
    for truth, units, attempts in configs:
        seed += 1
        n = reps if units <= 200 else max(200, reps // 4)
        row = []
        for small in (SMALL_UNITS, math.inf, 0):
            cells = simulate(
                truth,
                units,
                attempts,
                n,
                seed,
                [attempts],
                at_ks=[],
                small_units=small,
                hull=small != math.inf,
            )
            row.append(f"{cells[('pow', attempts)].coverage:.3f}")
        boot = bootstrap_coverage(truth, units, attempts, max(200, n // 4), seed, attempts)
        print(
            f"| {truth.name} | {units} | {attempts} | {attempts} | {' | '.join(row)} | {boot:.3f} |",
            flush=True,
        )


def _asr(args: argparse.Namespace) -> None:
    """ASR over units: credits 1 for a success and 0.4 for a third of the failures (partial_correct), the
    report's interval (`units_credit_interval`: the expanded percentile bootstrap over units, holding at least
    what the units' attempts alone give, from the conversations' credits where every unit's mean is the same)
    beside the plain percentile bootstrap. The truth is the mean credit over the population of units,
    E[p] + 0.4 (1 - E[p]) / 3."""
    from agentwatch.stats.bootstrap import CreditSums, units_credit_interval

    print(f"# {args.reps} repetitions per configuration, 1,000 resamples, 95% intervals, seed {args.seed}")
    print("| units drawn from | units | attempts | expanded (the report's) | plain percentile | width |")
    print("|---|---|---|---|---|---|")
    seed = args.seed
    for truth in _truths(args):
        mean_p = truth.pow_mean(1)
        target = mean_p + 0.4 * (1 - mean_p) / 3
        for units in args.units or [10, 25, 50, 200]:
            for attempts in (2, 4, UNEQUAL):
                seed += 1
                rng = np.random.default_rng(seed)
                hits = [0, 0]
                width = 0.0
                for rep in range(args.reps):
                    p = truth.draw(rng, (1, units))[0]
                    n = rng.integers(1, 9, size=units) if attempts == UNEQUAL else np.full(units, attempts)
                    c = rng.binomial(n, p)
                    partial = rng.binomial(n - c, 1 / 3)
                    means = (c + 0.4 * partial) / n
                    sums = CreditSums(
                        float(n.sum()),
                        float(c.sum() + 0.4 * partial.sum()),
                        float(c.sum() + 0.16 * partial.sum()),
                    )
                    _v, lo, hi = units_credit_interval(means, n, sums, (1.0, 1.0), 0.95, 1000, rep)
                    hits[0] += lo <= target <= hi
                    width += hi - lo
                    plain = np.quantile(
                        means[rng.integers(0, units, size=(1000, units))].mean(axis=1), [0.025, 0.975]
                    )
                    hits[1] += plain[0] <= target <= plain[1]
                label = "1-8" if attempts == UNEQUAL else str(attempts)
                print(
                    f"| {truth.name} | {units} | {label} | {hits[0] / args.reps:.3f} | {hits[1] / args.reps:.3f} "
                    f"| {width / args.reps:.3f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
