"""OpenAIJudge against a real TLS server on loopback: a certificate that does not verify ends the call at once
(`judge_tls_certificate`, naming the check that failed), and so does a server that asks for a client
certificate; both are counted and heard by the breaker; a handshake the server resets is still retried."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import httpx
import pytest

from agentwatch.judge.breaker import CircuitBreaker
from agentwatch.judge.client import OpenAIJudge
from agentwatch.judge.counters import JudgeStats
from agentwatch.judge.verdict import FAILURE_CODES
from agentwatch.report.failure_modes import COVERAGE_CODES
from agentwatch.wire.schema import Conversation
from tests.support.hostile_http import completion_body, response
from tests.support.tls_http import ServerCertificate, TLSServer, server_certificate


def conv() -> Conversation:
    return Conversation.model_validate(
        {"conversation_id": "c1", "agent": "a", "turns": [{"input": "Weather?", "answer": "Sunny."}]}
    )


def _reply(sock: socket.socket, _head: bytes, _body: bytes) -> None:
    sock.sendall(response("200 OK", completion_body()))


def _trusting(certificate: ServerCertificate) -> httpx.Client:
    """A client that trusts the test CA (as SSL_CERT_FILE naming it would)."""
    return httpx.Client(verify=ssl.create_default_context(cafile=str(certificate.ca)), timeout=5.0)


def _judge(base_url: str, sleeps: list[float], **kw: object) -> OpenAIJudge:
    """A judge of 3 retries whose waits between them are recorded, not slept."""
    return OpenAIJudge(
        base_url=base_url,
        model="gpt-4o-mini",
        max_retries=3,
        timeout_s=5.0,
        sleep=sleeps.append,
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("case", "check"),
    [
        ("unknown CA", "unable to get local issuer certificate"),
        ("host name", "Hostname mismatch"),
        ("expired", "certificate has expired"),
    ],
)
def test_a_certificate_that_does_not_verify_ends_the_call_at_once(
    tmp_path: Path, case: str, check: str
) -> None:
    """One handshake, no retry, and the reason names the check that failed: the same certificate would fail every
    retry the same way, and `judge_unavailable` after four attempts would hide why."""
    certificate = server_certificate(tmp_path, expired=case == "expired")
    sleeps: list[float] = []
    with TLSServer(_reply, certificate) as server:
        base_url = (
            server.base_url.replace("127.0.0.1", "localhost") if case == "host name" else server.base_url
        )
        client = None if case == "unknown CA" else _trusting(certificate)
        judge = _judge(base_url, sleeps, client=client)
        v = judge.judge(conv())
        handshakes = server.wait_handshakes(1)
    assert v.failure == "judge_tls_certificate", v.reason
    assert check in v.detail and "not retried" in v.detail and f":{server.port}" in v.detail
    assert sleeps == [] and len(handshakes) == 1 and handshakes[0] != "ok"
    assert judge.breaker.state == "closed"  # one failure of the default five
    stats = JudgeStats()
    stats.observe(v, called=True)
    assert stats.snapshot()["failures"]["judge_tls_certificate"] == 1


def test_the_certificate_verifies_once_trusted(tmp_path: Path) -> None:
    """The same server and client with a certificate that names its host: graded (the failure above is the
    certificate's, not the test server's)."""
    certificate = server_certificate(tmp_path)
    with TLSServer(_reply, certificate) as server:
        v = _judge(server.base_url, [], client=_trusting(certificate)).judge(conv())
    assert v.ok, v.reason


def test_certificate_failures_open_the_breaker_which_names_them(tmp_path: Path) -> None:
    """They count toward the breaker like the other failures that are not retried (HTTP 401, 404): the endpoint
    is unusable until someone fixes it, and the trial call every reset_s notices when they have. While it is
    open each conversation's reason still names the failure that opened it."""
    now = [0.0]
    breaker = CircuitBreaker(failures=2, reset_s=10, clock=lambda: now[0])
    with TLSServer(_reply, server_certificate(tmp_path)) as server:
        judge = _judge(server.base_url, [], breaker=breaker)
        codes = [judge.judge(conv()).failure for _ in range(2)]
        blocked = judge.judge(conv())
        handshakes = server.wait_handshakes(2)
    assert codes == ["judge_tls_certificate", "judge_tls_certificate"] and breaker.state == "open"
    assert blocked.failure == "judge_unavailable" and "the last judge_tls_certificate" in blocked.detail
    assert len(handshakes) == 2


def test_a_reset_handshake_is_still_retried(tmp_path: Path) -> None:
    """A TLS handshake the server resets may pass next time: retried like any connection error."""
    sleeps: list[float] = []
    with TLSServer(_reply, server_certificate(tmp_path), reset=True) as server:
        v = _judge(server.base_url, sleeps).judge(conv())
        handshakes = server.wait_handshakes(4)
    assert v.failure == "judge_unavailable" and "after 3 retries" in v.detail, v.reason
    assert len(sleeps) == 3 and handshakes == ["reset"] * 4


@pytest.mark.parametrize(
    "version", [ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2], ids=["TLS 1.3", "TLS 1.2"]
)
def test_a_server_asking_for_a_client_certificate_ends_the_call_at_once(
    tmp_path: Path, version: ssl.TLSVersion
) -> None:
    """Mutual TLS: the judge sends no certificate of its own, so every retry would be refused the same way. One
    connection, no retry, and the reason says what the server wants."""
    certificate = server_certificate(tmp_path)
    sleeps: list[float] = []
    with TLSServer(_reply, certificate, client_certificate=True, maximum_version=version) as server:
        judge = _judge(server.base_url, sleeps, client=_trusting(certificate))
        v = judge.judge(conv())
        handshakes = server.wait_handshakes(1)
    assert v.failure == "judge_tls_certificate", v.reason
    assert "client certificate (mutual TLS)" in v.detail and "not retried" in v.detail
    assert f":{server.port}" in v.detail
    assert sleeps == [] and len(handshakes) == 1 and "certificate" in handshakes[0]


def test_every_failure_code_is_coverage_in_reports() -> None:
    """A conversation the judge could not grade is outside the graded sample, never a failure mode of the agent."""
    assert set(FAILURE_CODES) <= COVERAGE_CODES
