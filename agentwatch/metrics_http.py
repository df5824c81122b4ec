"""The Prometheus text format (version 0.0.4) and the HTTP server that serves it on /metrics.

One renderer and one server for every process: the collector serves its pipeline health with them, the
exporter its estimates (whose text `agentwatch.exporters.exposition` keeps between scrapes, built from the
line helpers here), and `agentwatch serve` both on one port. Families are prometheus-client `Metric` objects
(name, type, help, samples); prometheus-client gives those containers and its float formatting, nothing more.
"""

from __future__ import annotations

import gzip
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.utils import floatToGoString

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# A scraper sends its request at once and reads the answer: a connection idle this long, or whose request line and
# headers have not all arrived this long after it was accepted (a byte at a time keeps it from being idle), is
# closed, and no more than MAX_CONNECTIONS are served at a time (more are closed at once and counted), so that
# connections opened and left (a port scan, a load balancer's check) cannot pile up threads.
IDLE_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 32
REFUSED_METRIC = "agentwatch_http_connections_refused_total"
# Bodies up to this size go out uncompressed even when the scraper accepts gzip: compressing them costs more
# than it saves.
_GZIP_MIN_BYTES = 4096


def escape(value: str) -> str:
    """A label value escaped for the text format."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def labels_text(names: Iterable[str], values: Iterable[str]) -> str:
    """`name="value",…` for the labels in the order given (no braces)."""
    return ",".join(f'{n}="{escape(v)}"' for n, v in zip(names, values, strict=True))


def sample_line(name: str, labels: str, value: float) -> str:
    """One sample line; `labels` as made by `labels_text` (empty for none)."""
    braced = f"{{{labels}}}" if labels else ""
    return f"{name}{braced} {floatToGoString(value)}\n"


def header(name: str, kind: str, doc: str) -> str:
    """The HELP and TYPE lines of a family as exposed (a counter's name with its `_total`)."""
    help_text = doc.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n"


def render_families(families: Iterable[Metric]) -> str:
    """The text of counter, gauge and histogram families, labels in name order."""
    out: list[str] = []
    for fam in families:
        if fam.type not in ("counter", "gauge", "histogram"):
            raise ValueError(f"{fam.name}: metric type {fam.type!r} is not rendered")
        name = f"{fam.name}_total" if fam.type == "counter" else fam.name
        out.append(header(name, fam.type, fam.documentation))
        for s in fam.samples:
            if s.name.endswith("_created"):  # OpenMetrics only; no family here sets one
                continue
            names = sorted(s.labels)
            out.append(sample_line(s.name, labels_text(names, (s.labels[n] for n in names)), s.value))
    return "".join(out)


ALL_INTERFACES = ("", "0.0.0.0", "::")


def where(host: str, port: int, path: str = "/metrics") -> str:
    """The address to open, in words: a server on every interface is reached on 127.0.0.1 from this machine."""
    if host in ALL_INTERFACES:
        return f"http://127.0.0.1:{port}{path} (listening on all interfaces, {host or '0.0.0.0'}:{port})"
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


class MetricsServer:
    """Serves `render()` on http://host:port/metrics from a daemon thread (port 0 picks a free one); with
    `ready`, also /ready (200 when it says so, else 503, for readiness probes)."""

    def __init__(
        self,
        render: Callable[[], bytes],
        port: int,
        host: str = "0.0.0.0",
        name: str = "agentwatch",
        ready: Callable[[], bool] | None = None,
    ) -> None:
        self._server = _BoundedServer((host, port), _handler(render, name, ready, self._refused_text))
        self.port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, name="metrics-http", daemon=True).start()
        log.info("serving metrics on %s", where(host, self.port))

    @property
    def refused(self) -> int:
        """Connections closed unserved because MAX_CONNECTIONS were being served."""
        return self._server.refused

    def _refused_text(self) -> bytes:
        head = header(
            REFUSED_METRIC, "counter", "Connections to this /metrics server closed unserved (too many)."
        )
        return (head + sample_line(REFUSED_METRIC, "", self.refused)).encode()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()


class _BoundedServer(ThreadingHTTPServer):
    """A thread per connection, at most MAX_CONNECTIONS of them; the connections past that are closed unserved."""

    daemon_threads = True
    request_queue_size = 128  # connections waiting to be accepted (the default, 5, stalls a burst of them)

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.refused = 0

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.refused += 1  # only the serving thread writes it
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class _HeadReader:
    """The request's lines read from the socket, all of them within `IDLE_TIMEOUT_S` of the first read (a
    buffered reader waits `timeout` again for every byte); what a GET handler reads is its request line and
    headers, nothing else."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._deadline = time.monotonic() + IDLE_TIMEOUT_S
        self._buffer = b""

    def readline(self, limit: int = -1) -> bytes:
        """One line (with its newline), at most `limit` bytes; TimeoutError past the deadline."""
        while b"\n" not in self._buffer and (limit < 0 or len(self._buffer) < limit):
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("request line and headers not received in time")
            self._sock.settimeout(left)
            chunk = self._sock.recv(4096)
            if not chunk:
                break
            self._buffer += chunk
        end = self._buffer.find(b"\n") + 1 or len(self._buffer)
        if limit >= 0:
            end = min(end, limit)
        line, self._buffer = self._buffer[:end], self._buffer[end:]
        return line

    def close(self) -> None:
        """Nothing to close: the socket is the server's."""


def _handler(
    render: Callable[[], bytes], name: str, ready: Callable[[], bool] | None, own: Callable[[], bytes]
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = IDLE_TIMEOUT_S  # on every read and write of the connection

        def setup(self) -> None:
            super().setup()  # a TimeoutError of its reads closes the connection unanswered
            self.rfile.close()
            self.rfile = _HeadReader(self.connection)  # type: ignore[assignment]

        def do_GET(self) -> None:
            self.connection.settimeout(
                IDLE_TIMEOUT_S
            )  # the answer's writes: what the head's reads left is less
            path = self.path.split("?", 1)[0]
            if path == "/ready" and ready is not None:
                ok = ready()
                status, ctype = (200, "text/plain") if ok else (503, "text/plain")
                body = b"ready\n" if ok else b"replaying: estimates are partial\n"
            elif path != "/metrics":
                status = 200 if self.path == "/" else 404
                body, ctype = f"{name}: see /metrics\n".encode(), "text/plain"
            else:
                try:
                    body, status, ctype = render() + own(), 200, CONTENT_TYPE
                except Exception:  # a failing scrape must not kill the server; the error is logged
                    log.exception("rendering /metrics failed")
                    body, status, ctype = b"internal error\n", 500, "text/plain"
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            if "gzip" in self.headers.get("Accept-Encoding", "") and len(body) > _GZIP_MIN_BYTES:
                body = gzip.compress(body, compresslevel=1)
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("http: " + format, *args)

    return Handler
