"""Why Kafka refused a connection, in terms of the setting to fix.

A client's error messages and log lines are read for what failed (`explain`, `diagnose`), made precise by one
TLS connection of our own when the client's words are vague (`tls_failure`, `diagnose_connection`); kafka-python
only logs its bootstrap failures, so its log lines are collected meanwhile (`kafka_python_messages`).
`KafkaSecurity` offers each of these as a method. Standard library only, like `kafka.security` (the SDK uses
both); a message quoted in an error passes through `KafkaSecurity.redact`, so it never holds a secret.
"""

from __future__ import annotations

import logging
import re
import socket
import ssl
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from agentwatch.kafka.security import KafkaSecurity


def setting_key(prefix: str, name: str) -> str:
    """A setting's name as the user wrote it: `kafka.sasl_password` or `AGENTWATCH_KAFKA_SASL_PASSWORD`."""
    return prefix + (name.upper() if prefix.endswith("_") else name)


class KafkaSecurityError(RuntimeError):
    """Kafka refused the connection for a reason a setting explains (credentials, certificate, protocol).

    `setting` is the key to fix (e.g. `kafka.sasl_password`); the message never holds a secret.
    """

    def __init__(self, message: str, setting: str) -> None:
        super().__init__(message)
        self.setting = setting


def explain(
    security: KafkaSecurity, error: str, where: str, prefix: str = "kafka."
) -> KafkaSecurityError | None:
    """A KafkaSecurityError naming the setting to fix, when `error` (a client's message) says what failed."""
    # kafka-python names its transport in its messages (`<KafkaSSLTransport [...]>: socket disconnected`):
    # that "SSL" says nothing about what failed, so it must not make a lost SASL_SSL connection a TLS failure
    found = _reason(security, _TRANSPORT.sub("", error).lower())
    if found is None:
        return None
    reason, setting = found
    names = {f.name: setting_key(prefix, f.name) for f in fields(security)}
    text = reason.format(
        where=where,
        mechanism=security.mechanism,
        user=repr(security.sasl_username),
        ssl_=setting_key(prefix, "ssl_"),
        **names,
    )
    return KafkaSecurityError(f"{text} ({security.redact(error.strip())})", names[setting])


def _reason(security: KafkaSecurity, low: str) -> tuple[str, str] | None:
    """(what failed, with `{setting}` placeholders; the setting to fix) for a lower-cased client message."""
    if "sasl" in low or "authentic" in low or "credential" in low:
        if not security.uses_sasl:
            return (
                (
                    "Kafka at {where} requires SASL authentication: set {security_protocol} to SASL_SSL or "
                    "SASL_PLAINTEXT with {sasl_username} and {sasl_password}"
                ),
                "security_protocol",
            )
        if "mechanism" in low and ("unsupported" in low or "not supported" in low or "shared" in low):
            return (
                "Kafka at {where} does not accept SASL mechanism {mechanism}: check {sasl_mechanism}",
                "sasl_mechanism",
            )
        return (
            (
                "Kafka at {where} refused SASL {mechanism} authentication of user {user}: check "
                "{sasl_username}, {sasl_password} and {sasl_mechanism}"
            ),
            "sasl_password",
        )
    for r in _TLS_REASONS:
        if any(w in low for w in r.words) and not (
            r.only_without_client_certificate and security.ssl_cert_file
        ):
            return r.text, r.setting
    return None


def tls_failure(security: KafkaSecurity, address: str, timeout_s: float = 3.0) -> str | None:
    """Why a TLS connection to `address` (`host:port`) with these settings fails, in the words of Python's
    `ssl` module (e.g. `certificate verify failed: IP address mismatch, ...`, `tlsv13 alert certificate
    required`), or None when it succeeds or the failure is not TLS's.

    librdkafka reports every failed verification as `certificate verify failed` (hostname or CA alike) and
    kafka-python reports a refused client certificate as a lost connection: this one connection tells which.
    It sends an ApiVersions request, since a TLS 1.3 server refuses a client certificate only after its
    handshake, by an alert the client reads with the first response.
    """
    if not security.uses_tls:
        return None
    host, _, port = address.strip().rpartition(":")
    host = host.strip("[]")
    try:
        context = ssl.create_default_context(cafile=security.ssl_ca_file or None)
        context.check_hostname = security.ssl_check_hostname
        if security.ssl_cert_file and security.ssl_key_file:
            context.load_cert_chain(
                security.ssl_cert_file, security.ssl_key_file, password=security.ssl_key_password
            )
        with (
            socket.create_connection((host, int(port)), timeout=timeout_s) as raw,
            context.wrap_socket(raw, server_hostname=host) as tls,
        ):
            tls.sendall(struct.pack(">ihhih", 10, 18, 0, 1, -1))  # ApiVersions v0, correlation id 1
            tls.recv(4)
    except ssl.SSLCertVerificationError as exc:
        return security.redact(f"certificate verify failed: {exc.verify_message}")
    except ssl.SSLError as exc:
        return security.redact(f"SSL error: {exc.args[1] if len(exc.args) > 1 else exc}")
    except (OSError, ValueError):
        return None
    return None


