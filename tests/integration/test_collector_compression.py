"""Compressed record batches, as the OTel Collector's kafka exporter writes them with `producer.compression`.

Produced with kafka-python's `compression_type` (gzip, snappy, lz4, zstd) to the real broker; the collector's
Kafka client decompresses them, and each conversation must be scored exactly as when uncompressed — both
encodings (`otlp_proto`, `otlp_json`), unkeyed as the exporter writes them by default (so they go through the
re-key topic).
"""

from __future__ import annotations

import pytest
from kafka import KafkaProducer, codec

from tests.support.collector_kafka import (
    ServiceThread,
    TopicReader,
    collector_settings,
    create_topic,
    otlp_bytes,
    otlp_json,
    scores_of,
    simple_conversation,
    unique,
)

pytestmark = pytest.mark.broker

CODECS = {"gzip": codec.has_gzip, "snappy": codec.has_snappy, "lz4": codec.has_lz4, "zstd": codec.has_zstd}


@pytest.fixture(scope="module")
def running(broker):
    bs = broker.bootstrap_servers
    topic = unique("compressed")
    create_topic(bs, topic, 2)
    cfg = collector_settings(bs, [topic], unique("compressed"))
    scores = TopicReader(bs, cfg.collector.scores_topic)
    dlq = TopicReader(bs, cfg.collector.dead_letter_topic)
    with ServiceThread(cfg) as svc:
        yield bs, topic, svc, scores, dlq
        assert svc.error is None
    scores.close()
    dlq.close()


@pytest.mark.parametrize("compression", sorted(CODECS))
def test_compressed_batches_are_scored(running, compression: str) -> None:
    assert CODECS[compression](), f"kafka-python cannot write {compression}: install the test extra"
    bs, topic, svc, scores, dlq = running
    proto_id, json_id = unique(f"{compression}-proto"), unique(f"{compression}-json")
    p = KafkaProducer(bootstrap_servers=bs, compression_type=compression, linger_ms=50, batch_size=1_000_000)
    p.send(topic, value=otlp_bytes(simple_conversation(proto_id, turns=2)))  # no key, no headers
    p.send(topic, value=otlp_json(simple_conversation(json_id, turns=3)))
    for i in range(20):  # compressible filler in the same batch: conversations of their own
        p.send(topic, value=otlp_bytes(simple_conversation(f"{proto_id}-filler{i}")))
    p.flush()
    p.close()
    wanted = {proto_id, json_id} | {f"{proto_id}-filler{i}" for i in range(20)}
    scores.wait(
        lambda r: wanted <= {s["conversation_id"] for s in scores_of(r)},
        60,
        alive=lambda: None if svc.thread.is_alive() else pytest.fail(f"collector died: {svc.error}"),
    )
    by_id = {s["conversation_id"]: s for s in scores_of(scores.records)}
    assert wanted <= set(by_id), sorted(wanted - set(by_id))
    assert by_id[proto_id]["turns"] == 2 and by_id[json_id]["turns"] == 3
    for cid, turns in ((proto_id, 2), (json_id, 3)):  # what the spans say, read through the compressed batch
        s = by_id[cid]
        assert (s["agent"], s["version"], s["task"], s["turns"]) == ("support-bot", "1.2.0", "refunds", turns)
        assert (
            s["incomplete"] is False and s["input_tokens"] == 100 * turns and s["output_tokens"] == 20 * turns
        )
    dlq.poll()
    assert not [
        r for r in dlq.records if r.value and (proto_id.encode() in r.value or json_id.encode() in r.value)
    ]
