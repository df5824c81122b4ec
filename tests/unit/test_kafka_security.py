"""Kafka TLS/SASL settings: validation, secrets, client settings of both dialects, refusal messages."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from agentwatch.config import ConfigError, load_settings
from agentwatch.kafka.security import KafkaSecurity, service_settings

SECRET = "s3cr3t-Value-9"


def _kafka(**kw: object) -> dict[str, object]:
    return {"bootstrap_servers": "b:9093", **kw}


def test_sasl_without_username_names_the_key() -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(kafka=_kafka(security_protocol="SASL_SSL", sasl_password=SECRET))
    assert "kafka.sasl_username: required" in str(err.value)
    assert SECRET not in str(err.value)


@pytest.mark.parametrize(
    ("kw", "key"),
    [
        ({"security_protocol": "SSL", "ssl_ca_file": "/no/such/ca.pem"}, "kafka.ssl_ca_file"),
        ({"security_protocol": "SASL_SSL", "sasl_username": "u"}, "kafka.sasl_password"),
        ({"security_protocol": "PLAINTEXT", "sasl_username": "u"}, "kafka.sasl_username"),
        (
            {
                "security_protocol": "SASL_PLAINTEXT",
                "ssl_ca_file": __file__,
                "sasl_username": "u",
                "sasl_password": SECRET,
            },
            "kafka.ssl_ca_file",
        ),
        ({"security_protocol": "SSL", "ssl_cert_file": __file__}, "kafka.ssl_key_file"),
        ({"security_protocol": "TLS"}, "kafka.security_protocol"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI"}, "kafka.sasl_mechanism"),
    ],
)
def test_invalid_combinations(kw: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(kafka=_kafka(**kw))
    assert key in str(err.value)
    assert SECRET not in str(err.value)


def test_env_vars_and_secrets_hidden(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("AGENTWATCH_KAFKA__SECURITY_PROTOCOL", "sasl_ssl")
    monkeypatch.setenv("AGENTWATCH_KAFKA__SASL_MECHANISM", "scram-sha-512")
    monkeypatch.setenv("AGENTWATCH_KAFKA__SASL_USERNAME", "alice")
    monkeypatch.setenv("AGENTWATCH_KAFKA__SASL_PASSWORD", SECRET)
    monkeypatch.setenv("AGENTWATCH_KAFKA__SSL_CA_FILE", __file__)
    settings = load_settings()
    k = settings.kafka
    assert (k.security_protocol, k.sasl_mechanism, k.sasl_username) == ("SASL_SSL", "SCRAM-SHA-512", "alice")
    for text in (
        repr(settings),
        str(settings),
        repr(k),
        repr(KafkaSecurity.from_config(k)),
        repr(KafkaSecurity.from_config(k).kafka_python()),
        str(settings.model_dump()),
    ):
        assert SECRET not in text
    sec = KafkaSecurity.from_config(k)
    assert sec.librdkafka() == {
        "security.protocol": "sasl_ssl",
        "ssl.ca.location": __file__,
        "ssl.endpoint.identification.algorithm": "https",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": SECRET,
    }
    kw = sec.kafka_python()
    assert kw["sasl_plain_password"] == SECRET and kw["sasl_mechanism"] == "SCRAM-SHA-512"
    assert kw["ssl_cafile"] == __file__ and kw["ssl_check_hostname"] is True
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("kafka.test").debug(
            "configuration: %r", kw
        )  # what kafka-python's admin client logs
    assert SECRET not in caplog.text


def test_mutual_tls_settings(tmp_path) -> None:
    files = {n: tmp_path / f"{n}.pem" for n in ("ca", "cert", "key")}
    for f in files.values():
        f.write_text("x")
    settings = load_settings(
        kafka=_kafka(
            security_protocol="SSL",
            ssl_ca_file=str(files["ca"]),
            ssl_cert_file=str(files["cert"]),
            ssl_key_file=str(files["key"]),
            ssl_key_password=SECRET,
            ssl_check_hostname=False,
        )
    )
    assert SECRET not in repr(settings.kafka)
    sec = KafkaSecurity.from_config(settings.kafka)
    conf = sec.librdkafka()
    assert conf["ssl.certificate.location"] == str(files["cert"]) and conf["ssl.key.location"] == str(
        files["key"]
    )
    assert conf["ssl.key.password"] == SECRET and conf["ssl.endpoint.identification.algorithm"] == "none"
    kw = sec.kafka_python()
    assert kw["ssl_certfile"] == str(files["cert"]) and kw["ssl_keyfile"] == str(files["key"])
    assert kw["ssl_password"] == SECRET and kw["ssl_check_hostname"] is False and "sasl_mechanism" not in kw


def test_plaintext_is_the_default() -> None:
    sec = KafkaSecurity.from_config(load_settings().kafka)
    assert sec.librdkafka() == {"security.protocol": "plaintext"}
    assert sec.kafka_python() == {"security_protocol": "PLAINTEXT"}


def test_one_place_builds_each_clients_connection_settings() -> None:
    kafka = load_settings(
        kafka=_kafka(
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="scram-sha-256",
            sasl_username="bob",
            sasl_password=SECRET,
            client_id="aw",
        )
    ).kafka
    assert service_settings(kafka, "exporter") == {
        "bootstrap.servers": "b:9093",
        "client.id": "aw-exporter",
        "security.protocol": "sasl_plaintext",
        "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": "bob",
        "sasl.password": SECRET,
    }
    sec = KafkaSecurity.from_config(kafka)
    assert (
        sec.client_settings("librdkafka", ["b1:9093", "b2:9093"], "x")["bootstrap.servers"]
        == "b1:9093,b2:9093"
    )
    kw = sec.client_settings("kafka-python", ["b1:9093", "b2:9093"], "agentwatch-sdk")
    assert kw == {
        "bootstrap_servers": ["b1:9093", "b2:9093"],
        "client_id": "agentwatch-sdk",
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "bob",
        "sasl_plain_password": SECRET,
    }
    assert SECRET not in repr(kw)
    with pytest.raises(ValueError, match="unknown Kafka client 'aiokafka'"):
        sec.client_settings("aiokafka", "b:9093", "x")


def test_sdk_env_names() -> None:
    env = {
        "AGENTWATCH_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "AGENTWATCH_KAFKA_SASL_USERNAME": "bob",
        "AGENTWATCH_KAFKA__SASL_PASSWORD": SECRET,
        "AGENTWATCH_KAFKA_SSL_CHECK_HOSTNAME": "false",
    }
    sec = KafkaSecurity.from_env(env, sasl_mechanism="SCRAM-SHA-256")
    assert (sec.protocol, sec.mechanism, sec.sasl_username, sec.sasl_password) == (
        "SASL_SSL",
        "SCRAM-SHA-256",
        "bob",
        SECRET,
    )
    assert sec.ssl_check_hostname is False and sec.problems() == []
    assert SECRET not in repr(sec)


@pytest.mark.parametrize(
    ("error", "setting"),
    [
        (
            "SASL authentication error: Authentication failed: Invalid username or password",
            "kafka.sasl_password",
        ),
        (
            "SSL handshake failed: certificate verify failed: unable to get local issuer certificate",
            "kafka.ssl_ca_file",
        ),
        ("SSL handshake failed: Hostname mismatch", "kafka.ssl_check_hostname"),
        ("SSL alert: certificate required", "kafka.ssl_cert_file"),
    ],
)
def test_explain(error: str, setting: str) -> None:
    sec = KafkaSecurity(security_protocol="SASL_SSL", sasl_username="u", sasl_password=SECRET)
    found = sec.explain(f"{error} {SECRET}", "b:9093")
    assert found is not None and found.setting == setting
    assert setting in str(found) and SECRET not in str(found)


@pytest.mark.parametrize(
    ("client_cert", "error", "words"),
    [
        (False, "tlsv13 alert certificate required: SSL alert number 116", "requires a client certificate"),
        (True, "tlsv13 alert certificate required: SSL alert number 116", "refused the client certificate"),
        (True, "tlsv1 alert unknown ca: SSL alert number 48", "refused the client certificate"),
    ],
)
def test_explain_client_certificate(client_cert: bool, error: str, words: str) -> None:
    files: dict[str, Any] = {"ssl_cert_file": __file__, "ssl_key_file": __file__} if client_cert else {}
    found = KafkaSecurity(security_protocol="SSL", **files).explain(error, "b:9093")
    assert found is not None and found.setting == "kafka.ssl_cert_file"
    assert words in str(found) and "kafka.ssl_key_file" in str(found)


def test_diagnose_connection_leaves_plaintext_and_precise_errors_alone() -> None:
    """No TLS connection of our own unless the client's words are vague (b:9093 does not resolve here)."""
    precise = "certificate verify failed: IP address mismatch, certificate is not valid for '10.0.0.1'"
    found = KafkaSecurity(security_protocol="SSL").diagnose_connection([precise], "b:9093")
    assert found is not None and found.setting == "kafka.ssl_check_hostname"
    assert KafkaSecurity().diagnose_connection(["Connection lost"], "b:9093") is None


