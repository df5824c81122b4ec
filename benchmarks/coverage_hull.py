"""Coverage where units differ: the hierarchical interval with and without its hull with the nonparametric one.

Run: `python -m benchmarks.coverage_hull [--reps 1000] [--units 10 20 40 60 100 200 400] [--attempts 0]`.
Prints figures; asserts nothing.

Below 50 units with k attempts the interval at k is the hierarchical one, and where the units' dispersion test
rejects (they differ) it is widened to the hull of the hierarchical and the nonparametric ones
(`agentwatch.stats.units`). With unequal attempts (`--attempts 0`, the default: 1 to 8 a unit) that regime reaches
far: the hierarchical posterior is fitted on every unit, while the interval at k is picked by the units with k
attempts, and 200 units have about 25 with 8. For each of `benchmarks.coverage`'s six distributions, each number
of units, pass^k and pass@k at every k, this prints the coverage of the 95% interval as chosen and of the
hierarchical one alone where it was chosen (the interval before the hull), and how much wider the hull made the
intervals on average; then a summary.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from agentwatch.stats.units import intervals_batch
from benchmarks.coverage import TRUTHS, UNEQUAL, _draw


def main() -> None:
    """Print one line per (distribution, units, kind) and a summary."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=1000, help="repetitions per configuration (default 1000)")
    parser.add_argument("--units", type=int, nargs="*", default=[10, 20, 40, 60, 100, 200, 400])
    parser.add_argument(
        "--attempts", type=int, default=UNEQUAL, help="attempts a unit (default 0: 1 to 8, drawn uniformly)"
    )
    args = parser.parse_args()
    ks = list(range(1, (args.attempts or 8) + 1))
    attempts = f"{args.attempts}" if args.attempts else "1-8"
    print(
        f"# {args.reps} repetitions, {attempts} attempts a unit, 95% intervals: coverage before -> after (width ×)"
    )
    figures: list[tuple[float, float, float]] = []
    for truth in TRUTHS.values():
        for units in args.units:
            hist, ns, cs = _draw(truth, units, args.attempts, args.reps, 1000 + units)
            chosen = intervals_batch(ns, cs, hist, ks, 0.95, ks)
            alone = intervals_batch(ns, cs, hist, ks, 0.95, ks, small_units=math.inf, hull=False)
            for kind in ("pow", "at"):
                cells = []
                for k in ks:
                    target = truth.pow_mean(k) if kind == "pow" else truth.at_mean(k)
                    after, hier = chosen[(kind, k)], alone[(kind, k)]
                    known = ~np.isnan(after.value)
                    lower = np.where(after.hierarchical, hier.lower, after.lower)
                    upper = np.where(after.hierarchical, hier.upper, after.upper)
                    was = float(((lower <= target) & (target <= upper))[known].mean())
                    now = float(((after.lower <= target) & (target <= after.upper))[known].mean())
                    wider = float(
                        np.mean((after.upper - after.lower)[known]) / np.mean((upper - lower)[known])
                    )
                    figures.append((was, now, wider))
                    cells.append(f"{was:.3f}->{now:.3f} (×{wider:.2f})")
                name = "pass^k" if kind == "pow" else "pass@k"
                print(f"{truth.name} | {units} units | {name} | " + " ".join(cells), flush=True)
    was_a, now_a, wider_a = (np.array(column) for column in zip(*figures, strict=True))
    widened = wider_a > 1.0001
    print(
        f"# {len(figures)} figures. Before: {int((was_a < 0.93).sum())} below 93% (lowest {was_a.min():.3f}), "
        f"{int((was_a > 0.97).sum())} above 97%. After: {int((now_a < 0.93).sum())} below 93% (lowest "
        f"{now_a.min():.3f}), {int((now_a > 0.97).sum())} above 97%. Widened: {int(widened.sum())}, median "
        f"×{np.median(wider_a[widened]) if widened.any() else 1.0:.2f}, at most ×{wider_a.max():.2f}."
    )


if __name__ == "__main__":
    main()
