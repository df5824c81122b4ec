"""A rebalance takes partitions away: the collector commits exactly what is safe before letting them go."""

from __future__ import annotations

import json
import time

import pytest
from kafka import KafkaConsumer, TopicPartition

from tests.support.collector_kafka import (
    FAST,
    SDK_HEADERS,
    ServiceThread,
    TopicReader,
    collector_settings,
    create_topic,
    ids_of,
    otlp_bytes,
    producer,
    simple_conversation,
    unique,
)

pytestmark = pytest.mark.broker


def test_revoke_commits_below_the_lowest_open_conversation(broker):
    bs = broker.bootstrap_servers
    topic = unique("spans")
    create_topic(bs, topic, 1)
    # a long idle timeout and a commit interval longer than the test: only the revoke can commit
    settings = collector_settings(bs, [topic], unique("rb"), idle_timeout_s=120, commit_interval_s=600)
    p = producer(bs)
    offsets: dict[str, int] = {}
    ended, open_ = [unique("end") for _ in range(10)], [unique("open") for _ in range(5)]
    order = ended[:4] + open_[:2] + ended[4:] + open_[2:]
    for cid in order:
        spans = simple_conversation(cid, end=cid.startswith("end"))
        md = p.send(topic, value=otlp_bytes(spans), key=cid.encode(), headers=SDK_HEADERS).get(10)
        offsets[cid] = md.offset
    p.flush()
    reader = TopicReader(bs, settings.collector.scores_topic)
    with ServiceThread(settings) as svc:
        reader.wait(lambda r: set(ids_of(r)) >= set(ended), 30)
        assert set(ids_of(reader.records)) == set(ended)
        # a second member joins the group: the collector's partitions are revoked
        other = KafkaConsumer(bootstrap_servers=bs, group_id=settings.collector.group_id, **FAST)
        other.subscribe([topic])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and svc.service.stats.last_commit_timestamp is None:
            other.poll(timeout_ms=100)  # only the revoke can have committed (the interval is 600 s)
        assert svc.error is None
        check = KafkaConsumer(
            bootstrap_servers=bs, group_id=settings.collector.group_id, enable_auto_commit=False
        )
        committed = check.committed(TopicPartition(topic, 0))
        check.close()
        other.close()
    reader.close()
    # the committed offset is the lowest offset of a conversation still open at the revoke: neither less
    # (which would replay finished conversations) nor more (which would lose the open ones)
    assert committed == min(offsets[c] for c in open_)


@pytest.mark.parametrize("drain", [False, True])
def test_shutdown_keeps_open_conversations_uncommitted_or_drains_them(broker, drain):
    """On stop, an open conversation is either left uncommitted (default) or scored as incomplete."""
    bs = broker.bootstrap_servers
    topic = unique("spans")
    create_topic(bs, topic, 1)
    settings = collector_settings(bs, [topic], unique("stop"), idle_timeout_s=120, drain_on_shutdown=drain)
    done, open_ = unique("done"), unique("open")
    p = producer(bs)
    offsets = {}
    for cid in (done, open_):
        spans = simple_conversation(cid, end=cid == done)
        md = p.send(topic, value=otlp_bytes(spans), key=cid.encode(), headers=SDK_HEADERS).get(10)
        offsets[cid] = md.offset
    reader = TopicReader(bs, settings.collector.scores_topic)
    with ServiceThread(settings) as svc:
        reader.wait(lambda r: done in ids_of(r), 30)
        deadline = time.monotonic() + 10
        while svc.service.assembler.stats.open_conversations < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert svc.service.assembler.stats.open_conversations == 1
    assert svc.error is None and not svc.thread.is_alive()
    reader.wait(lambda r: len(r) >= (2 if drain else 1), 5)
    reader.close()
    check = KafkaConsumer(
        bootstrap_servers=bs, group_id=settings.collector.group_id, enable_auto_commit=False
    )
    committed = check.committed(TopicPartition(topic, 0))
    check.close()
    scores = {json.loads(r.value)["conversation_id"]: json.loads(r.value) for r in reader.records}
    if drain:
        assert set(scores) == {done, open_}
        assert scores[open_]["incomplete"] is True
        assert committed == offsets[open_] + 1
    else:
        assert set(scores) == {done}
        assert committed == offsets[open_]  # replayed by the next owner, not lost


def test_a_lost_record_stops_the_service_without_committing(broker):
    """If any produced record failed, nothing more is committed and the service stops (to be restarted)."""
    from agentwatch.collector.service import ProduceError

    bs = broker.bootstrap_servers
    topic = unique("spans")
    create_topic(bs, topic, 1)
    settings = collector_settings(bs, [topic], unique("lost"))
    first, second = unique("first"), unique("second")
    p = producer(bs)
    p.send(topic, value=otlp_bytes(simple_conversation(first)), key=first.encode(), headers=SDK_HEADERS)
    p.flush()
    reader = TopicReader(bs, settings.collector.scores_topic)
    with ServiceThread(settings) as svc:
        reader.wait(lambda r: first in ids_of(r), 30)
        deadline = time.monotonic() + 10
        while svc.service.stats.last_commit_timestamp is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert svc.service._out is not None
        svc.service._out.errors.append("simulated delivery failure")  # as a failed send reports
        p.send(topic, value=otlp_bytes(simple_conversation(second)), key=second.encode(), headers=SDK_HEADERS)
        p.flush()
        svc.thread.join(20)
        assert not svc.thread.is_alive()
        assert isinstance(svc.error, ProduceError)
    reader.close()
    check = KafkaConsumer(
        bootstrap_servers=bs, group_id=settings.collector.group_id, enable_auto_commit=False
    )
    committed = check.committed(TopicPartition(topic, 0))
    check.close()
    assert committed == 1  # after the first conversation only: the second will be replayed