def test_lost_sasl_ssl_connection_names_the_password_not_tls() -> None:
    """kafka-python names its transport (`KafkaSSLTransport`) in every message: that is no TLS failure. A SASL_SSL
    connection lost after the broker answered ApiVersions (a broker closing right after refusing the login) is."""
    messages = [
        "<KafkaSSLTransport [none]>: socket disconnected",
        "<KafkaSSLTransport [none]>: Abort (KafkaConnectionError: socket disconnected)",
        (
            "<KafkaConnection node_id=bootstrap-0 broker_version=(3, 9) (disconnected)>: Connection lost: "
            "KafkaConnectionError: socket disconnected"
        ),
    ]
    sec = KafkaSecurity(
        security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-256", sasl_username="u", sasl_password=SECRET
    )
    found = sec.diagnose(messages, "b:9093")
    assert found is not None and found.setting == "kafka.sasl_password", found
    assert sec.explain("<KafkaSSLTransport [none]>: socket disconnected", "b:9093") is None
    handshake = sec.explain("<KafkaSSLTransport [none]>: SSL handshake failed", "b:9093")
    assert handshake is not None and handshake.setting == "kafka.security_protocol"


def test_the_services_load_one_kafka_client() -> None:
    """Collector, exporter, `serve` and the demo's service side run on confluent-kafka: none loads kafka-python."""
    import subprocess
    import sys

    services = (
        "agentwatch.pipeline",
        "agentwatch.cli.exporter_cmd",
        "agentwatch.cli.collector_cmd",
        "agentwatch.cli.demo_cmd",
        "agentwatch.kafka.topics",
        "agentwatch.kafka.admin",
    )
    clients = subprocess.check_output(
        [
            sys.executable,
            "-c",
            (
                f"import sys, {', '.join(services)}; "
                "print(*sorted({m.split('.')[0] for m in sys.modules} & {'kafka', 'confluent_kafka'}))"
            ),
        ],
        text=True,
        timeout=60,
    )
    assert clients.split() == ["confluent_kafka"], clients
