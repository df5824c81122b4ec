"""The hierarchical Beta-binomial posterior of units that differ, integrated on a deterministic grid.

Model: each unit u has its own success probability p_u ~ Beta(α, β), independently, and its c_u passes in n_u
graded attempts are Binomial(n_u, p_u). Hyperprior: the mean μ = α/(α+β) uniform on (0, 1) and the intra-unit
correlation ρ = 1/(α+β+1) uniform on (0, 1) (ρ → 1: each unit always passes or always fails; ρ → 0: every unit
alike, one success probability). Under Beta(α, β) the population mean of p^k is Π_{i<k} (α+i)/(α+β+i) and of
1 - (1-p)^k is 1 - Π_{i<k} (β+i)/(α+β+i), in closed form, so the posterior of either is the posterior of
(μ, ρ) pushed through a formula.

Integration: the posterior density of (μ, ρ) (uniform prior, so the likelihood alone) on a `GRID` × `GRID`
grid of cell midpoints over [0, 1]², then `STAGES` times on the box around the cells within `ZOOM_DROP` of the
largest log density (one cell wider on each side), so that a posterior from 10 units and one from 10^6 units
are both resolved by the final grid. The likelihood of a group depends on its distinct (n, c) pairs and their
multiplicities only: its cost does not grow with the number of units. Within a cell the estimand is taken as
uniform over its value ± the half-width that gives the variance of its (linear) variation across the cell, so
that the estimand's CDF is piecewise linear and exact to invert. No sampling, no seed; the result does not
depend on the order of the units. Accuracy: quantiles within 1e-3 of a 500-point grid, within 3e-3 of an
independent one (tests/unit/test_task_stats.py).

Many groups that share their distinct pairs are fitted at once (the coverage simulations fit thousands).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np
from scipy.special import gammaln

__all__ = ["GRID", "GridPosterior", "Kind", "fit_batch", "log_rising"]

Kind = Literal["pow", "at"]  # pass^k, pass@k

GRID = 48  # cell midpoints per axis of each stage's grid
STAGES = 4  # zooms after the first grid over the whole square
ZOOM_DROP = 12.0  # a zoomed box keeps every cell whose log density is within this of the largest
_DIRECT_MAX = 24  # rising factorials of up to this many terms are summed directly (exact), longer by gammaln
_MIN_HALF = 1e-12  # a cell whose estimand does not vary counts as this narrow (a steep, finite CDF step)


def log_rising(a: np.ndarray, j: int) -> np.ndarray | float:
    """log Γ(a + j) / Γ(a) = Σ_{i<j} log(a + i), element-wise."""
    if j == 0:
        return 0.0
    out: np.ndarray
    if j <= _DIRECT_MAX:
        out = np.log(a)
        for i in range(1, j):
            out = out + np.log(a + i)
        return out
    out = gammaln(a + j) - gammaln(a)
    return out


def _rising_table(a: np.ndarray, needed: Iterable[int]) -> dict[int, np.ndarray | float]:
    """`log_rising(a, j)` for each j in `needed`, the short ones from one running sum."""
    wanted = sorted(set(needed))
    table: dict[int, np.ndarray | float] = {0: 0.0}
    short = {j for j in wanted if 0 < j <= _DIRECT_MAX}
    if short:
        acc = np.zeros_like(a)
        for i in range(max(short)):
            acc = acc + np.log(a + i)
            if i + 1 in short:
                table[i + 1] = acc
    for j in wanted:
        if j > _DIRECT_MAX:
            table[j] = gammaln(a + j) - gammaln(a)
    return table


class GridPosterior:
    """Posteriors of (α, β) as weighted grids, one per group: arrays of shape (groups, GRID, GRID)."""

    __slots__ = ("_rising", "alpha", "beta", "weight")

    def __init__(self, alpha: np.ndarray, beta: np.ndarray, weight: np.ndarray) -> None:
        self.alpha = alpha
        self.beta = beta
        self.weight = weight  # sums to 1 per group
        self._rising: dict[str, list[np.ndarray]] = {}  # log rising factorials of α, β, α+β by length

    def _log_rising(self, which: str, k: int) -> np.ndarray:
        """log Γ(x + k)/Γ(x) of x = α, β or α+β, extending a running sum shared by every k asked for."""
        table = self._rising.setdefault(which, [np.zeros(self.weight.shape)])
        if len(table) <= k:
            x = {"alpha": self.alpha, "beta": self.beta}.get(which)
            x = self.alpha + self.beta if x is None else x
            if k > _DIRECT_MAX:
                return np.asarray(log_rising(x, k))
            while len(table) <= k:
                table.append(table[-1] + np.log(x + (len(table) - 1)))
        return table[k]

    def values(self, k: int, kind: Kind) -> np.ndarray:
        """The estimand at every grid point: E[p^k] (pow) or E[1 - (1-p)^k] (at) under Beta(α, β)."""
        log_kappa = self._log_rising("kappa", k)
        out: np.ndarray
        if kind == "pow":
            out = np.exp(self._log_rising("alpha", k) - log_kappa)
        else:
            out = -np.expm1(self._log_rising("beta", k) - log_kappa)
        return out

    def mean(self, k: int, kind: Kind) -> np.ndarray:
        """Posterior mean of the estimand, per group."""
        out: np.ndarray = np.sum(self.weight * self.values(k, kind), axis=(1, 2))
        return out

    def cdf_points(self, k: int, kind: Kind) -> tuple[np.ndarray, np.ndarray]:
        """The estimand's piecewise linear CDF: its break points and its values there, per group (rows)."""
        g = self.values(k, kind)
        gx, gy = np.gradient(g, axis=(1, 2))  # change of the estimand per cell along each axis
        groups = g.shape[0]
        half = np.maximum(0.5 * np.sqrt(gx**2 + gy**2), _MIN_HALF).reshape(groups, -1)
        g = g.reshape(groups, -1)
        slope = self.weight.reshape(groups, -1) / (2 * half)
        points = np.concatenate([g - half, g + half], axis=1)
        order = np.argsort(points, axis=1)  # ties only meet over zero-length steps: any order will do
        points = np.take_along_axis(points, order, axis=1)
        change = np.take_along_axis(np.concatenate([slope, -slope], axis=1), order, axis=1)
        rate = np.cumsum(change, axis=1)[:, :-1]
        steps = np.cumsum(rate * np.diff(points, axis=1), axis=1)
        cdf = np.concatenate([np.zeros((groups, 1)), steps], axis=1)
        return points, cdf / cdf[:, -1:]


