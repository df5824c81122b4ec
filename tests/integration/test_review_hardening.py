"""The review service under attack, over real HTTP (uvicorn on loopback) with real SQLite and PostgreSQL stores:
a flood of wrong passwords, password guessing, a session cookie copied before sign-out, integers past 64 bits,
oversized bodies, names that would forge log lines, connections that never finish their request."""

from __future__ import annotations

import base64
import logging
import math
import socket
import time

import httpx
import pytest

from agentwatch.review import connection_guard
from tests.support.collector_kafka import unique
from tests.support.review import (
    PASSWORD,
    ServiceThread,
    conversation,
    csrf,
    get_stored,
    record,
    review_settings,
    scored,
    sign_in,
)
from tests.support.review_flood import flood, start_review

pytestmark = pytest.mark.broker


def _sample(metrics: str, name: str, **labels: str) -> float:
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in metrics.splitlines():
        if line.startswith(f"{name}{{{want}}} ") or (not labels and line.startswith(f"{name} ")):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no sample {name}{{{want}}}")


def test_a_flood_of_wrong_basic_passwords_is_refused_before_hashing_and_memory_stays_bounded(
    broker, tmp_path
):
    """200 GET / with a wrong Basic password, 64 at a time, against `agentwatch review` with a production-cost
    scrypt hash: a handful are checked, the rest refused at once (429); RSS grows by a bounded amount
    (each check is a 32 MiB scrypt; before the bound, this flood took the service from 134 to 1,339 MiB)."""
    service = start_review(broker.bootstrap_servers, tmp_path)
    try:
        result = flood(service, requests=200, concurrency=64)
        metrics = service.metrics()
        log = service.log.read_text()
    finally:
        service.stop()
    print(
        f"\nflood: {dict(result.statuses)} in {result.seconds:.1f} s; RSS {result.rss_before:.0f} -> peak "
        f"{result.rss_peak:.0f} MiB, after {result.rss_after:.0f} MiB; /healthz {result.health_summary()}"
    )
    assert set(result.statuses) <= {401, 429, 503} and sum(result.statuses.values()) == 200
    checked = _sample(metrics, "agentwatch_review_signins_total", method="basic", result="failed")
    throttled = _sample(metrics, "agentwatch_review_signins_total", method="basic", result="throttled")
    # the free failures, those in flight when the backoff began, then one per backoff (1 s, 2 s, 4 s, …) ended
    # during the flood
    assert checked == result.statuses[401]
    assert checked <= 5 + 2 + math.ceil(math.log2(result.seconds + 1)), checked
    assert throttled + _sample(metrics, "agentwatch_review_signins_total", method="basic", result="busy") == (
        200 - checked
    )
    assert result.rss_peak - result.rss_before < 200, "memory grew as if every request ran scrypt"
    assert result.health_ms and max(result.health_ms) < float("inf"), (
        "/healthz did not answer during the flood"
    )
    assert log.count("failed sign-in (basic) as 'alice' from 127.0.0.1") == checked


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_a_cookie_copied_before_sign_out_reads_and_writes_nothing_after_it(broker, tmp_path, store, request):
    extra = {"database_url": request.getfixturevalue("postgres_db")} if store == "postgresql" else {}
    settings = review_settings(broker.bootstrap_servers, tmp_path, **extra)
    conv = conversation(unique("c"))
    with ServiceThread(settings) as svc:
        svc.service.store.ingest(record(conv, scored(conv)), time.time(), 86400)
        row = svc.service.store.queue()[0][0].id
        with httpx.Client(base_url=svc.url) as alice, httpx.Client(base_url=svc.url) as thief:
            assert sign_in(alice).status_code == 303
            thief.cookies.update(alice.cookies)  # the cookie, copied
            page = thief.get(f"/c/{row}")
            assert page.status_code == 200 and conv.conversation_id in page.text
            token = csrf(page.text)
            assert alice.post("/logout", data={"csrf": token}).status_code == 303
            assert thief.get("/").status_code == 401
            assert thief.get(f"/c/{row}").status_code == 401
            label = thief.post(f"/c/{row}/label", data={"outcome": "complete", "csrf": token})
            assert label.status_code == 403
            assert get_stored(svc.service.store, row).labels == []
            assert svc.service.web.sessions.active() == 0
            # signing in again makes a new session; the old cookie stays dead
            assert sign_in(alice).status_code == 303 and alice.get("/").status_code == 200
            assert thief.get("/").status_code == 401


