"""The review store unreachable or unwritable: what each part of the service does about it.

`STORE_DOWN` are the errors of a store that is away (PostgreSQL stopped or restarting, a connection dropped)
or cannot write now (SQLite's `database is locked` past the busy timeout, a full disk, a read-only file): each
loop retries the same work every `review.publish_retry_s` and reconnects by itself (the pool checks a
connection before lending it), a page answers 503 and saves nothing. `StoreHealth` remembers which parts last
failed, for `/healthz`, `agentwatch_review_store_errors_total` and one log line per outage (not one a retry).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable

from sqlalchemy.exc import InterfaceError, OperationalError
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

log = logging.getLogger(__name__)

STORE_DOWN: tuple[type[Exception], ...] = (OperationalError, InterfaceError)
PARTS = ("ingest", "publish", "retention", "page")


def reason(exc: BaseException) -> str:
    """The first line of a database error (no traceback, no SQL)."""
    return (str(exc).splitlines() or [type(exc).__name__])[0][:300]


class StoreHealth:
    """Which parts of the service found the store down at their last attempt, and failures counted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._down: dict[str, str] = {}  # part -> the error it last met
        self.errors: dict[str, int] = {}  # part -> store errors since start

    def failed(self, part: str, exc: BaseException, *, retried: bool = True) -> None:
        """`part` met a store error: counted; a loop (`retried`) is down until its next success, logged at
        WARNING when its outage begins; a page's error is logged each time (a person saw it)."""
        with self._lock:
            self.errors[part] = self.errors.get(part, 0) + 1
            began = part not in self._down
            if retried:
                self._down[part] = reason(exc)
        if began or not retried:
            log.warning("review store unavailable (%s): %s", part, reason(exc))

    def ok(self, part: str) -> None:
        """`part` used the store again: its outage, if any, ends (logged)."""
        if part not in self._down:
            return
        with self._lock:
            gone = self._down.pop(part, None)
        if gone is not None:
            log.warning("review store available again (%s)", part)

    def counts(self) -> dict[str, int]:
        """Store errors met since start, by part."""
        with self._lock:
            return dict(self.errors)

    def down(self) -> dict[str, str]:
        """The parts whose last attempt failed, with the error."""
        with self._lock:
            return dict(self._down)


def unavailable(health: StoreHealth) -> Callable[[Request, Exception], Awaitable[Response]]:
    """A Starlette exception handler: a page that met a store error answers 503 (nothing saved)."""

    async def handler(request: Request, exc: Exception) -> Response:
        health.failed("page", exc, retried=False)
        return PlainTextResponse(
            "the review store cannot be reached just now: nothing was saved; try again in a moment\n",
            503,
            headers={"Retry-After": "5"},
        )

    return handler
