"""The Kafka span exporter under the standard BatchSpanProcessor against a real Tansu broker: the example agent
end to end, and the broker failing."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status, TracesData
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentwatch import configure, conversation, shutdown, trace
from agentwatch.kafka.broker import EmbeddedBroker, free_port
from agentwatch.sdk import KafkaSpanExporter
from agentwatch.sdk.kafka_exporter import encode_messages
from tests.support.sdk import attrs_of, consume, count_spans, decode

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.broker


def test_example_agent_end_to_end(broker, topic):
    cid = f"conv-{uuid.uuid4().hex[:8]}"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "instrumented_agent.py"),
            "--bootstrap-servers",
            broker.bootstrap_servers,
            "--topic",
            topic,
            "--conversation-id",
            cid,
        ],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"conversation_id={cid}" in proc.stdout
    records = consume(broker.bootstrap_servers, topic, lambda rs: count_spans(rs) >= 8)

    assert records, "no message arrived"
    for r in records:
        assert r.key == cid.encode()
        assert dict(r.headers) == {
            "content-type": b"application/x-protobuf",
            "agentwatch-key": b"conversation",
        }
    assert len({r.partition for r in records}) == 1  # one key, one partition
    pairs = [p for r in records for p in decode(r)]
    names = sorted(span.name for _, span in pairs)
    assert names == sorted(
        [
            "invoke_agent travel-agent",
            "chat fake-model-1",
            "execute_tool get_weather",
            "execute_tool to_fahrenheit",
            "invoke_agent travel-agent",
            "chat fake-model-1",
            "execute_tool book_flight",
            "agentwatch.conversation.end",
        ]
    )
    for resource, span in pairs:
        a = attrs_of(span)
        assert resource["service.name"] == "travel-agent" and resource["service.version"] == "1.0.0"
        assert a["gen_ai.conversation.id"] == cid and a["agentwatch.task"] == "travel"
        assert a["user.id"] == "demo-user"

    spans: dict[str, list[Span]] = {}
    for _, span in pairs:
        spans.setdefault(span.name, []).append(span)
    turns = sorted(spans["invoke_agent travel-agent"], key=lambda s: s.start_time_unix_nano)
    t1, t2 = (attrs_of(t) for t in turns)
    assert json.loads(t1["gen_ai.input.messages"])[0]["parts"][0]["content"].startswith("What's the weather")
    assert (
        json.loads(t1["gen_ai.output.messages"])[0]["parts"][0]["content"]
        == "It is 64°F and cloudy in Paris."
    )
    assert json.loads(t1["agentwatch.expected"])["tools"][0] == {
        "name": "get_weather",
        "arguments": {"city": "Paris"},
    }
    assert json.loads(t2["agentwatch.expected"])["forbidden_tools"] == ["cancel_flight"]
    assert "agentwatch.conversation.end" not in t1 and "agentwatch.conversation.end" not in t2

    weather = attrs_of(spans["execute_tool get_weather"][0])
    assert json.loads(weather["gen_ai.tool.call.arguments"]) == {"city": "Paris"}
    assert json.loads(weather["gen_ai.tool.call.result"])["celsius"] == 18
    assert spans["execute_tool get_weather"][0].parent_span_id == turns[0].span_id

    (failed,) = spans["execute_tool book_flight"]
    fa = attrs_of(failed)
    assert failed.status.code == Status.STATUS_CODE_ERROR
    assert fa["error.type"] == "ToolError"
    assert [e.name for e in failed.events] == ["exception"]
    assert json.loads(fa["gen_ai.tool.call.arguments"]) == {"destination": "Paris", "api_key": "[REDACTED]"}
    assert b"sk-demo-not-a-real-key" not in b"".join(r.value for r in records)

    chat = attrs_of(spans["chat fake-model-1"][0])
    assert chat["gen_ai.operation.name"] == "chat" and chat["gen_ai.usage.output_tokens"] == 8
    (marker,) = spans["agentwatch.conversation.end"]
    assert attrs_of(marker)["agentwatch.conversation.end"] is True
    assert marker.parent_span_id == turns[1].span_id


def _one_span_per_conversation(n: int, conversations: int = 2) -> list:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    configure(memory, tracer_provider=provider, batch=False)
    try:

        @trace
        def f(i):
            return i

        for i in range(n):
            with conversation(id=f"c{i % conversations}"):
                f(i)
        f(-1)  # outside any conversation: keyed by its trace id
    finally:
        shutdown()
    return list(memory.get_finished_spans())


def test_messages_are_grouped_by_conversation_and_split_when_too_big():
    spans = _one_span_per_conversation(10)
    messages = encode_messages(spans)
    keys = sorted(k for k, _, _ in messages)
    trace_key = f"{spans[-1].context.trace_id:032x}"
    assert keys == sorted(["c0", "c1", trace_key])
    for key, payload, count in messages:
        data = TracesData()
        data.ParseFromString(payload)
        got = [s for rs in data.resource_spans for ss in rs.scope_spans for s in ss.spans]
        assert len(got) == count == (5 if key in ("c0", "c1") else 1)
    small = encode_messages(spans, max_bytes=300)
    assert sum(c for _, _, c in small) == len(spans)
    assert all(len(p) <= 300 or c == 1 for _, p, c in small)
    assert len(small) > len(messages)


def test_a_topic_taking_small_records_gets_a_conversation_in_messages_that_fit(broker, topic):
    """`max_message_bytes` 2,000 (a topic whose max.message.bytes is small): one conversation's 40 spans, each
    with a 300-character argument, arrive whole in several messages, none over 2,000 bytes."""
    exporter = KafkaSpanExporter(broker.bootstrap_servers, topic=topic, max_message_bytes=2_000)
    cid = f"small-{uuid.uuid4().hex[:8]}"
    configure(exporter, tracer_provider=TracerProvider())  # batched: the 40 spans reach the exporter together
    try:

        @trace(kind="tool")
        def lookup(text: str) -> int:
            return len(text)

        with conversation(id=cid):
            for i in range(40):
                lookup(f"{i:03d}" + "x" * 297)
    finally:
        shutdown()
    records = consume(broker.bootstrap_servers, topic, lambda r: count_spans(r) >= 40)
    assert count_spans(records) == 40 and exporter.dropped_spans == 0
    assert len(records) > 1 and all(len(r.value) <= 2_000 for r in records)
    assert {r.key for r in records} == {cid.encode()}


def test_unreachable_broker_never_blocks_the_agent_counts_drops_and_says_so_once_at_exit(caplog):
    """Under the standard BatchSpanProcessor: calls return at once, drops are counted, exit waits a bounded time."""
    import logging

    from kafka.errors import KafkaTimeoutError

    from agentwatch.sdk.kafka_exporter import error_text

    # kafka-python's errors already start with their class name
    assert (
        error_text(KafkaTimeoutError("Failed to update metadata"))
        == "KafkaTimeoutError: Failed to update metadata"
    )
    assert error_text(ValueError("bad")) == "ValueError: bad" and error_text(ValueError()) == "ValueError"

    again = _one_span_per_conversation(2)  # 3 spans, exported directly between connection attempts
    exporter = KafkaSpanExporter(
        f"127.0.0.1:{free_port()}",
        topic="nowhere",
        retry_interval_s=0.5,
        warn_interval_s=0.0,
        shutdown_timeout_s=1.0,
    )
    provider = TracerProvider()
    configure(exporter, tracer_provider=provider)

    @trace(kind="tool")
    def lookup(i):
        return i

    with caplog.at_level(logging.WARNING, logger="agentwatch.sdk.kafka_exporter"):
        try:
            t0 = time.perf_counter()
            for i in range(50):
                with conversation(id=f"down-{i}"):
                    assert lookup(i) == i
            # a blocking exporter waits for the broker (max_block_ms 1 s, bootstrap 2 s) on each call
            assert time.perf_counter() - t0 < 10.0, "the agent's calls waited for the broker"
            assert provider.force_flush()  # the batch goes to export() on this thread: dropped, counted
            assert exporter.dropped_spans == 50 and exporter.sent_spans == 0, exporter.stats()
            assert exporter.stats()["in_flight_spans"] == 0 and exporter.last_error is not None
            assert exporter.export(again).name == "FAILURE"
            assert exporter.dropped_spans == 53
        finally:
            t0 = time.perf_counter()
            shutdown()
            assert (
                time.perf_counter() - t0 < 5.0
            )  # bounded: the retry interval, at most one bootstrap, 1 s wait
    assert exporter.export(again).name == "FAILURE" and exporter.dropped_spans == 56
    lines = [r.getMessage() for r in caplog.records]
    assert not any("dropped 0 spans" in line for line in lines), lines
    assert not any(
        line.count("KafkaTimeoutError") > 1 or line.count("NoBrokersAvailable") > 1 for line in lines
    )
    at_exit = [line for line in lines if "not sent" in line]
    assert len(at_exit) == 1 and at_exit[0].startswith(
        "agentwatch: 53 spans not sent: Kafka at 127.0.0.1:"
    ), lines
    assert "waited 1.0 s" in at_exit[0] and "shutdown_timeout_s" in at_exit[0]


def test_a_broker_whose_metadata_never_comes_costs_one_wait_a_retry_interval_not_one_a_message():
    """A broker advertising an address nobody listens on (advertised.listeners wrong, the usual Kafka-in-Docker
    mistake): the bootstrap succeeds, the topic's metadata never comes, and each send waits `max_block_ms`.
    One message per conversation waited in turn: 20 conversations in a batch held `shutdown(timeout_s=2)`, on
    the agent's thread, for 20 s. A send that times out drops the rest of its batch, and the exports of the
    next `retry_interval_s`, at once (counted). Counted in calls of `send`, not in seconds."""
    with EmbeddedBroker(advertised_port=free_port()) as misadvertised:
        exporter = KafkaSpanExporter(
            misadvertised.bootstrap_servers,
            topic="never-there",
            retry_interval_s=60.0,
            shutdown_timeout_s=0.5,
        )
        producer = exporter._connect()
        assert producer is not None, exporter.last_error  # the bootstrap itself answers
        sends: list[str] = []
        real_send = producer.send

        def send(topic: str, **kwargs: Any) -> Any:
            sends.append(topic)
            return real_send(topic, **kwargs)

        producer.send = send
        spans = _one_span_per_conversation(20, conversations=20)
        try:
            exporter.export(spans)
            assert exporter.export(spans).name == "FAILURE"  # within the retry interval: dropped at once
            assert len(sends) == 1, f"{len(sends)} sends, each waiting max_block_ms"
            assert exporter.dropped_spans == 2 * len(spans) and exporter.stats()["in_flight_spans"] == 0
            assert "KafkaTimeoutError" in (exporter.last_error or "")
        finally:
            exporter.shutdown()


_FAILED_CONNECTS = """
import gc, logging, os, sys
from agentwatch.sdk import KafkaSpanExporter

