"""Collector memory and offsets under hostile traffic, against a real broker: RSS before and after SIGKILL.

Run: `python -m benchmarks.collector_memory [--fat N] [--budget-mib M] [--unbounded] [--skip-fat|--skip-forever]`.
Prints figures; asserts nothing.

* **fat**: N conversations that never end (no end flag, idle timeout of an hour), each 10 spans with six
  ~64 KiB content fields, into a 4-partition topic. The collector (`python -m agentwatch collector`, a process
  of its own) reads them; its RSS is sampled (`/proc/PID/status`: VmRSS, VmHWM) until it has consumed every span,
  then it is SIGKILLed and restarted: the replay's RSS is measured the same way. Finally every conversation gets
  its end span; the scores topic is read back: conversations lost, scores, and what the exporter's estimator
  counts (duplicates are dropped there: `double counted` is counted scores minus distinct conversations).
  The figure to compare is peak RSS against `max_open_bytes` + the idle process + the fetch queue.
* **never-ending**: on a 1-partition topic one conversation gets a span every 0.5 s and never ends, while 200
  others are scored; after `max_open_age_s` (10 s here) it is finished and the committed offset moves. Then
  SIGKILL and restart: how many of the 200 are scored again. `--unbounded` also runs both workloads with the
  bounds off (a budget of 64 GiB, an age of 10^9 s), as before they existed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from agentwatch.kafka.broker import EmbeddedBroker, free_port

MIB = 1024 * 1024
T0_NS = time.time_ns() - 3_600_000_000_000  # an hour ago: inside every window of the estimator
BUDGET_FINISHED = 'agentwatch_conversations_finished_total{reason="budget"}'
HEADERS = [("content-type", b"application/x-protobuf"), ("agentwatch-key", b"conversation")]
CONTENT_KEYS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "input.value",
    "output.value",
)


def span_message(cid: str, n: int, content_bytes: int, *, end: bool = False) -> bytes:
    """One OTLP TracesData holding one invoke_agent span of `cid` with six content fields of `content_bytes`."""
    data = TracesData()
    rs = data.resource_spans.add()
    kv = rs.resource.attributes.add()
    kv.key, kv.value.string_value = "service.name", "fat-agent"
    sp = rs.scope_spans.add().spans.add()
    sp.trace_id = uuid.uuid5(uuid.NAMESPACE_URL, cid).bytes
    sp.span_id = (n + 1).to_bytes(8, "big")
    sp.name = "invoke_agent fat-agent"
    sp.start_time_unix_nano = T0_NS + n * 1_000_000
    sp.end_time_unix_nano = sp.start_time_unix_nano + 500_000
    attrs = {"gen_ai.conversation.id": cid, "gen_ai.operation.name": "invoke_agent"}
    for i, key in enumerate(CONTENT_KEYS if content_bytes else ()):
        attrs[key] = f"{cid}/{n}/{i} " + "lorem ipsum " * (content_bytes // 12)
    for key, value in attrs.items():
        kv = sp.attributes.add()
        kv.key, kv.value.string_value = key, value
    if end:
        kv = sp.attributes.add()
        kv.key, kv.value.bool_value = "agentwatch.conversation.end", True
    return data.SerializeToString()


@dataclass
class Collector:
    """A collector process configured by environment variables, with its /metrics port."""

    proc: subprocess.Popen[bytes]
    port: int

    def rss(self) -> tuple[float, float]:
        """(VmRSS, VmHWM) in MiB."""
        fields = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    fields[key] = int(value.split()[0]) / 1024
        return fields["VmRSS"], fields["VmHWM"]

    def metrics(self) -> dict[str, float]:
        """The collector's samples (name{labels} -> value); {} while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2) as r:
                text = r.read().decode()
        except OSError:
            return {}
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                out[name] = float(value)
        return out

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


