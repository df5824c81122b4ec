"""TLS and mutual TLS end to end: every Kafka client of agentwatch through a TLS-terminating proxy in front of Tansu.

Tansu 0.6 cannot serve TLS itself, so `tls_proxy.TLSProxy` terminates TLS on 127.0.0.1 and forwards to Tansu's
plaintext port; Tansu advertises the proxy's port, so clients never reach the plaintext listener. The chain
SDK (kafka-python) → collector (confluent-kafka) → scores → exporter (confluent-kafka) → /metrics runs over TLS,
then over mutual TLS; refused certificates stop the services with an error naming the setting to fix.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agentwatch.kafka.broker import EmbeddedBroker, free_port
from agentwatch.kafka.security import KafkaSecurity
from tests.support.collector_kafka import unique
from tests.support.kafka_tls import AGENT_TLS, PKI, run_service_command, score_and_export
from tests.support.tls_proxy import CertificateAuthority, Issued, TLSProxy

pytestmark = pytest.mark.broker

assert AGENT_TLS.count("kafka_security=") == 1


@contextmanager
def tls_broker(log_dir: Path, server: Issued, client_ca: Path | None = None) -> Iterator[TLSProxy]:
    """A Tansu broker reachable only through a TLS proxy (its metadata advertises the proxy's port)."""
    proxy_port = free_port()
    with (
        EmbeddedBroker(log_path=log_dir / "tansu.log", advertised_port=proxy_port) as broker,
        TLSProxy(proxy_port, ("127.0.0.1", broker.port), server, client_ca=client_ca) as proxy,
    ):
        yield proxy


@pytest.fixture(scope="module")
def tls(pki: PKI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TLSProxy]:
    with tls_broker(tmp_path_factory.mktemp("tansu-tls"), pki.server) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def mtls(pki: PKI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TLSProxy]:
    with tls_broker(tmp_path_factory.mktemp("tansu-mtls"), pki.server, client_ca=pki.ca.cert_file) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def wrong_name(pki: PKI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TLSProxy]:
    with tls_broker(tmp_path_factory.mktemp("tansu-wrong-name"), pki.wrong_name) as proxy:
        yield proxy


def _ssl(
    pki: PKI, *, client: Issued | None = None, ca: CertificateAuthority | None = None, **more: Any
) -> dict[str, Any]:
    """The `kafka` section's TLS keys."""
    keys: dict[str, Any] = {"security_protocol": "SSL", "ssl_ca_file": str((ca or pki.ca).cert_file), **more}
    if client is not None:
        keys.update(ssl_cert_file=str(client.cert), ssl_key_file=str(client.key))
    return keys


@pytest.mark.parametrize("mode", ["tls-env", "mtls-configure"])
def test_sdk_collector_exporter_over_tls(
    request: pytest.FixtureRequest, pki: PKI, tmp_path: Path, mode: str
) -> None:
    """SDK agent → TLS proxy → Tansu → collector → scores → exporter → /metrics, every client over TLS.

    `tls-env`: server TLS, the SDK configured by AGENTWATCH_KAFKA_* variables; `mtls-configure`: the proxy
    requires a client certificate, the SDK configured by `configure(kafka_security=...)`.
    """
    mutual = mode.startswith("mtls")
    proxy: TLSProxy = request.getfixturevalue("mtls" if mutual else "tls")
    security = _ssl(pki, client=pki.client if mutual else None)
    bs = proxy.bootstrap_servers
    topic, cid = f"t-{uuid.uuid4().hex[:12]}", unique("tls")

    # The broker's metadata sends clients to the proxy, never to the plaintext port.
    from confluent_kafka.admin import AdminClient

    brokers = (
        AdminClient({"bootstrap.servers": bs, **KafkaSecurity(**security).librdkafka()})
        .list_topics(timeout=10)
        .brokers
    )
    # confluent-kafka declares BrokerMetadata.host as None (its C extension sets the name)
    assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", proxy.port)]  # type: ignore[comparison-overlap]

    script = tmp_path / "agent.py"
    script.write_text(AGENT_TLS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTWATCH_KAFKA")}
    args = [sys.executable, str(script), bs, topic, cid]
    if mutual:
        args.append(json.dumps(security))
    else:
        env.update({f"AGENTWATCH_KAFKA_{k.upper()}": v for k, v in security.items()})
    run = subprocess.run(args, env=env, capture_output=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr.decode()[-2000:]

    score_and_export(bs, topic, cid, security, "tls")
    assert proxy.connections > 0


# --------------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("command", ["collector", "exporter"])
def test_mutual_tls_without_a_client_certificate_is_refused(mtls: TLSProxy, pki: PKI, command: str) -> None:
    code, err = run_service_command(command, mtls.bootstrap_servers, _ssl(pki))
    assert code == 1, err[-3000:]
    assert "requires a client certificate" in err and "kafka.ssl_cert_file" in err, err[-3000:]


@pytest.mark.parametrize("command", ["collector", "exporter"])
def test_mutual_tls_with_a_certificate_of_another_ca_is_refused(
    mtls: TLSProxy, pki: PKI, command: str
) -> None:
    code, err = run_service_command(command, mtls.bootstrap_servers, _ssl(pki, client=pki.stranger))
    assert code == 1, err[-3000:]
    assert "refused the client certificate" in err and "kafka.ssl_cert_file" in err, err[-3000:]


@pytest.mark.parametrize("command", ["collector", "exporter", "serve"])
def test_untrusted_ca_is_refused(tls: TLSProxy, pki: PKI, command: str) -> None:
    code, err = run_service_command(command, tls.bootstrap_servers, _ssl(pki, ca=pki.other_ca))
    assert code == 1, err[-3000:]
    assert "is not trusted" in err and "kafka.ssl_ca_file" in err, err[-3000:]


@pytest.mark.parametrize("command", ["collector", "exporter"])
def test_hostname_mismatch_is_refused(wrong_name: TLSProxy, pki: PKI, command: str) -> None:
    code, err = run_service_command(command, wrong_name.bootstrap_servers, _ssl(pki, ssl_check_hostname=True))
    assert code == 1, err[-3000:]
    assert "does not match its host name" in err and "kafka.ssl_check_hostname" in err, err[-3000:]
    assert "kafka.ssl_ca_file" not in err, err[-3000:]


def test_hostname_check_off_connects(wrong_name: TLSProxy, pki: PKI) -> None:
    """`ssl_check_hostname: false`: the certificate must still come from the CA, but may name another host."""
    from kafka.admin import KafkaAdminClient

    from agentwatch.kafka.topics import ensure_topics

    security = KafkaSecurity(**_ssl(pki, ssl_check_hostname=False))
    bs, topic = wrong_name.bootstrap_servers, f"t-{uuid.uuid4().hex[:12]}"
    assert ensure_topics(bs, [topic], 1, security=security) == [
        topic
    ]  # confluent-kafka, the services' client
    admin = KafkaAdminClient(**security.client_settings("kafka-python", bs, "sdk-like"))  # the SDK's client
    try:
        assert topic in admin.list_topics()
    finally:
        admin.close()
    assert security.tls_failure(bs) is None
    failure = KafkaSecurity(**_ssl(pki)).tls_failure(bs)
    assert failure is not None and failure.startswith("certificate verify failed: IP address mismatch")


def test_sdk_without_a_client_certificate_logs_one_clear_line(
    mtls: TLSProxy, pki: PKI, caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK never raises into the agent: one error line naming AGENTWATCH_KAFKA_SSL_CERT_FILE, counted drops."""
    import logging

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from agentwatch.sdk.kafka_exporter import KafkaSpanExporter

    with caplog.at_level(logging.INFO):
        exporter = KafkaSpanExporter(
            mtls.bootstrap_servers, topic="t", security=_ssl(pki), retry_interval_s=0.2
        )
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("test")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "AGENTWATCH_KAFKA_SSL_CERT_FILE" not in str(
            exporter.last_error
        ):
            with tracer.start_as_current_span("turn"):
                pass
            time.sleep(0.3)
        exporter.shutdown(timeout_millis=500)
    stats = exporter.stats()
    assert "requires a client certificate" in str(stats["last_error"]), stats
    assert "AGENTWATCH_KAFKA_SSL_CERT_FILE" in str(stats["last_error"]), stats
    assert stats["sent_spans"] == 0 and stats["dropped_spans"] > 0
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR and r.name.startswith("agentwatch")]
    assert len(errors) == 1, [r.getMessage() for r in errors]
