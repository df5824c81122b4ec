"""A tiny OpenAI-compatible HTTP server for tests (stdlib only, runs in a thread).

`POST /v1/chat/completions` answers with a tool call (`get_weather`) when the last message is from the user,
and with a final text answer once a `tool` message is present; every response carries token usage. Use it
as `OpenAI(base_url=server.base_url, api_key="test")`.

For judge tests, `FakeOpenAI(responder)` answers with what `responder(request_body)` returns instead: a `Reply`
(status, JSON or raw body, headers, delay before answering — a delay longer than the client's timeout is a
hang), or a plain dict (a 200 JSON body). `Script(replies)` is a responder that plays its replies in order
and repeats the last; `verdict_reply`, `text_reply` and `refusal_reply` build chat completion bodies.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentwatch.demo.judge import ChatCompletionsServer

MODEL = "gpt-4o-mini"
RESPONSE_MODEL = "gpt-4o-mini-2024-07-18"
TOOL_CALL_ID = "call_fake_weather_1"
FINAL_TEXT = "It is 18 degrees and cloudy in Paris."
USAGE = {"tool_call": (21, 9), "final": (40, 11)}  # (prompt_tokens, completion_tokens)


def completion(request: dict[str, Any]) -> dict[str, Any]:
    """The fake model's response to one chat request."""
    messages = request.get("messages") or []
    if any(m.get("role") == "tool" for m in messages):
        message: dict[str, Any] = {"role": "assistant", "content": FINAL_TEXT}
        finish, (prompt, completion_tokens) = "stop", USAGE["final"]
    else:
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": TOOL_CALL_ID,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})},
                }
            ],
        }
        finish, (prompt, completion_tokens) = "tool_calls", USAGE["tool_call"]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": RESPONSE_MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
        },
    }


@dataclass
class Reply:
    """One scripted HTTP answer."""

    status: int = 200
    body: Any = None  # dict/list: JSON; str/bytes: sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def text_reply(
    content: str | None, usage: tuple[int, int] = (120, 30), finish: str = "stop", refusal: str | None = None
) -> dict[str, Any]:
    """A chat completion whose message content is `content`."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    return {
        "id": "chatcmpl-judge",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": RESPONSE_MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }


def verdict_reply(
    outcome: str = "complete",
    score: float = 0.9,
    explanation: str = "correct",
    usage: tuple[int, int] = (120, 30),
) -> dict[str, Any]:
    """A chat completion carrying a verdict as JSON content."""
    return text_reply(json.dumps({"outcome": outcome, "score": score, "explanation": explanation}), usage)


def refusal_reply(text: str = "I can't help with that.") -> dict[str, Any]:
    """A structured-outputs refusal."""
    return text_reply(None, refusal=text)


class Script:
    """A responder playing `replies` in order (the last one repeats); thread-safe."""

    def __init__(self, *replies: Reply | dict[str, Any]) -> None:
        self.replies = list(replies)
        self._i = 0
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply | dict[str, Any]:
        with self._lock:
            reply = self.replies[min(self._i, len(self.replies) - 1)]
            self._i += 1
        return reply


class FakeOpenAI(ChatCompletionsServer):
    """The server; `requests` holds every JSON body received, `headers` their headers."""

    def __init__(self, responder: Callable[[dict[str, Any]], Reply | dict[str, Any]] | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

        def respond(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes, dict[str, str]]:
            self.requests.append(body)
            self.headers.append(headers)
            reply = Reply(body=completion(body)) if responder is None else responder(body)
            if not isinstance(reply, Reply):
                reply = Reply(body=reply)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            data = reply.body
            payload = (
                data
                if isinstance(data, bytes)
                else (data.encode() if isinstance(data, str) else json.dumps(data).encode())
            )
            return reply.status, payload, reply.headers

        super().__init__(respond)


@pytest.fixture
def fake_openai_server() -> Iterator[FakeOpenAI]:
    """A running fake OpenAI-compatible server."""
    with FakeOpenAI() as server:
        yield server


class SlowBodyServer:
    """A server answering every POST with 200 and `body`, sent `piece` bytes at a time with `every_s` seconds
    between pieces; without `declare_length`, no Content-Length (the body ends when the connection closes).
    `sent` counts the bytes written before the client went away. A context manager."""

    def __init__(self, body: bytes, piece: int, every_s: float, declare_length: bool = True) -> None:
        owner = self
        self.sent = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if declare_length:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    for start in range(0, len(body), piece):
                        self.wfile.write(body[start : start + piece])
                        self.wfile.flush()
                        owner.sent += len(body[start : start + piece])
                        time.sleep(every_s)
                except OSError:
                    pass  # the client gave up

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> SlowBodyServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
