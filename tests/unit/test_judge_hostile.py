"""OpenAIJudge against a real local server that misbehaves at the byte level: every wait bounded, every body
bounded, every failure a failed verdict (never an exception, never a grade)."""

from __future__ import annotations

import socket
import threading
import time

from agentwatch.judge.client import OpenAIJudge
from agentwatch.wire.schema import Conversation
from tests.support.hostile_http import RawServer


def conv() -> Conversation:
    return Conversation.model_validate(
        {"conversation_id": "c1", "agent": "a", "turns": [{"input": "Weather?", "answer": "Sunny."}]}
    )


def judge_for(server: RawServer, **kw: object) -> OpenAIJudge:
    kw.setdefault("timeout_s", 1.0)
    kw.setdefault("max_retries", 0)
    return OpenAIJudge(base_url=server.base_url, model="gpt-4o-mini", api_key="sk-test", **kw)  # type: ignore[arg-type]


def test_headers_trickling_in_are_a_timeout_at_the_deadline() -> None:
    """Each byte of the status line and headers arrives well inside the read timeout, so only a deadline on the
    whole exchange can cut it: the headers alone would take 60 s, and the call is bounded near 1 s."""
    stop = threading.Event()

    def trickle(sock: socket.socket, head: bytes, body: bytes) -> None:
        for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: " + b"a" * 300:
            if stop.wait(0.2):
                return
            sock.sendall(bytes([byte]))

    with RawServer(trickle) as server:
        judge = judge_for(server)
        start = time.monotonic()
        v = judge.judge(conv())
        took = time.monotonic() - start
        stop.set()
    assert v.failure == "judge_timeout" and "within 1 s" in v.detail
    assert took < 6.0  # bounded by timeout_s (1 s) plus slack, not by the 60 s the headers would take
