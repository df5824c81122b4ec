"""Collector throughput: raw OTLP parse (ceiling), decode, decode → assemble → reconstruct → score, memory.

Run: `python -m benchmarks.collector [--conversations N] [--broker [--rekey]]`. Prints figures; asserts
nothing about timings. The pipeline is timed without scoring (the collector's own cost) and with it; in-process
figures are CPU time (`time.process_time`) with wall time beside them, broker figures wall time with the
process's CPU per conversation. Each section is a function taking the prepared messages (`SECTIONS`).
"""

from __future__ import annotations

import argparse
import gc
import json
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span, TracesData

from agentwatch.collector.assembler import Assembler
from agentwatch.collector.decode import READ_KEYS, decode_message
from agentwatch.collector.otlp_slim import SlimTracesData
from agentwatch.collector.reconstruct import build_conversation
from agentwatch.config import CollectorConfig, Settings
from benchmarks.calibration import calibration_line, calibration_us

TURNS = 2
SPANS_PER_TURN = 5  # invoke_agent, chat, execute_tool, execute_tool, chat


@dataclass(slots=True)
class Workload:
    """Pre-encoded Kafka message values: one OTLP protobuf TracesData per conversation (as the SDK batches)."""

    messages: list[bytes]
    spans: int
    conversations: int


def _attr(span, key: str, value) -> None:
    kv = span.attributes.add()
    kv.key = key
    if isinstance(value, bool):
        kv.value.bool_value = value
    elif isinstance(value, int):
        kv.value.int_value = value
    elif isinstance(value, float):
        kv.value.double_value = value
    else:
        kv.value.string_value = value


def _conversation_message(i: int) -> tuple[bytes, int]:
    """One realistic conversation: GenAI spans with the noise attributes real instrumentations add."""
    data = TracesData()
    rs = data.resource_spans.add()
    for key, value in (
        ("service.name", "shop-agent"),
        ("service.version", "2.1.0"),
        ("telemetry.sdk.language", "python"),
        ("telemetry.sdk.name", "opentelemetry"),
        ("telemetry.sdk.version", "1.45.2"),
        ("host.name", "worker-7"),
        ("process.pid", 4242),
    ):
        _attr(rs.resource, key, value)
    scope = rs.scope_spans.add()
    scope.scope.name = "agentwatch.sdk"
    conv = f"conv-{i:08d}"
    trace = (i + 1).to_bytes(16, "big")
    t = 1_790_000_000_000_000_000 + i * 10_000_000_000
    n = 0

    def span(name: str, parent: bytes | None, attrs: dict) -> bytes:
        nonlocal n, t
        n += 1
        sp = scope.spans.add()
        sp.trace_id = trace
        sp.span_id = (i * 1000 + n).to_bytes(8, "big")
        if parent:
            sp.parent_span_id = parent
        sp.name = name
        sp.kind = Span.SPAN_KIND_INTERNAL
        sp.start_time_unix_nano = t
        t += 1_000_000
        sp.end_time_unix_nano = t + 50_000_000
        common = {
            "gen_ai.conversation.id": conv,
            "agentwatch.task": "refunds",
            "thread.id": 140000,
            "code.lineno": 88,
        }
        for key, value in {**common, **attrs}.items():
            _attr(sp, key, value)
        return sp.span_id

    for turn in range(TURNS):
        root = span(
            "invoke_agent shop-agent",
            None,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "shop-agent",
                "gen_ai.agent.version": "2.1.0",
                "gen_ai.input.messages": json.dumps(
                    [
                        {
                            "role": "user",
                            "parts": [{"type": "text", "content": f"refund order {i} please, turn {turn}"}],
                        }
                    ]
                ),
                "gen_ai.output.messages": json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": f"Order {i} refunded: 12.50 EUR."}],
                        }
                    ]
                ),
                "agentwatch.expected": json.dumps({"tools": [{"name": "lookup_order"}, {"name": "refund"}]}),
                "agentwatch.conversation.end": turn == TURNS - 1,
            },
        )
        for step in range(2):
            span(
                "chat gpt-4o-mini",
                root,
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                    "gen_ai.response.id": f"chatcmpl-{i}-{turn}-{step}",
                    "gen_ai.response.finish_reasons": "tool_calls",
                    "gen_ai.usage.input_tokens": 350 + step * 100,
                    "gen_ai.usage.output_tokens": 40,
                    "server.address": "api.openai.com",
                    "server.port": 443,
                },
            )
            if step == 0:
                for tool, args, result in (
                    ("lookup_order", {"order": i}, {"status": "delivered", "amount": 12.5}),
                    ("refund", {"order": i, "amount": 12.5}, {"ok": True}),
                ):
                    span(
                        f"execute_tool {tool}",
                        root,
                        {
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": tool,
                            "gen_ai.tool.call.id": f"call_{i}_{turn}_{tool}",
                            "gen_ai.tool.type": "function",
                            "gen_ai.tool.call.arguments": json.dumps(args),
                            "gen_ai.tool.call.result": json.dumps(result),
                        },
                    )
    return data.SerializeToString(), n


