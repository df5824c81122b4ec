"""A tiny OpenAI-compatible HTTP server for tests (stdlib only, runs in a thread).

`POST /v1/chat/completions` answers with a tool call (`get_weather`) when the last message is from the user,
and with a final text answer once a `tool` message is present; every response carries token usage. Use it
as `OpenAI(base_url=server.base_url, api_key="test")`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import pytest

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
            "tool_calls": [{
                "id": TOOL_CALL_ID,
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})},
            }],
        }
        finish, (prompt, completion_tokens) = "tool_calls", USAGE["tool_call"]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": RESPONSE_MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion_tokens,
                  "total_tokens": prompt + completion_tokens},
    }


class FakeOpenAI:
    """The server; `requests` holds every JSON body received."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self.send_error(400, "invalid JSON")
                    return
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404, "only /chat/completions")
                    return
                outer.requests.append(body)
                payload = json.dumps(completion(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The URL to give `OpenAI(base_url=...)`."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def fake_openai_server() -> Iterator[FakeOpenAI]:
    """A running fake OpenAI-compatible server."""
    with FakeOpenAI() as server:
        yield server
