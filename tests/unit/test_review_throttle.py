"""Sign-in throttling, the bound on concurrent password checks, and server-side sessions (in-memory SQLite)."""

from __future__ import annotations

import asyncio

import pytest

from agentwatch.review.sessions import Sessions
from agentwatch.review.store import Store
from agentwatch.review.throttle import HashGate, Refused, SignInThrottle
from tests.support.memory import kept_by


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def fail(throttle: SignInThrottle, client: str, name: str | None) -> float:
    throttle.admit(client, name)
    return throttle.done(client, name, ok=False)


def test_failures_are_free_then_back_off_doubling_up_to_the_maximum() -> None:
    clock = Clock()
    t = SignInThrottle(free_failures=3, backoff_s=1.0, max_backoff_s=8.0, clock=clock)
    assert [fail(t, "10.0.0.1", "alice") for _ in range(2)] == [0.0, 0.0]
    assert fail(t, "10.0.0.1", "alice") == 1.0  # the third failure starts the backoff
    with pytest.raises(Refused) as refused:
        t.admit("10.0.0.1", "alice")
    assert refused.value.reason == "throttled" and 0 < refused.value.retry_after_s <= 1.0
    waits = []
    for _ in range(5):
        clock.t += 100
        waits.append(fail(t, "10.0.0.1", "alice"))
    assert waits == [2.0, 4.0, 8.0, 8.0, 8.0]


def test_the_name_backs_off_from_any_client_and_the_client_for_any_name() -> None:
    t = SignInThrottle(free_failures=2, clock=Clock())
    fail(t, "10.0.0.1", "alice")
    fail(t, "10.0.0.2", "alice")  # two clients, one name: the name backs off
    with pytest.raises(Refused):
        t.admit("10.0.0.3", "alice")
    t.admit("10.0.0.3", "bob")  # another name from a fresh client is fine
    t.done("10.0.0.3", "bob", ok=False)
    fail(t, "10.0.0.9", "n1")
    fail(t, "10.0.0.9", "n2")  # one client rotating names: the client backs off
    with pytest.raises(Refused):
        t.admit("10.0.0.9", "n3")
    with pytest.raises(Refused):
        t.admit("10.0.0.9", None)  # bearer tokens: the client alone


def test_a_success_clears_the_name_and_the_client() -> None:
    clock = Clock()
    t = SignInThrottle(free_failures=2, clock=clock)
    fail(t, "c", "alice")
    t.admit("c", "alice")
    assert t.done("c", "alice", ok=True) == 0.0
    assert fail(t, "c", "alice") == 0.0  # counting starts again


def test_checks_in_flight_per_key_are_bounded_before_any_hashing() -> None:
    """64 requests of one client arriving at once: two get a check, the others are refused at once."""
    t = SignInThrottle(max_in_flight=2, clock=Clock())
    admitted = refused = 0
    for _ in range(64):
        try:
            t.admit("10.0.0.1", "alice")
            admitted += 1
        except Refused:
            refused += 1
    assert (admitted, refused) == (2, 62)
    t.release("10.0.0.1", "alice")  # a check that did not run: freed, no failure counted
    t.admit("10.0.0.1", "alice")


def test_the_tables_are_bounded_and_idle_keys_forgotten() -> None:
    clock = Clock()
    t = SignInThrottle(free_failures=1, max_entries=100, forget_s=60.0, clock=clock)
    for i in range(1000):
        fail(t, f"10.0.{i // 256}.{i % 256}", f"name{i}")
    assert t.entries() == {"client": 100, "name": 100}
    fail(t, "x", "y")
    clock.t += 61  # idle longer than forget_s: a fresh start (the backoff was only a second anyway)
    t.admit("x", "y")


def test_the_hash_gate_runs_at_most_concurrent_checks_and_refuses_past_the_queue() -> None:
    gate = HashGate(concurrent=2, waiting=3)
    running = peak = 0
    outcomes: list[str] = []

    async def check() -> None:
        nonlocal running, peak
        try:
            async with gate:
                running += 1
                peak = max(peak, running)
                await asyncio.sleep(0.01)
                running -= 1
                outcomes.append("checked")
        except Refused as refused:
            outcomes.append(refused.reason)

    async def main() -> None:
        await asyncio.gather(*(check() for _ in range(20)))

    asyncio.run(main())
    assert peak == 2
    assert outcomes.count("checked") == 5 and outcomes.count("busy") == 15


def sessions(clock: Clock) -> Sessions:
    return Sessions(Store("sqlite://").engine, max_age_s=3600, idle_s=600, clock=clock)


