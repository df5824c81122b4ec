"""The exporter service against a real Tansu broker: consume, serve /metrics, restart reproduces the values."""

from __future__ import annotations

import threading
import time
import urllib.request
import uuid
from fractions import Fraction

import pytest
from _score_factory import make_score
from agentwatch.exporters.service import ExporterService
from conftest import FAST_GROUP
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families
from scipy import stats as sps

from agentwatch.config import load_settings

pytestmark = pytest.mark.broker


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
        if s.name.startswith("agentwatch_")
    }


def run_service(settings) -> tuple[ExporterService, threading.Event, threading.Thread, int]:
    service = ExporterService(settings)
    port = service.start_http(port=0, host="127.0.0.1")
    stop = threading.Event()
    thread = threading.Thread(target=service.run, args=(stop,), daemon=True)
    thread.start()
    assert service.replayed.wait(30), "replay did not finish"
    return service, stop, thread, port


def stop_service(service: ExporterService, stop: threading.Event, thread: threading.Thread) -> None:
    stop.set()
    thread.join(15)
    assert not thread.is_alive()
    service.stop_http()


def test_consume_serve_and_restart_reproduces_values(broker, topic) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
    admin.close()
    now = time.time()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=5)
    key = b"bot|v1|refund"
    for i in range(30):
        producer.send(topic, key=key, value=make_score(f"c{i}", passed=i < 24, ended_at=now - 60,
                                                       cost_usd=0.01 * i).model_dump_json().encode())
    producer.send(topic, key=key, value=make_score("c3", passed=False, ended_at=now - 60).model_dump_json().encode())
    producer.send(topic, key=key, value=make_score("old", ended_at=now - 8 * 86400).model_dump_json().encode())
    producer.send(topic, key=key, value=b"{not json")
    producer.send(topic, key=b"other", value=make_score("o1", agent="other-bot", ended_at=now - 30)
                  .model_dump_json().encode())
    producer.flush()
    producer.close()

    settings = load_settings(
        kafka={"bootstrap_servers": broker.bootstrap_servers},
        exporter={"scores_topic": topic, "group_id": f"g-{uuid.uuid4().hex[:8]}", "poll_timeout_ms": 200,
                  **FAST_GROUP},
    )
    service, stop, thread, port = run_service(settings)
    try:
        before = scrape(port)
    finally:
        stop_service(service, stop, thread)

    series = (("agent", "bot"), ("task", "refund"), ("version", "v1"))

    def g(values: dict, name: str, *extra: tuple[str, str]) -> float:
        return values[(name, tuple(sorted(series + extra)))]

    exact = Fraction(25 * 26 * 27, 32 * 33 * 34)
    lo, hi = sps.beta.ppf([0.025, 0.975], 25, 7)
    for window in ("1h", "24h", "7d"):
        w = ("window", window)
        assert abs(g(before, "agentwatch_pass_pow_k", w, ("k", "3"), ("stat", "mean")) - float(exact)) < 1e-9
        assert abs(g(before, "agentwatch_pass_pow_k", w, ("k", "3"), ("stat", "lower")) - lo**3) < 1e-9
        assert abs(g(before, "agentwatch_pass_pow_k", w, ("k", "3"), ("stat", "upper")) - hi**3) < 1e-9
    assert before[("agentwatch_scores_rejected_total", (("reason", "duplicate"),))] == 1
    assert before[("agentwatch_scores_rejected_total", (("reason", "too_old"),))] == 1
    assert before[("agentwatch_scores_rejected_total", (("reason", "invalid"),))] == 1
    assert before[("agentwatch_scores_consumed_total", ())] == 34
    assert g(before, "agentwatch_window_scored", ("window", "1h")) == 30

    # A new instance in the same group rebuilds the same state by replaying the topic.
    service2, stop2, thread2, port2 = run_service(settings)
    try:
        after = scrape(port2)
    finally:
        stop_service(service2, stop2, thread2)
    assert after == before
