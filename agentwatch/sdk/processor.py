"""Span processors: stamping conversation attributes on every span, and a replaceable group of processors."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

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

    def __init__(self, processors: Sequence[SpanProcessor] = ()) -> None:
        self.processors: tuple[SpanProcessor, ...] = tuple(processors)
        self._failed: set[tuple[int, str]] = set()  # (processor, method) already logged with its traceback

    def replace(self, processors: Sequence[SpanProcessor]) -> None:
        """Swap in new processors, shutting the old ones down."""
        old, self.processors = self.processors, tuple(processors)
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
        """Flush every processor; False if one did not finish in time."""
        ok = True
        for p in self.processors:
            try:
                ok = p.force_flush(timeout_millis) and ok
            except Exception:
                log.exception("error flushing span processor %r", p)
                ok = False
        return ok


def _ours(span: ReadableSpan) -> bool:
    scope = span.instrumentation_scope
    return scope is not None and scope.name == TRACER_NAME