def start_collector(bootstrap: str, topic: str, run: str, log: str, **collector: object) -> Collector:
    port = free_port()
    env = dict(os.environ)
    values = {
        "INPUT_TOPICS": json.dumps([topic]),
        "SCORES_TOPIC": f"{run}-scores",
        "DEAD_LETTER_TOPIC": f"{run}-dlq",
        "REKEY_TOPIC": f"{run}-rekey",
        "GROUP_ID": f"{run}-group",
        "SESSION_TIMEOUT_MS": "2000",
        "HEARTBEAT_INTERVAL_MS": "500",
        "COMMIT_INTERVAL_S": "1.0",
        "END_GRACE_S": "0.2",
        "METRICS_PORT": str(port),
        "METRICS_HOST": "127.0.0.1",
        **{k.upper(): str(v) for k, v in collector.items()},
    }
    env.update({f"AGENTWATCH_COLLECTOR__{k}": v for k, v in values.items()})
    env["AGENTWATCH_KAFKA__BOOTSTRAP_SERVERS"] = bootstrap
    out = open(log, "ab")  # noqa: SIM115 - owned by the process
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentwatch", "collector"], env=env, stdout=out, stderr=subprocess.STDOUT
    )
    return Collector(proc, port)


def wait_for(
    done: Callable[[], bool], timeout_s: float, collector: Collector, peak: list[float] | None = None
) -> bool:
    """Poll `done` every 0.2 s, sampling RSS into `peak` ([max VmRSS]); False at the timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if collector.proc.poll() is not None:
            raise RuntimeError(f"collector exited with {collector.proc.returncode}")
        if peak is not None:
            peak[0] = max(peak[0], collector.rss()[0])
        if done():
            return True
        time.sleep(0.2)
    return False


def consumed_all(collector: Collector, spans: int) -> Callable[[], bool]:
    return lambda: collector.metrics().get("agentwatch_spans_consumed_total", 0) >= spans


def lag_zero(collector: Collector) -> Callable[[], bool]:
    """The collector consumed to the end of what it owns (and has reported a lag at all)."""

    def done() -> bool:
        m = collector.metrics()
        lags = [v for k, v in m.items() if k.startswith("agentwatch_consumer_lag{")]
        return bool(lags) and sum(lags) == 0

    return done


def produce(bootstrap: str, topic: str, messages: list[tuple[str, bytes]]) -> None:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=20, batch_size=1_000_000, max_request_size=8 * MIB
    )
    for key, value in messages:
        producer.send(topic, value=value, key=key.encode(), headers=HEADERS)
    producer.flush()
    producer.close()


def read_scores(bootstrap: str, topic: str) -> list[dict[str, object]]:
    """Every record of the scores topic, decoded."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}"})
    meta = consumer.list_topics(topic, timeout=10).topics[topic]
    consumer.assign([TopicPartition(topic, p, 0) for p in meta.partitions])
    out, idle = [], 0
    while idle < 5:
        batch = [m for m in consumer.consume(10_000, 0.5) if m.error() is None]
        idle = 0 if batch else idle + 1
        out += [json.loads(m.value() or b"{}") for m in batch]
    consumer.close()
    return out


def counted(scores: list[dict[str, object]]) -> int:
    """How many conversations the exporter's estimator counts from these scores (duplicates dropped)."""
    from agentwatch.config import load_settings
    from agentwatch.exporters.estimator import Estimator
    from agentwatch.wire.schema import ConversationScore

    estimator = Estimator(load_settings(), clock=time.time)
    return sum(estimator.add(ConversationScore.model_validate(s)) for s in scores)


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    tps = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
    consumer.close()
    return [tp.offset for tp in tps]


def create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, partitions, 1)])
    admin.close()


def idle_rss(bootstrap: str, logdir: str) -> float:
    """RSS of a collector that consumed one small conversation: the process without open conversations."""
    run = f"idle-{uuid.uuid4().hex[:6]}"
    create(bootstrap, f"{run}-spans", 1)
    c = start_collector(bootstrap, f"{run}-spans", run, f"{logdir}/{run}.log")
    try:
        produce(bootstrap, f"{run}-spans", [("c", span_message("c", 0, 100, end=True))])
        wait_for(lambda: c.metrics().get("agentwatch_scores_produced_total", 0) >= 1, 60, c)
        time.sleep(1.0)
        return c.rss()[0]
    finally:
        c.kill()


