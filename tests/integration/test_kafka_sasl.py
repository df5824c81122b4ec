"""Successful SASL logins end to end: every Kafka client of agentwatch through a SASL-terminating proxy in front of
Tansu.

Tansu 0.6 offers SCRAM but no user can be created on a broker that requires it, so `sasl_proxy.SASLProxy` plays
the broker's part of the SASL exchange (SaslHandshake, SaslAuthenticate: SCRAM-SHA-256, SCRAM-SHA-512, PLAIN) for
a user of the test and relays everything else to Tansu's plaintext port; Tansu advertises the proxy's port, so
clients never reach the plaintext listener. The clients' SASL implementations (librdkafka in the collector and
the exporter, kafka-python in the SDK) are the real ones; the server side is the test's. The chain
SDK → collector → scores → exporter → /metrics runs with SASL_PLAINTEXT and each mechanism, then with SASL_SSL
(TLS in front of the SASL layer); a wrong password stops the collector and the exporter, naming the setting.
"""

from __future__ import annotations

import os
import subprocess
import sys
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
from tests.support.sasl_proxy import (
    AUTHENTICATE_VERSIONS,
    HANDSHAKE_VERSIONS,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    SASLProxy,
)
from tests.support.tls_proxy import Issued

pytestmark = pytest.mark.broker

USER, PASSWORD = "agentwatch", "S3cret-Scram-Pa55"
WRONG = "Wr0ng-Pa55word-77"


@contextmanager
def sasl_broker(log_dir: Path, tls: Issued | None = None) -> Iterator[SASLProxy]:
    """A Tansu broker reachable only through a SASL proxy (its metadata advertises the proxy's port)."""
    proxy_port = free_port()
    with (
        EmbeddedBroker(log_path=log_dir / "tansu.log", advertised_port=proxy_port) as broker,
        SASLProxy(proxy_port, ("127.0.0.1", broker.port), {USER: PASSWORD}, tls=tls) as proxy,
    ):
        yield proxy


@pytest.fixture(scope="module")
def sasl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SASLProxy]:
    with sasl_broker(tmp_path_factory.mktemp("tansu-sasl-proxy")) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def sasl_ssl(pki: PKI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SASLProxy]:  # noqa: F811
    with sasl_broker(tmp_path_factory.mktemp("tansu-sasl-ssl-proxy"), tls=pki.server) as proxy:
        yield proxy


def _security(protocol: str, mechanism: str, pki: PKI, password: str = PASSWORD) -> dict[str, Any]:  # noqa: F811
    """The `kafka` section's SASL (and, for SASL_SSL, TLS) keys."""
    keys: dict[str, Any] = {
        "security_protocol": protocol,
        "sasl_mechanism": mechanism,
        "sasl_username": USER,
        "sasl_password": password,
    }
    if protocol == "SASL_SSL":
        keys["ssl_ca_file"] = str(pki.ca.cert_file)
    return keys


# --------------------------------------------------------------------------------------------- end to end


