"""A memo of a pure function of unit histograms: an LRU bounded in entries and in the histogram items its keys hold.

The estimates over units are memoised on a window's unit histogram (the task series and its `task="*"` share one,
and so do snapshots between which it did not change). A histogram holds an item per distinct (n, c) pair or unit
mean credit, up to one per unit (`exporter.max_units`, 5,000 per agent version), and a window's changes at every
scrape once its units are many: a memo bounded in entries alone (4,096, or 16,384 for the regressions) kept every
large histogram it was given, about 88 bytes an item (200 histograms of 5,000 items: 88 MB). The items of the
keys held are counted (the lengths of the tuple arguments); past `max_items` the least recently used entries go,
and a call whose key alone is over it is not memoised. Values are what the function returns: only memory and time
differ. Thread-safe (snapshots and regressions are made on the scrape threads).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, NamedTuple, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

# Histogram items the keys of one memo hold at most (about 18 MB at 88 bytes an item): 4,096 histograms of 48
# items each, the size of a window whose units have up to 8 attempts.
MAX_ITEMS = 200_000


class MemoInfo(NamedTuple):
    """What a memo holds (`currsize` as `functools.lru_cache` names its entries)."""

    currsize: int
    items: int


class Memo(Generic[P, R]):
    """`fn` memoised in at most `max_entries` entries and `max_items` histogram items (module docstring)."""

    def __init__(self, fn: Callable[P, R], max_entries: int, max_items: int) -> None:
        self.__wrapped__ = fn
        self.max_entries = max_entries
        self.max_items = max_items
        self._entries: OrderedDict[tuple[Hashable, ...], tuple[R, int]] = OrderedDict()
        self._held = 0  # items of the keys held
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        key = (*args, *sorted(kwargs.items()))
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found[0]
        value = self.__wrapped__(*args, **kwargs)
        items = sum(len(a) for a in args if isinstance(a, tuple))
        if items > self.max_items:
            return value
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (value, items)
                self._held += items
                while len(self._entries) > self.max_entries or self._held > self.max_items:
                    self._held -= self._entries.popitem(last=False)[1][1]
        return value

    def cache_info(self) -> MemoInfo:
        """Entries and histogram items held."""
        with self._lock:
            return MemoInfo(len(self._entries), self._held)

    def cache_clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()
            self._held = 0


def memo(max_entries: int, max_items: int = MAX_ITEMS) -> Callable[[Callable[P, R]], Memo[P, R]]:
    """Memoise a function of hashable arguments in at most `max_entries` entries and `max_items` items."""
    return lambda fn: Memo(fn, max_entries, max_items)