def fat(bootstrap: str, logdir: str, n: int, budget_mib: int) -> None:
    run = f"fat-{uuid.uuid4().hex[:6]}"
    topic = f"{run}-spans"
    create(bootstrap, topic, 4)
    ids = [f"{run}-c{i:04d}" for i in range(n)]
    messages = [(cid, span_message(cid, k, 64 * 1024 - 256)) for k in range(10) for cid in ids]
    produce(bootstrap, topic, messages)
    settings = {"idle_timeout_s": 3600, "max_open_age_s": 10**9, "max_open_bytes": budget_mib * MIB}
    log = f"{logdir}/{run}.log"
    c = start_collector(bootstrap, topic, run, log, **settings)
    peak = [0.0]
    t0 = time.monotonic()
    ok = wait_for(consumed_all(c, len(messages)), 600, c, peak)
    wait_for(lambda: False, 3, c, peak)  # let finished conversations be scored
    m = c.metrics()
    rss, hwm = c.rss()
    print(
        f"  first run:  {len(messages):,} spans consumed in {time.monotonic() - t0:.0f} s{'' if ok else ' (TIMEOUT)'};"
        f" RSS {rss:,.0f} MiB, peak {max(peak[0], hwm):,.0f} MiB; open {m.get('agentwatch_open_conversations', 0):.0f}"
        f" conversations, {m.get('agentwatch_open_conversation_bytes', 0) / MIB:,.0f} MiB estimated;"
        f" finished by budget {m.get(BUDGET_FINISHED, 0):.0f}"
    )
    first_peak = max(peak[0], hwm)
    c.kill()
    c = start_collector(bootstrap, topic, run, log, **settings)
    peak = [0.0]
    t0 = time.monotonic()
    wait_for(lambda: bool(c.metrics()), 60, c, peak)
    ok = wait_for(lag_zero(c), 600, c, peak)
    wait_for(lambda: False, 3, c, peak)
    m = c.metrics()
    rss, hwm = c.rss()
    replay_peak = max(peak[0], hwm)
    print(
        f"  after SIGKILL: replay of {m.get('agentwatch_spans_consumed_total', 0):,.0f} spans in"
        f" {time.monotonic() - t0:.0f} s{'' if ok else ' (TIMEOUT)'}; RSS {rss:,.0f} MiB, peak {replay_peak:,.0f} MiB"
    )
    produce(bootstrap, topic, [(cid, span_message(cid, 99, 0, end=True)) for cid in ids])
    wait_for(lag_zero(c), 120, c)
    wait_for(lambda: False, 3, c)
    c.proc.send_signal(signal.SIGTERM)
    c.proc.wait(30)
    scores = read_scores(bootstrap, f"{run}-scores")
    seen = {str(s["conversation_id"]) for s in scores}
    incomplete = sum(1 for s in scores if s.get("incomplete"))
    n_counted = counted(scores)
    print(
        f"  scores: {len(scores):,} written for {len(seen):,} of {n} conversations ({n - len(seen & set(ids))} lost,"
        f" {incomplete:,} marked incomplete); the estimator counts {n_counted:,}"
        f" ({n_counted - len(seen)} double counted)"
    )
    print(f"  peak RSS: first run {first_peak:,.0f} MiB, replay {replay_peak:,.0f} MiB")


