"""The check every service package runs on import: is the `service` extra installed?

`pip install agentwatch` installs the SDK alone; the collector, scorers, exporters and CLI need
`pip install "agentwatch[service]"`. Importing one of them without it raises `ServiceExtraMissing`, naming the
missing package, instead of a bare "No module named ..." from deep inside. Standard library only: it runs
before any service dependency is imported.
"""

from __future__ import annotations

import importlib.util
import sys

INSTALL = 'pip install "agentwatch[service]"'

# Import name -> distribution of every package the `service` extra adds (pyproject.toml; tests/unit/test_packaging.py
# checks the two agree).
SERVICE_MODULES = {
    "pydantic": "pydantic",
    "pydantic_settings": "pydantic-settings",
    "yaml": "PyYAML",
    "typer": "typer",
    "rich": "rich",
    "numpy": "numpy",
    "scipy": "scipy",
    "google.protobuf": "protobuf",
    "opentelemetry.proto": "opentelemetry-proto",
    "confluent_kafka": "confluent-kafka",
    "prometheus_client": "prometheus-client",
    "httpx": "httpx",
    "re2": "google-re2",
}

_checked = False


class ServiceExtraMissing(ImportError):
    """A service module was imported without the `service` extra installed."""


def require(package: str) -> None:
    """Raise `ServiceExtraMissing` when a dependency of `package` (e.g. "agentwatch.collector") is not installed."""
    global _checked
    if _checked:
        return
    for module, distribution in SERVICE_MODULES.items():
        if sys.modules.get(module) is not None:
            continue
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # the parent of a dotted name is missing; an import blocked by None
            found = False
        if not found:
            raise ServiceExtraMissing(
                f"{package} needs {distribution}, which is not installed: {INSTALL}",
                name=module.partition(".")[0],
            )
    _checked = True
