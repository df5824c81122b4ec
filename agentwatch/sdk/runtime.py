"""The SDK's process-wide settings: which tracer `@trace` uses and how values are captured."""

from __future__ import annotations

from dataclasses import dataclass, field

from opentelemetry import trace as otel_trace

from agentwatch.sdk.capture import Capture, capture_settings_from_env

TRACER_NAME = "agentwatch"


@dataclass(slots=True)
class Runtime:
    """Mutable settings read by the decorators on every call (set by `configure`)."""

    tracer: otel_trace.Tracer | None = None
    capture: Capture = field(default_factory=lambda: Capture(**capture_settings_from_env()))
    agent: str | None = None
    version: str | None = None

    def get_tracer(self) -> otel_trace.Tracer:
        """The configured tracer, else the global provider's (a proxy until one is set)."""
        tracer = self.tracer
        if tracer is None:
            tracer = self.tracer = otel_trace.get_tracer(TRACER_NAME)
        return tracer


RUNTIME = Runtime()
