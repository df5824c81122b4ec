"""Kafka connection settings (servers, client id, TLS, SASL) turned into each client's options.

One place knows how `kafka.bootstrap_servers`, `kafka.security_protocol`, the `kafka.ssl_*` files and the
`kafka.sasl_*` credentials map to the option names of librdkafka (confluent-kafka, the services' client:
`service_settings`) and kafka-python (the SDK's: `KafkaSecurity.client_settings("kafka-python", ...)`), validates
their combinations, and explains a refused connection in terms of the setting to fix. It imports nothing but the
standard library, so the SDK (which must stay free of the services' configuration classes) builds its producer
settings here too, from keyword arguments or `AGENTWATCH_KAFKA_*` environment variables.

Secrets (`sasl_password`, `ssl_key_password`) are never part of a `repr`, a log line or an error message.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import ssl
import struct
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_FILES = ("ssl_ca_file", "ssl_cert_file", "ssl_key_file")
_SECRETS = ("sasl_password", "ssl_key_password")
REDACTED = "**********"


def _key(prefix: str, name: str) -> str:
    """A setting's name as the user wrote it: `kafka.sasl_password` or `AGENTWATCH_KAFKA_SASL_PASSWORD`."""
    return prefix + (name.upper() if prefix.endswith("_") else name)


class KafkaSecurityError(RuntimeError):
    """Kafka refused the connection for a reason a setting explains (credentials, certificate, protocol).

    `setting` is the key to fix (e.g. `kafka.sasl_password`); the message never holds a secret.
    """

    def __init__(self, message: str, setting: str) -> None:
        super().__init__(message)
        self.setting = setting


