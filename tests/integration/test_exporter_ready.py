"""A restarted exporter never fires a quality alert from a partial window: a real exporter on a real broker,
scraped every second by a real Prometheus that loads deploy/prometheus's rules unchanged.

The scores make a partial window dangerous: a canary version had a bad stretch three hours ago (its CUSUM went
far over its threshold) and has recovered since (the statistic is back to 0 over the whole window). A replay
reads the scores in order, so while it is halfway the exporter holds the bad stretch without the recovery and
its statistic is over the threshold again. The replay is slowed (each record's fold waits 15 ms, as a large
scores topic would take) so that Prometheus scrapes it several times meanwhile; the test checks that the raw
condition did hold while `agentwatch_exporter_ready` was 0, and that no quality alert was ever pending.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from kafka import KafkaProducer

from agentwatch import wire
from agentwatch.config import load_settings
from agentwatch.exporters.service import ExporterService
from agentwatch.kafka.broker import free_port
from tests.support.collector_kafka import create_topic, unique
from tests.support.exporter_service import run_service, stop_service
from tests.support.quality_alerts import QUALITY_ALERTS
from tests.support.scores import make_score

pytestmark = [pytest.mark.broker, pytest.mark.prometheus]

PROM_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
QUALITY = "|".join(QUALITY_ALERTS)
RAW = "agentwatch_alert_statistic >= agentwatch_alert_threshold"


class SlowExporter(ExporterService):
    """The exporter with a fold that takes 15 ms a record: a replay Prometheus can watch."""

    def feed(self, value: bytes | None, where: str = "") -> bool:
        time.sleep(0.015)
        return super().feed(value, where)


def _scores(now: float) -> list[bytes]:
    rng = random.Random(3)
    graded: dict[str, Any] = {"graded_by": ["expectations"]}
    out = [  # the baseline: 95% pass, 5 to 3 hours ago
        make_score(f"b{i}", rng.random() < 0.95, version="1.0", ended_at=now - 5 * 3600 + i * 18, **graded)
        for i in range(400)
    ]
    out += [  # the canary's bad stretch, 3 hours ago
        make_score(f"x{i}", rng.random() < 0.3, version="2.0", ended_at=now - 3 * 3600 + i * 30, **graded)
        for i in range(60)
    ]
    out += [  # and its recovery since
        make_score(f"y{i}", True, version="2.0", ended_at=now - 2.5 * 3600 + i * 9, **graded)
        for i in range(900)
    ]
    return [s.model_dump_json().encode() for s in out]


def _query(base: str, expr: str) -> list[dict]:
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
    with urllib.request.urlopen(url, timeout=10) as resp:
        body = json.load(resp)
    assert body["status"] == "success", body
    result: list[dict] = body["data"]["result"]
    return result


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except OSError:  # Prometheus not listening yet
            pass
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def test_a_restarted_exporter_never_fires_a_quality_alert_from_a_partial_window(broker, tmp_path) -> None:
    if not Path(PROMETHEUS).exists():
        pytest.fail("prometheus not found: install Debian's `prometheus` package")
    bs = broker.bootstrap_servers
    topic = unique("scores")
    create_topic(bs, topic, 1)  # the baseline first, then the canary in time order: a replay's order
    producer = KafkaProducer(bootstrap_servers=bs, linger_ms=20)
    for value in _scores(time.time()):
        score = json.loads(value)
        producer.send(topic, value=value, key=wire.score_key(score["agent"], score["version"], score["task"]))
    producer.flush()
    producer.close()
    settings = load_settings(
        kafka={"bootstrap_servers": bs},
        exporter={
            "scores_topic": topic,
            "group_id": unique("exporter"),
            "session_timeout_ms": 2000,
            "heartbeat_interval_ms": 500,
        },
        alerts={"min_reference": 50, "false_pages_per_month": 2},
    )
    service, stop, thread, port = run_service(settings)
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(PROM_DIR / "recording_rules.yml"), str(PROM_DIR / "alert_rules.yml")],
        "scrape_configs": [
            {"job_name": "agentwatch", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    web = f"http://127.0.0.1:{free_port()}"
    log = (tmp_path / "prometheus.log").open("wb")
    prometheus = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address={web.removeprefix('http://')}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    slow: SlowExporter | None = None
    try:
        _wait(
            lambda: _query(web, "agentwatch_exporter_ready == 1"),
            30,
            "the first exporter to be scraped ready",
        )
        assert _query(web, 'agentwatch_alert_statistic{version="2.0", rule="pass"}'), "no sequential test"
        assert _query(web, RAW) == [], "the whole window must not alarm"
        stop_service(service, stop, thread)
        slow = SlowExporter(settings)  # the restart, on the same port
        slow.start_http(port=port, host="127.0.0.1")
        slow_stop = threading.Event()
        slow_thread = threading.Thread(target=slow.run, args=(slow_stop,), daemon=True)
        slow_thread.start()
        partial_alarms, pending = 0, []
        deadline = time.monotonic() + 120
        while not slow.replayed.is_set() and time.monotonic() < deadline:
            partial_alarms += bool(
                _query(web, f"({RAW}) and on (job, instance) agentwatch_exporter_ready == 0")
            )
            pending += _query(web, f'ALERTS{{alertname=~"{QUALITY}"}}')
            time.sleep(0.25)
        assert slow.replayed.is_set(), "the slow replay did not finish"
        _wait(lambda: _query(web, "agentwatch_exporter_ready == 1"), 15, "the restarted exporter to be ready")
        for _ in range(12):  # a few more evaluations once ready
            pending += _query(web, f'ALERTS{{alertname=~"{QUALITY}"}}')
            time.sleep(0.25)
        final = _query(web, RAW)
        slow_stop.set()
        slow_thread.join(15)
    finally:
        if slow is not None:
            slow.stop_http()
        prometheus.terminate()
        try:
            prometheus.wait(10)
        except subprocess.TimeoutExpired:
            prometheus.kill()
        log.close()
    print(
        f"\nscrapes of the replay where a partial window's statistic was over its threshold: {partial_alarms}"
    )
    assert partial_alarms >= 2, "the partial window never alarmed: the test would prove nothing"
    assert pending == [], [p["metric"] for p in pending]
    assert final == []
