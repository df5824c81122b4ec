"""Build hook: compile the collector's and scorers' hot modules with Cython when installing (not editable).

The modules stay plain Python; Cython compiles the same `.py` files into extension modules that sit beside
them (measured: 1.25–1.5× faster decode → assemble → rebuild → score, see docs/collector.md). Everything else is
configured in pyproject.toml. The build falls back to pure Python, with a warning, when there is no C
compiler; `AGENTWATCH_PURE_PYTHON=1` skips compiling. Editable installs (`pip install -e .`) are never
compiled: an extension module beside its source would keep running the old code after an edit.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

# The module list lives in agentwatch/compiled.py (standard library only), so the running service can report it.
_COMPILED = runpy.run_path(str(Path(__file__).parent / "agentwatch" / "compiled.py"))


class OptionalBuildExt(build_ext):
    """build_ext on all cores that warns and leaves pure Python when a module does not compile."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - no compiler, no headers: the pure-Python package still works
            self._fallback(exc)

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001
            self._fallback(exc, ext.name)

    @staticmethod
    def _fallback(exc: Exception, name: str = "extensions") -> None:
        print(f"agentwatch: not compiling {name} ({exc}); it runs as pure Python", file=sys.stderr)


def _extensions() -> list:
    """The Cython extension modules, or none (editable install, AGENTWATCH_PURE_PYTHON, no Cython)."""
    if os.environ.get("AGENTWATCH_PURE_PYTHON", "").strip() not in ("", "0"):
        return []
    if any(arg in ("editable_wheel", "develop") for arg in sys.argv):
        return []
    try:
        from Cython.Build import cythonize
        from setuptools import Extension
    except ImportError:
        print("agentwatch: Cython not available; installing pure Python", file=sys.stderr)
        return []
    extensions = [Extension(m, [_COMPILED["source_path"](m)]) for m in _COMPILED["COMPILED_MODULES"]]
    return cythonize(
        extensions,
        # annotation_typing=False: Cython ignores type hints, so the compiled module behaves exactly as the
        # source (with them, `x: float` would turn an int into a C double and `x: str` would reject None)
        compiler_directives={"language_level": 3, "binding": True, "annotation_typing": False},
        nthreads=os.cpu_count() or 1,
        build_dir="build/cython",  # the generated C stays out of the source tree
        quiet=True,
    )


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
