"""Which hot-path modules run compiled (Cython builds them at `pip install .`; see setup.py) and which as Python.

This file uses only the standard library: setup.py reads `COMPILED_MODULES` from it before anything is installed.
"""

from __future__ import annotations

import importlib
import importlib.machinery

# The collector's per-span and per-conversation path, as profiled with benchmarks/collector.py.
COMPILED_MODULES = (
    "agentwatch.collector.assembler",
    "agentwatch.collector.conventions",
    "agentwatch.collector.decode",
    "agentwatch.collector.decode_json",
    "agentwatch.collector.messages",
    "agentwatch.collector.reconstruct",
    "agentwatch.collector.span_record",
    "agentwatch.scorers.answer",
    "agentwatch.scorers.conversation",
    "agentwatch.scorers.cost",
    "agentwatch.scorers.hallucination",
    "agentwatch.scorers.names",
    "agentwatch.scorers.outcome",
    "agentwatch.scorers.text",
    "agentwatch.scorers.tool_correctness",
    "agentwatch.scorers.utilization",
)

# Where each package's sources live in the repository (as pyproject.toml's `package-dir` says).
SOURCE_DIRS = {"agentwatch.collector": "collector", "agentwatch.scorers": "scorers"}


def source_path(module: str) -> str:
    """The repository path of a module's source, e.g. `collector/decode.py`."""
    package, _, name = module.rpartition(".")
    return f"{SOURCE_DIRS[package]}/{name}.py"


def is_compiled(module: str) -> bool:
    """Whether `module` is imported from an extension module rather than from Python source."""
    path = getattr(importlib.import_module(module), "__file__", None) or ""
    return path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def compiled_summary() -> str:
    """One line for logs and benchmarks: how many hot-path modules are compiled."""
    done = sum(is_compiled(m) for m in COMPILED_MODULES)
    if done == len(COMPILED_MODULES):
        return f"hot path compiled ({done} modules, Cython)"
    if done == 0:
        return "hot path is pure Python (editable install, AGENTWATCH_PURE_PYTHON, or no C compiler at install)"
    return f"hot path partly compiled: {done} of {len(COMPILED_MODULES)} modules"
