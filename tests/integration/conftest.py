"""Fixtures of the integration tests that several files share (the broker fixtures are in tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.support.kafka_tls import PKI
from tests.support.tls_proxy import CertificateAuthority


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    """A CA, another CA nobody trusts, and the certificates the TLS and SASL tests present."""
    directory = tmp_path_factory.mktemp("pki")
    ca = CertificateAuthority(directory, "agentwatch test CA")
    other = CertificateAuthority(directory, "other CA")
    return PKI(
        ca=ca,
        other_ca=other,
        server=ca.issue("kafka.test", dns=("localhost",), ips=("127.0.0.1",)),
        wrong_name=ca.issue("other.example", dns=("other.example",)),
        client=ca.issue("agentwatch", client=True),
        stranger=other.issue("stranger", client=True),
    )
