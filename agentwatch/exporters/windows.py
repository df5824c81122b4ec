"""Time-bucketed sliding windows: what one series saw in the last W seconds, kept in bounded memory.

Resolution: a window of width W is `buckets` buckets of width W / buckets (default 60: 1 minute for `1h`,
24 minutes for `24h`, 2.8 hours for `7d`). Bucket i holds the events with `i * width <= t < (i + 1) * width`
(what a bucket holds: `buckets.Bucket`). At time `now` the window holds the last `buckets` buckets including the
current, partly filled one, so it covers between W − width and W seconds of history; a bucket leaves the window
as a whole. The window keeps a running total of its buckets (added on insert, subtracted when a bucket
expires), so reading a window costs O(bins), not O(buckets).

A revised score of a conversation replaces its earlier contribution in place (`SlidingWindow.replace`): the
earlier contribution is subtracted from the bucket and the running total it was added to, and the revision is
added there, if that bucket is still inside the window; a window the bucket has left is not changed.

A window given a `unit_entries.UnitEntries` counts there the (unit, bucket) entries its buckets hold, as they are
added, revised and leave (`exporter.max_unit_entries` bounds them over every window of every series).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from agentwatch.config import parse_duration  # noqa: F401 - the window names are configuration
from agentwatch.exporters.buckets import Bucket, Contribution, Unit

if TYPE_CHECKING:
    from agentwatch.exporters.unit_entries import UnitEntries


class SlidingWindow:
    """The last `buckets` buckets of width `width_s / buckets`, with a running total of their contents."""

    __slots__ = (
        "_buckets",
        "_current",
        "_first",
        "bucket_s",
        "entries",
        "generation",
        "n_buckets",
        "name",
        "total",
        "width_s",
    )

    def __init__(
        self, name: str, width_s: float, buckets: int = 60, entries: UnitEntries | None = None
    ) -> None:
        self.name = name
        self.width_s = float(width_s)
        self.n_buckets = int(buckets)
        self.bucket_s = self.width_s / self.n_buckets
        self._buckets: dict[int, Bucket] = {}
        self.total = Bucket.window_total()
        self.generation = 0  # changes whenever the window's contents change
        self._current: int | None = None
        self._first = 0  # first_index at the last `advance`
        self.entries = (
            entries  # the (unit, bucket) entries its buckets hold are counted there (`unit_entries`)
        )

    def first_index(self, now: float) -> int:
        """Index of the oldest bucket still inside the window at `now`."""
        return math.floor(now / self.bucket_s) - self.n_buckets + 1

    def add(self, t: float, c: Contribution, now: float) -> bool:
        """Count a conversation that ended at `t`; False when `t` is already outside the window at `now`."""
        self.advance(now)
        i = math.floor(t / self.bucket_s)
        if i < self._first:  # first_index(now), worked out by advance
            return False
        bucket = self._buckets.get(i)
        if bucket is None:
            bucket = self._buckets[i] = Bucket()
        held = len(bucket.units)
        bucket.add(c)
        if self.entries is not None:
            self.entries.count += len(bucket.units) - held
        self.total.add(c)
        self.generation += 1
        return True

    def replace(self, t: float, old: Contribution, new: Contribution, now: float) -> bool:
        """Swap a contribution counted at `t` for its revision; False (nothing changed) when that bucket has left
        the window at `now`."""
        self.advance(now)
        i = math.floor(t / self.bucket_s)
        bucket = self._buckets.get(i)
        if bucket is None or i < self.first_index(now):
            return False
        held = len(bucket.units)
        bucket.add(old, -1)
        bucket.add(new)
        if self.entries is not None:
            self.entries.count += len(bucket.units) - held
        self.total.add(old, -1)
        self.total.add(new)
        self.generation += 1
        return True

    def advance(self, now: float) -> None:
        """Drop the buckets that have left the window at `now`."""
        cur = math.floor(now / self.bucket_s)
        if cur == self._current:
            return
        self._current = cur
        first = self._first = cur - self.n_buckets + 1
        old = [i for i in self._buckets if i < first]
        if not old:
            return
        for i in old:
            bucket = self._buckets.pop(i)
            if self.entries is not None:
                self.entries.count -= len(bucket.units)
            self.total.merge(bucket, sign=-1)
        if not self._buckets:
            self.total = Bucket.window_total()  # no float residue from subtractions
        self.generation += 1

    def adds_entry(self, t: float, unit: Unit, now: float, revision: bool = False) -> bool:
        """Whether a graded conversation of `unit` at `t` (a revision's, when `revision`: only where the original
        is still counted) would add a (unit, bucket) entry at `now`."""
        self.advance(now)
        i = math.floor(t / self.bucket_s)
        if i < self._first:
            return False
        bucket = self._buckets.get(i)
        if bucket is None:
            return not revision
        return unit not in bucket.units

    def release(self) -> None:
        """Drop every bucket (the series is forgotten), its unit entries with them."""
        if self.entries is not None:
            self.entries.count -= sum(len(b.units) for b in self._buckets.values())
        self._buckets.clear()
        self.total = Bucket.window_total()
        self.generation += 1

    @property
    def empty(self) -> bool:
        """Whether no conversation is in the window."""
        return self.total.total == 0