def make_workload(conversations: int) -> Workload:
    """Encode `conversations` conversations of TURNS turns as OTLP protobuf messages."""
    messages, spans = [], 0
    for i in range(conversations):
        payload, n = _conversation_message(i)
        messages.append(payload)
        spans += n
    return Workload(messages, spans, conversations)


def _rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f}/s" if seconds > 0 else "inf"


# --------------------------------------------------------------------------- sections

# In-process sections time this process's CPU (one core), not wall time: the machine may be shared.
_cpu = time.process_time
REPEATS = 3  # in-process runs; the best is reported with the range (a shared machine only ever slows a run)


def _raw_parse_once(w: Workload) -> tuple[int, float]:
    """(spans, CPU s) of one protobuf parse of every message and a walk over its spans, nothing read."""
    start = _cpu()
    count = 0
    for payload in w.messages:
        data = TracesData.FromString(payload)
        for rs in data.resource_spans:
            for ss in rs.scope_spans:
                count += len(ss.spans)
    return count, _cpu() - start


def bench_raw_parse(w: Workload) -> dict[str, float]:
    """Ceiling: protobuf parse of every message and a walk over its spans, nothing read (best of REPEATS, as
    the pipeline: a share of it compares like with like)."""
    count, seconds = min((_raw_parse_once(w) for _ in range(REPEATS)), key=lambda r: r[1])
    print(f"raw protobuf parse (ceiling):      {_rate(count, seconds):>14} spans  (CPU, best of {REPEATS})")
    return {"raw_parse_spans_per_s": count / seconds}


def _read_floor_once(w: Workload) -> tuple[int, float]:
    """(spans, CPU s) of the least any decode through the protobuf Python API does: parse with the slim type,
    read each span's ids, name, times, status and the value of each needed key it has; keep nothing."""
    start = _cpu()
    count = 0
    for payload in w.messages:
        # a class built from a descriptor at run time: the type checker cannot know its fields
        data: Any = SlimTracesData.FromString(payload)
        for rs in data.resource_spans:
            for ss in rs.scope_spans:
                for sp in ss.spans:
                    attributes = sp.attributes
                    for key in READ_KEYS.intersection(attributes):
                        _ = attributes[key].string_value
                    _ = (sp.trace_id, sp.span_id, sp.parent_span_id, sp.name, sp.status.code)
                    _ = (sp.start_time_unix_nano, sp.end_time_unix_nano)
                    count += 1
    return count, _cpu() - start


def bench_read_floor(w: Workload) -> dict[str, float]:
    """Floor of a decode through the protobuf API: the needed values read, nothing built (best of REPEATS)."""
    count, seconds = min((_read_floor_once(w) for _ in range(REPEATS)), key=lambda r: r[1])
    print(f"needed values read, nothing kept:  {_rate(count, seconds):>14} spans  (CPU, best of {REPEATS})")
    return {"read_floor_spans_per_s": count / seconds}


