"""Dead letters within the record bound: value, then the message's own headers, then its key left out."""

from __future__ import annotations

from typing import Any

import pytest

from agentwatch.collector.deadletter import DETAIL_HEADER, OFFSET_HEADER, DeadLetterPublisher
from agentwatch.collector.record import Record

BOUND = 20_000


class _Producer:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, topic: str, *, value: bytes | None, key: bytes | None, headers: list) -> None:
        self.sent.append({"value": value, "key": key, "headers": headers})


def _size(record: dict[str, Any]) -> int:
    heads = sum(len(k.encode()) + len(v) for k, v in record["headers"])
    return len(record["value"] or b"") + len(record["key"] or b"") + heads


@pytest.mark.parametrize(
    ("value", "key", "own", "kept"),
    [
        (b"v" * 1_000, b"k", [("h", b"x")], {"value", "key", "headers"}),  # fits: whole
        (b"v" * 30_000, b"k", [("h", b"x")], {"key", "headers"}),
        (b"v" * 19_900, b"k", [("h", b"x")], {"key", "headers"}),  # fits alone, not with ours
        (b"v" * 100, b"k", [("h", b"x" * 30_000)], {"key"}),
        (b"v" * 100, b"k" * 30_000, [("h", b"x")], set()),
    ],
)
def test_a_dead_letter_over_the_bound_leaves_out_what_it_must(
    value: bytes, key: bytes, own: list, kept: set[str]
) -> None:
    out = _Producer()
    message = Record("spans", 3, 41, key, value, own)
    DeadLetterPublisher(out, "dlq", BOUND).publish(message, "not_otlp", "neither OTLP protobuf nor OTLP/JSON")
    (sent,) = out.sent
    assert _size(sent) <= BOUND
    headers = dict(sent["headers"])
    assert headers[OFFSET_HEADER] == b"41"  # where the whole message still is
    assert sent["value"] == (value if "value" in kept else b"")  # empty, never a tombstone
    assert (sent["key"] == key) == ("key" in kept)
    assert ("h" in headers) == ("headers" in kept)
    detail = headers[DETAIL_HEADER].decode()
    assert detail.startswith("neither OTLP")
    assert ("not forwarded" in detail) == (kept != {"value", "key", "headers"})
    if "value" not in kept:
        assert f"value of {len(value)} bytes" in detail
