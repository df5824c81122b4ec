"""uvicorn's HTTP/1.1 protocol with a deadline for each request.

uvicorn closes a connection idle after a response, but not one that opened and sends its request line, headers or
body slowly, or never: such connections count against `review.max_connections` for good, and enough of them (a
slowloris) had every reviewer turned away with 503. Here a connection that has not sent a whole request, head and
body, within `REQUEST_TIMEOUT_S` of opening, or of its previous response, is closed. The page's own work is not
timed: the deadline is on what the client sends.
"""

from __future__ import annotations

import asyncio
import logging

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 10.0


class RequestDeadlineProtocol(H11Protocol):
    """`H11Protocol`, closing a connection whose next request is not all there within REQUEST_TIMEOUT_S."""

    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
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
        # no new request head since the deadline was set, or its body still coming
        if self.cycle is waiting or self.conn.their_state is h11.SEND_BODY:
            log.info(
                "closed a connection from %s that sent no whole request within %g s",
                self.client,
                REQUEST_TIMEOUT_S,
            )
            self.transport.close()
