"""The bound on the exporter's (unit, bucket) entries: what its memory for units grows with.

A unit's counts are kept in every bucket it has graded attempts in, in every window of its task series and
again under `task="*"`, so a unit attempted across many buckets holds many entries (one attempted hourly for a
week holds about 170). `exporter.max_units_total` counts units, so it does not bound these entries;
`exporter.max_unit_entries` does, counted over every bucket of every window of every series. A graded
conversation that would add an entry past it counts as a unit of its own (`agentwatch_units_folded_total`),
as one past `max_units_total` does. Window totals are left out of the count: a window total holds a unit only
while one of that window's buckets does, so it holds at most as many entries as the buckets.
The windows keep the count (`SlidingWindow.add`, `replace`, `advance`, `release`); the estimator asks `admits`
before counting a conversation in a unit (not thread-safe: the estimator's lock guards both).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # windows.py keeps the count and imports nothing from here
    from agentwatch.exporters.buckets import Unit
    from agentwatch.exporters.windows import SlidingWindow


class UnitEntries:
    """The (unit, bucket) entries held over every window bucket of every series, and their bound."""

    __slots__ = ("count", "limit", "most_added")

    def __init__(self, limit: int, most_added: int) -> None:
        self.limit = limit
        self.most_added = most_added  # the entries one conversation can add: one per window of its two series
        self.count = 0

    def admits(
        self, windows: Iterable[SlidingWindow], t: float, unit: Unit, now: float, revision: bool
    ) -> bool:
        """Whether a graded conversation of `unit` at `t` (a revision's, when `revision`) may be counted in its
        unit in `windows` at `now` without the entries going past the bound."""
        if self.count + self.most_added <= self.limit:  # far enough from the bound: nothing to look up
            return True
        added = sum(
            w.adds_entry(t, unit, now, revision) for w in windows
        )  # advances them: expired ones leave
        return self.count + added <= self.limit
