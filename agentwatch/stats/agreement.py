"""Agreement of two raters (a grader and the truth, a judge and people): confusion matrix, Cohen's κ, its interval.

Pure functions over class indices and counts, shared by `judge calibrate`, the validity benchmark and the live
agreement metrics. The interval is a percentile bootstrap, seeded: items resampled (multinomial counts over the
cells of the confusion matrix, so its cost does not grow with the number of items), or whole groups resampled
together (each task's conversations, which are not independent of each other).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["confusion", "counts_interval", "kappa", "kappa_interval", "kappas"]

# Memory bound of one chunk of resampled groups (int64 cells).
_CHUNK_CELLS = 4_000_000


def confusion(truth: Sequence[int], rated: Sequence[int], classes: int) -> np.ndarray:
    """Counts: rows are the true class, columns the rater's, for class indices in range(classes)."""
    m = np.zeros((classes, classes), dtype=np.int64)
    np.add.at(m, (np.asarray(truth, dtype=np.int64), np.asarray(rated, dtype=np.int64)), 1)
    return m


def kappas(matrices: np.ndarray) -> np.ndarray:
    """Cohen's κ of each confusion matrix in a stack (..., k, k): (po − pe) / (1 − pe); NaN where undefined."""
    m = np.asarray(matrices, dtype=np.float64)
    n = m.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        po = np.trace(m, axis1=-2, axis2=-1) / n
        pe = (m.sum(axis=-1) * m.sum(axis=-2)).sum(axis=-1) / (n * n)
        return np.where((n > 0) & (pe < 1.0), (po - pe) / (1.0 - pe), np.nan)


def kappa(m: np.ndarray) -> float:
    """Cohen's κ of one confusion matrix; NaN when nothing is rated or chance agreement is 1."""
    return float(kappas(np.asarray(m)[None])[0])


def kappa_interval(
    truth: Sequence[int],
    rated: Sequence[int],
    classes: int,
    groups: Sequence[object] | None = None,
    level: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of κ: items resampled, or `groups` (one label per item) resampled whole.

    Resamples whose κ is undefined are left out; (NaN, NaN) when every one is, or there is nothing to rate.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    t = np.asarray(truth, dtype=np.int64)
    r = np.asarray(rated, dtype=np.int64)
    if t.size == 0:
        return (math.nan, math.nan)
    cells = t * classes + r
    if groups is None:
        counts = np.bincount(cells, minlength=classes * classes).reshape(classes, classes)
        return counts_interval(counts, level, resamples, seed)
    rng = np.random.default_rng(seed)
    _, group_of = np.unique(np.asarray(groups, dtype=object).astype(str), return_inverse=True)
    per_group = np.zeros((group_of.max() + 1, classes * classes), dtype=np.int64)
    np.add.at(per_group, (group_of, cells), 1)
    g = per_group.shape[0]
    chunk = max(1, _CHUNK_CELLS // (g * classes * classes))
    parts = []
    for start in range(0, resamples, chunk):
        picks = rng.integers(0, g, size=(min(chunk, resamples - start), g))
        parts.append(kappas(per_group[picks].sum(axis=1).reshape(-1, classes, classes)))
    values = np.concatenate(parts)
    return _percentiles(values, level)


def counts_interval(
    m: np.ndarray, level: float = 0.95, resamples: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of κ from a confusion matrix: the items resampled, drawn as multinomial
    counts of its cells (what `kappa_interval` does with items; the live agreement metrics keep only
    counts)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    counts = np.asarray(m, dtype=np.int64)
    n, k = int(counts.sum()), counts.shape[0]
    if n == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, counts.ravel() / n, size=resamples)
    return _percentiles(kappas(draws.reshape(resamples, k, k)), level)


def _percentiles(values: np.ndarray, level: float) -> tuple[float, float]:
    """The equal-tailed percentile interval of the defined values; (NaN, NaN) when none is."""
    values = values[~np.isnan(values)]
    if values.size == 0:
        return (math.nan, math.nan)
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(values, [tail, 1.0 - tail])
    return float(lo), float(hi)