class _Secret(str):
    """A str that shows as asterisks in `repr` (kafka-python logs its configuration dict at DEBUG)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"'{REDACTED}'"


def _secret_value(value: Any) -> str | None:
    if value is None:
        return None
    getter = getattr(value, "get_secret_value", None)  # pydantic SecretStr, without importing pydantic
    value = getter() if getter is not None else value
    return str(value) if value != "" else None


@dataclass(frozen=True)
class KafkaSecurity:
    """Security settings of a Kafka connection, client-neutral. Build with `from_config` or `from_env`."""

    security_protocol: str = "PLAINTEXT"
    ssl_ca_file: str | None = None
    ssl_cert_file: str | None = None
    ssl_key_file: str | None = None
    ssl_key_password: str | None = field(default=None, repr=False)
    ssl_check_hostname: bool = True
    sasl_mechanism: str = "PLAIN"
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ building

    @classmethod
    def from_config(cls, config: Any) -> KafkaSecurity:
        """From a `KafkaConfig` (or any object with the same attribute names; secrets may be SecretStr)."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            value = getattr(config, f.name, None)
            if f.name in _SECRETS:
                value = _secret_value(value)
            if value is not None:
                values[f.name] = value
        return cls(**values)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **given: Any) -> KafkaSecurity:
        """From keyword arguments, else `AGENTWATCH_KAFKA_<NAME>` (or the services' `AGENTWATCH_KAFKA__<NAME>`).

        Used by the SDK: e.g. `AGENTWATCH_KAFKA_SECURITY_PROTOCOL=SASL_SSL`, `AGENTWATCH_KAFKA_SASL_PASSWORD`.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            value = given.get(f.name)
            if value is None:
                for var in (f"AGENTWATCH_KAFKA_{f.name.upper()}", f"AGENTWATCH_KAFKA__{f.name.upper()}"):
                    raw = env.get(var, "").strip()
                    if raw:
                        value = raw
                        break
            if value is None:
                continue
            if f.name == "ssl_check_hostname" and isinstance(value, str):
                value = value.lower() not in ("0", "false", "no", "off")
            if f.name in _SECRETS:
                value = _secret_value(value)
            values[f.name] = value
        return cls(**values)

    # ------------------------------------------------------------------ checking

    @property
    def protocol(self) -> str:
        return self.security_protocol.strip().upper()

    @property
    def mechanism(self) -> str:
        return self.sasl_mechanism.strip().upper()

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def problems(self, check_files: bool = True) -> list[tuple[str, str]]:
        """(setting name, what is wrong) for every invalid combination; empty when the settings are usable."""
        out: list[tuple[str, str]] = []
        if self.protocol not in PROTOCOLS:
            out.append(
                (
                    "security_protocol",
                    f"must be one of {', '.join(PROTOCOLS)}, got {self.security_protocol!r}",
                )
            )
            return out
        if self.uses_sasl:
            if self.mechanism not in MECHANISMS:
                out.append(
                    ("sasl_mechanism", f"must be one of {', '.join(MECHANISMS)}, got {self.sasl_mechanism!r}")
                )
            if not self.sasl_username:
                out.append(("sasl_username", f"required when security_protocol is {self.protocol}"))
            if not self.sasl_password:
                out.append(("sasl_password", f"required when security_protocol is {self.protocol}"))
        else:
            for name in ("sasl_username", "sasl_password"):
                if getattr(self, name):
                    out.append(
                        (
                            name,
                            f"set, but security_protocol is {self.protocol}: use SASL_SSL or SASL_PLAINTEXT",
                        )
                    )
        if not self.uses_tls:
            for name in (*_FILES, "ssl_key_password"):
                if getattr(self, name):
                    out.append((name, f"set, but security_protocol is {self.protocol}: use SSL or SASL_SSL"))
            return out
        if bool(self.ssl_cert_file) != bool(self.ssl_key_file):
            missing = "ssl_key_file" if self.ssl_cert_file else "ssl_cert_file"
            out.append((missing, "a client certificate needs both ssl_cert_file and ssl_key_file"))
        if self.ssl_key_password and not self.ssl_key_file:
            out.append(("ssl_key_password", "set without ssl_key_file"))
        if check_files:
            for name in _FILES:
                path = getattr(self, name)
                if path and not os.path.isfile(path):
                    out.append((name, f"file {path!r} does not exist"))
                elif path and not os.access(path, os.R_OK):
                    out.append((name, f"file {path!r} is not readable"))
        return out

    def check(self, prefix: str = "kafka.") -> None:
        """Raise ValueError naming every invalid setting (`prefix` + name)."""
        found = self.problems()
        if found:
            raise ValueError("; ".join(f"{_key(prefix, name)}: {msg}" for name, msg in found))

    # ------------------------------------------------------------------ client settings

    def librdkafka(self) -> dict[str, Any]:
        """confluent-kafka / librdkafka configuration keys (merge into the client's dict)."""
        conf: dict[str, Any] = {"security.protocol": self.protocol.lower()}
        if self.uses_tls:
            if self.ssl_ca_file:
                conf["ssl.ca.location"] = self.ssl_ca_file
            if self.ssl_cert_file:
                conf["ssl.certificate.location"] = self.ssl_cert_file
            if self.ssl_key_file:
                conf["ssl.key.location"] = self.ssl_key_file
            if self.ssl_key_password:
                conf["ssl.key.password"] = self.ssl_key_password
            conf["ssl.endpoint.identification.algorithm"] = "https" if self.ssl_check_hostname else "none"
        if self.uses_sasl:
            conf["sasl.mechanisms"] = self.mechanism
            conf["sasl.username"] = self.sasl_username
            conf["sasl.password"] = self.sasl_password
        return conf

    def client_settings(
        self, client: str, bootstrap_servers: str | list[str], client_id: str
    ) -> dict[str, Any]:
        """Servers, client id, TLS and SASL in the option names of `client`: "librdkafka" or "kafka-python"."""
        if client == "librdkafka":
            servers = bootstrap_servers if isinstance(bootstrap_servers, str) else ",".join(bootstrap_servers)
            return {"bootstrap.servers": servers, "client.id": client_id, **self.librdkafka()}
        if client == "kafka-python":
            return {"bootstrap_servers": bootstrap_servers, "client_id": client_id, **self.kafka_python()}
        raise ValueError(f"unknown Kafka client {client!r}: use 'librdkafka' or 'kafka-python'")

    def kafka_python(self) -> dict[str, Any]:
        """kafka-python keyword arguments (KafkaProducer, KafkaConsumer, KafkaAdminClient)."""
        kw: dict[str, Any] = {"security_protocol": self.protocol}
        if self.uses_tls:
            kw["ssl_cafile"] = self.ssl_ca_file
            kw["ssl_certfile"] = self.ssl_cert_file
            kw["ssl_keyfile"] = self.ssl_key_file
            kw["ssl_password"] = _Secret(self.ssl_key_password) if self.ssl_key_password else None
            kw["ssl_check_hostname"] = self.ssl_check_hostname
        if self.uses_sasl:
            kw["sasl_mechanism"] = self.mechanism
            kw["sasl_plain_username"] = self.sasl_username
            kw["sasl_plain_password"] = _Secret(self.sasl_password or "")
        return kw

    # ------------------------------------------------------------------ explaining failures

    def redact(self, text: str) -> str:
        """`text` with every secret value replaced by asterisks."""
        for name in _SECRETS:
            value = getattr(self, name)
            if value:
                text = text.replace(value, REDACTED)
        return text

    def explain(self, error: str, where: str, prefix: str = "kafka.") -> KafkaSecurityError | None:
        """A KafkaSecurityError naming the setting to fix, when `error` (a client's message) says what failed."""
        # kafka-python names its transport in its messages (`<KafkaSSLTransport [...]>: socket disconnected`):
        # that "SSL" says nothing about what failed, so it must not make a lost SASL_SSL connection a TLS failure
        found = self._reason(_TRANSPORT.sub("", error).lower())
        if found is None:
            return None
        reason, setting = found
        names = {f.name: _key(prefix, f.name) for f in fields(self)}
        text = reason.format(
            where=where,
            mechanism=self.mechanism,
            user=repr(self.sasl_username),
            ssl_=_key(prefix, "ssl_"),
            **names,
        )
        return KafkaSecurityError(f"{text} ({self.redact(error.strip())})", names[setting])

    def _reason(self, low: str) -> tuple[str, str] | None:
        """(what failed, with `{setting}` placeholders; the setting to fix) for a lower-cased client message."""
        if "sasl" in low or "authentic" in low or "credential" in low:
            if not self.uses_sasl:
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
                r.only_without_client_certificate and self.ssl_cert_file
            ):
                return r.text, r.setting
        return None

    def tls_failure(self, address: str, timeout_s: float = 3.0) -> str | None:
        """Why a TLS connection to `address` (`host:port`) with these settings fails, in the words of Python's
        `ssl` module (e.g. `certificate verify failed: IP address mismatch, ...`, `tlsv13 alert certificate
        required`), or None when it succeeds or the failure is not TLS's.

        librdkafka reports every failed verification as `certificate verify failed` (hostname or CA alike) and
        kafka-python reports a refused client certificate as a lost connection: this one connection tells which.
        It sends an ApiVersions request, since a TLS 1.3 server refuses a client certificate only after its
        handshake, by an alert the client reads with the first response.
        """
        if not self.uses_tls:
            return None
        host, _, port = address.strip().rpartition(":")
        host = host.strip("[]")
        try:
            context = ssl.create_default_context(cafile=self.ssl_ca_file or None)
            context.check_hostname = self.ssl_check_hostname
            if self.ssl_cert_file and self.ssl_key_file:
                context.load_cert_chain(self.ssl_cert_file, self.ssl_key_file, password=self.ssl_key_password)
            with (
                socket.create_connection((host, int(port)), timeout=timeout_s) as raw,
                context.wrap_socket(raw, server_hostname=host) as tls,
            ):
                tls.sendall(struct.pack(">ihhih", 10, 18, 0, 1, -1))  # ApiVersions v0, correlation id 1
                tls.recv(4)
        except ssl.SSLCertVerificationError as exc:
            return self.redact(f"certificate verify failed: {exc.verify_message}")
        except ssl.SSLError as exc:
            return self.redact(f"SSL error: {exc.args[1] if len(exc.args) > 1 else exc}")
        except (OSError, ValueError):
            return None
        return None

    def diagnose(self, messages: list[str], where: str, prefix: str = "kafka.") -> KafkaSecurityError | None:
        """The first of `messages` (client errors and log lines, in order) that `explain` understands.

        A SASL connection lost after the broker answered ApiVersions (kafka-python logs `broker_version=(x, y)`)
        failed in the authentication exchange: Tansu, for one, answers a wrong SCRAM password with an in-band
        `e=` message that kafka-python only reports as a lost connection.
        """
        lost_after_versions = None
        for text in messages:
            if "exchanging credentials in the clear" in text.lower():
                continue  # kafka-python's warning on every SASL_PLAINTEXT connection, not a failure
            found = self.explain(text, where, prefix)
            if found is not None:
                return found
            if "Connection lost" in text and "broker_version=(" in text and lost_after_versions is None:
                lost_after_versions = text.rsplit("Connection lost:", 1)[-1].strip()
        if self.uses_sasl and lost_after_versions is not None:
            return self.explain(
                f"SASL authentication failed (connection lost: {lost_after_versions})", where, prefix
            )
        return None

    def diagnose_connection(
        self, messages: list[str], where: str, prefix: str = "kafka.", timeout_s: float = 3.0
    ) -> KafkaSecurityError | None:
        """`diagnose`, made precise by one TLS connection of our own (`tls_failure`) when the client's words are
        vague: librdkafka says `broker certificate could not be verified` for an unknown CA and a host name
        mismatch alike, kafka-python says a connection was lost when the broker refused its client certificate.
        """
        found = self.diagnose(messages, where, prefix)
        if not self.uses_tls:
            return found
        vague = (
            found is None
            or found.setting == _key(prefix, "security_protocol")
            or any("broker certificate could not be verified" in m for m in messages)
        )
        if not vague:
            return found
        address = next(
            (m.group(1) for text in messages if (m := _TLS_ADDRESS.search(text))), where.split(",")[0]
        )
        reason = self.tls_failure(address, timeout_s)
        precise = self.explain(reason, where, prefix) if reason else None
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


def service_settings(config: Any, role: str) -> dict[str, Any]:
    """confluent-kafka settings of a service's client (`role`: collector, exporter, admin) from a `KafkaConfig`."""
    return KafkaSecurity.from_config(config).client_settings(
        "librdkafka", config.bootstrap_servers, f"{config.client_id}-{role}"
    )
