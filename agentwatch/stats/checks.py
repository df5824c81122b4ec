"""Argument checks the estimators share: k, counts, probabilities, levels; scalars kept scalar."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike


def check_k(k: int) -> None:
    """Raise unless k is an integer >= 1."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")


def check_counts(n: int, c: int) -> None:
    """Raise unless 0 <= c <= n."""
    if n < 0 or c < 0 or c > n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")


def check_p(p: ArrayLike) -> np.ndarray:
    """p as a float array, after checking every element is in [0, 1]."""
    arr = np.asarray(p, dtype=np.float64)
    if not np.all((arr >= 0.0) & (arr <= 1.0)):
        raise ValueError(f"p must be in [0, 1], got {p!r}")
    return arr


def scalar_or_array(x: np.ndarray) -> Any:
    """A 0-d result as a Python float, any other as the array."""
    return float(x) if np.ndim(x) == 0 else x


def check_level(level: float) -> None:
    """Raise unless 0 < level < 1."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
