"""Span processors: stamping conversation attributes on every span, and a replaceable group of processors."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter

from agentwatch.sdk.context import _CURRENT
from agentwatch.sdk.runtime import TRACER_NAME
from agentwatch.wire import attributes as A

log = logging.getLogger(__name__)


class ConversationSpanProcessor(SpanProcessor):
    """Stamps the current conversation's attributes on spans of other instrumentations started inside it.

    Spans of agentwatch's own tracer (`@trace`, marker spans) are stamped where they are created, so they carry
    the conversation without this processor.
    """

    def __init__(self, agent: str | None = None, version: str | None = None) -> None:
        self.agent = agent
        self.version = version

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Copy conversation id, task, user, budget, tags, agent and version onto the span; track turns."""
        state = _CURRENT.get()
        if state is None or _ours(span):
            return
        try:
            attrs = span.attributes or {}
            span.set_attributes(state.stamp(attrs, self.agent, self.version))
            if attrs.get(A.OPERATION) == A.INVOKE_AGENT:
                state.start_turn(span)
        except Exception:
            log.exception("could not stamp conversation attributes")

    def on_end(self, span: ReadableSpan) -> None:
        """Forget a finished turn."""
        state = _CURRENT.get()
        if state is not None and span.context is not None and not _ours(span):
            state.end_turn(span.context.span_id)

    def shutdown(self) -> None:
        """Nothing to release."""

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing buffered."""
        return True


class ProcessorGroup(SpanProcessor):
    """Our processors, installed once on a TracerProvider and replaceable by a later `configure` call.

    A processor that raises is logged and passed over: the SDK calls processors in the agent's thread, without
    a guard, and one of `extra_processors` raising in `on_end` made every `@trace` call raise after its
    function had returned, and starved the exporter after it.
    """

    def __init__(
        self, processors: Sequence[SpanProcessor] = (), exporter: SpanExporter | None = None
    ) -> None:
        self.processors: tuple[SpanProcessor, ...] = tuple(processors)
        # the exporter behind the last processor: its deliveries are what a flush waits for
        self.exporter = exporter
        self._failed: set[tuple[int, str]] = set()  # (processor, method) already logged with its traceback

    def replace(self, processors: Sequence[SpanProcessor], exporter: SpanExporter | None = None) -> None:
        """Swap in new processors (and the exporter behind them), shutting the old ones down."""
        old, self.processors, self.exporter = self.processors, tuple(processors), exporter
        for p in old:
            try:
                p.shutdown()
            except Exception:
                log.exception("error shutting down span processor %r", p)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Forward to every processor."""
        for p in self.processors:
            try:
                p.on_start(span, parent_context=parent_context)
            except Exception:
                self._log_failure(p, "on_start")

    def on_end(self, span: ReadableSpan) -> None:
        """Forward to every processor."""
        for p in self.processors:
            try:
                p.on_end(span)
            except Exception:
                self._log_failure(p, "on_end")

    def _log_failure(self, processor: SpanProcessor, method: str) -> None:
        """Log a processor's error: with its traceback the first time, then quietly (it fails on every span)."""
        key = (id(processor), method)
        if key in self._failed:
            log.debug("span processor %r failed in %s", processor, method, exc_info=True)
            return
        self._failed.add(key)
        log.exception(
            "span processor %r failed in %s; its spans go on to the other processors", processor, method
        )

    def shutdown(self) -> None:
        """Shut every processor down."""
        for p in self.processors:
            try:
                p.shutdown()
            except Exception:
                log.exception("error shutting down span processor %r", p)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush every processor, then wait for the exporter's deliveries, all within `timeout_millis`; False if
        something did not finish in time.

        OpenTelemetry's processors hand their spans to the exporter and return True (the batch processor of
        opentelemetry-sdk 1.45 ignores the timeout), which for the Kafka exporter means queued in its client,
        not delivered: a process frozen after such a flush (a serverless function) lost them."""
        deadline = time.monotonic() + timeout_millis / 1000
        ok = True
        for p in self.processors:
            try:
                ok = p.force_flush(_left_ms(deadline)) and ok
            except Exception:
                log.exception("error flushing span processor %r", p)
                ok = False
        exporter = self.exporter
        if exporter is not None:
            try:
                ok = exporter.force_flush(_left_ms(deadline)) and ok
            except Exception:
                log.exception("error flushing span exporter %r", exporter)
                ok = False
        return ok


def _left_ms(deadline: float) -> int:
    """Milliseconds until `deadline` (monotonic), at least 0."""
    return max(0, int((deadline - time.monotonic()) * 1000))


def _ours(span: ReadableSpan) -> bool:
    scope = span.instrumentation_scope
    return scope is not None and scope.name == TRACER_NAME
