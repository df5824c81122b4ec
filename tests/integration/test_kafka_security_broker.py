"""Against a real Tansu broker that requires SASL: refused credentials stop the services at start, naming the
setting, without the secret; the SDK logs one clear line and never raises into the agent."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from agentwatch.kafka.broker import EmbeddedBroker

pytestmark = pytest.mark.broker

SECRET = "Wr0ng-Pa55word-41"


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    log = tmp_path_factory.mktemp("tansu-sasl") / "tansu.log"
    with EmbeddedBroker(log_path=log, authentication=True) as b:
        yield b


def _env(broker: EmbeddedBroker, mechanism: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "AGENTWATCH_KAFKA__BOOTSTRAP_SERVERS": broker.bootstrap_servers,
            "AGENTWATCH_KAFKA__SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "AGENTWATCH_KAFKA__SASL_MECHANISM": mechanism,
            "AGENTWATCH_KAFKA__SASL_USERNAME": "alice",
            "AGENTWATCH_KAFKA__SASL_PASSWORD": SECRET,
            "AGENTWATCH_EXPORTER__METRICS_PORT": "0",
        }
    )
    return env


@pytest.mark.parametrize(
    ("command", "mechanism"),
    [("collector", "SCRAM-SHA-256"), ("collector", "SCRAM-SHA-512"), ("exporter", "SCRAM-SHA-512")],
)
def test_wrong_credentials_stop_the_service(
    sasl_broker: EmbeddedBroker, command: str, mechanism: str
) -> None:
    # exiting at all (the run's timeout would fail the test) is the point: a refused login is not retried forever
    proc = subprocess.run(
        [sys.executable, "-m", "agentwatch", command],
        env=_env(sasl_broker, mechanism),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "kafka.sasl_password" in proc.stderr and "alice" in proc.stderr, out
    assert SECRET not in out


def test_sdk_logs_one_clear_line_and_drops(
    sasl_broker: EmbeddedBroker, caplog: pytest.LogCaptureFixture
) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from agentwatch.sdk.kafka_exporter import KafkaSpanExporter

    security = {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_username": "alice",
        "sasl_password": SECRET,
    }
    with caplog.at_level(logging.INFO):
        exporter = KafkaSpanExporter(
            sasl_broker.bootstrap_servers, topic="t", security=security, retry_interval_s=0.2
        )
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("test")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "AGENTWATCH_KAFKA_SASL_PASSWORD" not in str(
            exporter.last_error
        ):
            with tracer.start_as_current_span("turn"):
                pass
            time.sleep(0.3)
        exporter.shutdown(timeout_millis=500)
    stats = exporter.stats()
    assert "AGENTWATCH_KAFKA_SASL_PASSWORD" in str(stats["last_error"])
    assert stats["sent_spans"] == 0 and stats["dropped_spans"] > 0
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR and r.name.startswith("agentwatch")]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert SECRET not in caplog.text
