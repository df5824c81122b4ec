"""The /metrics server under connections opened and left: a bounded number served, idle ones closed, the rest
refused and counted (real sockets on loopback)."""

from __future__ import annotations

import socket
import time
import urllib.request

import pytest

from agentwatch import metrics_http
from agentwatch.metrics_http import MAX_CONNECTIONS, REFUSED_METRIC, MetricsServer


def _idle(port: int) -> socket.socket:
    """A connection that starts a request and never finishes it."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /metr")
    return s


def _closed_by_server(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def test_connections_past_the_limit_are_refused_and_counted_then_scrapes_are_served() -> None:
    server = MetricsServer(lambda: b"x 1\n", 0, "127.0.0.1")
    try:
        held = [_idle(server.port) for _ in range(MAX_CONNECTIONS)]
        extra = [_idle(server.port) for _ in range(3)]
        assert all(_closed_by_server(s) for s in extra)  # closed at once, not after the idle timeout
        assert server.refused == 3
        for s in held:
            s.close()
        body = b""
        for _ in range(50):  # the held connections' threads end as the server sees them closed
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5).read()
                break
            except OSError:
                time.sleep(0.05)
        # the 3, and any scrape refused while the held connections' threads were still ending
        assert body.startswith(b"x 1\n") and server.refused >= 3
        assert f"{REFUSED_METRIC} {float(server.refused)}\n".encode() in body
    finally:
        server.stop()


def test_an_idle_connection_is_closed_after_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics_http, "IDLE_TIMEOUT_S", 0.3)
    server = MetricsServer(lambda: b"x 1\n", 0, "127.0.0.1")
    try:
        s = _idle(server.port)
        s.settimeout(5)
        assert _closed_by_server(s)  # well before the client's own 5 s
        assert server.refused == 0
    finally:
        server.stop()


def test_a_request_sent_a_byte_at_a_time_is_closed_once_its_head_is_late(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(metrics_http, "IDLE_TIMEOUT_S", 0.5)
    server = MetricsServer(lambda: b"x 1\n" * 100_000, 0, "127.0.0.1")
    try:
        s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        closed = False
        for byte in b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"y" * 60:  # a byte every 0.05 s: never idle 0.5 s
            try:
                s.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.05)
        assert closed  # the server closed it while the head was still coming, 0.5 s after it began
        s.close()
        # a scraper that sends its request at once gets the whole answer, however long it takes to read
        body = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5).read()
        assert body.startswith(b"x 1\n" * 100_000)
    finally:
        server.stop()
