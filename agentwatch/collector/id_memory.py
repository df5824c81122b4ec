"""A memory of recent ids bounded in entries and in bytes: an LRU of string keys to small values.

The collector remembers recent ids to route late records (trace → conversation, trace → loop key, conversations
finished recently). A conversation id comes from a span attribute and is cut only at `max_attribute_bytes`
(65,536 characters by default), so a bound in entries alone let a producer of long ids make such a memory hold
gigabytes (the trace join's window and LRU, 100,000 traces each: 13 GB). Ids are counted as they are stored
(`sys.getsizeof`, so a non-ASCII id counts 2 or 4 bytes a character, as `span_size` counts strings), plus
`ENTRY_OVERHEAD` an entry.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from typing import Generic, TypeVar

# An OrderedDict entry (hash table slot and index, linked-list node): about 90 bytes measured with tracemalloc on
# CPython 3.11, more just after its table grows. Rounded up so that the bound is not exceeded by what it counts.
ENTRY_OVERHEAD = 128
# Bytes allowed per entry when a memory's byte bound is derived from its entry bound: a 32-character trace id and
# a 36-character UUID count 81 + 85 + 128 = 294, so ids averaging 250 characters still fill every entry, while
# ids of 64 K characters fill about one entry in 128 (a 10,000-entry memory holds 5 MB of them, not 650 MB).
ENTRY_ROOM = 512

V = TypeVar("V", str, bytes, bool)


def id_bytes(value: str | bytes | bool) -> int:
    """Bytes a key or value is counted for: its stored size, 0 for a bool (True and False are shared)."""
    return 0 if isinstance(value, bool) else sys.getsizeof(value)


class IdMemory(Generic[V]):
    """Ids to small values, least recently used forgotten first once over `max_entries` or `max_bytes`."""

    __slots__ = ("max_entries", "max_bytes", "nbytes", "_items")

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max(1, max_entries)
        self.max_bytes = max_bytes
        self.nbytes = 0  # counted bytes of the entries held
        self._items: OrderedDict[str, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> V | None:
        """The value remembered for `key`, or None (its place is kept: see `touch`)."""
        return self._items.get(key)

    def touch(self, key: str) -> None:
        """Make a remembered `key` the most recently used."""
        self._items.move_to_end(key)

    def remember(self, key: str, value: V, *, touch: bool = True) -> None:
        """Remember `value` for `key` (the most recently used unless `touch` is false and `key` is known), then
        forget the least recently used until within both bounds (the most recent is kept, even alone over)."""
        items = self._items
        earlier = items.get(key)
        if earlier is None:
            self.nbytes += id_bytes(key) + ENTRY_OVERHEAD
        else:
            self.nbytes -= id_bytes(earlier)
        items[key] = value
        self.nbytes += id_bytes(value)
        if touch:
            items.move_to_end(key)
        while len(items) > self.max_entries or (self.nbytes > self.max_bytes and len(items) > 1):
            old_key, old_value = items.popitem(last=False)
            self.nbytes -= id_bytes(old_key) + id_bytes(old_value) + ENTRY_OVERHEAD
