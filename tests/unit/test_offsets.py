"""The collector's offset book: what is safe to commit, never the same commit twice, partitions forgotten."""

from __future__ import annotations

from agentwatch.collector.offsets import OffsetBook, lowest


def test_partitions_get_stable_numbers_in_order_of_first_sight() -> None:
    book = OffsetBook()
    assert [book.vpart(("a", 0)), book.vpart(("b", 3)), book.vpart(("a", 0))] == [0, 1, 0]


def test_only_new_safe_offsets_are_committed() -> None:
    book = OffsetBook()
    a, b = ("spans", 0), ("spans", 1)
    held = {book.vpart(a): 10, book.vpart(b): None}  # b: nothing safe to commit yet
    first = book.to_commit([a, b], held.get)
    assert [(t.topic, t.partition, t.offset) for t in first] == [("spans", 0, 10)]
    book.committed(first)
    assert book.to_commit([a, b], held.get) == []  # the same offset is not committed again
    held[0] = 12
    assert [t.offset for t in book.to_commit([a], held.get)] == [12]
    assert book.to_commit([("unknown", 0)], held.get) == []  # never read: nothing to commit


def test_a_forgotten_partition_commits_again_and_leaves_the_lag() -> None:
    book = OffsetBook()
    tp = ("spans", 2)
    vp = book.vpart(tp)
    book.consumed(tp, 41)
    assert book.lag(lambda _: 50) == {tp: 8}  # records 42..49 not read yet
    assert book.lag(lambda _: None) == {}  # no watermark known
    book.committed(book.to_commit([tp], lambda _: 42))
    assert book.forget([tp, ("never", 0)]) == [vp]
    assert book.lag(lambda _: 50) == {}
    assert [t.offset for t in book.to_commit([tp], lambda _: 42)] == [42]  # a new owner's commit is new again


def test_lowest_of_unknown_offsets() -> None:
    assert lowest(None, None) is None and lowest(3, None) == 3 and lowest(None, 4) == 4 and lowest(7, 5) == 5