def _decode_once(w: Workload) -> tuple[int, float]:
    start = _cpu()
    count = sum(len(decode_message(p, "application/x-protobuf")) for p in w.messages)
    return count, _cpu() - start


def bench_decode(w: Workload) -> dict[str, float]:
    """decode_message: span records with only the needed attributes (best of REPEATS)."""
    count, seconds = min((_decode_once(w) for _ in range(REPEATS)), key=lambda r: r[1])
    print(f"decode:                            {_rate(count, seconds):>14} spans  (CPU, best of {REPEATS})")
    return {"decode_spans_per_s": count / seconds}


def _scorer() -> Callable | None:
    try:
        from agentwatch.scorers import ConversationScorer
    except ImportError:
        return None
    score = ConversationScorer().score
    warm = make_workload(1).messages[0]  # first call imports what the scorers load lazily: not timed
    score(build_conversation(decode_message(warm, "application/x-protobuf")))
    return score


def _run_pipeline(w: Workload, score: Callable | None) -> tuple[int, int, float, float]:
    """decode → assemble → reconstruct (→ score) over the workload; (spans, conversations, CPU s, wall s)."""
    assembler = Assembler(CollectorConfig(end_grace_s=0.0, idle_timeout_s=3600))
    conversations = spans = 0
    start, wall = _cpu(), time.perf_counter()
    for offset, payload in enumerate(w.messages):
        records = decode_message(payload, "application/x-protobuf")
        assembler.add_message(records, 0, offset, 0.0)
        spans += len(records)
        for finished in assembler.poll(0.0):
            conv = build_conversation(finished)
            if score is not None:
                score(conv)
            conversations += 1
        assembler.committable(0)
    return spans, conversations, _cpu() - start, time.perf_counter() - wall


def bench_pipeline(w: Workload) -> dict[str, float]:
    """The collector's consumer loop in one process: without scoring (the collector's own cost), then with it."""
    score = _scorer()
    out: dict[str, float] = {}
    runs = [("collector", None)] + ([("pipeline", score)] if score is not None else [])
    for key, scorer in runs:
        results = [_run_pipeline(w, scorer) for _ in range(REPEATS)]
        spans, conversations, cpu_s, wall_s = min(results, key=lambda r: r[2])
        worst = max(r[2] for r in results)
        label = "decode → assemble → rebuild:" if scorer is None else "decode → assemble → rebuild → score:"
        print(
            f"{label:37}{_rate(spans, cpu_s):>12} spans  {_rate(conversations, cpu_s):>10} conversations"
            f"  (CPU, best of {REPEATS}, worst {_rate(spans, worst)}; wall {_rate(spans, wall_s)} spans)"
        )
        out[f"{key}_spans_per_s"] = spans / cpu_s
        out[f"{key}_conversations_per_s"] = conversations / cpu_s
        out[f"{key}_wall_spans_per_s"] = spans / wall_s
    if score is None:
        print("(scorers not importable: full pipeline not timed)")
    return out


def bench_stages(w: Workload) -> dict[str, float]:
    """Where the pipeline's time goes, timed inside the streaming loop (CPU ms per 1,000 conversations; best of
    REPEATS per stage)."""
    best: dict[str, float] = {}
    for _ in range(REPEATS):
        for stage, ms in _stages_once(w).items():
            best[stage] = min(best.get(stage, float("inf")), ms)
    print("per 1,000 conversations (CPU ms): " + ", ".join(f"{k} {v:.0f}" for k, v in best.items()))
    return {f"{k}_ms_per_1000": v for k, v in best.items()}


