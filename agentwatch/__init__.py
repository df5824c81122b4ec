"""agentwatch: production reliability monitoring for AI agents.

The instrumentation API (`trace`, `conversation`, `configure`, `record_usage`) is imported lazily so that the
offline scorers and the CLI do not pay for OpenTelemetry set-up they do not use. `pip install agentwatch`
installs that SDK alone; the collector, scorers, exporters and CLI need `pip install "agentwatch[service]"`
(agentwatch/service_extra.py says so when they are imported without it).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_SDK_NAMES = ("trace", "conversation", "configure", "record_usage", "shutdown")

__all__ = ["__version__", "configure", "conversation", "record_usage", "shutdown", "trace"]


def __getattr__(name: str) -> Any:
    if name in _SDK_NAMES:
        from agentwatch import sdk

        return getattr(sdk, name)
    raise AttributeError(f"module 'agentwatch' has no attribute {name!r}")
