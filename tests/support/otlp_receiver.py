"""An OTLP/HTTP logs receiver on loopback, and the attributes of the records it received."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


class Receiver:
    """An OTLP/HTTP logs endpoint on loopback: every `ExportLogsServiceRequest` POSTed to /v1/logs."""

    def __init__(self) -> None:
        self.requests: list[ExportLogsServiceRequest] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path != "/v1/logs" or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_error(404)
                    return
                outer.requests.append(ExportLogsServiceRequest.FromString(body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1/logs"

    def records(self) -> list[tuple[Any, Any]]:
        """(resource logs, log record) of everything received."""
        return [
            (rl, rec)
            for req in self.requests
            for rl in req.resource_logs
            for sl in rl.scope_logs
            for rec in sl.log_records
        ]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def attrs(record: Any) -> dict[str, Any]:
    """A log record's attributes as a dict of plain values."""
    return {kv.key: attribute_value(kv.value) for kv in record.attributes}


def attribute_value(v: AnyValue) -> Any:
    """The value an OTLP `AnyValue` holds (None when empty)."""
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None
