"""A stand-in LLM judge for the live demo: an OpenAI-compatible chat completions server on the loopback.

It reads the transcript the real judge client sends (`OpenAIJudge`, the same code a production judge runs
through) and answers with a verdict from fixed rules that know the demo agent's failure modes, after a short
delay, with token usage, so the judge path (sampling, calls, cache, spend, verdicts in /metrics) is visible
without a model or a network. It is not a judge for anything but the demo agent.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

MODEL = "gpt-4o-mini"
LATENCY_S = 0.15

# (substring of the transcript, outcome, answer score, explanation), first match wins
RULES: tuple[tuple[str, str, float, str], ...] = (
    ("inventory service unavailable", "abandoned", 0.0, "a tool error ended the turn without an answer"),
    ("90 days", "hallucinated", 0.1, "the answer states a 90-day window the policy tool never returned"),
    ("was delivered yesterday", "hallucinated", 0.1, "the delivery claim is not in the order lookup result"),
    ("on its way", "partial_correct", 0.5, "the answer is vague and uses nothing from the lookup result"),
    ("I have refunded", "partial_incorrect", 0.2, "the agent claims a refund it never made"),
)


def verdict_for(transcript: str) -> dict[str, Any]:
    """The demo judge's verdict on a transcript."""
    for needle, outcome, score, explanation in RULES:
        if needle in transcript:
            return {"outcome": outcome, "score": score, "explanation": explanation}
    return {
        "outcome": "complete",
        "score": 0.95,
        "explanation": "the answer is correct and uses the tool results",
    }


def _completion(request: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(request.get("messages") or [])
    content = json.dumps(verdict_for(text))
    prompt = len(text) // 4
    return {
        "id": "chatcmpl-demo",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model") or MODEL,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 40, "total_tokens": prompt + 40},
    }


Respond = Callable[[dict[str, Any], dict[str, str]], tuple[int, bytes, dict[str, str]]]


class ChatCompletionsServer:
    """An OpenAI-compatible `/chat/completions` endpoint on 127.0.0.1, served in a background thread.

    `respond(request, headers)` turns a request's JSON body and headers into (status, body, extra headers).
    Use it as a context manager.
    """

    def __init__(self, respond: Respond) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the real APIs

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    request = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self.send_error(400, "invalid JSON")
                    return
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404, "only /chat/completions")
                    return
                status, body, headers = respond(request, dict(self.headers))
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the client gave up (its timeout)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        """The API root to give a client (`judge.base_url`, `OpenAI(base_url=...)`)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class DemoJudgeServer(ChatCompletionsServer):
    """The stand-in judge, answering after `latency_s` with `verdict_for` the transcript; a context manager."""

    def __init__(self, latency_s: float = LATENCY_S) -> None:
        def respond(request: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes, dict[str, str]]:
            time.sleep(latency_s)
            return 200, json.dumps(_completion(request)).encode(), {}

        super().__init__(respond)
