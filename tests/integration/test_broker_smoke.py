"""The embedded broker really speaks Kafka: produce and consume one record over TCP."""

from kafka import KafkaConsumer, KafkaProducer
from kafka.structs import TopicPartition


def test_produce_consume_roundtrip(broker, topic):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    producer.send(topic, key=b"k", value=b"hello", headers=[("content-type", b"text/plain")]).get(timeout=10)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, consumer_timeout_ms=5000)
    parts = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
    consumer.assign(parts)
    consumer.seek_to_beginning()
    records = list(consumer)
    consumer.close()
    assert [(r.key, r.value, r.headers) for r in records] == [
        (b"k", b"hello", [("content-type", b"text/plain")])
    ]
