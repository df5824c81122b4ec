"""SIGKILL while multi-turn conversations stream in on the re-key path, one message per turn, interleaved: after
the restart every conversation is scored, and the first score of each, the one the exporter keeps, has all its
turns (docs/collector_service.md, Offsets and delivery: a conversation across the committed offset)."""

from __future__ import annotations

import collections
import random
import signal
import threading
import time

import pytest

from tests.support.collector_kafka import (
    TopicReader,
    collector_settings,
    create_topic,
    otlp_bytes,
    producer,
    scores_of,
    simple_conversation,
    start_collector_process,
    unique,
)

pytestmark = pytest.mark.broker

T0 = 1_763_000_000_000_000_000  # ns


def _turn_messages(cid: str, turns: int) -> list[tuple[bytes, bytes]]:
    """One (trace id key, OTLP value) message per turn, as the OTel Collector's kafka exporter keys them."""
    by_trace: dict[int, list] = collections.defaultdict(list)
    for span in simple_conversation(cid, turns=turns, t0_ns=T0):
        by_trace[span.context.trace_id].append(span)
    return [(f"{tid:032x}".encode(), otlp_bytes(spans)) for tid, spans in by_trace.items()]


def test_sigkill_on_the_rekey_path_loses_nothing_and_keeps_whole_first_scores(broker, tmp_path):
    bs = broker.bootstrap_servers
    topic = unique("otlp_spans")
    create_topic(bs, topic, 2)
    settings = collector_settings(bs, [topic], unique("replay"), idle_timeout_s=3.0)
    create_topic(bs, settings.collector.rekey_topic, 2)
    rng = random.Random(11)
    turns = {f"{unique('r')}-{i:03d}": rng.randint(2, 4) for i in range(150)}
    schedule = sorted(
        (start + 0.5 * j, key, value)
        for cid, n in turns.items()
        for start in [rng.uniform(0, 8)]
        for j, (key, value) in enumerate(_turn_messages(cid, n))
    )

    def feed() -> None:
        p = producer(bs)
        began = time.monotonic()
        for at, key, value in schedule:
            ahead = began + at - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
            p.send(topic, value=value, key=key)
        p.flush()
        p.close()

    log = tmp_path / "collector.log"
    proc = start_collector_process(settings, str(log))
    reader = TopicReader(bs, settings.collector.scores_topic)
    feeder = threading.Thread(target=feed)

    def alive() -> None:
        assert proc.poll() is None, f"collector exited with {proc.returncode}"

    try:
        deadline = time.monotonic() + 30
        while "assigned [" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
            alive()
            time.sleep(0.1)
        feeder.start()
        reader.wait(lambda r: len(r) >= 40, 60, alive=alive)
        killed_at = len(reader.records)
        assert killed_at < len(turns), "the kill must land in the middle of the stream"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc = start_collector_process(settings, str(log))
        feeder.join(60)
        reader.wait(lambda r: {s["conversation_id"] for s in scores_of(r)} >= set(turns), 90, alive=alive)
        time.sleep(1.0)  # a last look for replayed scores
        reader.poll()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        reader.close()
    seen: dict[str, list[int]] = collections.defaultdict(list)
    for score in scores_of(reader.records):
        seen[score["conversation_id"]].append(score["turns"])
    fewer = sum(1 for cid, counts in seen.items() if min(counts) < turns[cid])
    print(
        f"\nSIGKILL after {killed_at} scores: {sum(map(len, seen.values()))} scores of {len(turns)} "
        f"conversations, {sum(len(c) > 1 for c in seen.values())} scored again, {fewer} of them with fewer turns"
    )
    assert set(seen) == set(turns)  # none lost
    assert {cid: counts[0] for cid, counts in seen.items()} == turns  # the first score is whole
    assert all(max(counts) == turns[cid] for cid, counts in seen.items())  # never more turns than it had
