"""The exporter service against a real Tansu broker: consume, serve /metrics, restart reproduces the values."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from fractions import Fraction

import pytest
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Producer, TopicPartition
from scipy import stats as sps

from agentwatch.config import Settings, load_settings
from agentwatch.exporters.service import ExporterService, replay_start
from agentwatch.kafka.topics import ensure_topics
from tests.conftest import FAST_GROUP
from tests.support.exporter_service import run_service, stop_service
from tests.support.metrics_reference import scrape
from tests.support.scores import make_score

pytestmark = pytest.mark.broker


def produce_scores(
    bootstrap: str, topic: str, records: Sequence[tuple[bytes | None, bytes, int | None]]
) -> None:
    """Write (key, value, partition or None) records as the collector writes scores (confluent-kafka)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "partitioner": "murmur2_random"})
    for key, value, partition in records:
        if partition is None:
            producer.produce(topic, value=value, key=key)
        else:
            producer.produce(topic, value=value, key=key, partition=partition)
    assert producer.flush(10) == 0


def _settings(bootstrap: str, topic: str) -> Settings:
    """An exporter reading `topic` as a group of its own, polling often, joining fast."""
    return load_settings(
        kafka={"bootstrap_servers": bootstrap},
        exporter={
            "scores_topic": topic,
            "group_id": f"g-{uuid.uuid4().hex[:8]}",
            "poll_timeout_ms": 200,
            **FAST_GROUP,
        },
    )


def test_consume_serve_and_restart_reproduces_values(broker, topic) -> None:
    ensure_topics(broker.bootstrap_servers, [topic], partitions=2)
    now = time.time()
    key = b"bot|v1|refund"
    records = [
        (
            key,
            make_score(f"c{i}", passed=i < 24, ended_at=now - 60, cost_usd=0.01 * i)
            .model_dump_json()
            .encode(),
            None,
        )
        for i in range(30)
    ]
    records += [
        (key, make_score("c3", passed=False, ended_at=now - 60).model_dump_json().encode(), None),
        (key, make_score("old", ended_at=now - 8 * 86400).model_dump_json().encode(), None),
        (key, b"{not json", None),
        (b"other", make_score("o1", agent="other-bot", ended_at=now - 30).model_dump_json().encode(), None),
    ]
    produce_scores(broker.bootstrap_servers, topic, records)

    settings = _settings(broker.bootstrap_servers, topic)
    service, stop, thread, port = run_service(settings)
    try:
        before = scrape(port)
    finally:
        stop_service(service, stop, thread)

    series = (("agent", "bot"), ("task", "refund"), ("version", "v1"))

    def g(values: dict[tuple[str, tuple], float], name: str, *extra: tuple[str, str]) -> float:
        return values[(name, tuple(sorted(series + extra)))]

    exact = Fraction(25 * 26 * 27, 32 * 33 * 34)
    lo, hi = sps.beta.ppf(0.025, 25, 7), sps.beta.ppf(0.975, 25, 7)
    k3 = (("k", "3"), ("method", "exchangeable"))  # no repeated attempts: p^3 of the pooled posterior
    for window in ("1h", "24h", "7d"):
        w = ("window", window)
        assert abs(g(before, "agentwatch_pass_pow_k", w, *k3, ("stat", "mean")) - float(exact)) < 1e-9
        assert abs(g(before, "agentwatch_pass_pow_k", w, *k3, ("stat", "lower")) - lo**3) < 1e-9
        assert abs(g(before, "agentwatch_pass_pow_k", w, *k3, ("stat", "upper")) - hi**3) < 1e-9
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


def _wait_for(port: int, name: str, proc, timeout: float = 40.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
        try:
            values = scrape(port)
        except OSError:
            values = {}
        if any(k[0] == name for k in values):
            return values
        time.sleep(0.3)
    raise AssertionError(f"{name} never appeared on :{port}")


def _stop(proc) -> None:
    import signal

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0, proc.stderr.read().decode()[-3000:]


def test_exporter_command_restart_as_new_process(broker, topic, tmp_path) -> None:
    import subprocess
    import sys

    import yaml

    from agentwatch.kafka.broker import free_port

    now = time.time()
    produce_scores(
        broker.bootstrap_servers,
        topic,
        [
            (b"s", make_score(f"p{i}", passed=i < 24, ended_at=now - 60).model_dump_json().encode(), None)
            for i in range(30)
        ],
    )
    cfg = tmp_path / "agentwatch.yaml"
    cfg.write_text(yaml.safe_dump({"exporter": {"group_id": f"g-{uuid.uuid4().hex[:8]}", **FAST_GROUP}}))
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "agentwatch",
        "exporter",
        "--bootstrap-servers",
        broker.bootstrap_servers,
        "--scores-topic",
        topic,
        "--metrics-port",
        str(port),
        "--config",
        str(cfg),
    ]
    runs = []
    for _ in range(2):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            values = _wait_for(port, "agentwatch_window_scored", proc)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and (
                values[("agentwatch_scores_consumed_total", ())] < 30
                or values.get(("agentwatch_exporter_ready", ())) != 1  # the replay done: the state is whole
            ):
                time.sleep(0.3)
                values = scrape(port)
        finally:
            _stop(proc)
        runs.append(values)
    labels = (
        ("agent", "bot"),
        ("k", "3"),
        ("method", "exchangeable"),
        ("stat", "mean"),
        ("task", "refund"),
        ("version", "v1"),
        ("window", "1h"),
    )
    key = ("agentwatch_pass_pow_k", labels)
    assert abs(runs[0][key] - 25 * 26 * 27 / (32 * 33 * 34)) < 1e-9
    assert runs[0] == runs[1]