logging.basicConfig(level=logging.WARNING)  # kafka-python logs each refusal with its traceback, as in an agent
exporter = KafkaSpanExporter(sys.argv[1], retry_interval_s=0.0, producer_config={"bootstrap_timeout_ms": 200})
gc.collect()
gc.disable()  # what a process whose collector does not run meanwhile keeps
before = len(os.listdir("/proc/self/fd"))
for _ in range(5):
    assert exporter._connect() is None
print(len(os.listdir("/proc/self/fd")) - before, exporter.last_error)
"""


def test_failed_connection_attempts_leave_no_open_files():
    """Each failed attempt left the producer's sockets and selector (7 descriptors) open until a full garbage
    collection: an idle agent retrying each second while Kafka is down would run out of files. Counted in a
    process of its own (threads of other tests open and close files in this one)."""
    done = subprocess.run(
        [sys.executable, "-c", _FAILED_CONNECTS, f"127.0.0.1:{free_port()}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    opened, error = done.stdout.strip().split(" ", 1)
    assert "bootstrap" in error
    assert int(opened) <= 0, f"{opened} descriptors left open by 5 failed connection attempts"


def test_broker_down_mid_run_agent_unaffected_drops_counted_then_recovers(fresh_broker, topic):
    exporter = KafkaSpanExporter(
        fresh_broker.bootstrap_servers,
        topic=topic,
        max_in_flight_spans=300,
        retry_interval_s=0.2,
        producer_config={"delivery_timeout_ms": 3000, "request_timeout_ms": 1000},
    )
    provider = TracerProvider()
    configure(
        "none",
        tracer_provider=provider,
        extra_processors=[BatchSpanProcessor(exporter, schedule_delay_millis=50)],
    )

    @trace(kind="tool")
    def lookup(i):
        return {"i": i}

    @trace(kind="agent", name="resilient")
    def turn(i):
        return f"answer {lookup(i)['i']} {lookup(i + 1)['i']}"

    def run(prefix: str, n: int) -> float:
        t0 = time.perf_counter()
        for i in range(n):
            with conversation(id=f"{prefix}-{i}", task="fault"):
                assert turn(i) == f"answer {i} {i + 1}"
        return (time.perf_counter() - t0) / n

    try:
        up = run("up", 100)
        assert provider.force_flush()
        assert exporter.force_flush(20_000)
        assert exporter.sent_spans == 300 and exporter.dropped_spans == 0

        fresh_broker.stop()
        down = run("down", 600)  # every call of the agent returns its answer (asserted in run)
        provider.force_flush()
        deadline = time.monotonic() + 30
        while exporter.dropped_spans == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        # the per-call figures depend on the machine: printed, not asserted (benchmarks/sdk_overhead.py times @trace)
        print(f"per call: broker up {1e3 * up:.3f} ms, broker down {1e3 * down:.3f} ms; {exporter.stats()}")
        assert exporter.dropped_spans > 0, exporter.stats()
        assert (
            exporter.stats()["in_flight_spans"] <= 300
        )  # bounded by max_in_flight_spans, whatever was dropped

        fresh_broker.start()
        deadline = time.monotonic() + 40
        after_ids: set[str] = set()
        k = 0
        while time.monotonic() < deadline:  # keep answering until spans written after the restart arrive
            run(f"after{k}", 5)
            after_ids.update(f"after{k}-{i}" for i in range(5))
            k += 1
            provider.force_flush()
            records = consume(
                fresh_broker.bootstrap_servers,
                topic,
                lambda rs: any(r.key.decode() in after_ids for r in rs),
                timeout_s=3,
            )
            if any(r.key.decode() in after_ids for r in records):
                break
        else:
            pytest.fail(f"no span arrived after the broker restarted: {exporter.stats()}")
    finally:
        shutdown()
        provider.shutdown()


def test_what_awaits_acknowledgement_is_bounded_in_bytes_not_only_in_spans(fresh_broker, topic):
    """kafka-python 3.0's producer holds whatever it is given until its delivery times out: with the broker
    gone, 400 spans of 100 kB each (a prompt another instrumentation captured whole) were all held, 40 MB, as
    `max_in_flight_spans` counts spans. A message that would take the bytes awaiting acknowledgement past
    `max_in_flight_bytes` (32 MiB) is dropped, counted."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("another-instrumentation")
    for i in range(400):
        tracer.start_span(
            f"chat {i}", attributes={"gen_ai.conversation.id": f"big-{i}", "prompt": "x" * 100_000}
        ).end()
    big = list(memory.get_finished_spans())
    exporter = KafkaSpanExporter(fresh_broker.bootstrap_servers, topic=topic, shutdown_timeout_s=0.5)
    try:
        assert exporter.export(big[:1]).name == "SUCCESS" and exporter.force_flush(20_000)
        assert exporter.sent_spans == 1  # connected, the topic's metadata known
        fresh_broker.stop()
        exporter.export(big[1:])
        held = exporter.stats()["in_flight_spans"]
        assert held * 100_000 <= 32 * 1024 * 1024, f"{held} spans of 100 kB awaiting acknowledgement"
        assert exporter.dropped_spans == 399 - held and held > 0
        assert exporter.stats()["in_flight_bytes"] <= exporter.max_in_flight_bytes
    finally:
        exporter.shutdown()


