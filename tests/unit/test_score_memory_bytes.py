"""The late labels' score memory holds at most its bound in bytes as stored, whatever characters the ids use."""

from __future__ import annotations

import tracemalloc
from dataclasses import dataclass

import pytest

from agentwatch.collector.labels import ScoreMemory


@dataclass(frozen=True)
class _Score:
    """What the memory reads of a score: its agent and conversation id."""

    agent: str
    conversation_id: str


@pytest.mark.parametrize(
    ("agent", "conversation_id"),
    [("support-bot", "conv-{i:08d}"), ("\U0001f600" * 2_000, "\U0001f600" * 30_000 + "{i}")],
    ids=["ascii ids", "ids of 4-byte characters"],
)
def test_what_the_memory_holds_stays_within_its_bytes(agent: str, conversation_id: str) -> None:
    """Ids are cut at 65,536 characters, not bytes: ids of 4-byte characters and tiny scores held 4.0×
    the bound (16.8 MB for 4 MiB) when it counted characters. Measured by tracemalloc over everything the memory keeps alive (ids,
    payloads and containers), created inside the measurement and dropped by the caller."""
    bound = 4 << 20
    memory = ScoreMemory(capacity=1_000_000, max_bytes=bound)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(2_000):
            # fresh strings each time, as decoding a span makes them
            score = _Score(agent.encode().decode(), conversation_id.format(i=i))
            memory.remember(score, b"{}" + str(i).encode())  # type: ignore[arg-type]
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert 10 <= len(memory) and held <= bound * 1.1, (len(memory), held)
