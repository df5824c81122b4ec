"""TLS and SASL end to end: the test PKI, an SDK agent with TLS settings, and running the services over it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from agentwatch.config import load_settings
from agentwatch.kafka.security import KafkaSecurity
from tests.conftest import FAST_GROUP
from tests.support.agent_script import AGENT
from tests.support.collector_kafka import ServiceThread, TopicReader, collector_settings, unique
from tests.support.metrics_reference import scrape
from tests.support.tls_proxy import CertificateAuthority, Issued

# The SDK agent of test_collector_sdk.py, with TLS settings from configure(kafka_security=...) when given.
AGENT_TLS = "import json\n" + AGENT.replace(
    "capture_content=True)",
    "capture_content=True,\n          kafka_security=json.loads(sys.argv[4]) if len(sys.argv) > 4 else None)",
)


@dataclass(frozen=True)
class PKI:
    """The certificates of the TLS tests: one CA and what it issued, and a stranger's."""

    ca: CertificateAuthority
    other_ca: CertificateAuthority  # trusted by nobody
    server: Issued  # 127.0.0.1 and localhost
    wrong_name: Issued  # other.example only
    client: Issued  # signed by `ca`
    stranger: Issued  # a client certificate signed by `other_ca`


def score_and_export(bs: str, topic: str, cid: str, security: dict[str, Any], group: str) -> None:
    """Run the collector and the exporter on the secured broker: the agent's one conversation is scored and
    counted."""
    settings = collector_settings(bs, [topic], unique(group), kafka=security)
    scores_topic = settings.collector.scores_topic
    reader = TopicReader(bs, scores_topic, **KafkaSecurity(**security).librdkafka())
    try:
        with ServiceThread(settings) as svc:
            records = reader.wait(lambda r: len(r) >= 1, 60)
            assert svc.error is None, svc.error
    finally:
        reader.close()
    assert len(records) == 1, records
    assert records[0].key == b"support-bot|1.2.0|refunds"
    score = json.loads(records[0].value)
    assert (score["conversation_id"], score["turns"], score["passed"]) == (cid, 2, True), score

    series = (
        "agentwatch_window_scored",
        (("agent", "support-bot"), ("task", "refunds"), ("version", "1.2.0"), ("window", "1h")),
    )
    values = run_exporter_until(bs, security, scores_topic, series)
    assert values.get(series) == 1, {k: v for k, v in values.items() if "scored" in k[0]}
    assert values[("agentwatch_scores_consumed_total", ())] == 1


def run_service_command(command: str, bootstrap: str, kafka: dict[str, Any]) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "agentwatch", command],
        env=service_env(bootstrap, kafka),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return proc.returncode, proc.stderr


def run_exporter_until(bs: str, security: dict[str, Any], scores_topic: str, series: tuple) -> dict:
    """Run an ExporterService until /metrics shows `series` == 1 (or 60 s); returns the last scrape."""
    from agentwatch.exporters.service import ExporterService

    exporter_settings = load_settings(
        kafka={"bootstrap_servers": bs, **security},
        exporter={
            "scores_topic": scores_topic,
            "group_id": f"g-{uuid.uuid4().hex[:8]}",
            "poll_timeout_ms": 200,
            **FAST_GROUP,
        },
    )
    service = ExporterService(exporter_settings)
    port = service.start_http(port=0, host="127.0.0.1")
    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            service.run(stop)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    values: dict = {}
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not errors and values.get(series) != 1:
            values = scrape(port)
            time.sleep(0.3)
    finally:
        stop.set()
        thread.join(15)
        service.stop_http()
    assert not errors, errors
    return values


def service_env(bootstrap: str, kafka: dict[str, Any]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTWATCH_")}
    env["AGENTWATCH_KAFKA__BOOTSTRAP_SERVERS"] = bootstrap
    env.update(
        {
            f"AGENTWATCH_KAFKA__{k.upper()}": str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in kafka.items()
        }
    )
    env["AGENTWATCH_EXPORTER__METRICS_PORT"] = "0"
    env["AGENTWATCH_COLLECTOR__GROUP_ID"] = unique("refused")
    return env
