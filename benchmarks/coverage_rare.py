"""Coverage where the units' values are rare events: a few dozen to a few hundred units, pass^k or pass@k near 0 or 1.

Run: `python -m benchmarks.coverage_rare [--reps 2000] [--jeffreys]`. Prints figures; asserts nothing.

The nonparametric interval (`agentwatch.stats.units_bounds.design_effect_beta`, which `agentwatch.stats.units`
calls) is Jeffreys' Beta around the value, holding Clopper-Pearson's bounds where at most two effective successes
(or failures) are seen. Each line is a configuration where the expected number of units with a nonzero value
(pass^k: every attempt passed) is about 0.1 to 7, where Jeffreys' interval alone dips: the coverage of the 95%
interval and its mean width. `--jeffreys` measures
Jeffreys' bounds alone (without Clopper-Pearson's), for the comparison.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

import agentwatch.stats.units as units_module
from benchmarks.coverage import MIRRORED, TRUTHS, Truth, beta_truth, equal_truth, simulate

# (truth, units, attempts, kind, k): pass^k (or pass@k) at k = attempts, rare units with a nonzero value
CASES: list[tuple[Truth, int, int, str, int]] = [
    (beta_truth(1, 4), 50, 8, "pow", 8),
    (equal_truth(0.45), 60, 8, "pow", 8),
    (beta_truth(1, 3), 450, 8, "pow", 8),
    (equal_truth(0.6), 150, 8, "pow", 8),
    (beta_truth(0.5, 3), 120, 3, "pow", 3),
    (beta_truth(5, 1), 140, 3, "at", 3),
    (beta_truth(5, 1), 60, 2, "at", 2),
    # where Jeffreys' own bound at one or two successes (failures) misses: 4-5 units expected
    (TRUTHS["two-point 0.2 or 0.9"], 54, 8, "at", 8),
    (MIRRORED, 55, 8, "pow", 8),
]


def jeffreys_alone(
    original: Callable[..., tuple[np.ndarray, ...]],
) -> Callable[..., tuple[np.ndarray, ...]]:
    """`design_effect_beta` with Jeffreys' bounds alone: the Beta's quantiles, 0 and 1 at the ends."""
    from scipy.special import betaincinv

    def bounds(value: np.ndarray, m: np.ndarray, s2: np.ndarray, tail: float) -> tuple[np.ndarray, ...]:
        a, b, _lower, _upper = original(value, m, s2, tail)
        lower = np.where(value <= 0.0, 0.0, betaincinv(a, b, tail))
        upper = np.where(value >= 1.0, 1.0, betaincinv(a, b, 1.0 - tail))
        return a, b, lower, upper

    return bounds


def main() -> None:
    """Print one line per configuration."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=2000, help="repetitions per configuration (default 2000)")
    parser.add_argument("--seed", type=int, default=5000)
    parser.add_argument("--jeffreys", action="store_true", help="Jeffreys' bounds alone, for the comparison")
    args = parser.parse_args()
    if args.jeffreys:
        units_module.design_effect_beta = jeffreys_alone(units_module.design_effect_beta)
    which = "Jeffreys alone" if args.jeffreys else "as reported"
    print(f"# {args.reps} repetitions per configuration, 95% intervals, seed {args.seed}, {which}")
    print(
        "| units drawn from | units | attempts | estimand | truth | expected units ≠ 0 | coverage | width |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for i, (truth, units, attempts, kind, k) in enumerate(CASES):
        cells = simulate(truth, units, attempts, args.reps, args.seed + i, [k], at_ks=[k])
        cell = cells[(kind, k)]
        target = truth.pow_mean(k) if kind == "pow" else truth.at_mean(k)
        rare = units * (target if kind == "pow" else 1.0 - target)
        name = f"pass^{k}" if kind == "pow" else f"pass@{k}"
        print(
            f"| {truth.name} | {units} | {attempts} | {name} | {target:.5f} | {rare:.2f} | {cell.coverage:.3f} "
            f"| {cell.width:.4f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
