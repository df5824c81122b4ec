"""Span processors: stamping conversation attributes on every span, and a replaceable group of processors."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from agentwatch.sdk import attributes as A
from agentwatch.sdk.context import _CURRENT

log = logging.getLogger(__name__)


class ConversationSpanProcessor(SpanProcessor):
    """Stamps the current conversation's attributes on every span started inside it (any instrumentation)."""

    def __init__(self, agent: str | None = None, version: str | None = None) -> None:
        self.agent = agent
        self.version = version

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Copy conversation id, task, user, budget, tags, agent and version onto the span; track turns."""
        state = _CURRENT.get()
        if state is None:
            return
        try:
            span.set_attributes(state.attributes)
            attrs = span.attributes or {}
            agent = state.agent or self.agent
            if agent is not None and A.AGENT_NAME not in attrs:
                span.set_attribute(A.AGENT_NAME, agent)
            version = state.version or self.version
            if version is not None and A.AGENT_VERSION not in attrs:
                span.set_attribute(A.AGENT_VERSION, version)
            if attrs.get(A.OPERATION) == A.INVOKE_AGENT:
                if len(state.open_turns) >= 8:  # turns ended in another context were never removed
                    state.open_turns[:] = [t for t in state.open_turns if t.is_recording()]
                state.open_turns.append(span)
                state.last_turn = span.get_span_context()
                if state.pending:
                    span.set_attributes(state.pending)
                    state.pending.clear()
        except Exception:
            log.exception("could not stamp conversation attributes")

    def on_end(self, span: ReadableSpan) -> None:
        """Forget a finished turn."""
        state = _CURRENT.get()
        if state is None or not state.open_turns or span.context is None:
            return
        span_id = span.context.span_id
        state.open_turns[:] = [t for t in state.open_turns if t.get_span_context().span_id != span_id]

    def shutdown(self) -> None:
        """Nothing to release."""

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing buffered."""
        return True


class ProcessorGroup(SpanProcessor):
    """Our processors, installed once on a TracerProvider and replaceable by a later `configure` call."""

    def __init__(self, processors: Sequence[SpanProcessor] = ()) -> None:
        self.processors: tuple[SpanProcessor, ...] = tuple(processors)

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
            p.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        """Forward to every processor."""
        for p in self.processors:
            p.on_end(span)

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
            ok = p.force_flush(timeout_millis) and ok
        return ok
