"""Helpers of the collector's broker tests: build agent spans with the OTel SDK, produce them, read scores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from confluent_kafka import OFFSET_BEGINNING, Consumer, Message, TopicPartition
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode, set_span_in_context

from agentwatch.config import Settings, load_settings

SDK_HEADERS = [("content-type", b"application/x-protobuf"), ("agentwatch-key", b"conversation")]
FAST = {"session_timeout_ms": 2000, "heartbeat_interval_ms": 500}


@dataclass
class ToolSpec:
    name: str
    arguments: dict[str, Any]
    result: Any
    error: str | None = None


@dataclass
class TurnSpec:
    """One turn of a synthetic agent conversation, with its timing (ns since the conversation start)."""

    user: str
    answer: str
    tools: list[ToolSpec] = field(default_factory=list)
    model: str = "gpt-4o-mini"
    input_tokens: int = 100
    output_tokens: int = 20
    expected: dict[str, Any] | None = None
    start_ns: int = 0
    duration_ns: int = 1_000_000_000


def conversation_spans(
    conversation_id: str,
    turns: list[TurnSpec],
    *,
    agent: str = "support-bot",
    version: str = "1.2.0",
    task: str = "refunds",
    end: bool = True,
    t0_ns: int = 1_700_000_000_000_000_000,
    extra: dict[str, Any] | None = None,
) -> list[ReadableSpan]:
    """Finished OTel spans of a conversation written with the GenAI conventions our SDK uses."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": agent, "service.version": version}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agentwatch-test")
    common = {"gen_ai.conversation.id": conversation_id, "agentwatch.task": task, **(extra or {})}
    for i, turn in enumerate(turns):
        start = t0_ns + turn.start_ns
        attrs = {
            **common,
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "gen_ai.agent.version": version,
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": turn.user}]}]
            ),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": turn.answer}]}]
            ),
        }
        if turn.expected is not None:
            attrs["agentwatch.expected"] = json.dumps(turn.expected)
        if end and i == len(turns) - 1:
            attrs["agentwatch.conversation.end"] = True
        root = tracer.start_span(f"invoke_agent {agent}", attributes=attrs, start_time=start)
        ctx = set_span_in_context(root)
        step = turn.duration_ns // (len(turn.tools) + 2)
        t = start + step // 2
        for j, tool in enumerate(turn.tools):
            span = tracer.start_span(
                f"execute_tool {tool.name}",
                context=ctx,
                start_time=t,
                attributes={
                    **common,
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": tool.name,
                    "gen_ai.tool.call.id": f"call_{i}_{j}",
                    "gen_ai.tool.call.arguments": json.dumps(tool.arguments),
                    "gen_ai.tool.call.result": json.dumps(tool.result),
                },
            )
            if tool.error:
                span.set_status(Status(StatusCode.ERROR, tool.error))
            span.end(end_time=t + step // 2)
            t += step
        chat = tracer.start_span(
            f"chat {turn.model}",
            context=ctx,
            start_time=t,
            attributes={
                **common,
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": turn.model,
                "gen_ai.response.model": turn.model,
                "gen_ai.usage.input_tokens": turn.input_tokens,
                "gen_ai.usage.output_tokens": turn.output_tokens,
            },
        )
        chat.end(end_time=t + step // 2)
        root.end(end_time=start + turn.duration_ns)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def simple_conversation(conversation_id: str, *, turns: int = 1, **kwargs: Any) -> list[ReadableSpan]:
    """A conversation of `turns` turns, one tool call each, ended on the last turn."""
    specs = [
        TurnSpec(
            user=f"question {i}",
            answer=f"answer {i}: order 42 refunded",
            tools=[ToolSpec("lookup_order", {"order_id": 42}, {"status": "refunded"})],
            start_ns=i * 2_000_000_000,
        )
        for i in range(turns)
    ]
    return conversation_spans(conversation_id, specs, **kwargs)


def otlp_bytes(spans: Iterable[ReadableSpan]) -> bytes:
    """OTLP protobuf TracesData (== ExportTraceServiceRequest) of finished spans."""
    return encode_spans(list(spans)).SerializeToString()


def otlp_json(spans: Iterable[ReadableSpan]) -> bytes:
    """OTLP/JSON of finished spans, as the OTel Collector's `otlp_json` encoding writes it."""
    from google.protobuf.json_format import MessageToJson

    return MessageToJson(encode_spans(list(spans))).encode()


def producer(bootstrap: str) -> KafkaProducer:
    """A producer tuned like the SDK's."""
    return KafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=20, batch_size=1_000_000, max_request_size=32 * 1024 * 1024
    )


def create_topic(bootstrap: str, name: str, partitions: int, config: dict[str, str] | None = None) -> None:
    """Create `name` with `partitions` partitions (and the topic `config`, e.g. its `max.message.bytes`)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1, topic_configs=config or {})])
    finally:
        admin.close()


def collector_settings(
    bootstrap: str, inputs: list[str], prefix: str, *, kafka: dict[str, Any] | None = None, **collector: Any
) -> Settings:
    """Settings of a test collector: unique topics/group named from `prefix`, fast group, short timeouts.

    `kafka`: more keys of the `kafka` section, e.g. `security_protocol` and `ssl_ca_file`.
    """
    values = {
        "input_topics": inputs,
        "scores_topic": f"{prefix}-scores",
        "dead_letter_topic": f"{prefix}-dlq",
        "rekey_topic": f"{prefix}-rekey",
        "group_id": f"{prefix}-group",
        "idle_timeout_s": 1.5,
        "end_grace_s": 0.2,
        "commit_interval_s": 0.3,
        **FAST,
        **collector,
    }
    return load_settings(kafka={"bootstrap_servers": bootstrap, **(kafka or {})}, collector=values)


def collector_env(settings: Settings) -> dict[str, str]:
    """Environment of a collector subprocess equivalent to `settings` (through AGENTWATCH_* variables)."""
    c = settings.collector
    env = dict(os.environ)
    env.update(
        {
            "AGENTWATCH_KAFKA__BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers,
            "AGENTWATCH_COLLECTOR__INPUT_TOPICS": json.dumps(c.input_topics),
            "AGENTWATCH_COLLECTOR__SCORES_TOPIC": c.scores_topic,
            "AGENTWATCH_COLLECTOR__DEAD_LETTER_TOPIC": c.dead_letter_topic,
            "AGENTWATCH_COLLECTOR__REKEY_TOPIC": c.rekey_topic,
            "AGENTWATCH_COLLECTOR__GROUP_ID": c.group_id,
            "AGENTWATCH_COLLECTOR__IDLE_TIMEOUT_S": str(c.idle_timeout_s),
            "AGENTWATCH_COLLECTOR__END_GRACE_S": str(c.end_grace_s),
            "AGENTWATCH_COLLECTOR__COMMIT_INTERVAL_S": str(c.commit_interval_s),
            "AGENTWATCH_COLLECTOR__SESSION_TIMEOUT_MS": str(c.session_timeout_ms),
            "AGENTWATCH_COLLECTOR__HEARTBEAT_INTERVAL_MS": str(c.heartbeat_interval_ms),
            "AGENTWATCH_COLLECTOR__MAX_OPEN_BYTES": str(c.max_open_bytes),
            "AGENTWATCH_COLLECTOR__MAX_OPEN_AGE_S": str(c.max_open_age_s),
        }
    )
    return env


def start_collector_process(settings: Settings, log_path: str, *args: str) -> subprocess.Popen[bytes]:
    """`python -m agentwatch collector` configured by environment variables, logging to `log_path`."""
    out = open(log_path, "ab")  # noqa: SIM115 - owned by the process
    return subprocess.Popen(
        [sys.executable, "-m", "agentwatch", "collector", *args],
        env=collector_env(settings),
        stdout=out,
        stderr=subprocess.STDOUT,
    )


class ServiceThread:
    """A CollectorService running on a thread of the test process."""

    def __init__(self, settings: Settings, **kwargs: Any) -> None:
        from agentwatch.collector.service import CollectorService

        self.service = CollectorService(settings, **kwargs)
        self.stop_event = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.service.run(self.stop_event)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def __enter__(self) -> ServiceThread:  # noqa: PYI034
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        self.thread.join(timeout=30)


@dataclass(frozen=True)
class Record:
    """One record read back from a topic."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes  # the topics read carry no tombstones
    headers: list[tuple[str, bytes]]

    @classmethod
    def of(cls, m: Message) -> Record:
        """A consumed message (no error): topic, partition, offset and value are set, headers a list."""
        topic, partition, offset, value = m.topic(), m.partition(), m.offset(), m.value()
        assert topic is not None and partition is not None and offset is not None, m
        assert value is not None, f"a tombstone at {topic}[{partition}]@{offset}"
        return cls(topic, partition, offset, m.key(), value, cast(list[tuple[str, bytes]], m.headers() or []))


class TopicReader:
    """Reads every record of a topic from the beginning (no group), incrementally, with the services' client."""

    def __init__(self, bootstrap: str, topic: str, **config: Any) -> None:
        """`config`: more librdkafka settings, e.g. `KafkaSecurity.librdkafka()`."""
        self.topic = topic
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": unique("reader"),
                "enable.auto.commit": False,
                **config,
            }
        )
        self.records: list[Record] = []
        self._assigned = False

    def _assign(self) -> bool:
        found = self.consumer.list_topics(self.topic, timeout=5).topics.get(self.topic)
        if found is None or found.error is not None or not found.partitions:
            return False
        self.consumer.assign(
            [TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in sorted(found.partitions)]
        )
        self._assigned = True
        return True

    def poll(self) -> list[Record]:
        """New records since the last call."""
        if not self._assigned and not self._assign():
            time.sleep(0.2)
            return []
        new = [Record.of(m) for m in self.consumer.consume(10_000, 0.2) if m.error() is None]
        self.records.extend(new)
        return new

    def wait(
        self,
        done: Callable[[list[Record]], bool],
        timeout_s: float,
        *,
        alive: Callable[[], object] | None = None,
    ) -> list[Record]:
        """Poll until `done(records)` or the timeout; returns the records read."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.poll()
            if done(self.records):
                return self.records
            if alive is not None:
                alive()
        return self.records

    def close(self) -> None:
        self.consumer.close()


def collect_one_score(bootstrap: str, topic: str, group: str) -> tuple[Record, Any]:
    """Run a collector (group `group`) over `topic` until it writes a score: the one score record it wrote,
    and the collector's stats."""
    settings = collector_settings(bootstrap, [topic], unique(group))
    reader = TopicReader(bootstrap, settings.collector.scores_topic)
    with ServiceThread(settings) as svc:
        records = reader.wait(lambda r: len(r) >= 1, 30)
        assert svc.error is None
    reader.close()
    assert len(records) == 1
    return records[0], svc.service.stats


