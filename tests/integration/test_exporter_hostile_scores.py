"""Score records a broken or hostile producer writes, through a real Tansu broker into a running exporter: the
consumer goes on, every record is counted, and /metrics stays whole, finite and valid for Prometheus' parser
and promtool, also after a restart."""

from __future__ import annotations

import math
import shutil
import subprocess
import time
import urllib.request
import uuid

import pytest
from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from agentwatch.config import load_settings
from agentwatch.kafka.topics import ensure_topics
from tests.conftest import FAST_GROUP
from tests.support.exporter_service import run_service, stop_service
from tests.support.scores import judged_record, score_record

pytestmark = pytest.mark.broker


def _judged(cid: str, ended_at: float, rate: float, i: int) -> bytes:
    """A judge-graded score sampled at `rate`, labelled on the review sample for three in four."""
    return judged_record(cid, rate, i % 3 != 0, i % 5 != 0, i % 4 != 3, ended_at)


def _body(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as resp:
        assert resp.status == 200
        body: bytes = resp.read()
        return body.decode()


def _checked(text: str) -> dict[tuple[str, tuple], float]:
    """The body checked by promtool and parsed by prometheus-client: (name, sorted labels) -> value."""
    promtool = shutil.which("promtool") or "/usr/bin/promtool"
    run = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60, check=False
    )
    problems = {line for line in (run.stdout + run.stderr).splitlines() if "quantile" not in line}
    assert run.returncode in (0, 3) and not problems, problems  # 3: the documented `quantile` lint only
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_hostile_score_records_through_a_real_broker_leave_the_consumer_and_every_scrape_whole(
    broker, topic
) -> None:
    ensure_topics(broker.bootstrap_servers, [topic], partitions=2)
    now = time.time()
    ended = now - 120
    hostile: list[bytes | None] = [
        score_record("max-cost", ended, cost_usd=1.7976931348623157e308, duration_s=math.inf),
        score_record("c" * 2_000_000, ended),  # a 2 MB conversation id
        score_record(
            "names", ended, agent='a\n"b\\c\u202e\x1b[31m' + "A" * 10_000, version="\x00", task="t\r\n"
        ),
        score_record("future", ended, schema_version=99, a_field_of_later_versions={"x": [1, 2]}),
        None,  # a tombstone
        b"\xff\xfe not UTF-8",
        b"[" * 100_000 + b"]" * 100_000,
    ]
    judged = [_judged(f"j{i}", ended, 1e-300 if i % 4 == 0 else 0.5, i) for i in range(100)]
    good = [score_record(f"g{i}", ended, agent="fine", cost_usd=0.02, duration_s=3.0) for i in range(10)]
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5, "message.max.bytes": 16 * 1024 * 1024}
    )
    for value in (*hostile, *judged, *good):
        producer.produce(topic, value=value, key=b"k")  # one partition: the good ones after the bad ones
    assert producer.flush(20) == 0

    settings = load_settings(
        kafka={"bootstrap_servers": broker.bootstrap_servers},
        exporter={
            "scores_topic": topic,
            "group_id": f"g-{uuid.uuid4().hex[:8]}",
            "poll_timeout_ms": 200,
            **FAST_GROUP,
        },
    )
    service, stop, thread, port = run_service(settings)
    try:
        text = _body(port)
        assert thread.is_alive()
    finally:
        stop_service(service, stop, thread)
    values = _checked(text)
    assert [k for k, v in values.items() if not math.isfinite(v)] == []
    assert values[("agentwatch_scores_consumed_total", ())] == len(hostile) + len(judged) + len(good)
    assert values[("agentwatch_scores_rejected_total", (("reason", "invalid"),))] == 3
    assert values[("agentwatch_score_values_ignored_total", (("field", "cost_usd"),))] == 1
    assert values[("agentwatch_score_values_ignored_total", (("field", "duration_s"),))] == 1
    fine = (("agent", "fine"), ("task", "refund"), ("version", "v1"), ("window", "1h"))
    assert values[("agentwatch_window_scored", fine)] == 10
    judged_1h = (("agent", "judged"), ("task", "refund"), ("version", "v1"), ("window", "1h"))
    assert values[("agentwatch_window_scored", judged_1h)] == 100
    corrected = tuple(sorted((*judged_1h, ("estimate", "corrected"), ("stat", "mean"))))
    assert 0.0 <= values[("agentwatch_corrected_success_rate", corrected)] <= 1.0

    service2, stop2, thread2, port2 = run_service(settings)  # a restart replays the same records
    try:
        again = _body(port2)
    finally:
        stop_service(service2, stop2, thread2)
    assert _checked(again) == values
