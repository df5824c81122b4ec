"""Build hook: a plain pure-Python build, or, with `AGENTWATCH_COMPILE=1`, the same sources with the modules
listed in pyproject.toml's `[tool.agentwatch] compiled` compiled by mypyc (docs/collector.md#compiled-build).

Everything else is in pyproject.toml. A compiled build needs mypy (which brings mypyc) and a C compiler where it
is built, never where its wheel is installed; the modules keep their Python source beside the extension, which
is what runs wherever no compiled wheel fits.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent


def compiled_modules() -> list[str]:
    """The source files a compiled build compiles (pyproject.toml, `[tool.agentwatch] compiled`)."""
    with open(HERE / "pyproject.toml", "rb") as f:
        return list(tomllib.load(f)["tool"]["agentwatch"]["compiled"])


def ext_modules() -> list[object]:
    """mypyc's extension modules when `AGENTWATCH_COMPILE=1`, else none."""
    if os.environ.get("AGENTWATCH_COMPILE", "") != "1":
        return []
    from mypyc.build import mypycify

    modules = compiled_modules()
    # One shared library per folder (agentwatch_scorers__mypyc, …): calls within a folder stay native, and
    # `build_ext -j 2` compiles two at once. One library for all took 85 s to build on one core and scored within
    # noise of this (`python -m benchmarks.score --n 20000` in each build, three alternating runs, 2026-12-01:
    # medians 72.3 and 73.3 µs a conversation); one per module scored 15% slower.
    by_folder: dict[str, list[str]] = {}
    for module in modules:
        by_folder.setdefault(Path(module).parent.name, []).append(module)
    groups: list[tuple[list[str], str | None]] = [(m, f"agentwatch_{f}") for f, m in by_folder.items()]
    # The project's mypy settings (pyproject.toml), but for its overrides of modules outside this list.
    options = ["--no-warn-unused-configs"]
    return list(mypycify([*options, *modules], opt_level="3", separate=groups))


# A compiled build compiles its C files on every core; a pure build has none.
setup(ext_modules=ext_modules(), options={"build_ext": {"parallel": os.cpu_count() or 1}})
