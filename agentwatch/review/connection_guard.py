"""uvicorn's HTTP/1.1 protocol guarding the service's connections: a deadline for each request, one for a client
that stops reading its responses, and a cap on the connections one client address holds.

uvicorn closes a connection idle after a response, but not one that opened and sends its request line, headers or
body slowly, or never: such connections count against `review.max_connections` for good, and enough of them (a
slowloris) had every reviewer turned away with 503. Here a connection that has not sent a whole request, head and
body, within `REQUEST_TIMEOUT_S` of opening, or of its previous response, is closed. The page's own work is not
timed: the deadline is on what the client sends, and on what it reads — a client that pipelines requests and never
reads the answers holds its connection while the responses wait in the server's buffer (2.8 MB after 4,000
`GET /login`); once the buffer is past its high-water mark at a deadline, the connection is dropped, buffer and all.

The deadlines bound how long one connection lasts, not how many one client opens again: 300 idle connections from
one address, each reopened as it was closed, kept every reviewer on 503. So one address holds at most
`review.max_connections_per_client` at once; a connection past it is closed as it opens. A reverse proxy in
`review.forwarded_allow_ips` carries every client's connections and is not capped (the proxy's own limits apply).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Callable, Iterable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 10.0
CLOSE_REASONS = ("slow_request", "unread_responses", "per_client")


class TrustedProxies:
    """Whether a peer address is one of the configured reverse proxies (addresses, networks, or `*`)."""

    def __init__(self, entries: Iterable[str]) -> None:
        self.everyone = False
        self._names: set[str] = set()
        self._networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in entries:
            if entry.strip() == "*":
                self.everyone = True
                continue
            try:
                self._networks.append(ipaddress.ip_network(entry.strip(), strict=False))
            except ValueError:
                self._names.add(entry.strip())

    def __contains__(self, host: str) -> bool:
        if self.everyone or host in self._names:
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in network for network in self._networks)


class GuardedProtocol(H11Protocol):
    """`H11Protocol` with the request and reading deadlines and the per-client cap (see the module)."""

    _deadline: asyncio.TimerHandle | None = None

    def __init__(
        self,
        *args: Any,
        per_client: int | None = None,
        proxies: TrustedProxies | None = None,
        on_close: Callable[[str], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._per_client = per_client
        self._proxies = proxies or TrustedProxies(())
        self._on_close = on_close

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        host = self.client[0] if self.client else None
        if self._per_client is not None and host is not None and host not in self._proxies:
            held = sum(1 for c in self.server_state.connections if _host(c) == host)
            if held > self._per_client:
                log.info("closed a connection from %s: it holds %d already", host, held - 1)
                self._closing("per_client", transport.close)
                return
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        waiting = self.cycle  # a request head received starts a new cycle
        self._deadline = self.loop.call_later(REQUEST_TIMEOUT_S, self._late, waiting)

    def _late(self, waiting: object) -> None:
        if self.transport.is_closing():
            return
        cycle = self.cycle
        # no new request head since the deadline was set, or its body still coming
        idle = cycle is waiting and (cycle is None or cycle.response_complete)
        if idle or self.conn.their_state is h11.SEND_BODY:
            log.info(
                "closed a connection from %s that sent no whole request within %g s",
                self.client,
                REQUEST_TIMEOUT_S,
            )
            self._closing("slow_request", self.transport.close)
        elif self.flow.write_paused:
            log.info(
                "dropped a connection from %s that read none of its responses within %g s",
                self.client,
                REQUEST_TIMEOUT_S,
            )
            self._closing("unread_responses", self.transport.abort)  # close() would wait for the buffer to go
        else:  # a page still being made: its work is not timed; look again later
            self._deadline = self.loop.call_later(REQUEST_TIMEOUT_S, self._late, cycle)

    def _closing(self, reason: str, close: Callable[[], None]) -> None:
        if self._on_close is not None:
            self._on_close(reason)
        close()


def _host(connection: object) -> str | None:
    client = getattr(connection, "client", None)
    return client[0] if client else None
