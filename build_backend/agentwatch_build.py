"""PEP 517 build backend: setuptools', plus what a compiled build needs in its build environment.

With `AGENTWATCH_COMPILE=1`, `pip wheel .` makes a wheel whose hot modules are compiled
by mypyc (setup.py); mypy type-checks them first, so the build environment also needs the packages they import
and their type stubs: the `service` extra and pyproject.toml's `[tool.agentwatch] compile-requires`. An editable
install with the variable set is refused with the reason. Without the variable this backend is setuptools' own.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import build_sdist, build_wheel, get_requires_for_build_sdist

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "compile_requires",
    "compiling",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
_SWITCH = "AGENTWATCH_COMPILE"
NOT_EDITABLE = (
    "AGENTWATCH_COMPILE=1 builds wheels (`pip wheel .`, `pip install .`), not editable installs: the compiled "
    "modules would run instead of the sources an editable install is for. Unset AGENTWATCH_COMPILE for "
    "`pip install -e .`."
)


def compiling() -> bool:
    """Whether this build compiles (`AGENTWATCH_COMPILE=1`)."""
    return os.environ.get(_SWITCH, "") == "1"


def compile_requires() -> list[str]:
    """What a compiled build installs before it builds: the `service` extra and `compile-requires`."""
    with open(PYPROJECT, "rb") as f:
        declared = tomllib.load(f)
    service = declared["project"]["optional-dependencies"]["service"]
    return [*service, *declared["tool"]["agentwatch"]["compile-requires"]]


@contextmanager
def _uncompiled() -> Iterator[None]:
    """setup.py run as for a pure build: the hooks before `build_wheel` need no mypyc (which is not installed
    yet when the requirements are asked for), and the metadata is the same either way."""
    switch = os.environ.pop(_SWITCH, None)
    try:
        yield
    finally:
        if switch is not None:
            os.environ[_SWITCH] = switch


def _editable() -> None:
    """Refuse a compiled editable install with the reason (else setup.py fails on a missing mypyc)."""
    if compiling():
        raise SystemExit(NOT_EDITABLE)


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements for an editable install (refused when compiling)."""
    _editable()
    return list(_setuptools.get_requires_for_build_editable(config_settings))


def prepare_metadata_for_build_editable(
    metadata_directory: str, config_settings: dict[str, Any] | None = None
) -> str:
    """setuptools' metadata for an editable install (refused when compiling)."""
    _editable()
    return str(_setuptools.prepare_metadata_for_build_editable(metadata_directory, config_settings))


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """setuptools' editable wheel (refused when compiling)."""
    _editable()
    return str(_setuptools.build_editable(wheel_directory, config_settings, metadata_directory))


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements, and a compiled build's when compiling."""
    extra = compile_requires() if compiling() else []
    with _uncompiled():
        return [*_setuptools.get_requires_for_build_wheel(config_settings), *extra]


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: dict[str, Any] | None = None
) -> str:
    """setuptools' metadata, written as for a pure build (a compiled one has the same)."""
    with _uncompiled():
        return str(_setuptools.prepare_metadata_for_build_wheel(metadata_directory, config_settings))