def test_shutdown_with_the_broker_gone_closes_the_producer_and_leaves_no_thread(
    fresh_broker, topic, monkeypatch
):
    """kafka-python's `close()` flushes first and, records still unacknowledged, raises before closing anything:
    the producer's network thread went on reconnecting to the lost broker for the life of the process (one more
    each `configure` and `shutdown`), and its `__del__` flushed again on the thread that freed it, 1 s more and
    an "Exception ignored" there. Pending records are abandoned: the thread ends and nothing is raised later."""
    ignored: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: ignored.append(repr(u.exc_value)))
    spans = _one_span_per_conversation(4, conversations=4)
    exporter = KafkaSpanExporter(fresh_broker.bootstrap_servers, topic=topic, shutdown_timeout_s=0.5)
    assert exporter.export(spans[:1]).name == "SUCCESS" and exporter.force_flush(20_000)
    sender = exporter._producer._sender  # the producer's network thread
    fresh_broker.stop()
    exporter.export(spans[1:])
    assert exporter.stats()["in_flight_spans"] > 0  # waiting for a broker that is gone
    exporter.shutdown()
    gc.collect()
    assert not sender.is_alive(), "the producer's network thread outlived shutdown()"
    assert not ignored, ignored
    assert exporter.dropped_spans == len(spans) - 1 and exporter.sent_spans == 1