@pytest.mark.parametrize(
    ("protocol", "mechanism"),
    [
        ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
        ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
        ("SASL_PLAINTEXT", "PLAIN"),
        ("SASL_SSL", "SCRAM-SHA-256"),
    ],
)
def test_sdk_collector_exporter_log_in(
    request: pytest.FixtureRequest,
    pki: PKI,  # noqa: F811
    tmp_path: Path,
    protocol: str,
    mechanism: str,
) -> None:
    """SDK agent → SASL proxy → Tansu → collector → scores → exporter → /metrics, every client logged in.

    The SDK is configured by AGENTWATCH_KAFKA_* variables, the collector and the exporter by their `kafka` section.
    """
    proxy: SASLProxy = request.getfixturevalue("sasl_ssl" if protocol == "SASL_SSL" else "sasl")
    security = _security(protocol, mechanism, pki)
    bs = proxy.bootstrap_servers
    topic, cid = f"t-{uuid.uuid4().hex[:12]}", unique("sasl")
    logins_before, failures_before, refused_before = (
        len(proxy.logins),
        len(proxy.failures),
        len(proxy.refused),
    )

    # A logged-in client's metadata sends it to the proxy, never to the plaintext port.
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
    env.update({f"AGENTWATCH_KAFKA_{k.upper()}": v for k, v in security.items()})
    run = subprocess.run(
        [sys.executable, str(script), bs, topic, cid], env=env, capture_output=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr.decode()[-2000:]

    score_and_export(bs, topic, cid, security, "sasl")

    # Every connection logged in with this mechanism, and no request reached Tansu before a login.
    logins = proxy.logins[logins_before:]
    assert logins and {(o.mechanism, o.user) for o in logins} == {(mechanism, USER)}, logins
    assert proxy.failures[failures_before:] == [] and proxy.refused[refused_before:] == [], (
        proxy.failures,
        proxy.refused,
    )


def test_clients_use_the_versions_the_proxy_implements(sasl: SASLProxy, pki: PKI) -> None:  # noqa: F811
    """librdkafka and kafka-python negotiate SaslHandshake and SaslAuthenticate versions from the ApiVersions
    response the proxy rewrote (Tansu's own says SaslHandshake 0-1; v0 is not implemented, so not advertised)."""
    from confluent_kafka.admin import AdminClient
    from kafka.admin import KafkaAdminClient

    security = KafkaSecurity(**_security("SASL_PLAINTEXT", "SCRAM-SHA-512", pki))
    start = len(proxy_requests := sasl.requests)
    AdminClient(
        {
            "bootstrap.servers": sasl.bootstrap_servers,
            "client.id": "probe-librdkafka",
            **security.librdkafka(),
        }
    ).list_topics(timeout=10)
    admin = KafkaAdminClient(
        bootstrap_servers=sasl.bootstrap_servers, client_id="probe-kafka-python", **security.kafka_python()
    )
    admin.list_topics()
    admin.close()
    sent: dict[str, set[tuple[int, int]]] = {}
    for key, version, client_id in proxy_requests[start:]:
        if key in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
            sent.setdefault(client_id or "", set()).add((key, version))
    for versions in sent.values():
        for key, version in versions:
            low, high = HANDSHAKE_VERSIONS if key == SASL_HANDSHAKE else AUTHENTICATE_VERSIONS
            assert low <= version <= high, sent
    # What the clients of this environment send (confluent-kafka 2.x, kafka-python 3.x).
    assert sent["probe-librdkafka"] == {(SASL_HANDSHAKE, 1), (SASL_AUTHENTICATE, 1)}, sent
    assert sent["probe-kafka-python"] == {(SASL_HANDSHAKE, 1), (SASL_AUTHENTICATE, 2)}, sent


# --------------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("command", "protocol", "mechanism", "close_delay_s"),
    [
        ("collector", "SASL_PLAINTEXT", "SCRAM-SHA-256", 0.1),
        ("exporter", "SASL_PLAINTEXT", "SCRAM-SHA-256", 0.1),
        ("collector", "SASL_SSL", "SCRAM-SHA-512", 0.1),
        ("exporter", "SASL_SSL", "SCRAM-SHA-512", 0.1),
        ("exporter", "SASL_PLAINTEXT", "PLAIN", 0.1),
        # A broker that closes at once after refusing (connection.failed.authentication.delay.ms=0): kafka-python
        # then reports only a lost connection, which must still name the password, not TLS.
        ("collector", "SASL_SSL", "SCRAM-SHA-256", 0.0),
        ("exporter", "SASL_SSL", "SCRAM-SHA-256", 0.0),
        ("exporter", "SASL_PLAINTEXT", "SCRAM-SHA-256", 0.0),
    ],
)
def test_wrong_password_stops_the_service(
    request: pytest.FixtureRequest,
    pki: PKI,  # noqa: F811
    command: str,
    protocol: str,
    mechanism: str,
    close_delay_s: float,
) -> None:
    proxy: SASLProxy = request.getfixturevalue("sasl_ssl" if protocol == "SASL_SSL" else "sasl")
    failures_before = len(proxy.failures)
    proxy.failed_login_close_delay_s = close_delay_s
    try:
        code, err = run_service_command(
            command, proxy.bootstrap_servers, _security(protocol, mechanism, pki, WRONG)
        )
    finally:
        proxy.failed_login_close_delay_s = 0.1
    assert code == 1, err[-3000:]
    assert "kafka.sasl_password" in err and repr(USER) in err, err[-3000:]
    assert WRONG not in err and PASSWORD not in err, err[-3000:]
    failures = proxy.failures[failures_before:]
    assert failures and all((f.mechanism, f.user) == (mechanism, USER) for f in failures), failures


def test_requests_before_a_login_never_reach_the_broker(sasl: SASLProxy) -> None:
    """A client that skips SASL gets its ApiVersions answered, then the connection closes at its first other
    request (here Metadata v0), as on a broker that requires SASL."""
    import socket
    import struct

    refused_before = len(sasl.refused)
    with socket.create_connection(("127.0.0.1", sasl.port), timeout=10) as sock:
        sock.sendall(struct.pack(">ihhih", 10, 18, 0, 1, -1))  # ApiVersions v0: forwarded to Tansu
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        assert struct.unpack(">ih", sock.recv(size, socket.MSG_WAITALL)[:6]) == (1, 0)
        sock.sendall(struct.pack(">ihhihi", 14, 3, 0, 2, -1, 0))  # Metadata v0, all topics
        assert sock.recv(4) == b""
    assert sasl.refused[refused_before:] == ["api key 3 before authentication"]
