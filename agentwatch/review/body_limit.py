"""An ASGI middleware that refuses request bodies over a size (413), announced or streamed, and lets a request
whose client left mid-body end quietly (there is no one to answer).

The review pages take small forms (a label's note is at most 2,000 characters); without a bound, one request
could make the service read any amount into memory while parsing a form.
"""

from __future__ import annotations

from starlette.requests import ClientDisconnect
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class _TooLarge(Exception):
    pass


class BodyLimit:
    """Refuses (413) an HTTP request whose Content-Length, or whose streamed body, exceeds `max_bytes`."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for key, value in scope.get("headers", []):
            if key == b"content-length":
                try:
                    announced = int(value)
                except ValueError:
                    announced = self.max_bytes + 1
                if announced > self.max_bytes:
                    await self._refuse(scope, receive, send)
                    return
        seen = 0
        started = False

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge
            return message

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, sending)
        except _TooLarge:
            if not started:
                await self._refuse(scope, receive, send)
        except ClientDisconnect:
            pass  # the client left mid-body, or was closed for sending it too slowly: no one to answer

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = PlainTextResponse(f"request body larger than {self.max_bytes:,} bytes\n", 413)
        await response(scope, receive, send)