def test_a_session_lives_until_revoked_expired_or_idle() -> None:
    clock = Clock()
    s = sessions(clock)
    token = s.create("alice")
    assert s.reviewer(token) == "alice" and s.active() == 1
    assert s.reviewer(token + "x") is None and s.reviewer(None) is None and s.reviewer("short") is None
    assert s.revoke(token) and s.reviewer(token) is None and not s.revoke(token)
    idle = s.create("alice")
    clock.t += 300
    assert s.reviewer(idle) == "alice"  # touched: idle counts from now
    clock.t += 599
    assert s.reviewer(idle) == "alice"
    clock.t += 601
    assert s.reviewer(idle) is None
    busy = s.create("bob")
    for _ in range(7):  # used every 9 minutes: never idle, but the sign-in lasts max_age_s
        clock.t += 540
        alive = s.reviewer(busy)
    assert alive is None and clock.t - 1000 > 3600
    assert s.expire() == 2 and s.active() == 0


def test_the_store_keeps_only_a_hash_of_the_token() -> None:
    clock = Clock()
    s = sessions(clock)
    token = s.create("alice")
    with s.engine.connect() as c:
        (stored,) = c.exec_driver_sql("SELECT id FROM review_sessions").scalars()
    assert token not in stored and len(stored) == 64
    assert s.revoke_reviewer("alice") == 1 and s.reviewer(token) is None


def test_a_names_backoff_survives_a_flood_of_new_names() -> None:
    """A client already backing off sends 10,000 made-up names (each refused, without hashing): they used to fill
    the name table and push alice's 900 s backoff out of it. Refusals add no key; and when admitted attempts
    (each a password check) from many addresses fill the table, keys not backing off go first."""
    clock = Clock()
    t = SignInThrottle(free_failures=2, max_backoff_s=900.0, max_entries=100, clock=clock)
    for i in range(12):
        clock.t += 1000
        fail(t, f"10.0.1.{i}", "alice")
    fail(t, "6.6.6.6", "x")
    fail(t, "6.6.6.6", "y")  # the flooding client backs off
    for i in range(10_000):
        with pytest.raises(Refused):
            t.admit("6.6.6.6", f"junk-{i}")
    assert t.entries()["name"] == 3
    for i in range(500):  # a botnet: each address's attempt admitted and checked
        fail(t, f"10.1.{i // 256}.{i % 256}", f"made-up-{i}")
    assert t.entries()["name"] == 100
    clock.t += 1
    with pytest.raises(Refused) as refused:
        t.admit("10.9.9.9", "alice")
    assert refused.value.retry_after_s > 800


def test_every_name_given_with_a_secret_costs_one_password_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unknown name, a password reviewer and a token reviewer signing in by name each run one scrypt check: a
    token's own check took a millisecond where the others took 90, naming the token reviewers."""
    from agentwatch.config import Reviewer
    from agentwatch.review import auth

    checks: list[str] = []
    real = auth.verify_password

    def counted(secret: str, stored: str) -> bool:
        checks.append(stored)
        return real(secret, stored)

    monkeypatch.setattr(auth, "verify_password", counted)
    reviewers = auth.Reviewers(
        [
            Reviewer.model_validate({"name": "alice", "password_hash": auth.hash_password("pw", n=2**4)}),
            Reviewer.model_validate({"name": "ci-bot", "token_sha256": auth.token_hash("tok")}),
        ]
    )
    for name, secret, who in [
        ("nobody", "x", None),
        ("alice", "x", None),
        ("alice", "pw", "alice"),
        ("ci-bot", "x", None),
        ("ci-bot", "tok", "ci-bot"),
    ]:
        checks.clear()
        assert reviewers.check(name, secret) == who
        assert len(checks) == 1, name
    checks.clear()
    assert reviewers.bearer("tok") == "ci-bot" and checks == []  # a bearer token names no one: its hash alone


def test_the_tables_keep_a_long_client_or_name_within_its_key_length() -> None:
    """Behind a proxy trusted with `*`, X-Forwarded-For names the client as its sender wrote it (up to a
    header's 16 KB): 1,000 such addresses held 16.5 MB in a table of 1,000 keys (names were cut already)."""
    t = SignInThrottle(free_failures=1, max_entries=1000, clock=Clock())

    def feed() -> None:
        for i in range(1000):
            fail(t, f"{i:05d}" + "1" * 16_000, f"{i:05d}" + "n" * 16_000)

    assert kept_by(feed) < 1024 * 1024
    assert t.entries() == {"client": 1000, "name": 1000}
