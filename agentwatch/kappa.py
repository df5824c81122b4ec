"""Cohen's kappa of two raters from their confusion matrix, with a bootstrap interval.

Shared by `agentwatch judge calibrate` (a labels file) and the live exporter (the judge's verdicts against the
labels of the blind review sample, per judge and window). Pure: counts in, numbers out, seeded.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["kappa_from_confusion", "kappa_interval_of"]


def kappa_from_confusion(m: ArrayLike) -> float:
    """Cohen's kappa (po − pe) / (1 − pe) of a square confusion matrix; NaN when undefined (no items, or chance
    agreement is 1)."""
    m = np.asarray(m, dtype=np.float64)
    n = m.sum()
    if n == 0:
        return math.nan
    po = np.trace(m) / n
    pe = float((m.sum(axis=1) * m.sum(axis=0)).sum()) / (n * n)
    if pe >= 1.0:
        return math.nan
    return float((po - pe) / (1.0 - pe))


def kappa_interval_of(m: ArrayLike, level: float = 0.95, resamples: int = 1000, seed: int = 0
                      ) -> tuple[float, float]:
    """Percentile bootstrap interval of kappa: the items resampled with replacement, drawn as multinomial counts
    of the confusion cells (the same distribution); resamples where kappa is undefined are left out."""
    cells = np.asarray(m, dtype=np.int64)
    k = cells.shape[0]
    n = int(cells.sum())
    if n == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, cells.ravel() / n, size=resamples).reshape(resamples, k, k).astype(np.float64)
    po = np.trace(draws, axis1=1, axis2=2) / n
    pe = (draws.sum(axis=2) * draws.sum(axis=1)).sum(axis=1) / (n * n)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappas = np.where(pe < 1.0, (po - pe) / (1.0 - pe), np.nan)
    kappas = kappas[~np.isnan(kappas)]
    if kappas.size == 0:
        return (math.nan, math.nan)
    tail = (1.0 - level) / 2
    lo, hi = np.quantile(kappas, [tail, 1.0 - tail])
    return float(lo), float(hi)
