"""Coverage and width of the corrected (PPI++) intervals against the judge alone and the labels alone.

Simulated: N conversations with true success probability p; a judge that passes `sensitivity` of the successes
and `false_pass` of the failures grades all of them; a blind share (the label rate) also carries a person's
label. For each configuration, `--reps` repetitions give the share of 95% intervals that hold p and their mean
width, for: the corrected estimate (`agentwatch.stats.ppi.ppi_mean(binary=True)`, what the report and the exporter
show), the judge alone (Beta(1 + c, 1 + N − c) of the judge's verdicts, the figure reported before), and the
labels alone (Beta(1 + c, 1 + n − c) of the n labels). Then ASR-like credits (0, 0.4, 1) with a judge that
over-credits, and sampling rates that change within a window (Hájek weights). Prints tables; asserts nothing.

    python -m benchmarks.ppi [--reps 2000] [--seed 0] [--part binary|asr|weighted|all]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.stats import beta

from agentwatch.stats.ppi import PPIMoments, Stratum, kish, ppi_mean

PROFILES = (
    (0.70, 0.95, 0.45),
    (0.90, 0.99, 0.70),
    (0.30, 0.60, 0.10),
    (0.50, 0.80, 0.20),
    (0.97, 0.99, 0.50),
)
SIZES = (
    (2000, 0.10),
    (2000, 0.02),
    (2000, 0.01),
    (2000, 0.005),
    (300, 0.10),
    (300, 0.05),
    (10000, 0.01),
    (10000, 0.003),
)


def _beta_interval(c: float, n: float) -> tuple[float, float]:
    return float(beta.ppf(0.025, 1 + c, 1 + n - c)), float(beta.ppf(0.975, 1 + c, 1 + n - c))


def binary_table(reps: int, rng: np.random.Generator) -> None:
    """Coverage and width of the corrected, judge-only and labels-only intervals of the success rate."""
    print("\nSuccess rate, 95% intervals: coverage (width)")
    print(
        f"{'p':>5} {'sens':>5} {'fpass':>5} {'N':>6} {'labels':>6} | {'corrected':>16} | {'judge only':>16} |"
        f" {'labels only':>16}"
    )
    for p, sens, fpass in PROFILES:
        for size, rate in SIZES:
            n = max(2, round(size * rate))
            hits, widths = np.zeros(3), np.zeros(3)
            for _ in range(reps):
                y = rng.random(size) < p
                f = np.where(y, rng.random(size) < sens, rng.random(size) < fpass)
                yl, fl = y[:n].astype(float), f[:n].astype(float)
                est = ppi_mean(PPIMoments.of(yl, fl, f[n:].astype(float)), binary=True)
                assert est is not None
                intervals = (
                    (est.lower, est.upper),
                    _beta_interval(float(f.sum()), size),
                    _beta_interval(float(yl.sum()), n),
                )
                for i, (lo, hi) in enumerate(intervals):
                    hits[i] += lo <= p <= hi
                    widths[i] += hi - lo
            cells = " | ".join(f"{h / reps:7.3f} ({w / reps:.3f})" for h, w in zip(hits, widths, strict=True))
            print(f"{p:5.2f} {sens:5.2f} {fpass:5.2f} {size:6d} {n:6d} | {cells}")


def asr_table(reps: int, rng: np.random.Generator) -> None:
    """Continuous credits (0, 0.4, 1): the t interval of PPI++ against the labels alone."""
    print(
        "\nASR (credits 0, 0.4, 1; the judge credits 30% one class higher), 95% intervals: coverage (width)"
    )
    levels = np.array([0.0, 0.4, 1.0])
    truth_p = np.array([0.25, 0.15, 0.60])
    truth = float(levels @ truth_p)
    print(f"{'N':>6} {'labels':>6} | {'corrected':>16} | {'labels only (t)':>16}")
    for size, n in ((2000, 10), (2000, 20), (2000, 30), (2000, 50), (2000, 100), (2000, 200), (300, 30)):
        hits, widths = np.zeros(2), np.zeros(2)
        for _ in range(reps):
            y = levels[rng.choice(3, size=size, p=truth_p)]
            f = np.where(rng.random(size) < 0.3, np.minimum(1.0, y + 0.4), y)
            est = ppi_mean(PPIMoments.of(y[:n], f[:n], f[n:]))
            assert est is not None
            alone = ppi_mean(PPIMoments.of(y[:n], f[:n], []), lam=0.0)
            assert alone is not None
            for i, e in enumerate((est, alone)):
                hits[i] += e.lower <= truth <= e.upper
                widths[i] += e.upper - e.lower
        cells = " | ".join(f"{h / reps:7.3f} ({w / reps:.3f})" for h, w in zip(hits, widths, strict=True))
        print(f"{size:6d} {n:6d} | {cells}")


def weighted_table(reps: int, rng: np.random.Generator) -> None:
    """One window whose traffic, success probability and sampling rates change halfway: Hájek weights."""
    print(
        "\nA window in two halves, traffic x10 and the judge and review rates /10 in the second; "
        "95% intervals: coverage, mean error (bias)"
    )
    print(
        f"{'p1':>5} {'p2':>5} {'T1':>6} {'T2':>6} {'judge':>11} {'review':>11} |"
        f" {'Hájek, true outcomes':>20} | {'unweighted':>20} | {'weighted PPI':>20}"
    )
    for p1, p2 in ((0.9, 0.6), (0.6, 0.9), (0.7, 0.7)):
        for t1, t2, j1, j2, r1, r2 in ((2000, 20000, 1.0, 0.1, 0.2, 0.02), (500, 5000, 0.8, 0.08, 0.4, 0.04)):
            hits, errors = np.zeros(3), np.zeros(3)
            for _ in range(reps):
                strata, graded = [], []
                truth_total = 0.0
                for traffic, p, judge_rate, review_rate in ((t1, p1, j1, r1), (t2, p2, j2, r2)):
                    y = rng.random(traffic) < p
                    truth_total += y.sum()
                    point = rng.random(traffic)  # the hashed sample point of each conversation
                    judged = point < judge_rate
                    labelled = point < review_rate
                    # a judge passing 95% of successes and 45% of failures
                    f = np.where(y, rng.random(traffic) < 0.95, rng.random(traffic) < 0.45)
                    yl, fl = y[labelled].astype(float), f[labelled].astype(float)
                    fu = f[judged & ~labelled].astype(float)
                    strata.append(Stratum(PPIMoments.of(yl, fl, fu), judge_rate, review_rate))
                    # the graded sample of a rules grader that is right: the true outcomes on the judge sample
                    graded.append((judge_rate, y[judged]))
                truth = truth_total / (t1 + t2)
                w = np.concatenate([np.full(g.size, 1 / r) for r, g in graded])
                x = np.concatenate([g for _r, g in graded]).astype(float)
                ne, share = kish(w.sum(), float(w @ w)), float(w @ x / w.sum())
                weighted = (1 + ne * share) / (2 + ne), *_beta_interval(ne * share, ne)
                c, n = float(x.sum()), x.size
                unweighted = (1 + c) / (2 + n), *_beta_interval(c, n)
                est = ppi_mean(strata, binary=True)
                assert est is not None
                for i, (value, lo, hi) in enumerate(
                    (weighted, unweighted, (est.value, est.lower, est.upper))
                ):
                    hits[i] += lo <= truth <= hi
                    errors[i] += value - truth
            cells = " | ".join(f"{h / reps:8.3f} {e / reps:+9.4f}" for h, e in zip(hits, errors, strict=True))
            print(f"{p1:5.2f} {p2:5.2f} {t1:6d} {t2:6d} {j1:5.2f}/{j2:<5.2f} {r1:5.2f}/{r2:<5.2f} | {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--part", choices=("binary", "asr", "weighted", "all"), default="all")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    sum(range(1000))
    calibration = (time.perf_counter() - t0) * 1e6
    print(
        f"{args.reps} repetitions per configuration, seed {args.seed}; calibration sum(range(1000)) "
        f"{calibration:.1f} µs"
    )
    if args.part in ("binary", "all"):
        binary_table(args.reps, rng)
    if args.part in ("asr", "all"):
        asr_table(args.reps, rng)
    if args.part in ("weighted", "all"):
        weighted_table(args.reps, rng)


if __name__ == "__main__":
    main()
