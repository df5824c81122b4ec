"""The packaging split: `pip install agentwatch` is the SDK alone, the service needs `agentwatch[service]`.

What the guards check and what pyproject.toml declares agree; the built wheel itself is tested in
tests/integration/test_wheel.py.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from agentwatch.service_extra import SERVICE_MODULES

ROOT = Path(__file__).resolve().parents[2]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()


def test_the_guard_checks_exactly_the_service_extra() -> None:
    """agentwatch/service_extra.py and pyproject.toml list the same packages; the SDK needs none of them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    service = {_name(r) for r in project["optional-dependencies"]["service"]}
    assert service == {d.lower() for d in SERVICE_MODULES.values()}
    base = {_name(r) for r in project["dependencies"]}
    assert base == {
        "opentelemetry-api",
        "opentelemetry-sdk",
        "opentelemetry-exporter-otlp-proto-common",
        "kafka-python",
        "crc32c",
    }
    assert "agentwatch[service]" in project["optional-dependencies"]["test"]


def test_the_review_guard_checks_exactly_the_review_extra() -> None:
    """agentwatch/review/__init__.py and the `review` extra list the same packages, on top of `service`."""
    from agentwatch.review import REVIEW_MODULES

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    review = {_name(r) for r in project["optional-dependencies"]["review"]}
    assert review == {"agentwatch"} | {d.lower() for d in REVIEW_MODULES.values()}
    assert "agentwatch[service]" in project["optional-dependencies"]["review"]
    assert "agentwatch[review]" in project["optional-dependencies"]["test"]
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert setuptools["packages"]["find"]["include"] == ["agentwatch*"]  # found, never listed by hand
    assert setuptools["package-data"]["agentwatch.review"] == ["templates/*.html"]
