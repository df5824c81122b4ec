"""The layout: real folders (no links), one room per idea with no circle between rooms, the design's dependency
rules, and a README room map that matches the folders."""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "agentwatch"


def _modules() -> dict[str, Path]:
    """Every module of the `agentwatch` package by dotted name."""
    found: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(path: Path, known: dict[str, Path], *, lazy: bool) -> set[str]:
    """Modules of the package that `path` imports: at import time only, or (lazy) anywhere in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if lazy:
        nodes = list(ast.walk(tree))
    else:
        nodes = [
            sub
            for node in tree.body
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and not (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test))
            for sub in ast.walk(node)
        ]
    out: set[str] = set()
    for sub in nodes:
        if isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
            for alias in sub.names:
                name = f"{sub.module}.{alias.name}"
                out.add(name if name in known else sub.module)
        elif isinstance(sub, ast.Import):
            out.update(alias.name for alias in sub.names)
    return {m for m in out if m in known}


MODULES = _modules()
GRAPH = {name: _imports(path, MODULES, lazy=False) - {name} for name, path in MODULES.items()}
LAZY_GRAPH = {name: _imports(path, MODULES, lazy=True) - {name} for name, path in MODULES.items()}


def _room(module: str) -> str:
    """The room of a module: its folder under agentwatch/ (`agentwatch.stats`), or the top-level module itself."""
    return ".".join(module.split(".")[:2])


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
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

    for node in graph:
        if node not in index:
            visit(node)
    return circles


def _rooms() -> set[str]:
    """The folders under agentwatch/ that are packages."""
    return {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}


def test_no_link_anywhere_in_the_tree() -> None:
    """A checkout without symlinks (Windows, core.symlinks=false) is the same tree."""
    links = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in ("venv", "build", "dist")]
        links += [
            os.path.join(dirpath, n) for n in dirnames + filenames if os.path.islink(os.path.join(dirpath, n))
        ]
    assert links == []


def test_every_folder_with_modules_is_a_package() -> None:
    """setuptools finds packages by their __init__.py: a folder without one would be left out of the wheel."""
    for path in PACKAGE.rglob("*.py"):
        assert (path.parent / "__init__.py").is_file(), path.parent


def test_no_module_imports_itself_through_others() -> None:
    assert len(MODULES) > 100 and _circles(GRAPH) == []


def test_no_circle_between_rooms() -> None:
    """Counting imports inside functions too: a room that needs another never serves it back."""
    rooms: dict[str, set[str]] = {}
    for module, deps in LAZY_GRAPH.items():
        rooms.setdefault(_room(module), set()).update(_room(d) for d in deps if _room(d) != _room(module))
    assert len(rooms) >= 15 and _circles(rooms) == []


def _reaches(start: str, graph: dict[str, set[str]] = GRAPH) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for dep in graph[todo.pop()]:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def _in(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


# Modules of service rooms the SDK may use: standard library only (checked below).
SDK_MAY_USE = ("agentwatch.kafka", "agentwatch.kafka.security", "agentwatch.kafka.refusals")
SERVICE = (
    "collector",
    "scorers",
    "exporters",
    "judge",
    "review",
    "report",
    "stats",
    "kafka",
    "cli",
    "config",
)


def test_the_design_dependency_rules_hold() -> None:
    room = {name: f"agentwatch.{name}" for name in _rooms()}
    for module in MODULES:
        deps = _reaches(module)
        if _in(module, room["sdk"]):  # the SDK runs inside the agent: none of the service
            service = [d for d in deps if _in(d, *(room[s] for s in SERVICE))]
            assert set(service) <= set(SDK_MAY_USE), (module, service)
        if _in(module, room["scorers"], room["stats"]):  # pure: they take a verdict, never obtain one
            bad = [
                d
                for d in deps
                if _in(d, room["collector"], room["exporters"], room["review"], room["kafka"], room["report"])
                or (_in(d, room["judge"]) and not _in(d, "agentwatch.judge.verdict", "agentwatch.judge"))
            ]
            assert not bad, (module, bad)
        if _in(module, room["collector"]):
            assert not [d for d in deps if _in(d, room["exporters"], room["report"])], module
        if _in(module, room["exporters"]):
            assert not [d for d in deps if _in(d, room["collector"])], module
        if _in(module, room["judge"]):
            assert not [d for d in deps if _in(d, room["scorers"])], module


@pytest.mark.parametrize(
    "module", ["agentwatch.wire", "agentwatch.wire.attributes", "agentwatch.wire.contract", *SDK_MAY_USE]
)
def test_what_the_sdk_shares_with_the_services_needs_only_the_standard_library(module: str) -> None:
    """The wire contract and the Kafka connection settings run inside the agent too: nothing beyond the standard
    library."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        names = (
            [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else []
        )
        for name in names:
            top = name.split(".")[0]
            assert (
                top in sys.stdlib_module_names
                or top == "__future__"
                or _in(name, *SDK_MAY_USE, "agentwatch.wire")
            ), (module, name)


def test_the_readme_room_map_matches_the_folders() -> None:
    """README.md's room map names every package under agentwatch/ and no other."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### The rooms", 1)[1].split("\n#", 1)[0]
    mapped = set(re.findall(r"^\| `agentwatch/(\w+)/` \|", section, flags=re.M))
    assert mapped == _rooms()