def fit_batch(ns: Iterable[int], cs: Iterable[int], units: np.ndarray) -> GridPosterior:
    """Posteriors of groups sharing the distinct pairs (ns[j], cs[j]); `units[i, j]`: group i's units of j."""
    n = np.asarray(list(ns), dtype=np.int64)
    c = np.asarray(list(cs), dtype=np.int64)
    m = np.atleast_2d(np.asarray(units, dtype=np.float64))
    if m.shape[1] != n.size or c.size != n.size:
        raise ValueError("units must have one column per (n, c) pair")
    if np.any((c < 0) | (c > n) | (n < 1)) or np.any(m < 0):
        raise ValueError("need 1 <= n, 0 <= c <= n and units >= 0")
    box = np.tile(np.array([0.0, 1.0, 0.0, 1.0]), (m.shape[0], 1))
    for _ in range(STAGES):
        box = _zoom(*_log_posterior(n, c, m, box), box)
    mu, rho, lp = _log_posterior(n, c, m, box)
    w = np.exp(lp - lp.max(axis=(1, 2), keepdims=True))
    w /= w.sum(axis=(1, 2), keepdims=True)
    kappa = 1.0 / rho - 1.0
    alpha = np.broadcast_to(mu * kappa, w.shape)
    return GridPosterior(alpha, np.broadcast_to((1.0 - mu) * kappa, w.shape), w)


def _axis(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Midpoints of GRID cells between lo and hi, per group: shape (groups, GRID)."""
    t = (np.arange(GRID) + 0.5) / GRID
    out: np.ndarray = lo[:, None] + (hi - lo)[:, None] * t[None, :]
    return out


def _log_posterior(
    n: np.ndarray, c: np.ndarray, m: np.ndarray, box: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """μ (groups, GRID, 1), ρ (groups, 1, GRID) on the boxes' grids, and the log posterior density there up to
    a constant: Σ over pairs of units × log Beta-binomial(c | n, α, β), without the binomial coefficient."""
    mu = _axis(box[:, 0], box[:, 1])[:, :, None]
    rho = _axis(box[:, 2], box[:, 3])[:, None, :]
    kappa = 1.0 / rho - 1.0
    rise_a = _rising_table(mu * kappa, c.tolist())
    rise_b = _rising_table((1.0 - mu) * kappa, (n - c).tolist())
    rise_k = _rising_table(kappa, n.tolist())
    lp = np.zeros((m.shape[0], GRID, GRID))
    for j in range(n.size):
        weight = m[:, j]
        if weight.any():
            lp += weight[:, None, None] * (rise_a[int(c[j])] + rise_b[int(n[j] - c[j])] - rise_k[int(n[j])])
    return mu, rho, lp


def _zoom(mu: np.ndarray, rho: np.ndarray, lp: np.ndarray, box: np.ndarray) -> np.ndarray:
    """The box around the cells within ZOOM_DROP of the largest log density, one cell wider on each side."""
    keep = lp >= lp.max(axis=(1, 2), keepdims=True) - ZOOM_DROP
    mus = np.broadcast_to(mu, lp.shape)
    rhos = np.broadcast_to(rho, lp.shape)
    d_mu = (box[:, 1] - box[:, 0]) / GRID
    d_rho = (box[:, 3] - box[:, 2]) / GRID
    return np.stack(
        [
            np.maximum(np.where(keep, mus, np.inf).min(axis=(1, 2)) - d_mu, 0.0),
            np.minimum(np.where(keep, mus, -np.inf).max(axis=(1, 2)) + d_mu, 1.0),
            np.maximum(np.where(keep, rhos, np.inf).min(axis=(1, 2)) - d_rho, 0.0),
            np.minimum(np.where(keep, rhos, -np.inf).max(axis=(1, 2)) + d_rho, 1.0),
        ],
        axis=1,
    )