def test_exporter_topic_survives_a_metadata_refresh(broker, topic):
    """kafka-python 3.0 forgets a topic it knew from the bootstrap metadata; the exporter tracks its own."""
    from agentwatch.kafka.topics import ensure_topics

    other = f"{topic}-other"
    ensure_topics(broker.bootstrap_servers, [topic, other], partitions=2)
    exporter = KafkaSpanExporter(broker.bootstrap_servers, topic=topic)
    try:
        producer = exporter._connect()
        producer._metadata.add_topic(other)  # the refresh below then asks for the tracked topics only
        producer.send(topic, b"y").get(timeout=10)
        # Untracked, the topic known only from the bootstrap's all-topics metadata would vanish on the next
        # refresh, and batches for it would wait for a leader that is never looked up again.
        producer._metadata.request_update()
        time.sleep(0.5)
        assert producer._metadata.partitions_for_topic(topic) == {0, 1}
        producer.send(topic, b"z").get(timeout=10)
    finally:
        exporter.shutdown()


def test_the_largest_message_comes_from_the_environment_and_a_bad_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("AGENTWATCH_KAFKA_MAX_MESSAGE_BYTES", "5000")
    assert KafkaSpanExporter("127.0.0.1:1").max_message_bytes == 5_000
    assert KafkaSpanExporter("127.0.0.1:1", max_message_bytes=7_000).max_message_bytes == 7_000
    monkeypatch.setenv("AGENTWATCH_KAFKA_MAX_MESSAGE_BYTES", "5 kB")
    with pytest.raises(ValueError, match="AGENTWATCH_KAFKA_MAX_MESSAGE_BYTES"):
        KafkaSpanExporter("127.0.0.1:1")
    monkeypatch.delenv("AGENTWATCH_KAFKA_MAX_MESSAGE_BYTES")
    assert KafkaSpanExporter("127.0.0.1:1").max_message_bytes == 900_000


