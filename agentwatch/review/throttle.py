"""Sign-in throttling: a cheap check before any password hashing, and a bound on the hashes run at once.

A password check costs scrypt's 32 MiB and ~0.1 s, so anonymous requests must not choose how many run. Before a
check, `SignInThrottle.admit(client, name)` answers from memory whether this client address and this name may
try now: each has at most `max_in_flight` checks running, and after `free_failures` consecutive failures it
waits `backoff_s × 2^(failures − free_failures)` (at most `max_backoff_s`) before the next try; a success
clears the name and the client. Refusals carry the seconds to wait (`Retry-After`) and add no key. Both tables
are LRUs of at most `max_entries` keys of at most `KEY_LENGTH` characters, a key backing off the last to go, and a
key idle for `forget_s` is forgotten, so memory is bounded whatever the traffic.

`HashGate` bounds the hashes running at once across all clients (a botnet rotating addresses and names still
costs at most `concurrent × 32 MiB`); a request finding `waiting` others already queued is refused at once.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

KEY_LENGTH = 64  # characters of a client address or name the tables key by


@dataclass(slots=True)
class _Entry:
    failures: int = 0
    in_flight: int = 0
    blocked_until: float = 0.0
    last: float = 0.0


class Refused(Exception):
    """A sign-in attempt refused before any hashing; `retry_after_s` says when to try again."""

    def __init__(self, reason: str, retry_after_s: float) -> None:
        super().__init__(reason)
        self.reason = reason  # "throttled" or "busy"
        self.retry_after_s = retry_after_s


class SignInThrottle:
    """Per client address and per name: checks in flight, consecutive failures, backoff (module docstring)."""

    def __init__(
        self,
        *,
        free_failures: int = 5,
        backoff_s: float = 1.0,
        max_backoff_s: float = 900.0,
        max_in_flight: int = 2,
        max_entries: int = 10_000,
        forget_s: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.free_failures = free_failures
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_in_flight = max(1, max_in_flight)
        self.max_entries = max(1, max_entries)
        self.forget_s = forget_s
        self._clock = clock
        self._lock = threading.Lock()
        self._tables: dict[str, OrderedDict[str, _Entry]] = {"client": OrderedDict(), "name": OrderedDict()}

    def admit(self, client: str, name: str | None) -> None:
        """Reserve a check for `client` (and `name`, when the attempt names one); Refused if it must wait.

        A refusal remembers nothing new: refused attempts under made-up names, free to send, would otherwise
        fill the name table and push a name's backoff out of it."""
        now = self._clock()
        with self._lock:
            keys = self._keys(client, name)
            known = [self._tables[kind].get(key) for kind, key in keys]
            current = [e for e in known if e is not None and not self._forgotten(e, now)]
            wait = max((e.blocked_until - now for e in current), default=0.0)
            if wait > 0:
                raise Refused("throttled", wait)
            if any(e.in_flight >= self.max_in_flight for e in current):
                raise Refused("throttled", 1.0)
            for kind, key in keys:
                self._entry(kind, key, now).in_flight += 1

    def done(self, client: str, name: str | None, ok: bool) -> float:
        """The reserved check ended (`ok`: it signed in); the backoff now in force for the failure, in seconds."""
        now = self._clock()
        blocked = 0.0
        with self._lock:
            for kind, key in self._keys(client, name):
                e = self._entry(kind, key, now)
                e.in_flight = max(0, e.in_flight - 1)
                if ok:
                    e.failures, e.blocked_until = 0, 0.0
                    continue
                e.failures += 1
                over = e.failures - self.free_failures
                if over >= 0:
                    delay = min(self.max_backoff_s, self.backoff_s * 2.0 ** min(over, 30))
                    e.blocked_until = max(e.blocked_until, now + delay)
                    blocked = max(blocked, delay)
        return blocked

    def release(self, client: str, name: str | None) -> None:
        """The reserved check did not run (no hash slot): free it without counting a failure."""
        now = self._clock()
        with self._lock:
            for kind, key in self._keys(client, name):
                e = self._entry(kind, key, now)
                e.in_flight = max(0, e.in_flight - 1)

    def entries(self) -> dict[str, int]:
        """Keys remembered per table (client, name)."""
        with self._lock:
            return {kind: len(table) for kind, table in self._tables.items()}

    def _keys(self, client: str, name: str | None) -> list[tuple[str, str]]:
        # both cut to 64 characters (an address is at most 45, 60 with a zone): behind a proxy trusted with `*`,
        # X-Forwarded-For names the client in whatever its sender wrote, up to a header's 16 KB
        keys = [("client", client[:KEY_LENGTH])]
        if name:
            keys.append(("name", name[:KEY_LENGTH]))
        return keys

    def _forgotten(self, entry: _Entry, now: float) -> bool:
        return now - entry.last > self.forget_s and entry.in_flight == 0

    def _entry(self, kind: str, key: str, now: float) -> _Entry:
        table = self._tables[kind]
        entry = table.get(key)
        if entry is None or self._forgotten(entry, now):
            entry = table[key] = _Entry()
        table.move_to_end(key)
        entry.last = now
        while len(table) > self.max_entries:
            _evict(table, now)
        return entry


_EVICTION_SCAN = 64


def _evict(table: OrderedDict[str, _Entry], now: float) -> None:
    """Forget the least recently used key not backing off nor checking (among the oldest `_EVICTION_SCAN`),
    else the least recently used: a name's backoff outlives new names unless the table is all backoffs."""
    for key, entry in itertools.islice(table.items(), _EVICTION_SCAN):
        if entry.blocked_until <= now and entry.in_flight == 0:
            del table[key]
            return
    table.popitem(last=False)


class HashGate:
    """At most `concurrent` password hashes at once, at most `waiting` requests queued for one (asyncio)."""

    def __init__(self, concurrent: int = 1, waiting: int = 8) -> None:
        self.concurrent = max(1, concurrent)
        self.waiting = max(0, waiting)
        self._semaphore: asyncio.Semaphore | None = None  # made on the server's loop at first use
        self._queued = 0

    async def __aenter__(self) -> HashGate:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.concurrent)
        if self._semaphore.locked() and self._queued >= self.waiting:
            raise Refused("busy", 1.0)
        self._queued += 1
        try:
            await self._semaphore.acquire()
        finally:
            self._queued -= 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._semaphore is not None
        self._semaphore.release()