def test_serve_command_exposes_collector_and_estimator_metrics(broker, tmp_path) -> None:
    import subprocess
    import sys

    import yaml

    from agentwatch.kafka.broker import free_port

    scores, spans = f"scores-{uuid.uuid4().hex[:8]}", f"spans-{uuid.uuid4().hex[:8]}"
    produce_scores(
        broker.bootstrap_servers,
        scores,
        [(b"s", make_score("x1", ended_at=time.time() - 5).model_dump_json().encode(), None)],
    )
    produce_scores(
        broker.bootstrap_servers, spans, [(None, b"\x00garbage", None)]
    )  # an agent's bad span message
    cfg = tmp_path / "agentwatch.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "exporter": {"group_id": f"e-{uuid.uuid4().hex[:8]}", **FAST_GROUP},
                "collector": {
                    "group_id": f"c-{uuid.uuid4().hex[:8]}",
                    "rekey_topic": f"rk-{uuid.uuid4().hex[:8]}",
                    "dead_letter_topic": f"dl-{uuid.uuid4().hex[:8]}",
                    **FAST_GROUP,
                },
            }
        )
    )
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentwatch",
            "serve",
            "--bootstrap-servers",
            broker.bootstrap_servers,
            "--input-topic",
            spans,
            "--scores-topic",
            scores,
            "--metrics-port",
            str(port),
            "--config",
            str(cfg),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        values = _wait_for(port, "agentwatch_window_scored", proc)
        assert ("agentwatch_spans_consumed_total", ()) in values  # pipeline health on the same endpoint
        deadline = time.monotonic() + 20
        while not any(k[0] == "agentwatch_messages_rejected_total" and v >= 1 for k, v in values.items()):
            assert time.monotonic() < deadline, "collector never dead-lettered the garbage span message"
            time.sleep(0.3)
            values = scrape(port)
    finally:
        _stop(proc)


def test_two_instances_split_the_series_by_partition(broker, topic) -> None:
    ensure_topics(broker.bootstrap_servers, [topic], partitions=2)
    now = time.time()
    produce_scores(
        broker.bootstrap_servers,
        topic,
        [
            (
                agent.encode(),
                make_score(f"{agent}{i}", agent=agent, ended_at=now - 10).model_dump_json().encode(),
                p,
            )
            for p, agent in enumerate(("alpha", "beta"))
            for i in range(5)
        ],
    )
    settings = _settings(broker.bootstrap_servers, topic)
    first = run_service(settings)
    second = ExporterService(settings)
    stop2 = threading.Event()
    thread2 = threading.Thread(target=second.run, args=(stop2,), daemon=True)
    thread2.start()
    try:
        deadline = time.monotonic() + 40
        while True:
            agents = [{e.agent for e in s.estimator.snapshot()} for s in (first[0], second)]
            if (
                second.replayed.is_set()
                and first[0].replayed.is_set()
                and sorted(map(sorted, agents)) == [["alpha"], ["beta"]]
            ):
                break
            assert time.monotonic() < deadline, agents
            time.sleep(0.3)
    finally:
        stop2.set()
        thread2.join(15)
        stop_service(*first[:3])


def test_replay_starts_where_offsets_for_times_says() -> None:
    """An offset found is the start; -1 (no score that recent) is the end; anything else replays it all."""
    assert replay_start(TopicPartition("t", 0, 42)) == 42
    assert replay_start(TopicPartition("t", 0, 0)) == 0
    assert replay_start(TopicPartition("t", 0, -1)) == OFFSET_END
    assert replay_start(TopicPartition("t", 0, -1001)) == OFFSET_BEGINNING


def test_an_exporter_started_before_its_scores_topic_exists_reads_what_comes_later(broker, topic) -> None:
    """The exporter creates its scores topic before subscribing: a consumer subscribed to a topic that does not
    exist yet finds it only at the next metadata refresh (minutes), and in one process (`Pipeline`, the demo)
    the exporter's thread may subscribe before the collector's has created the topic."""
    settings = _settings(broker.bootstrap_servers, topic)
    service, stop, thread, _ = run_service(settings)
    try:
        now = time.time()
        scores = [make_score(f"late-{i}", ended_at=now - 5).model_dump_json().encode() for i in range(5)]
        produce_scores(broker.bootstrap_servers, topic, [(b"bot|v1|refund", s, None) for s in scores])
        deadline = time.monotonic() + 20
        counted = 0
        while time.monotonic() < deadline and counted < 5:
            time.sleep(0.2)
            counted = max((e.conversations for e in service.estimator.snapshot() if e.task != "*"), default=0)
        assert counted == 5, f"{counted} of 5 scores counted within 20 s"
    finally:
        stop_service(service, stop, thread)
