"""Bounds on one judge HTTP exchange that httpx does not give by itself.

- **A deadline on the whole exchange.** httpx's timeouts bound each read: a server sending its status line and
  headers a byte at a time (16 KB of headers at a byte a second is four and a half hours) or its body a byte at a
  time holds a call for as long as it likes. `bound_client(client)` gives the client's connection pools a network
  backend whose every connect, read and write waits at most until the deadline of `deadline(seconds)` set by
  the calling thread (an attempt runs in the thread that makes it, so the shared pool serves every thread).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

log = logging.getLogger(__name__)

_local = threading.local()


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every connect, read and write of this thread's exchanges inside ends by `seconds` from now."""
    previous = getattr(_local, "deadline", None)
    _local.deadline = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.deadline = previous


def _left(timeout: float | None, exc: type[Exception]) -> float | None:
    """`timeout` cut to what is left of this thread's deadline; raise `exc` once it has passed."""
    end: float | None = getattr(_local, "deadline", None)
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise exc("the exchange's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A network stream whose every wait ends by the calling thread's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """Read at most `max_bytes`, waiting until the timeout or the deadline, whichever is first."""
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Write `buffer`, waiting until the timeout or the deadline, whichever is first."""
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        """Close the stream."""
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        """The TLS stream over this one, its handshake within the deadline."""
        tls = self._inner.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout))
        return _DeadlineStream(tls)

    def get_extra_info(self, info: str) -> Any:
        """The inner stream's information (socket, TLS object, readability)."""
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """Connects within the deadline and hands out streams bounded by it."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        """A TCP connection, made within the deadline."""
        stream = self._inner.connect_tcp(
            host, port, _left(timeout, httpcore.ConnectTimeout), local_address, socket_options
        )
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        """A Unix socket connection, made within the deadline."""
        stream = self._inner.connect_unix_socket(
            path, _left(timeout, httpcore.ConnectTimeout), socket_options
        )
        return _DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        """Sleep (the pool's retries of a connect)."""
        self._inner.sleep(seconds)


def bound_client(client: httpx.Client) -> bool:
    """Give every connection pool of `client` (its transport, and proxies' from the environment) the deadline
    backend; False, with a warning, when a transport is of a kind this does not know (its waits stay per read)."""
    transports = [getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()]
    whole = True
    for transport in transports:
        if transport is None:
            continue
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is None:
            whole = False
            continue
        if not isinstance(backend, _DeadlineBackend):
            pool._network_backend = _DeadlineBackend(backend)  # type: ignore[union-attr]
    if not whole:
        log.warning(
            "judge: an HTTP transport without a deadline on headers; each read is bounded, not the whole"
        )
    return whole
