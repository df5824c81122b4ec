"""The collector's memory of recent ids: least recently used forgotten first, over its entries or its bytes."""

from __future__ import annotations

import sys

from agentwatch.collector.id_memory import ENTRY_OVERHEAD, ENTRY_ROOM, IdMemory, id_bytes


def test_over_its_entries_the_least_recently_used_is_forgotten() -> None:
    memory: IdMemory[str] = IdMemory(max_entries=2, max_bytes=1 << 30)
    memory.remember("a", "1")
    memory.remember("b", "2")
    memory.touch("a")  # b is now the least recently used
    memory.remember("c", "3")
    assert (memory.get("a"), memory.get("b"), memory.get("c")) == ("1", None, "3")
    memory.remember("a", "4")  # known: replaced and made the most recent, nothing forgotten
    memory.remember("d", "5")
    assert (len(memory), memory.get("a"), memory.get("c"), memory.get("d")) == (2, "4", None, "5")


def test_over_its_bytes_the_least_recently_used_are_forgotten_and_the_newest_kept() -> None:
    entry = id_bytes("k0") + id_bytes("v" * 100) + ENTRY_OVERHEAD
    memory: IdMemory[str] = IdMemory(max_entries=1000, max_bytes=3 * entry + 60)
    for n in range(3):
        memory.remember(f"k{n}", "v" * 100)
    assert len(memory) == 3 and memory.nbytes == 3 * entry
    memory.touch("k0")
    memory.remember("k3", "w" * 150)  # 50 bytes over: the least recently used (k1) goes
    assert [memory.get(f"k{n}") is not None for n in range(4)] == [True, False, True, True]
    memory.remember("k4", "x" * 10_000)  # alone over the bound: every other entry goes, it stays
    assert len(memory) == 1 and memory.get("k4") == "x" * 10_000
    assert memory.nbytes == id_bytes("k4") + id_bytes("x" * 10_000) + ENTRY_OVERHEAD


def test_replacing_a_value_counts_the_new_one_only() -> None:
    memory: IdMemory[bytes] = IdMemory(max_entries=10, max_bytes=1 << 30)
    memory.remember("t", b"x" * 1000)
    memory.remember("t", b"y" * 10)
    assert memory.nbytes == sys.getsizeof("t") + sys.getsizeof(b"y" * 10) + ENTRY_OVERHEAD
    flags: IdMemory[bool] = IdMemory(max_entries=2, max_bytes=1 << 30)
    flags.remember("a", False)
    flags.remember("b", False)
    flags.remember("a", True, touch=False)  # changed in place: still the least recently used
    flags.remember("c", False)
    assert (flags.get("a"), flags.get("b"), flags.get("c")) == (None, False, False)
    assert flags.nbytes == 2 * (sys.getsizeof("a") + ENTRY_OVERHEAD)  # booleans are shared: not counted


def test_non_ascii_ids_count_as_stored_and_normal_ids_fit_the_room_of_an_entry() -> None:
    assert id_bytes("€" * 1000) > 2000 and id_bytes("😀" * 1000) > 4000
    uuid_entry = id_bytes("0" * 32) + id_bytes("123e4567-e89b-12d3-a456-426614174000") + ENTRY_OVERHEAD
    assert uuid_entry < ENTRY_ROOM
    memory: IdMemory[str] = IdMemory(max_entries=1000, max_bytes=1000 * ENTRY_ROOM)
    for n in range(1000):
        memory.remember(f"{n:032x}", f"{n:036d}")
    assert len(memory) == 1000 and memory.get(f"{0:032x}") == f"{0:036d}"