def test_password_guessing_backs_off_is_counted_and_logged(broker, tmp_path, caplog):
    settings = review_settings(broker.bootstrap_servers, tmp_path, signin_free_failures=3)
    caplog.set_level(logging.INFO, logger="agentwatch.review")
    with ServiceThread(settings) as svc, httpx.Client(base_url=svc.url) as client:
        # a name with a newline is logged as its repr: one line, no forged second one
        forged = sign_in(client, "mallory\nINFO agentwatch: admin signed in", "x")
        assert forged.status_code == 401
        statuses = [sign_in(client, "alice", f"guess {i}").status_code for i in range(6)]
        # this client's third failure starts the backoff: the rest are refused before any hashing
        assert statuses == [401, 401, 429, 429, 429, 429]
        refused = sign_in(client, "alice", PASSWORD)  # even the right password waits out the backoff
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        assert "Too many sign-in attempts" in refused.text
        with httpx.Client(base_url=svc.url, headers={"Authorization": "Bearer wrong"}) as api:
            assert api.get("/").status_code == 429
        stats = svc.service.stats
        assert stats.signins[("form", "failed")] == 3 and stats.signins[("form", "throttled")] == 5
        assert stats.signins[("bearer", "throttled")] == 1
        time.sleep(1.1)  # the first backoff (1 s) is over: a right password signs in and clears the count
        assert sign_in(client, "alice", PASSWORD).status_code == 303
    messages = [r.getMessage() for r in caplog.records]
    assert sum("failed sign-in (form) as 'alice' from 127.0.0.1" in m for m in messages) == 2
    assert any("backs off" in m for m in messages)
    assert not any(m.startswith("INFO agentwatch: admin") or "\nINFO" in m for m in messages)
    assert any(r"'mallory\nINFO agentwatch: admin signed in'" in m for m in messages)


def test_integers_past_64_bits_give_404_or_400_never_500(broker, tmp_path):
    settings = review_settings(broker.bootstrap_servers, tmp_path)
    conv = conversation(unique("c"))
    with ServiceThread(settings) as svc, httpx.Client(base_url=svc.url) as client:
        svc.service.store.ingest(record(conv, scored(conv)), time.time(), 86400)
        assert sign_in(client).status_code == 303
        token = csrf(client.get("/").text)
        huge = "9" * 30
        for path in (f"/c/{huge}", f"/c/{2**63}", "/c/-1", "/c/abc", "/c/%C2%B2", f"/c/{2**63 - 1}"):
            assert client.get(path).status_code == 404, path
            assert (
                client.post(f"{path}/label", data={"outcome": "complete", "csrf": token}).status_code == 404
            )
        for offset in (huge, str(2**63), "-1", "abc", "²", "١٢"):
            r = client.get("/", params={"offset": offset})
            assert r.status_code == 400 and "offset must be an integer" in r.text, offset
        assert client.get("/", params={"offset": "1000000000"}).status_code == 200
        basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
        with httpx.Client(base_url=svc.url, headers={"Authorization": f"Basic {basic}"}) as api:
            assert api.get(f"/c/{huge}").status_code == 404


def test_a_request_body_over_the_limit_gets_413(broker, tmp_path):
    settings = review_settings(broker.bootstrap_servers, tmp_path, max_body_bytes=8192)
    with ServiceThread(settings) as svc, httpx.Client(base_url=svc.url) as client:
        page = client.get("/login")
        big = {"csrf": csrf(page.text), "name": "alice", "secret": "x" * 20_000}
        assert client.post("/login", data=big).status_code == 413

        def chunks():
            for _ in range(10):
                yield b"secret=" + b"x" * 4096  # streamed, no Content-Length

        streamed = client.post(
            "/login", content=chunks(), headers={"Content-Type": "application/x-www-form-urlencoded"}
        )
        assert streamed.status_code == 413
        assert client.get("/healthz").status_code == 200


