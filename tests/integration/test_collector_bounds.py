"""The collector's bounds against the real broker: a never-ending conversation no longer pins its partition's
offsets (nor makes a restart score everything again), and fat conversations stay within the byte budget
without losing a conversation. Memory itself (RSS before and after SIGKILL) is measured by
`benchmarks/collector_memory.py`."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, TopicPartition

from benchmarks.collector_memory import HEADERS, span_message
from tests.support.collector_kafka import (
    ServiceThread,
    TopicReader,
    collector_settings,
    create_topic,
    producer,
    scores_of,
    start_collector_process,
    unique,
)

pytestmark = pytest.mark.broker

MIB = 1024 * 1024


def _committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        (tp,) = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        return int(tp.offset)
    finally:
        consumer.close()


def _alive(proc) -> None:
    assert proc.poll() is None, f"collector exited with {proc.returncode}"


def test_a_never_ending_conversation_is_finished_at_its_age_and_a_restart_scores_nothing_again(
    broker, tmp_path
):
    """One span every 0.3 s on one conversation of a 1-partition topic while 40 others are scored: at
    max_open_age_s it is scored (incomplete), the committed offset passes its first span, and after SIGKILL
    the restarted collector scores none of the 40 again (without the age, it re-scored all of them)."""
    bs = broker.bootstrap_servers
    topic = unique("spans")
    create_topic(bs, topic, 1)
    settings = collector_settings(bs, [topic], unique("forever"), idle_timeout_s=30.0, max_open_age_s=4.0)
    log = str(tmp_path / "collector.log")
    proc = start_collector_process(settings, log)
    reader = TopicReader(bs, settings.collector.scores_topic)
    stop = threading.Event()

    def drip() -> None:
        p = producer(bs)
        n = 0
        while not stop.is_set():
            p.send(topic, value=span_message("forever", n, 100), key=b"forever", headers=HEADERS)
            p.flush()
            n += 1
            stop.wait(0.3)
        p.close()

    dripper = threading.Thread(target=drip, daemon=True)
    others = [unique("short") for _ in range(40)]
    try:
        dripper.start()
        p = producer(bs)
        for i, cid in enumerate(others):
            p.send(topic, value=span_message(cid, 0, 100, end=True), key=cid.encode(), headers=HEADERS)
            if i % 10 == 9:
                p.flush()
                time.sleep(0.5)
        p.flush()
        p.close()
        reader.wait(
            lambda r: {s["conversation_id"] for s in scores_of(r)} >= {*others, "forever"},
            60,
            alive=lambda: _alive(proc),
        )
        forever = [s for s in scores_of(reader.records) if s["conversation_id"] == "forever"]
        assert len(forever) == 1 and forever[0]["incomplete"] is True
        time.sleep(1.5)  # a commit after the finish
        committed = _committed(bs, settings.collector.group_id, topic)
        assert committed > 40, f"the offset is still pinned at {committed}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc = start_collector_process(settings, log)
        time.sleep(6)  # the replay from the committed offset is done well within this
        reader.poll()
        _alive(proc)
    finally:
        stop.set()
        dripper.join(5)
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
        reader.close()
    counts = Counter(s["conversation_id"] for s in scores_of(reader.records))
    assert all(counts[cid] == 1 for cid in others), {c: n for c, n in counts.items() if n > 1}


def test_fat_conversations_stay_within_the_byte_budget_and_none_is_lost(broker):
    """30 conversations of 3 fat spans (about 0.4 MiB each) under a 2 MiB budget: the open bytes never pass
    it, conversations finished early are scored as incomplete, and once every
    conversation has ended each one has a score (those finished early, their end span counted late)."""
    bs = broker.bootstrap_servers
    topic = unique("spans")
    create_topic(bs, topic, 4)
    settings = collector_settings(bs, [topic], unique("fat"), idle_timeout_s=600.0, max_open_bytes=2 * MIB)
    ids = [unique("fat") for _ in range(30)]
    reader = TopicReader(bs, settings.collector.scores_topic)
    with ServiceThread(settings) as running:
        service = running.service
        p = producer(bs)
        for k in range(3):
            for cid in ids:
                p.send(topic, value=span_message(cid, k, 20_000), key=cid.encode(), headers=HEADERS)
        p.flush()
        deadline = time.monotonic() + 60
        highest = 0
        while service.stats.spans_consumed < 90 and time.monotonic() < deadline:
            highest = max(
                highest, service.stats.open_bytes
            )  # as of the loop's last pass (a consistent point)
            time.sleep(0.01)
        assert service.stats.spans_consumed == 90
        for _ in range(50):  # the loop's passes after the last message
            highest = max(highest, service.stats.open_bytes)
            time.sleep(0.02)
        assert 0 < highest <= 2 * MIB and service.assembler.stats.open_bytes <= 2 * MIB
        for cid in ids:
            p.send(topic, value=span_message(cid, 9, 0, end=True), key=cid.encode(), headers=HEADERS)
        p.flush()
        p.close()
        reader.wait(lambda r: {s["conversation_id"] for s in scores_of(r)} >= set(ids), 60)
        assert running.error is None
        budget = service.assembler.stats.budget_conversations
        late = service.assembler.stats.late_spans
    reader.close()
    scores = {s["conversation_id"]: s for s in scores_of(reader.records)}
    assert set(scores) == set(ids)
    early = [s for s in scores.values() if s["incomplete"]]
    assert len(early) == budget > 0 and late >= budget  # at least the end span of each early one came late
