"""The paired regression check simulated at fixed true values: its decision error at the margin, its power.

Run: `python -m benchmarks.paired [--runs 2000]`. Prints figures; asserts nothing.

Each population is a mix of unit kinds, each kind a (p_base, p_new) pair. A run draws its units from the mix
and makes 3 or 5 attempts at each under both versions. The true drop of pass^3 is exact (fractions).
- Decision error: with the margin equal to the true drop, how often P(drop > margin) ≥ 0.95 (nominal 5%).
- Power: population "steep" (a true drop of 0.185) at margin 0.05, paired against the two populations taken
  as independent (`agentwatch.stats.units`), on the same runs.
"""

from __future__ import annotations

import argparse
from fractions import Fraction as F

import numpy as np

from agentwatch.stats.paired import paired_difference, paired_regression_probability
from agentwatch.stats.units import UnitCounts, UnitsPosterior, regression_probability

POPULATIONS: dict[str, tuple[list[tuple[F, F]], list[int]]] = {
    "mixed": (
        [(F(95, 100), F(9, 10)), (F(6, 10), F(1, 2)), (F(1, 5), F(1, 5)), (F(1), F(1)), (F(4, 5), F(3, 5))],
        [3, 2, 2, 2, 1],
    ),
    "mostly easy": ([(F(1), F(1)), (F(9, 10), F(85, 100)), (F(1, 10), F(0))], [6, 3, 1]),
    "hard": ([(F(3, 10), F(1, 5)), (F(0), F(0)), (F(1, 2), F(45, 100))], [2, 2, 1]),
    "steep": (
        [(F(95, 100), F(3, 4)), (F(6, 10), F(45, 100)), (F(1, 5), F(1, 5)), (F(1), F(1)), (F(4, 5), F(3, 5))],
        [3, 2, 2, 2, 1],
    ),
}

Run = tuple[dict[int, tuple[int, int]], dict[int, tuple[int, int]]]


def true_drop(name: str) -> F:
    """pass^3_base - pass^3_new of the population, exactly."""
    kinds, weights = POPULATIONS[name]
    total = sum(weights)
    return sum((F(w, total) * (pb**3 - pn**3) for (pb, pn), w in zip(kinds, weights, strict=True)), F(0))


def runs(name: str, units: int, attempts: int, count: int, rng: np.random.Generator) -> list[Run]:
    """`count` pairs of runs (new, baseline) of `units` units drawn from the population."""
    kinds, weights = POPULATIONS[name]
    w = np.array(weights, dtype=float) / sum(weights)
    p = np.array([[float(pb), float(pn)] for pb, pn in kinds])
    out: list[Run] = []
    for _ in range(count):
        kind = rng.choice(len(kinds), size=units, p=w)
        c_base, c_new = rng.binomial(attempts, p[kind, 0]), rng.binomial(attempts, p[kind, 1])
        out.append(
            (
                {u: (attempts, int(c)) for u, c in enumerate(c_new)},
                {u: (attempts, int(c)) for u, c in enumerate(c_base)},
            )
        )
    return out


def paired_flagged(pair: Run, margin: float) -> bool:
    """Whether the paired check reaches 0.95."""
    diff = paired_difference(pair[0], pair[1], 3)
    assert diff is not None
    return paired_regression_probability(diff, margin) >= 0.95


def unpaired_flagged(pair: Run, margin: float) -> bool:
    """Whether the check over two independent populations of units reaches 0.95."""
    new, base = (UnitsPosterior(UnitCounts.from_units(side.values())).distribution(3, "pow") for side in pair)
    assert new is not None and base is not None
    return regression_probability(new, base, margin) >= 0.95


def main() -> None:
    """Run the simulations and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000, help="simulated pairs of runs per cell")
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    print("decision error: P(drop > margin) >= 0.95 with the margin equal to the true drop (nominal 5%)")
    for name in ("mixed", "mostly easy", "hard"):
        margin = float(true_drop(name))
        for units in (30, 60, 150):
            for attempts in (3, 5):
                rate = np.mean(
                    [paired_flagged(r, margin) for r in runs(name, units, attempts, args.runs, rng)]
                )
                print(f"  {name:12} drop {margin:.4f}  {units:4} units × {attempts}: {rate:6.1%}")
    print("power at margin 0.05, population steep (true drop 0.1852), 3 attempts, paired vs independent")
    for units in (30, 60, 100):
        sample = runs("steep", units, 3, max(1, args.runs // 10), rng)
        paired = np.mean([paired_flagged(r, 0.05) for r in sample])
        unpaired = np.mean([unpaired_flagged(r, 0.05) for r in sample])
        print(f"  {units:4} units: paired {paired:6.1%}   independent {unpaired:6.1%}   ({len(sample)} runs)")


if __name__ == "__main__":
    main()
