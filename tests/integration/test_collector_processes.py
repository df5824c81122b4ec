"""Collector processes against the real broker: SIGKILL and restart, SIGTERM, two instances in one group."""

from __future__ import annotations

import collections
import re
import signal
import threading
import time

import pytest
from kafka import KafkaConsumer, TopicPartition

from tests.support.collector_kafka import (
    SDK_HEADERS,
    TopicReader,
    collector_settings,
    create_topic,
    ids_of,
    otlp_bytes,
    producer,
    simple_conversation,
    start_collector_process,
    unique,
)

pytestmark = pytest.mark.broker


def _encoded_conversations(n: int, prefix: str) -> dict[str, bytes]:
    return {cid: otlp_bytes(simple_conversation(cid)) for cid in (f"{prefix}-{i:05d}" for i in range(n))}


def _produce(bs: str, topic: str, messages: dict[str, bytes], *, rate_per_s: float | None = None) -> None:
    p = producer(bs)
    start = time.monotonic()
    for i, (cid, value) in enumerate(messages.items()):
        p.send(topic, value=value, key=cid.encode(), headers=SDK_HEADERS)
        if rate_per_s is not None:
            ahead = start + i / rate_per_s - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    p.flush()
    p.close()


def _committed(bs: str, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    c = KafkaConsumer(bootstrap_servers=bs, group_id=group, enable_auto_commit=False)
    try:
        return {p: c.committed(TopicPartition(topic, p)) for p in range(partitions)}
    finally:
        c.close()


def _end_offsets(bs: str, topic: str, partitions: int) -> dict[int, int]:
    """High watermarks from a fetch (ListOffsets(latest) is wrong on Tansu)."""
    c = KafkaConsumer(bootstrap_servers=bs, enable_auto_commit=False)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(c.highwater(tp) is None for tp in tps):
        c.poll(timeout_ms=200)
    out = {tp.partition: c.highwater(tp) for tp in tps}
    c.close()
    return out


def _check_alive(*procs) -> None:
    for proc in procs:
        assert proc.poll() is None, f"collector exited with {proc.returncode}"


def test_sigkill_and_restart_loses_nothing(broker, tmp_path):
    """2,000 conversations; the collector is SIGKILLed mid-stream and restarted; every id is scored."""
    bs = broker.bootstrap_servers
    topic = unique("spans")
    create_topic(bs, topic, 4)
    settings = collector_settings(bs, [topic], unique("crash"), commit_interval_s=0.5)
    messages = _encoded_conversations(2000, unique("k"))
    feeder = threading.Thread(target=_produce, args=(bs, topic, messages), kwargs={"rate_per_s": 700})
    log = str(tmp_path / "collector.log")
    proc = start_collector_process(settings, log)
    reader = TopicReader(bs, settings.collector.scores_topic)
    try:
        _wait_assigned(tmp_path / "collector.log", {f"{topic}[{p}]" for p in range(4)}, proc)
        feeder.start()
        reader.wait(lambda r: len(r) >= 500, 60, alive=lambda: _check_alive(proc))
        assert 500 <= len(reader.records) < 2000, "the kill must land in the middle of the stream"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        killed_at = len(reader.records)
        proc = start_collector_process(settings, log)
        feeder.join(60)
        reader.wait(lambda r: set(ids_of(r)) >= set(messages), 90, alive=lambda: _check_alive(proc))
        time.sleep(1.0)  # a last look for stragglers
        reader.poll()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
        reader.close()
    ids = ids_of(reader.records)
    dupes = len(ids) - len(set(ids))
    print(
        f"\nSIGKILL after {killed_at} scores: {len(ids)} scores, {len(set(ids))} conversations, {dupes} duplicates"
    )
    assert set(ids) == set(messages)
    # at least once: duplicates only from the window between the last commit and the kill
    assert dupes <= killed_at


def test_sigterm_commits_and_leaves(broker, tmp_path):
    """SIGTERM: every score written, offsets committed to the end, the process exits 0."""
    bs = broker.bootstrap_servers
    topic = unique("spans")
    create_topic(bs, topic, 2)
    settings = collector_settings(bs, [topic], unique("term"))
    messages = _encoded_conversations(200, unique("t"))
    proc = start_collector_process(settings, str(tmp_path / "collector.log"))
    reader = TopicReader(bs, settings.collector.scores_topic)
    try:
        _produce(bs, topic, messages)
        reader.wait(lambda r: set(ids_of(r)) >= set(messages), 60, alive=lambda: _check_alive(proc))
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(20)
        reader.close()
    assert rc == 0
    ids = ids_of(reader.records)
    assert sorted(ids) == sorted(messages)
    assert _committed(bs, settings.collector.group_id, topic, 2) == _end_offsets(bs, topic, 2)
    assert "collector stopped (clean)" in (tmp_path / "collector.log").read_text()


_ASSIGNED = re.compile(r"assigned \[(.*)\]")


def _last_assignment(path) -> set[str]:
    lines = _ASSIGNED.findall(path.read_text()) if path.exists() else []
    return set(re.findall(r"'([^']+)'", lines[-1])) if lines else set()


def _wait_assigned(path, want: set[str], proc) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if _last_assignment(path) >= want:
            return
        _check_alive(proc)
        time.sleep(0.1)
    pytest.fail(f"collector was not assigned {want}")


def test_two_instances_share_a_four_partition_topic(broker, tmp_path):
    """Two processes in one group split the partitions; both write scores; each conversation once."""
    bs = broker.bootstrap_servers
    topic = unique("spans")
    create_topic(bs, topic, 4)
    settings = collector_settings(bs, [topic], unique("scale"))
    create_topic(bs, settings.collector.rekey_topic, 4)
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    procs = [start_collector_process(settings, str(path)) for path in logs]
    reader = TopicReader(bs, settings.collector.scores_topic)
    try:
        want = {f"{topic}[{p}]" for p in range(4)}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            a, b = (_last_assignment(path) & want for path in logs)
            if a and b and not a & b and a | b == want:
                break
            _check_alive(*procs)
            time.sleep(0.2)
        else:
            pytest.fail(f"group did not settle: {[_last_assignment(p) for p in logs]}")
        messages = _encoded_conversations(400, unique("s"))
        _produce(bs, topic, messages)
        reader.wait(lambda r: set(ids_of(r)) >= set(messages), 60, alive=lambda: _check_alive(*procs))
        time.sleep(1.0)
        reader.poll()
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(20)
        reader.close()
    ids = ids_of(reader.records)
    assert collections.Counter(ids) == collections.Counter(set(messages))  # every conversation exactly once
    producers = collections.Counter(dict(r.headers).get("agentwatch-producer") for r in reader.records)
    assert len(producers) == 2 and all(n > 0 for n in producers.values()), producers
