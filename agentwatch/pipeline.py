"""Collector + estimator + exporter in one process: the single-machine default (`serve`, `demo`).

The collector writes scores to the scores topic and the exporter reads them back from it, exactly as two
separate services would, so restarts and replays behave the same in one process as in a deployment.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from agentwatch.collector.metrics import register
from agentwatch.collector.service import CollectorService
from agentwatch.config import Settings
from agentwatch.exporters.service import ExporterService

log = logging.getLogger(__name__)


class Pipeline:
    """The collector in one thread, the exporter in another, one /metrics endpoint for both."""

    def __init__(self, settings: Settings, stop_event: threading.Event | None = None) -> None:
        if settings.collector.scores_topic != settings.exporter.scores_topic:
            raise ValueError(
                f"collector.scores_topic ({settings.collector.scores_topic}) differs from "
                f"exporter.scores_topic ({settings.exporter.scores_topic})"
            )
        self.settings = settings
        self.stop_event = stop_event or threading.Event()
        self.collector = CollectorService(settings)
        self.exporter = ExporterService(settings)
        register(self.collector.stats, self.exporter.registry, self.collector)
        self._threads: list[threading.Thread] = []
        self.errors: list[BaseException] = []

    def start_http(self) -> int:
        """Serve /metrics; return the port."""
        return self.exporter.start_http()

    def start(self, *, exporter_in_thread: bool = True) -> None:
        """Start the collector (and, unless told otherwise, the exporter) in background threads."""
        targets: list[tuple[str, Callable[[threading.Event], None]]] = [("collector", self.collector.run)]
        if exporter_in_thread:
            targets.append(("exporter", self.exporter.run))
        for name, target in targets:
            thread = threading.Thread(target=self._guard, args=(name, target), name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _guard(self, name: str, target: Callable[[threading.Event], None]) -> None:
        try:
            target(self.stop_event)
        except BaseException as exc:  # a dead stage must stop the whole pipeline, loudly
            log.exception("%s stopped with an error", name)
            self.errors.append(exc)
            self.stop_event.set()

    def close(self, timeout_s: float = 30.0) -> None:
        """Stop both stages, wait for them, stop serving /metrics."""
        self.stop_event.set()
        for thread in self._threads:
            thread.join(timeout_s)
        self.exporter.stop_http()