def _slow(port: int) -> socket.socket:
    """A connection sending its request head and never finishing it (a slowloris)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
    return s


def test_connections_that_never_finish_their_request_are_closed_and_reviewers_get_in_again(
    broker, tmp_path, monkeypatch, caplog, request
):
    """Connections that open and send a request slowly, or never, counted against `max_connections` for good: as
    many as it allows turned every reviewer away with 503 until they left. Each is closed when its request, head
    and body, is not all there in time, and the pages answer again."""
    monkeypatch.setattr(connection_guard, "REQUEST_TIMEOUT_S", 1.0)
    settings = review_settings(broker.bootstrap_servers, tmp_path, max_connections=8)
    with ServiceThread(settings) as svc, httpx.Client(base_url=svc.url) as client:
        errors = logging.getLogger("uvicorn.error")  # configured by uvicorn as it starts; does not propagate
        errors.addHandler(caplog.handler)
        request.addfinalizer(lambda: errors.removeHandler(caplog.handler))
        port = svc.service.port
        assert port is not None
        slow = [_slow(port) for _ in range(8)]
        assert client.get("/healthz").status_code == 503  # the limit is full of them
        for s in slow:
            s.sendall(b"X-Dribble: 1\r\n")  # sending, slowly, does not keep a connection open
        time.sleep(1.5)
        assert all(s.recv(100) == b"" for s in slow)  # closed by the service
        assert client.get("/healthz").status_code == 200
        for s in slow:
            s.close()
        # a whole head, then a body that never comes: closed too, quietly (the page has no one to answer)
        form = b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nname=a"
        body = socket.create_connection(("127.0.0.1", port), timeout=5)
        body.sendall(b"POST /login HTTP/1.1\r\nHost: x\r\n" + form)
        assert body.recv(4096) == b""
        body.close()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def _idle(port: int, source: str) -> socket.socket:
    """A connection from `source` (another loopback address is another client) that sends nothing."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


def _open(s: socket.socket) -> bool:
    """Whether the service still holds the connection (nothing to read, no end of stream)."""
    s.setblocking(False)
    try:
        return s.recv(1) != b""
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False


def test_one_address_holds_at_most_its_share_of_the_connections(broker, tmp_path):
    """300 idle connections from one address, each reopened as it was closed, kept every reviewer on 503: the
    deadlines bound how long a connection lasts, not how many come back. One address holds at most
    `max_connections_per_client`, the rest closed as they open; another address gets in; a reverse proxy named in
    `forwarded_allow_ips` carries everyone's connections and is not capped."""
    settings = review_settings(
        broker.bootstrap_servers,
        tmp_path,
        max_connections=16,
        max_connections_per_client=4,
        forwarded_allow_ips=["127.0.0.3"],
    )
    with ServiceThread(settings) as svc:
        port = svc.service.port
        assert port is not None
        attacker = [_idle(port, "127.0.0.1") for _ in range(10)]
        proxy = [_idle(port, "127.0.0.3") for _ in range(8)]
        time.sleep(0.5)
        assert sum(map(_open, attacker)) == 4 and all(map(_open, proxy))
        other = httpx.HTTPTransport(local_address="127.0.0.2")
        with httpx.Client(base_url=svc.url, transport=other) as client:
            assert client.get("/healthz").status_code == 200
        assert svc.service.stats.closed == {"per_client": 6}
        for s in attacker + proxy:
            s.close()


def test_a_client_that_reads_none_of_its_answers_is_dropped(broker, tmp_path, monkeypatch):
    """4,000 pipelined GET /login on one connection whose client never reads: the answers waited in the service's
    buffer (2.8 MB) and the connection stayed, past every deadline. It is dropped, buffer and all, once the buffer
    is past its high-water mark at a deadline; reviewers get in meanwhile and after."""
    monkeypatch.setattr(connection_guard, "REQUEST_TIMEOUT_S", 1.0)
    settings = review_settings(broker.bootstrap_servers, tmp_path, max_connections=8)
    with ServiceThread(settings) as svc, httpx.Client(base_url=svc.url) as client:
        port = svc.service.port
        assert port is not None
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", port))
        s.settimeout(5)
        try:
            s.sendall(b"GET /login HTTP/1.1\r\nHost: x\r\n\r\n" * 4000)
        except TimeoutError:
            pass  # the service stopped reading requests: enough answers are waiting
        deadline = time.monotonic() + 15
        while not svc.service.stats.closed and time.monotonic() < deadline:
            assert client.get("/healthz").status_code == 200
            time.sleep(0.2)
        assert svc.service.stats.closed == {"unread_responses": 1}
        s.settimeout(5)
        with pytest.raises(ConnectionResetError):  # dropped: reading ends in a reset, not a wait
            while s.recv(65536):
                pass
        s.close()
        assert client.get("/healthz").status_code == 200
