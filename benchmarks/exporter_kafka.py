"""Benchmark of the exporter service reading from Kafka: scores/s from the scores topic into the estimator.

Produces `--scores` score records to a fresh topic of an embedded Tansu broker, then runs `ExporterService`
(consumer group, rewind on assignment, decode, estimator) until it has consumed them all. The clock starts at
the first score consumed, so the group join is not counted. Prints figures, asserts nothing.
Usage: python -m benchmarks.exporter_kafka [--scores 50000] [--series 1000] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import uuid

from agentwatch.config import load_settings
from agentwatch.kafka.broker import EmbeddedBroker
from benchmarks.exporter import scores  # benchmarks/ is the script's folder, first on its path


def score_records(count: int, series: int, now: float) -> list[bytes]:
    """JSON score records spread over `series` series, ending in the last 50 minutes before `now`."""
    return [s.model_dump_json().encode() for s in scores(count, series, now=now)]


def produce(bootstrap: str, topic: str, records: list[bytes], partitions: int) -> None:
    """Write the records to a new topic of `partitions` partitions, as the collector does."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(10)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "partitioner": "murmur2_random"})
    for i, value in enumerate(records):
        while True:
            try:
                producer.produce(topic, value=value, key=f"agent{i % 7}".encode())
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush()


def consume_once(bootstrap: str, topic: str, count: int) -> float:
    """Seconds from the first to the `count`-th score consumed by a fresh exporter service."""
    from agentwatch.exporters.service import ExporterService

    settings = load_settings(
        kafka={"bootstrap_servers": bootstrap},
        exporter={
            "scores_topic": topic,
            "group_id": f"bench-{uuid.uuid4().hex[:8]}",
            "poll_timeout_ms": 100,
            "session_timeout_ms": 2000,
            "heartbeat_interval_ms": 500,
        },
    )
    service = ExporterService(settings)
    marks: list[float] = []
    feed = service.feed
    seen = [0]

    def counting_feed(value: bytes | None, where: str = "") -> bool:
        seen[0] += 1
        if seen[0] == 1 or seen[0] == count:
            marks.append(time.perf_counter())
            if seen[0] == count:
                done.set()
        return feed(value, where)

    done = threading.Event()
    service.feed = counting_feed  # type: ignore[method-assign]
    stop = threading.Event()
    thread = threading.Thread(target=service.run, args=(stop,), daemon=True)
    thread.start()
    try:
        if not done.wait(300):
            raise RuntimeError(f"only {seen[0]} of {count} scores consumed")
        return marks[-1] - marks[0]
    finally:
        stop.set()
        thread.join(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scores", type=int, default=50_000)
    parser.add_argument("--series", type=int, default=1_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    records = score_records(args.scores, args.series, time.time())
    with EmbeddedBroker() as broker:
        topic = f"bench-scores-{uuid.uuid4().hex[:8]}"
        produce(broker.bootstrap_servers, topic, records, args.partitions)
        times = [consume_once(broker.bootstrap_servers, topic, args.scores) for _ in range(args.runs)]
    rates = sorted(args.scores / t for t in times)
    print(
        f"exporter from Kafka: {args.scores} scores, {args.series} series, {args.partitions} partitions: "
        f"median {statistics.median(rates):,.0f} scores/s (runs: {', '.join(f'{r:,.0f}' for r in rates)})"
    )


if __name__ == "__main__":
    main()
