"""Which build of agentwatch is installed: Python source only, or a compiled build (setup.py, AGENTWATCH_COMPILE=1)
whose hot modules are mypyc extensions beside their source.

Read from the installed files, not from what has been imported: standard library only, so that `--version` and
the collector's first log line can say it before anything heavy loads.
"""

from __future__ import annotations

from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
# The longest first (".cpython-311-x86_64-linux-gnu.so" before ".so"), as the import system tries them.
_SUFFIXES = sorted(EXTENSION_SUFFIXES, key=len, reverse=True)


def compiled_modules() -> list[str]:
    """Dotted names of agentwatch's modules installed as compiled extensions, sorted (empty: pure Python)."""
    found = []
    for path in _PACKAGE.rglob("*"):
        suffix = next((s for s in _SUFFIXES if path.name.endswith(s)), None)
        if suffix is not None:
            relative = path.relative_to(_PACKAGE.parent).with_name(path.name.removesuffix(suffix))
            found.append(".".join(relative.parts))
    return sorted(found)


def build_line() -> str:
    """The build in a few words: "pure Python", or "compiled by mypyc: 57 modules"."""
    modules = compiled_modules()
    return f"compiled by mypyc: {len(modules)} modules" if modules else "pure Python"
