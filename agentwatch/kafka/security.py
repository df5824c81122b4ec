"""Kafka connection settings (servers, client id, TLS, SASL) turned into each client's options.

One place knows how `kafka.bootstrap_servers`, `kafka.security_protocol`, the `kafka.ssl_*` files and the
`kafka.sasl_*` credentials map to the option names of librdkafka (confluent-kafka, the services' client:
`service_settings`) and kafka-python (the SDK's: `KafkaSecurity.client_settings("kafka-python", ...)`), validates
their combinations, and explains a refused connection in terms of the setting to fix. It imports nothing but the
standard library, so the SDK (which must stay free of the services' configuration classes) builds its producer
settings here too, from keyword arguments or `AGENTWATCH_KAFKA_*` environment variables.

Why a connection was refused, in terms of these settings, is worked out in `kafka.refusals` (the methods
`explain`, `diagnose`, `tls_failure` and `diagnose_connection` call it).

Secrets (`sasl_password`, `ssl_key_password`) are never part of a `repr`, a log line or an error message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from agentwatch.kafka import refusals
from agentwatch.kafka.refusals import KafkaSecurityError, setting_key

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_FILES = ("ssl_ca_file", "ssl_cert_file", "ssl_key_file")
_SECRETS = ("sasl_password", "ssl_key_password")
REDACTED = "**********"


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
            raise ValueError("; ".join(f"{setting_key(prefix, name)}: {msg}" for name, msg in found))

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
        return refusals.explain(self, error, where, prefix)

    def tls_failure(self, address: str, timeout_s: float = 3.0) -> str | None:
        """Why a TLS connection to `address` (`host:port`) with these settings fails, in the words of Python's
        `ssl` module, or None when it succeeds or the failure is not TLS's (`refusals.tls_failure`)."""
        return refusals.tls_failure(self, address, timeout_s)

    def diagnose(self, messages: list[str], where: str, prefix: str = "kafka.") -> KafkaSecurityError | None:
        """The first of `messages` (client errors and log lines, in order) that `explain` understands
        (`refusals.diagnose`)."""
        return refusals.diagnose(self, messages, where, prefix)

    def diagnose_connection(
        self, messages: list[str], where: str, prefix: str = "kafka.", timeout_s: float = 3.0
    ) -> KafkaSecurityError | None:
        """`diagnose`, made precise by one TLS connection of our own (`tls_failure`) when the client's words are
        vague (`refusals.diagnose_connection`)."""
        return refusals.diagnose_connection(self, messages, where, prefix, timeout_s)


def service_settings(config: Any, role: str) -> dict[str, Any]:
    """confluent-kafka settings of a service's client (`role`: collector, exporter, admin) from a `KafkaConfig`."""
    return KafkaSecurity.from_config(config).client_settings(
        "librdkafka", config.bootstrap_servers, f"{config.client_id}-{role}"
    )
