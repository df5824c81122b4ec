"""Bounds on one judge HTTP exchange that httpx does not give by itself.

- **A deadline on the whole exchange.** httpx's timeouts bound each read: a server sending its status line and
  headers a byte at a time (16 KB of headers at a byte a second is four and a half hours) or its body a byte at a
  time holds a call for as long as it likes. `bound_client(client)` gives the client's connection pools a network
  backend whose every connect, read and write waits at most until the deadline of `deadline(seconds)` set by
  the calling thread (an attempt runs in the thread that makes it, so the shared pool serves every thread).
- **Name lookup within the deadline.** `socket.getaddrinfo` takes no timeout and a resolver that hangs would hold
  the connect as long as it likes. The backend looks the host up in a thread of its own and waits for it only
  until the deadline (`ConnectTimeout` then), and connects to the addresses found, in order, as
  `socket.create_connection` does. A lookup still running is left to finish and shared by every later connect to
  the same host meanwhile: a resolver that never answers holds one thread per host, never one per call.
- **A compressed body decoded within a size.** A gzip bomb inflates a thousandfold (200 KB to 200 MB) and httpx
  inflates each piece whole before the caller sees it. `read_body` reads the raw bytes and inflates them itself,
  never more than the bound plus one byte; encodings other than gzip and deflate are refused (the request asks
  for those two only, `ACCEPT_ENCODING`).
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

log = logging.getLogger(__name__)

ACCEPT_ENCODING = "gzip, deflate"
_local = threading.local()


class LookupTimeout(httpcore.ConnectTimeout):
    """The host's name lookup did not end by the deadline."""


class BodyTooLarge(Exception):
    """The body, decoded, is larger than the bound."""


class BodyUndecodable(Exception):
    """The body's content encoding is not one we read, or its bytes do not inflate."""


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


class _Lookup:
    """One name lookup running in a thread of its own: its addresses or its error once `done` is set."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.addresses: list[str] = []
        self.error: Exception | None = None


_lookups: dict[tuple[str, int], _Lookup] = {}  # the lookups running, by host and port
_lookups_lock = threading.Lock()


def _addresses(host: str, port: int) -> list[str]:
    """The addresses of `host` for a TCP connection, in the resolver's order (as `create_connection` tries)."""
    found: list[str] = []
    for *_, sockaddr in socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM):
        address = str(sockaddr[0])
        if len(sockaddr) == 4 and sockaddr[3]:  # a link-local IPv6 address needs its scope to connect
            address = f"{address}%{sockaddr[3]}"
        if address not in found:
            found.append(address)
    return found


def _run_lookup(lookup: _Lookup, host: str, port: int) -> None:
    """Look `host` up for `lookup`, then let the next connect start a lookup of its own."""
    try:
        lookup.addresses = _addresses(host, port)
    except Exception as exc:  # noqa: BLE001 — handed to the callers waiting, raised there
        lookup.error = exc
    finally:
        with _lookups_lock:
            if _lookups.get((host, port)) is lookup:
                del _lookups[(host, port)]
        lookup.done.set()


def _resolve(host: str, port: int, timeout: float | None) -> list[str]:
    """The addresses of `host`, looked up within `timeout` (`ConnectTimeout` past it, `ConnectError` when the
    name does not resolve); an address is its own."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return [host]
    if timeout is None:
        try:
            return _addresses(host, port)
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
    with _lookups_lock:
        lookup = _lookups.get((host, port))
        if lookup is None:
            lookup = _lookups[(host, port)] = _Lookup()
            threading.Thread(
                target=_run_lookup, args=(lookup, host, port), name=f"judge lookup {host}", daemon=True
            ).start()  # a daemon: a resolver that never answers must not hold the process at exit either
    if not lookup.done.wait(timeout):
        raise LookupTimeout(f"the name lookup of {host} did not end within {timeout:g} s")
    if isinstance(lookup.error, OSError):
        raise httpcore.ConnectError(str(lookup.error)) from lookup.error
    if lookup.error is not None:
        raise lookup.error
    return lookup.addresses


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
        """A TCP connection to the first address of `host` that answers, the lookup and every attempt within the
        deadline."""
        last: Exception = httpcore.ConnectError(f"no address for {host}")
        for address in _resolve(host, port, _left(timeout, httpcore.ConnectTimeout)):
            try:
                stream = self._inner.connect_tcp(
                    address, port, _left(timeout, httpcore.ConnectTimeout), local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc  # the next address, as create_connection tries them
                continue
            return _DeadlineStream(stream)
        raise last

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


class _Inflate:
    """Decodes a body's content encoding, never producing more than asked for."""

    def __init__(self, encoding: str) -> None:
        enc = encoding.strip().lower()
        self._may_be_raw = enc == "deflate"  # "deflate" sent without its zlib header, as some servers do
        self._z: Any = None
        if enc in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            self._z = zlib.decompressobj()
        elif enc not in ("", "identity"):
            raise BodyUndecodable(f"content encoding {encoding[:40]!r} is not gzip or deflate")

    def feed(self, chunk: bytes, room: int) -> bytes:
        """The decoded bytes of `chunk`, at most `room + 1` of them (more than `room`: the body is too large)."""
        if self._z is None:
            return chunk
        try:
            out = bytes(self._z.decompress(chunk, room + 1))
        except zlib.error as exc:
            if not self._may_be_raw:
                raise BodyUndecodable(f"the body does not inflate: {exc}") from None
            self._may_be_raw = False
            self._z = zlib.decompressobj(-zlib.MAX_WBITS)
            return self.feed(chunk, room)
        self._may_be_raw = False
        return out


def read_body(response: httpx.Response, limit: int, check: Callable[[], None], *, cut: bool = False) -> bytes:
    """The decoded body of `response`, at most `limit` bytes: a larger one is `BodyTooLarge`, read no further
    (with `cut`, its first `limit` bytes); `BodyUndecodable` for an encoding not read or bytes that do not
    inflate. `check()` runs as each piece arrives (it raises to stop reading)."""
    inflate = _Inflate(response.headers.get("Content-Encoding", ""))
    chunks: list[bytes] = []
    size = 0
    for raw in response.iter_raw():
        check()
        piece = inflate.feed(raw, limit - size)
        if size + len(piece) > limit:
            if cut:
                chunks.append(piece[: limit - size])
                break
            raise BodyTooLarge(f"over {limit} bytes")
        size += len(piece)
        chunks.append(piece)
    return b"".join(chunks)
