"""The order names are listed in: numbers as numbers (task 2 before task 10), the rest as text.

Benchmarks name their tasks 0, 1, 2, …, 10; sorted as text they read 0, 1, 10, 11, …, 2. `natural_key` splits a
name into runs of digits and of other characters and compares the digit runs by their value, so `task-2`
comes before `task-10` as well.
"""

from __future__ import annotations

import re

_RUNS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key of `name` that orders its runs of digits by value (0, 1, 2, 10; task-2 before task-10)."""
    parts = _RUNS.split(name)
    # (0, number) for digit runs and (1, text) for the rest keep the tuples comparable whatever the mix
    return tuple((0, int(p)) if p.isdigit() else (1, p.casefold()) for p in parts if p) + ((1, name),)
