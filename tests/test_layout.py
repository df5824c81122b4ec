"""The layout static tools rely on, and the design's dependency rules, read from the source (module-level imports)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STAGES = ("collector", "scorers", "exporters", "judge", "review")


def _modules() -> dict[str, Path]:
    """Every module of the `agentwatch` package by dotted name, found through the stage links as Python does."""
    found: dict[str, Path] = {}
    for dirpath, _dirs, files in os.walk(ROOT / "agentwatch", followlinks=True):
        for name in files:
            if name.endswith(".py"):
                path = Path(dirpath) / name
                parts = list(path.relative_to(ROOT).with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts.pop()
                found[".".join(parts)] = path
    return found


def _imports(path: Path, known: dict[str, Path]) -> set[str]:
    """Modules of the package that `path` imports when it is imported (not inside functions or TYPE_CHECKING)."""
    out: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
                for alias in sub.names:
                    name = f"{sub.module}.{alias.name}"
                    out.add(name if name in known else sub.module)
            elif isinstance(sub, ast.Import):
                out.update(alias.name for alias in sub.names)
    return {m for m in out if m in known}


MODULES = _modules()
GRAPH = {name: _imports(path, MODULES) - {name} for name, path in MODULES.items()}


@pytest.mark.parametrize("stage", STAGES)
def test_each_stage_folder_is_linked_into_the_package(stage: str) -> None:
    link = ROOT / "agentwatch" / stage
    assert link.is_symlink() and os.readlink(link) == f"../{stage}"
    assert (ROOT / stage / "__init__.py").is_file()


def test_no_module_imports_itself_through_others() -> None:
    """No import circle: Tarjan's strongly connected components of the import graph are single modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in GRAPH:
        if module not in index:
            visit(module)
    assert len(MODULES) > 100 and circles == []


def _reaches(start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for dep in GRAPH[todo.pop()]:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def _in(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_the_design_dependency_rules_hold() -> None:
    stage = {s: f"agentwatch.{s}" for s in STAGES}
    for module in MODULES:
        deps = _reaches(module)
        if _in(module, "agentwatch.sdk"):  # the SDK runs inside the agent: none of the service
            assert not [d for d in deps if _in(d, *stage.values())], module
        if _in(module, stage["scorers"]):  # pure graders: they take a verdict, never obtain one
            bad = [
                d
                for d in deps
                if _in(d, stage["collector"], stage["exporters"], stage["review"])
                or (_in(d, stage["judge"]) and not _in(d, "agentwatch.judge.verdict", "agentwatch.judge"))
            ]
            assert not bad, (module, bad)
        if _in(module, stage["collector"]):
            assert not [d for d in deps if _in(d, stage["exporters"])], module
        if _in(module, stage["exporters"]):
            assert not [d for d in deps if _in(d, stage["collector"])], module
