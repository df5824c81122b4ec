"""The live regression check over two populations of units, simulated at fixed true values, with its distributions
as the intervals are (widened below 50 units) and as the bare hierarchical posterior.

Run: `python -m benchmarks.regression_units [--runs 1000] [--units 10 20 40] [--seed 1]`. Prints figures; asserts nothing.

The exporter's `agentwatch_regression_probability` and the report's `tasks` method take the two versions'
populations of units as independent, each from `UnitsPosterior.distribution` (`agentwatch.stats.units`). Below
50 units with k attempts that distribution is widened as the interval is: each quantile the hull of the
hierarchical posterior's and the other interval's. Each population (`benchmarks.paired`'s, and a two-point one
no Beta fits) is a mix of unit kinds, each a (p_base, p_new) pair; a run draws its units for each version
independently and makes 3 or 5 attempts at each. Printed, as the share of runs where P(drop > margin) >= 0.95:
- false alarms: both versions the baseline's population, margin 0.05 (a check that pages on nothing);
- decision error: the margin equal to the true drop of pass^3 (exact, fractions; nominal at most 5%);
- power: population "steep" (a true drop of 0.185) at margin 0.05.
"""

from __future__ import annotations

import argparse
from fractions import Fraction as F

import numpy as np

from agentwatch.stats.units import (
    Distribution,
    UnitCounts,
    UnitsPosterior,
    regression_probability,
)
from benchmarks.paired import POPULATIONS

Kinds = tuple[list[tuple[F, F]], list[int]]
TWO_POINT: Kinds = ([(F(9, 10), F(4, 5)), (F(1, 5), F(1, 10))], [1, 1])


def _population(name: str) -> Kinds:
    return TWO_POINT if name == "two-point" else POPULATIONS[name]


def true_drop(kinds: Kinds) -> F:
    """pass^3_base - pass^3_new of the population, exactly."""
    pairs, weights = kinds
    total = sum(weights)
    return sum((F(w, total) * (pb**3 - pn**3) for (pb, pn), w in zip(pairs, weights, strict=True)), F(0))


def _draw(kinds: Kinds, side: int, units: int, attempts: int, rng: np.random.Generator) -> UnitCounts:
    """One version's run: `units` units drawn from the population, `attempts` attempts each."""
    pairs, weights = kinds
    w = np.array(weights, dtype=float) / sum(weights)
    p = np.array([float(pair[side]) for pair in pairs])
    c = rng.binomial(attempts, p[rng.choice(len(pairs), size=units, p=w)])
    return UnitCounts.from_units((attempts, int(x)) for x in c)


def _bare(post: UnitsPosterior) -> Distribution:
    """The hierarchical posterior's distribution of pass^3, not widened."""
    points, cdf = post.grid.cdf_points(3, "pow")
    return Distribution(points[0], cdf[0])


def flagged(
    kinds: Kinds, equal: bool, units: int, attempts: int, margin: float, runs: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Share of runs flagged (P >= 0.95): with the distributions as the intervals are, and bare."""
    widened, bare = [], []
    for _ in range(runs):
        new = UnitsPosterior(_draw(kinds, 0 if equal else 1, units, attempts, rng))
        base = UnitsPosterior(_draw(kinds, 0, units, attempts, rng))
        d_new, d_base = new.distribution(3, "pow"), base.distribution(3, "pow")
        assert d_new is not None and d_base is not None
        widened.append(regression_probability(d_new, d_base, margin) >= 0.95)
        bare.append(regression_probability(_bare(new), _bare(base), margin) >= 0.95)
    return float(np.mean(widened)), float(np.mean(bare))


def main() -> None:
    """Run the simulations and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="simulated pairs of runs per cell")
    parser.add_argument("--units", type=int, nargs="*", default=[10, 20, 40])
    parser.add_argument("--seed", type=int, default=1, help="of the simulation's random numbers")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    names = ["mixed", "mostly easy", "hard", "two-point"]
    print(
        "# share of runs where P(drop > margin) >= 0.95: distributions as the intervals are | bare hierarchical"
    )
    print("false alarms (no drop, margin 0.05):")
    for name in names:
        for units in args.units:
            for attempts in (3, 5):
                now, was = flagged(_population(name), True, units, attempts, 0.05, args.runs, rng)
                print(f"  {name:12} {units:4} units × {attempts}: {now:6.1%} | {was:6.1%}", flush=True)
    print("decision error (margin = the true drop of pass^3; nominal at most 5%):")
    for name in names:
        margin = float(true_drop(_population(name)))
        for units in args.units:
            for attempts in (3, 5):
                now, was = flagged(_population(name), False, units, attempts, margin, args.runs, rng)
                print(
                    f"  {name:12} drop {margin:.4f} {units:4} units × {attempts}: {now:6.1%} | {was:6.1%}",
                    flush=True,
                )
    print("power: population steep (true drop 0.1852), margin 0.05, 3 attempts:")
    for units in args.units:
        now, was = flagged(POPULATIONS["steep"], False, units, 3, 0.05, args.runs, rng)
        print(f"  {units:4} units: {now:6.1%} | {was:6.1%}", flush=True)


if __name__ == "__main__":
    main()