def _stages_once(w: Workload) -> dict[str, float]:
    """One streaming pass with each stage timed: CPU ms per 1,000 conversations by stage."""
    score = _scorer()
    assembler = Assembler(CollectorConfig(end_grace_s=0.0, idle_timeout_s=3600))
    spent = {"decode": 0.0, "assemble": 0.0, "reconstruct": 0.0, "score": 0.0}
    conversations = 0
    for offset, payload in enumerate(w.messages):
        t0 = _cpu()
        records = decode_message(payload, "application/x-protobuf")
        t1 = _cpu()
        assembler.add_message(records, 0, offset, 0.0)
        finished = assembler.poll(0.0)
        t2 = _cpu()
        convs = [build_conversation(f) for f in finished]
        t3 = _cpu()
        if score is not None:
            for conv in convs:
                score(conv)
        t4 = _cpu()
        conversations += len(finished)
        spent["decode"] += t1 - t0
        spent["assemble"] += t2 - t1
        spent["reconstruct"] += t3 - t2
        spent["score"] += t4 - t3
    per = 1_000_000 / max(1, conversations)
    return {k: v * per for k, v in spent.items()}


def bench_open_memory(w: Workload) -> dict[str, float]:
    """Bytes per open conversation (tracemalloc), with the decoded spans held by the assembler."""
    n = min(len(w.messages), 5000)
    gc.collect()
    tracemalloc.start()
    assembler = Assembler(CollectorConfig(idle_timeout_s=3600, max_open_conversations=10 * n))
    before = tracemalloc.get_traced_memory()[0]
    for offset, payload in enumerate(w.messages[:n]):
        for record in decode_message(payload, "application/x-protobuf"):
            record.attrs.pop("agentwatch.conversation.end", None)  # keep them all open
            assembler.add(record, 0, offset, 0.0)
        assembler.message_done(0, offset)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    per = (after - before) / n
    estimate = assembler.open_bytes_estimate() / n
    spans = w.spans // w.conversations
    print(
        f"open conversation memory:          {per:>10,.0f} B each ({spans} spans; estimate {estimate:,.0f} B)"
    )
    return {"bytes_per_open_conversation": per}


# --------------------------------------------------------------------------- through the broker


def produce_spans(
    bootstrap_servers: str, messages: list[bytes], prefix: str, keyed: bool = True
) -> tuple[Settings, float]:
    """Write `messages` to a fresh span topic as agents do (`keyed`: with the SDK's conversation-key header, else
    as the OTel Collector writes them); the settings of a collector reading it (topics and group named
    `prefix-…`, fast group join) and the seconds producing took."""
    import uuid

    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    from agentwatch.config import load_settings

    run = uuid.uuid4().hex[:8]
    topic = f"{prefix}-spans-{run}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers)
    admin.create_topics([NewTopic(topic, 4, 1), NewTopic(f"{prefix}-rekey-{run}", 4, 1)])
    admin.close()
    headers = (
        [("content-type", b"application/x-protobuf"), ("agentwatch-key", b"conversation")] if keyed else None
    )
    producer = KafkaProducer(bootstrap_servers=bootstrap_servers, linger_ms=20, batch_size=1_000_000)
    start = time.perf_counter()
    for i, payload in enumerate(messages):
        producer.send(topic, value=payload, key=f"conv-{i}".encode(), headers=headers)
    producer.flush()
    produce_s = time.perf_counter() - start
    producer.close()
    settings = load_settings(
        kafka={"bootstrap_servers": bootstrap_servers},
        collector={
            "input_topics": [topic],
            "scores_topic": f"{prefix}-scores-{run}",
            "dead_letter_topic": f"{prefix}-dlq-{run}",
            "rekey_topic": f"{prefix}-rekey-{run}",
            "group_id": f"{prefix}-{run}",
            "end_grace_s": 0.0,
            "idle_timeout_s": 60.0,
            "session_timeout_ms": 2000,
            "heartbeat_interval_ms": 500,
        },
    )
    return settings, produce_s