def diagnose(
    security: KafkaSecurity, messages: list[str], where: str, prefix: str = "kafka."
) -> KafkaSecurityError | None:
    """The first of `messages` (client errors and log lines, in order) that `explain` understands.

    A SASL connection lost after the broker answered ApiVersions (kafka-python logs `broker_version=(x, y)`)
    failed in the authentication exchange: Tansu, for one, answers a wrong SCRAM password with an in-band
    `e=` message that kafka-python only reports as a lost connection.
    """
    lost_after_versions = None
    for text in messages:
        if "exchanging credentials in the clear" in text.lower():
            continue  # kafka-python's warning on every SASL_PLAINTEXT connection, not a failure
        found = explain(security, text, where, prefix)
        if found is not None:
            return found
        if "Connection lost" in text and "broker_version=(" in text and lost_after_versions is None:
            lost_after_versions = text.rsplit("Connection lost:", 1)[-1].strip()
    if security.uses_sasl and lost_after_versions is not None:
        return explain(
            security, f"SASL authentication failed (connection lost: {lost_after_versions})", where, prefix
        )
    return None


def diagnose_connection(
    security: KafkaSecurity, messages: list[str], where: str, prefix: str = "kafka.", timeout_s: float = 3.0
) -> KafkaSecurityError | None:
    """`diagnose`, made precise by one TLS connection of our own (`tls_failure`) when the client's words are
    vague: librdkafka says `broker certificate could not be verified` for an unknown CA and a host name
    mismatch alike, kafka-python says a connection was lost when the broker refused its client certificate.
    """
    found = diagnose(security, messages, where, prefix)
    if not security.uses_tls:
        return found
    vague = (
        found is None
        or found.setting == setting_key(prefix, "security_protocol")
        or any("broker certificate could not be verified" in m for m in messages)
    )
    if not vague:
        return found
    address = next((m.group(1) for text in messages if (m := _TLS_ADDRESS.search(text))), where.split(",")[0])
    reason = tls_failure(security, address, timeout_s)
    precise = explain(security, reason, where, prefix) if reason else None
    return precise or found


class _TLSReason(NamedTuple):
    """A TLS failure: words of a client's message that tell it, what failed and the setting to fix."""

    words: tuple[str, ...]
    text: str
    setting: str
    only_without_client_certificate: bool = False


# The first match wins: a broker's alert is more specific than "ssl".
_TLS_REASONS = (
    _TLSReason(
        ("hostname", "ip address mismatch", "doesn't match"),
        "the certificate of Kafka at {where} does not match its host name: check the bootstrap address or "
        "{ssl_check_hostname}",
        "ssl_check_hostname",
    ),
    _TLSReason(
        (
            "certificate verify failed",
            "unable to get local issuer",
            "self-signed",
            "self signed",
            "untrusted",
        ),
        "the certificate of Kafka at {where} is not trusted: check {ssl_ca_file}",
        "ssl_ca_file",
    ),
    _TLSReason(
        ("certificate required",),
        "Kafka at {where} requires a client certificate (mutual TLS): set {ssl_cert_file} and {ssl_key_file}",
        "ssl_cert_file",
        only_without_client_certificate=True,
    ),
    _TLSReason(
        ("certificate required", "unknown ca", "bad certificate", "alert"),
        "Kafka at {where} refused the client certificate: check {ssl_cert_file} and {ssl_key_file}",
        "ssl_cert_file",
    ),
    _TLSReason(
        ("ssl", "tls", "handshake"),
        "TLS with Kafka at {where} failed: check {security_protocol} and the {ssl_}* settings",
        "security_protocol",
    ),
)
_TRANSPORT = re.compile(r"<Kafka\w*Transport\b[^>]*>")  # kafka-python's, e.g. <KafkaSSLTransport [none]>
_TLS_ADDRESS = re.compile(r"ssl://([^/\s]+:\d+)/")  # librdkafka's broker name, e.g. ssl://b1:9093/bootstrap


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append(record.getMessage())
        except Exception:  # noqa: BLE001, S110 - a bad log call must not break the probe
            pass


@contextmanager
def kafka_python_messages() -> Iterator[list[str]]:
    """Collect kafka-python's warnings and errors (instead of printing them) while the block runs.

    Used around a client's bootstrap, whose failures kafka-python only logs; `KafkaSecurity.diagnose` reads them.
    The `kafka` logger is quiet meanwhile, for every thread of the process.
    """
    collect = _Collect()
    kafka_log = logging.getLogger("kafka")
    level, propagate = kafka_log.level, kafka_log.propagate
    kafka_log.addHandler(collect)
    kafka_log.setLevel(logging.WARNING)
    kafka_log.propagate = False
    try:
        yield collect.messages
    finally:
        kafka_log.removeHandler(collect)
        kafka_log.setLevel(level)
        kafka_log.propagate = propagate
