"""Server-side sessions of the review service, kept in its store (SQLite or PostgreSQL).

Signing in makes a random 256-bit token; the browser's (signed) cookie carries it and the store keeps only its
SHA-256, the reviewer, and when the session began, was last used and ends. A request is signed in only while
its row exists, is not past `expires_at` (the sign-in's `session_max_age_s`) and was used within
`session_idle_s`. Signing out deletes the row: a cookie copied before sign-out reads and writes nothing after
it. Rows are touched at most once a minute (a write per request would be a write per page view) and expired
ones are deleted by the retention loop.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy.engine import Engine

from agentwatch.review.tables import sessions

_TOUCH_S = 60.0


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


class Sessions:
    """Create, look up, revoke and expire sessions in the store's `review_sessions` table."""

    def __init__(
        self, engine: Engine, max_age_s: float, idle_s: float, clock: Callable[[], float] = time.time
    ) -> None:
        self.engine = engine
        self.max_age_s = max_age_s
        self.idle_s = idle_s
        self._clock = clock

    def create(self, reviewer: str) -> str:
        """A new session of `reviewer`; its token (for the cookie, never stored)."""
        token = secrets.token_urlsafe(32)
        now = self._clock()
        with self.engine.begin() as c:
            c.execute(
                insert(sessions).values(
                    id=_digest(token),
                    reviewer=reviewer,
                    created_at=now,
                    last_seen=now,
                    expires_at=now + self.max_age_s,
                )
            )
        return token

    def reviewer(self, token: object) -> str | None:
        """The reviewer of a live session with this token, else None (unknown, revoked, expired or idle)."""
        if not isinstance(token, str) or not 20 <= len(token) <= 100:
            return None
        digest, now = _digest(token), self._clock()
        s = sessions.c
        with self.engine.connect() as c:
            row = c.execute(select(s.reviewer, s.last_seen, s.expires_at).where(s.id == digest)).one_or_none()
        if row is None or row.expires_at <= now or row.last_seen + self.idle_s <= now:
            return None
        if now - row.last_seen >= _TOUCH_S:
            with self.engine.begin() as c:
                c.execute(update(sessions).where(s.id == digest).values(last_seen=now))
        return str(row.reviewer)

    def revoke(self, token: object) -> bool:
        """End the session with this token; whether there was one."""
        if not isinstance(token, str):
            return False
        with self.engine.begin() as c:
            return bool(c.execute(delete(sessions).where(sessions.c.id == _digest(token))).rowcount)

    def revoke_reviewer(self, reviewer: str) -> int:
        """End every session of `reviewer`; how many."""
        with self.engine.begin() as c:
            return int(c.execute(delete(sessions).where(sessions.c.reviewer == reviewer)).rowcount or 0)

    def expire(self) -> int:
        """Delete sessions past their end or idle for longer than `idle_s`; how many."""
        now = self._clock()
        s = sessions.c
        with self.engine.begin() as c:
            gone = c.execute(
                delete(sessions).where(or_(s.expires_at <= now, s.last_seen <= now - self.idle_s))
            )
            return int(gone.rowcount or 0)

    def active(self) -> int:
        """Sessions alive now."""
        now = self._clock()
        s = sessions.c
        with self.engine.connect() as c:
            query = (
                select(func.count())
                .select_from(sessions)
                .where(s.expires_at > now, s.last_seen > now - self.idle_s)
            )
            return int(c.execute(query).scalar_one())