def scores_of(records: list[Any]) -> list[dict[str, Any]]:
    """Decoded JSON values of score records."""
    return [json.loads(r.value) for r in records]


def ids_of(records: list[Any]) -> list[str]:
    """Conversation ids of score records, in order, with repeats."""
    return [s["conversation_id"] for s in scores_of(records)]


def unique(prefix: str = "c") -> str:
    """A unique id."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def price_per_mtok(model: str) -> tuple[float, float]:
    """(input, output) USD per million tokens of `model`, read from the shipped price table file."""
    from pathlib import Path

    import yaml

    import agentwatch.config

    table = yaml.safe_load(
        (Path(agentwatch.config.__file__).parent.parent / "data" / "prices.yaml").read_text()
    )
    p = table["models"][model]
    return p["input_per_mtok"], p["output_per_mtok"]


def assert_refund_agent_score(s: dict, cid: str, *, duration_s: float, ended_at: datetime) -> None:
    """Every field of the score of the two-turn refund conversation both end-to-end agents run."""
    import pytest

    (pi0, po0), (pi1, po1) = price_per_mtok("gpt-4o-mini"), price_per_mtok("gpt-4o")
    cost = (1200 * pi0 + 80 * po0 + 2000 * pi1 + 150 * po1) / 1e6
    assert cost < 0.05
    full_marks = {
        "selection": 1.0,
        "parameters": 1.0,
        "sequence": 1.0,
        "utilization": 1.0,
        "overall": 1.0,
        "binary": True,
        "passed": True,
    }
    assert s["schema_version"] == 1
    assert s["conversation_id"] == cid
    assert (s["agent"], s["version"], s["task"]) == ("support-bot", "1.2.0", "refunds")
    assert s["tags"] == {"tier": "gold"}
    assert s["turns"] == 2
    assert s["passed"] is True, s["reasons"]
    assert (s["outcome"], s["outcome_source"], s["reasons"]) == ("complete", "rules", [])
    assert [ts["index"] for ts in s["turn_scores"]] == [0, 1]
    for ts in s["turn_scores"]:
        assert ts["answer_score"] == pytest.approx(1.0)
        assert ts["answer_passed"] is True
        assert ts["tool"] == pytest.approx(full_marks)
        assert (ts["loop"], ts["forbidden_tools"], ts["error"], ts["passed"]) == (False, [], None, True)
    assert s["cost_usd"] == pytest.approx(cost, rel=1e-9)
    assert s["budget_usd"] == pytest.approx(0.05)
    assert s["cost_penalty"] == 0.0
    assert s["asr_credit"] == pytest.approx(1.0)
    assert s["duration_s"] == pytest.approx(duration_s, rel=1e-6)
    assert (s["input_tokens"], s["output_tokens"]) == (3200, 230)
    assert abs(datetime.fromisoformat(s["ended_at"]) - ended_at).total_seconds() < 1e-3
    assert s["incomplete"] is False
