"""Checking who signs in, for the pages: throttled before any hashing, counted and logged, sessions in the store.

Three ways in: the sign-in form (name and password or token, then a server-side session), and on reads an
`Authorization` header, HTTP Basic (name:password) or Bearer (token). Each goes through the same steps:

1. `SignInThrottle.admit(client, name)`: refused at once (429, `Retry-After`) while the client address or the
   name is backing off or already has checks running; nothing is hashed.
2. `HashGate` (password checks only): at most `max_concurrent_hashes` scrypt runs at once; a request finding
   the queue full is refused (503).
3. The check itself; its result is counted (`agentwatch_review_signins_total{method, result}`) and a failure
   is logged with the name (repr: a newline in it cannot forge a log line) and the client address.
"""

from __future__ import annotations

import base64
import binascii
import logging

from starlette.concurrency import run_in_threadpool

from agentwatch.config import ReviewConfig
from agentwatch.review.auth import Reviewers
from agentwatch.review.metrics import ReviewStats
from agentwatch.review.sessions import Sessions
from agentwatch.review.throttle import HashGate, Refused, SignInThrottle

log = logging.getLogger(__name__)

FORM, BASIC, BEARER = "form", "basic", "bearer"


class SignIn:
    """The sign-in checks of one review service (module docstring)."""

    def __init__(
        self, reviewers: Reviewers, sessions: Sessions, stats: ReviewStats, config: ReviewConfig
    ) -> None:
        self.reviewers = reviewers
        self.sessions = sessions
        self.stats = stats
        self.throttle = SignInThrottle(
            free_failures=config.signin_free_failures,
            backoff_s=config.signin_backoff_s,
            max_backoff_s=config.signin_max_backoff_s,
        )
        self.gate = HashGate(config.max_concurrent_hashes, config.max_waiting_hashes)

    async def check(self, client: str, name: str, secret: str, method: str = FORM) -> str | None:
        """The reviewer `name` when `secret` is theirs, else None; Refused (throttled, busy) before any hash."""
        reviewer = None
        try:
            self.throttle.admit(client, name)
        except Refused as refused:
            self._refused(method, refused, client, name)
            raise
        checked = False
        try:
            async with self.gate:
                reviewer = await run_in_threadpool(self.reviewers.check, name, secret)
                checked = True
        except Refused as refused:
            self._refused(method, refused, client, name)
            raise
        finally:
            blocked = self.throttle.done(client, name, reviewer is not None) if checked else None
            if not checked:
                self.throttle.release(client, name)
        self._result(method, reviewer, client, name, blocked or 0.0)
        return reviewer

    async def from_header(self, client: str, authorization: str) -> str | None:
        """The reviewer an `Authorization: Bearer TOKEN` or `Basic base64(name:secret)` header names, or None."""
        scheme, _, value = authorization.strip().partition(" ")
        scheme, value = scheme.lower(), value.strip()
        if scheme == "basic" and value:
            try:
                name, sep, secret = base64.b64decode(value, validate=True).decode().partition(":")
            except (ValueError, binascii.Error, UnicodeDecodeError):
                name, sep, secret = "", "", ""
            if sep and name:
                return await self.check(client, name, secret, BASIC)
            self._result(BASIC, None, client, "", 0.0)
            return None
        if scheme == "bearer" and value:
            try:
                self.throttle.admit(client, None)
            except Refused as refused:
                self._refused(BEARER, refused, client, "")
                raise
            reviewer = self.reviewers.bearer(value)  # one SHA-256: no gate needed
            blocked = self.throttle.done(client, None, reviewer is not None)
            self._result(BEARER, reviewer, client, "", blocked)
            return reviewer
        self._result("header", None, client, "", 0.0)
        return None

    def _result(self, method: str, reviewer: str | None, client: str, name: str, blocked: float) -> None:
        self.stats.count_signin(method, "ok" if reviewer is not None else "failed")
        if reviewer is not None:
            if method == FORM:
                log.info("%s signed in from %s", reviewer, client)
            return
        log.warning("failed sign-in (%s) as %r from %s", method, name[:64], client)
        if blocked:
            log.warning(
                "sign-in from %s as %r backs off for %.0f s after repeated failures",
                client,
                name[:64],
                blocked,
            )

    def _refused(self, method: str, refused: Refused, client: str, name: str) -> None:
        """Counted, and logged at debug level only: a flood of refusals must not become a flood of log lines."""
        self.stats.count_signin(method, refused.reason)
        log.debug("sign-in (%s) as %r from %s refused: %s", method, name[:64], client, refused.reason)