def bench_broker(w: Workload, bootstrap_servers: str | None = None, rekey: bool = False) -> dict[str, float]:
    """Produce the workload to a topic, then time the collector service from first span to last score.

    The collector runs as in production (consumer group, manual commits, scores produced and flushed);
    the clock starts when it consumes its first message, so the group join is not counted. With `rekey`
    the messages carry no `agentwatch-key` header (as the OTel Collector writes them) and go through
    the rekey topic first.
    """
    import threading

    from agentwatch.collector.service import CollectorService
    from agentwatch.kafka.broker import EmbeddedBroker

    broker = None
    if bootstrap_servers is None:
        broker = EmbeddedBroker().start()
        bootstrap_servers = broker.bootstrap_servers
    try:
        settings, produce_s = produce_spans(bootstrap_servers, w.messages, "bench", keyed=not rekey)
        service = CollectorService(settings)
        stop = threading.Event()
        thread = threading.Thread(target=service.run, args=(stop,), daemon=True)
        thread.start()
        stats = service.stats
        deadline = time.monotonic() + 120
        while stats.messages_consumed == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
        t0, c0 = time.perf_counter(), _cpu()
        while stats.scores_produced < w.conversations and time.monotonic() < deadline and thread.is_alive():
            time.sleep(0.005)
        seconds, cpu_s = time.perf_counter() - t0, _cpu() - c0
        stop.set()
        thread.join(30)
    finally:
        if broker is not None:
            broker.stop()
    done = stats.scores_produced
    label = "through the broker, re-keyed:" if rekey else "through the broker:"
    print(f"produce to the broker:             {_rate(w.spans, produce_s):>14} spans")
    print(
        f"{label:35}{_rate(w.spans * done // w.conversations, seconds):>14} spans  {_rate(done, seconds):>12} conversations"
        f"  (wall; process CPU {cpu_s / max(1, done) * 1e3:.2f} ms per conversation, all threads)"
        + (
            ""
            if done == w.conversations
            else f"  (only {done} of {w.conversations} scored before the deadline)"
        )
    )
    key = "broker_rekey" if rekey else "broker"
    return {
        f"{key}_spans_per_s": w.spans * done / w.conversations / seconds,
        f"{key}_conversations_per_s": done / seconds,
        f"{key}_cpu_ms_per_conversation": cpu_s / max(1, done) * 1e3,
    }


SECTIONS: list[Callable[[Workload], dict[str, float]]] = [
    bench_raw_parse,
    bench_read_floor,
    bench_decode,
    bench_pipeline,
    bench_stages,
    bench_open_memory,
]


def print_shares(figures: dict[str, float]) -> None:
    """Decode and the whole pipeline as shares of the raw parse measured in the same run."""
    raw = figures.get("raw_parse_spans_per_s")
    if not raw:
        return
    shares = [
        ("needed values read", "read_floor_spans_per_s"),
        ("decode", "decode_spans_per_s"),
        ("decode → score", "pipeline_spans_per_s"),
    ]
    print(
        "share of the raw protobuf parse: "
        + ", ".join(f"{label} {figures[key] / raw:.1%}" for label, key in shares if key in figures)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=5000, help="conversations in the workload")
    parser.add_argument(
        "--broker", action="store_true", help="also run the collector service through a broker"
    )
    parser.add_argument(
        "--rekey", action="store_true", help="with --broker: unkeyed input, through the rekey topic"
    )
    parser.add_argument(
        "--bootstrap-servers", default=None, help="with --broker: use this broker, not an embedded one"
    )
    parser.add_argument("--broker-only", action="store_true", help="run only the broker section(s)")
    args = parser.parse_args()
    before = calibration_us()
    w = make_workload(args.conversations)
    size = sum(len(m) for m in w.messages)
    print(
        f"workload: {w.conversations:,} conversations, {w.spans:,} spans, {len(w.messages):,} messages, "
        f"{size / len(w.messages):,.0f} B/message"
    )
    if not args.broker_only:
        figures: dict[str, float] = {}
        for section in SECTIONS:
            figures.update(section(w))
        print_shares(figures)
    if args.broker or args.broker_only:
        bench_broker(w, args.bootstrap_servers)
        if args.rekey:
            bench_broker(w, args.bootstrap_servers, rekey=True)
    print(calibration_line(before))


if __name__ == "__main__":
    main()
