"""A raw HTTP server for tests of a judge endpoint that misbehaves: each connection's request is read (head and
a body of its Content-Length) and handed with the socket to `handler(sock, head, body)`, which writes whatever
bytes it likes, as slowly as it likes. Runs in threads on 127.0.0.1 with a free port; a context manager."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from typing import Any

Handler = Callable[[socket.socket, bytes, bytes], None]


class RawServer:
    """Serves `handler` on every connection; `requests` holds each request's head."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[bytes] = []
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._closed = threading.Event()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                piece = conn.recv(65536)
                if not piece:
                    return
                data += piece
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            while len(body) < length:
                piece = conn.recv(65536)
                if not piece:
                    break
                body += piece
            self.requests.append(head)
            self.handler(conn, head, body)
        except OSError:
            pass  # the client went away
        finally:
            conn.close()

    def __enter__(self) -> RawServer:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed.set()
        self._sock.close()


def completion_body(content: str | None = None, **extra: Any) -> bytes:
    """A chat completion whose message is `content` (a valid verdict by default), with token usage."""
    if content is None:
        content = json.dumps({"outcome": "complete", "score": 0.9, "explanation": "ok"})
    body: dict[str, Any] = {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    }
    body.update(extra)
    return json.dumps(body).encode()


def response(status: str, body: bytes, *headers: str) -> bytes:
    """The bytes of an HTTP/1.1 response with a Content-Length (the server closes the connection after it)."""
    lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", "Connection: close", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body