_FORKED = """
import os, sys, time
from agentwatch.sdk import configure, conversation, shutdown, trace
inst = configure(agent="forks", bootstrap_servers=sys.argv[1], topic=sys.argv[2])

@trace(kind="tool")
def tool(who):
    return who

with conversation(id="parent-1"):
    for _ in range(5):
        tool("parent")
time.sleep(1.0)  # the parent's producer connected and sending before the fork
pid = os.fork()
if pid == 0:
    with conversation(id="child-1"):
        for _ in range(20):
            tool("child")
    shutdown()
    os._exit(0 if inst.exporter.stats()["dropped_spans"] == 0 else 3)
_, status = os.waitpid(pid, 0)
shutdown()
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_forked_child_sends_its_own_spans(broker, topic):
    """After `os.fork()` (gunicorn's preload, Celery's prefork) the child held the parent's producer, whose
    sender thread does not exist there: 0 of its 200 spans reached the topic. It connects again."""
    done = subprocess.run(
        [sys.executable, "-c", _FORKED, broker.bootstrap_servers, topic],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "OTEL_BSP_SCHEDULE_DELAY": "100"},  # the parent's spans sent, its producer up
    )
    assert done.returncode == 0, done.stderr[-2000:]
    records = consume(broker.bootstrap_servers, topic, lambda r: count_spans(r) >= 25)
    assert {r.key for r in records} == {b"parent-1", b"child-1"} and count_spans(records) == 25
