"""Records whose Kafka framing is hostile (not their payload): dead-lettered with a reason, the collector goes on."""

from __future__ import annotations

import pytest

from agentwatch.collector.deadletter import OFFSET_HEADER, REASON_HEADER, TOPIC_HEADER
from agentwatch.collector.rekey import CONTENT_TYPE_HEADER, KEY_HEADER
from agentwatch.config import Settings
from tests.support.collector_kafka import (
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


class _RawName(str):
    """A header name kafka-python writes as the given bytes (it encodes names as UTF-8, so cannot write others)."""

    raw: bytes

    def __new__(cls, raw: bytes) -> _RawName:
        name = super().__new__(cls, "raw")
        name.raw = raw
        return name

    def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        return self.raw


def _collector_on(bs: str, name: str) -> tuple[str, Settings, TopicReader, TopicReader]:
    """A new input topic of one partition, a collector's settings reading it, and readers of its scores and
    dead letters."""
    topic = unique(name)
    create_topic(bs, topic, 1)
    cfg = collector_settings(bs, [topic], unique(name))
    return (
        topic,
        cfg,
        TopicReader(bs, cfg.collector.scores_topic),
        TopicReader(bs, cfg.collector.dead_letter_topic),
    )


def test_a_header_name_that_is_not_utf8_is_dead_lettered_and_the_collector_goes_on(broker) -> None:
    """confluent-kafka raises reading such a header: the record was the collector's crash at every restart."""
    bs = broker.bootstrap_servers
    topic, cfg, scores, dlq = _collector_on(bs, "hdr")
    bad, good = unique("bad"), unique("good")
    with ServiceThread(cfg) as svc:
        p = producer(bs)
        # records before it: Python's specialised call of `headers()` then skips the check that turns the
        # client's error into an exception, and reading the headers it returned crashed the process
        for i in range(30):
            warm = f"{good}-{i}"
            p.send(topic, value=otlp_bytes(simple_conversation(warm)), key=warm.encode(), headers=SDK_HEADERS)
        headers = [*SDK_HEADERS, (_RawName(b"\xff\xfe"), b"x")]
        payload = otlp_bytes(simple_conversation(bad))
        p.send(topic, value=payload, key=bad.encode(), headers=headers)
        p.send(topic, value=otlp_bytes(simple_conversation(good)), key=good.encode(), headers=SDK_HEADERS)
        p.flush()
        p.close()
        scores.wait(lambda r: good in ids_of(r), 30)
        dlq.wait(lambda r: any(x.key == bad.encode() for x in r), 10)
        assert svc.error is None and svc.thread.is_alive(), svc.error
        assert good in ids_of(scores.records) and bad not in ids_of(scores.records)
        [letter] = [r for r in dlq.records if r.key == bad.encode()]
        h = dict(letter.headers)
        assert h[REASON_HEADER] == b"invalid_headers"
        assert h[TOPIC_HEADER].decode() == topic and int(h[OFFSET_HEADER]) == 30
        assert letter.value == payload  # the payload, unchanged
        assert svc.service.stats.rejected_by_reason["invalid_headers"] == 1
    scores.close()
    dlq.close()


@pytest.mark.parametrize(("key", "value"), [(b"0af7651916cd43dd8448eb211c80319c", b""), (None, b"conv-1")])
def test_an_announcement_without_its_trace_or_conversation_is_dead_lettered(broker, key, value) -> None:
    """The collector's announcements always carry both; one that lacks either was dropped without a count."""
    bs = broker.bootstrap_servers
    topic, cfg, scores, dlq = _collector_on(bs, "ann")
    good = unique("good")
    announce = [(CONTENT_TYPE_HEADER, b"text/plain; charset=utf-8"), (KEY_HEADER, b"trace-conversation")]
    with ServiceThread(cfg) as svc:
        p = producer(bs)
        p.send(cfg.collector.rekey_topic, value=value, key=key, headers=announce)
        p.send(topic, value=otlp_bytes(simple_conversation(good)), key=good.encode(), headers=SDK_HEADERS)
        p.flush()
        p.close()
        scores.wait(lambda r: good in ids_of(r), 30)
        dlq.wait(lambda r: any(dict(x.headers).get(REASON_HEADER) == b"invalid_announcement" for x in r), 10)
        assert svc.error is None and svc.thread.is_alive(), svc.error
        [letter] = [r for r in dlq.records if dict(r.headers).get(REASON_HEADER) == b"invalid_announcement"]
        h = dict(letter.headers)
        assert h[TOPIC_HEADER].decode() == cfg.collector.rekey_topic and int(h[OFFSET_HEADER]) == 0
        assert (letter.key, letter.value) == (key, value)
        assert svc.service.stats.rejected_by_reason == {"invalid_announcement": 1}
    scores.close()
    dlq.close()
