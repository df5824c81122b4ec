"""The exporter service in a thread of the test, with its /metrics on a free loopback port."""

from __future__ import annotations

import threading

from agentwatch.config import Settings
from agentwatch.exporters.service import ExporterService


def run_service(settings: Settings) -> tuple[ExporterService, threading.Event, threading.Thread, int]:
    """Start the exporter on `settings` and wait for its replay: (service, stop event, thread, port)."""
    service = ExporterService(settings)
    port = service.start_http(port=0, host="127.0.0.1")
    stop = threading.Event()
    thread = threading.Thread(target=service.run, args=(stop,), daemon=True)
    thread.start()
    assert service.replayed.wait(30), "replay did not finish"
    return service, stop, thread, port


def stop_service(service: ExporterService, stop: threading.Event, thread: threading.Thread) -> None:
    stop.set()
    thread.join(15)
    assert not thread.is_alive()
    service.stop_http()