def forever(bootstrap: str, logdir: str, max_age_s: float) -> None:
    run = f"forever-{uuid.uuid4().hex[:6]}"
    topic = f"{run}-spans"
    create(bootstrap, topic, 1)
    settings = {"idle_timeout_s": 5, "max_open_age_s": max_age_s}
    log = f"{logdir}/{run}.log"
    c = start_collector(bootstrap, topic, run, log, **settings)
    wait_for(lambda: bool(c.metrics()), 60, c)
    stop = threading.Event()

    def drip() -> None:
        p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
        n = 0
        while not stop.is_set():
            p.send(topic, value=span_message("forever", n, 200), key=b"forever", headers=HEADERS)
            p.flush()
            n += 1
            stop.wait(0.5)
        p.close()

    dripper = threading.Thread(target=drip, daemon=True)
    dripper.start()
    time.sleep(2)
    others = [f"{run}-o{i:03d}" for i in range(200)]
    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    for i, cid in enumerate(others):  # over ~20 s, while the never-ending conversation drips
        p.send(topic, value=span_message(cid, 0, 200, end=True), key=cid.encode(), headers=HEADERS)
        if i % 10 == 9:
            p.flush()
            time.sleep(1.0)
    p.flush()
    p.close()
    group = f"{run}-group"
    peak = [0.0]
    wait_for(lambda: c.metrics().get("agentwatch_scores_produced_total", 0) >= 200, 60, c, peak)
    wait_for(lambda: False, 3, c, peak)
    before = committed(bootstrap, group, topic, 1)[0]
    oldest = c.metrics().get("agentwatch_oldest_open_conversation_seconds", 0)
    first_peak = max(peak[0], c.rss()[1])
    c.kill()
    c = start_collector(bootstrap, topic, run, log, **settings)
    peak = [0.0]
    wait_for(lambda: bool(c.metrics()), 60, c, peak)
    wait_for(lag_zero(c), 60, c, peak)
    wait_for(lambda: False, 3, c, peak)
    replay_peak = max(peak[0], c.rss()[1])
    stop.set()
    dripper.join(5)
    c.proc.send_signal(signal.SIGTERM)
    c.proc.wait(30)
    scores = read_scores(bootstrap, f"{run}-scores")
    per_id: dict[str, int] = {}
    for s in scores:
        per_id[str(s["conversation_id"])] = per_id.get(str(s["conversation_id"]), 0) + 1
    again = sum(1 for cid in others if per_id.get(cid, 0) > 1)
    lost = sum(1 for cid in others if cid not in per_id)
    print(
        f"  max_open_age_s {max_age_s:g}: committed offset before SIGKILL {before} (of ~{200 + 60} records);"
        f" oldest open conversation {oldest:.0f} s; after restart {again} of 200 scored again, {lost} lost;"
        f" the never-ending one scored {per_id.get('forever', 0)} time(s); peak RSS {first_peak:,.0f} MiB, after"
        f" SIGKILL {replay_peak:,.0f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fat", type=int, default=250, help="fat conversations (default 250)")
    parser.add_argument("--budget-mib", type=int, default=256, help="collector.max_open_bytes in MiB")
    parser.add_argument("--unbounded", action="store_true", help="also run with the bounds off")
    parser.add_argument("--skip-fat", action="store_true")
    parser.add_argument("--skip-forever", action="store_true")
    args = parser.parse_args()
    broker = EmbeddedBroker().start()
    logdir = tempfile.mkdtemp(prefix="collector-memory-")
    try:
        base = idle_rss(broker.bootstrap_servers, logdir)
        print(f"idle collector process: RSS {base:,.0f} MiB (logs in {logdir})")
        if not args.skip_fat:
            budgets = [args.budget_mib] + ([64 * 1024] if args.unbounded else [])
            for budget in budgets:
                label = "unbounded (64 GiB)" if budget == 64 * 1024 else f"{budget} MiB"
                print(
                    f"fat: {args.fat} never-ending conversations x 10 spans x 6 x 64 KiB, max_open_bytes {label}"
                    f" (bound: idle {base:,.0f} + budget {budget:,} + fetch queue 32 MiB)"
                )
                fat(broker.bootstrap_servers, logdir, args.fat, budget)
        if not args.skip_forever:
            print("never-ending: one span every 0.5 s on one conversation, 200 others scored meanwhile")
            for age in [10.0] + ([1e9] if args.unbounded else []):
                forever(broker.bootstrap_servers, logdir, age)
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
