"""The judge's name lookup within the request's deadline: a resolver that hangs ends the call as a timeout while
it is still blocked, and a later call meanwhile shares its lookup instead of starting another thread; a name
that resolves connects to its address with the request's Host unchanged; one that does not resolve is a
connection error, retried."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from agentwatch.judge.client import OpenAIJudge
from agentwatch.wire.schema import Conversation
from tests.support.hostile_http import RawServer, completion_body, response

_real_getaddrinfo = socket.getaddrinfo


def conv() -> Conversation:
    return Conversation.model_validate(
        {"conversation_id": "c1", "agent": "a", "turns": [{"input": "Weather?", "answer": "Sunny."}]}
    )


def _reply(sock: socket.socket, _head: bytes, _body: bytes) -> None:
    sock.sendall(response("200 OK", completion_body()))


class Resolver:
    """`socket.getaddrinfo` with names of its own: `hangs.test` blocks until released (at most 10 s, so that a
    judge with no bound on lookups ends the test instead of hanging it), `answers.test` is 127.0.0.1,
    `nowhere.test` does not resolve; any other name is the real resolver's."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.asked: list[str] = []  # names looked up, as each lookup starts
        self.answered: list[str] = []  # names whose lookup returned

    def __call__(self, host: Any, port: Any, *args: Any, **kw: Any) -> Any:
        """The addresses of `host`, as its name says."""
        if host not in ("hangs.test", "answers.test", "nowhere.test"):
            return _real_getaddrinfo(host, port, *args, **kw)
        self.asked.append(host)
        if host == "nowhere.test":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        if host == "hangs.test":
            self.release.wait(10)
        self.answered.append(host)
        return _real_getaddrinfo("127.0.0.1", port, *args, **kw)


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Resolver]:
    fake = Resolver()
    monkeypatch.setattr(socket, "getaddrinfo", fake)
    yield fake
    fake.release.set()  # the lookup left running ends


def _judge(server: RawServer, host: str, sleeps: list[float] | None = None, **kw: Any) -> OpenAIJudge:
    return OpenAIJudge(
        base_url=server.base_url.replace("127.0.0.1", host),
        model="gpt-4o-mini",
        sleep=(sleeps.append if sleeps is not None else lambda _s: None),
        **kw,
    )


def test_a_hanging_lookup_is_a_timeout_while_it_still_hangs(resolver: Resolver) -> None:
    """The call ends at its deadline with the resolver still blocked, and never reaches the server; the next
    call waits for the same lookup (one thread for a host whose resolver hangs, not one per call)."""
    with RawServer(_reply) as server:
        judge = _judge(server, "hangs.test", timeout_s=0.3, max_retries=0)
        first = judge.judge(conv())
        assert resolver.answered == [], "the call waited for the lookup to end"
        second = judge.judge(conv())
        assert resolver.answered == [] and resolver.asked == ["hangs.test"]
        assert server.requests == []
    for v in (first, second):
        assert v.failure == "judge_timeout", v.reason
        assert "the name lookup of hangs.test did not end" in v.detail


def test_a_name_that_resolves_connects_to_its_address(resolver: Resolver) -> None:
    """The connection goes to the address looked up; the request still names the host."""
    with RawServer(_reply) as server:
        v = _judge(server, "answers.test", timeout_s=5.0).judge(conv())
    assert v.ok, v.reason
    assert resolver.answered == ["answers.test"]
    assert f"Host: answers.test:{server.port}".encode() in server.requests[0]


def test_a_name_that_does_not_resolve_is_a_connection_error_retried(resolver: Resolver) -> None:
    """A lookup that fails may pass next time (a resolver restarting): retried like any connection error."""
    sleeps: list[float] = []
    with RawServer(_reply) as server:
        v = _judge(server, "nowhere.test", sleeps, timeout_s=5.0, max_retries=2).judge(conv())
    assert v.failure == "judge_unavailable" and "Name or service not known" in v.detail, v.reason
    assert len(sleeps) == 2 and resolver.asked == ["nowhere.test"] * 3
