"""Write the ground-truth writes τ-bench's and τ²-bench's environments refuse from their starting database
(`agentwatch/data/tau_refused_writes.json`, read by `agentwatch import tau-bench`).

Both benchmarks reward a task by replaying its ground-truth actions on the starting database and comparing the
database that gives with the agent's. A ground-truth write the environment refuses there changes nothing in
that replay (a return refunded to a payment method the shop refuses, an exchange a gift card cannot pay for), so
an agent that does not make it loses nothing; graded as required, every such conversation failed. This script
replays each task's ground truth with the benchmarks' own code and keeps each write refused both where the
ground truth makes it and on the starting database alone (a write refused only after an earlier ground-truth
write might be the agent's to make). It needs the benchmarks' source trees, not the network (their model
clients are replaced by stand-ins that are never called):

    git clone https://github.com/sierra-research/tau-bench /tmp/tau-bench
    git clone https://github.com/sierra-research/tau2-bench /tmp/tau2-bench
    git -C /tmp/tau2-bench show 37199f3:data/tau2/domains/retail/tasks.json > /tmp/retail-1.0.json
    python -m scripts.tau_refused_writes --tau /tmp/tau-bench --tau2 /tmp/tau2-bench \\
        --tau2-tasks retail=/tmp/retail-1.0.json > agentwatch/data/tau_refused_writes.json

(pydantic is all the environments need beside what agentwatch installs; τ²-bench's also imports loguru,
addict, deepdiff, toml, docstring-parser and pandas.)
"""

from __future__ import annotations

import copy
import importlib
import json
import sys
import types
from pathlib import Path
from typing import Any

import click

_TAU_MODULES = ("tasks_test", "tasks_train", "tasks_dev")


def _package(name: str, path: Path) -> None:
    """Register `name` as a package at `path` without running its `__init__` (which imports model clients)."""
    module = types.ModuleType(name)
    module.__path__ = [str(path)]
    sys.modules[name] = module


def _stand_in(name: str, **attributes: Any) -> None:
    """A module of `name` whose `attributes` are never called: the environments import model clients at the top."""
    module = types.ModuleType(name)
    for key, value in attributes.items():
        setattr(module, key, value)
    sys.modules.setdefault(name, module)


def _refused(run: Any, db: Any, name: str, arguments: dict[str, Any]) -> str | None:
    """What the environment said refusing `run(db, name, arguments)` (an exception, or τ-bench's `Error: …`
    result), or None when it was accepted."""
    try:
        result = run(db, name, arguments)
    except Exception as exc:  # noqa: BLE001 - every refusal of a τ²-bench tool is an exception
        return str(exc) or type(exc).__name__
    return result if isinstance(result, str) and result.startswith("Error") else None


class _Found:
    """The refused writes found, one entry per domain, write and arguments, with the tasks that hold it."""

    def __init__(self) -> None:
        self.writes: dict[tuple[str, str], dict[str, Any]] = {}

    def add(self, domain: str, name: str, arguments: dict[str, Any], error: str, task: str) -> None:
        """Record that `task`'s ground truth holds the write `name(arguments)`, refused with `error`."""
        key = (domain, json.dumps({"name": name, "arguments": arguments}, sort_keys=True))
        entry = self.writes.setdefault(
            key, {"name": name, "arguments": arguments, "error": error[:200], "tasks": []}
        )
        entry["tasks"].append(task)

    def table(self) -> dict[str, list[dict[str, Any]]]:
        """The writes by domain, in a stable order."""
        out: dict[str, list[dict[str, Any]]] = {}
        for (domain, _), entry in sorted(self.writes.items()):
            out.setdefault(domain, []).append(entry)
        return out


def _replay(
    found: _Found, domain: str, label: str, actions: list[tuple[str, dict[str, Any]]], run: Any, fresh: Any
) -> None:
    """Replay `actions` on a `fresh()` database with `run(db, name, arguments)`; record each write refused there
    and on a database of its own."""
    db = fresh()
    for name, arguments in actions:
        error = _refused(run, db, name, arguments)
        if error is not None and _refused(run, fresh(), name, arguments) is not None:
            found.add(domain, name, arguments, error, label)


def _tau(root: Path, found: _Found, writes: dict[str, set[str]]) -> None:
    """τ-bench's retail and airline tasks, replayed with its tools on its data."""
    _stand_in("litellm", completion=None)
    _package("tau_bench", root / "tau_bench")
    _package("tau_bench.envs", root / "tau_bench" / "envs")
    sys.path.insert(0, str(root))
    for domain in ("retail", "airline"):
        _package(f"tau_bench.envs.{domain}", root / "tau_bench" / "envs" / domain)
        data = importlib.import_module(f"tau_bench.envs.{domain}.data").load_data()
        tools = {
            t.get_info()["function"]["name"]: t
            for t in importlib.import_module(f"tau_bench.envs.{domain}.tools").ALL_TOOLS
        }

        def run(db: Any, name: str, arguments: dict[str, Any], tools: Any = tools) -> Any:
            return tools[name].invoke(data=db, **arguments)

        for module_name in _TAU_MODULES:
            try:
                module = importlib.import_module(f"tau_bench.envs.{domain}.{module_name}")
            except ImportError:
                continue
            tasks = getattr(module, module_name.upper(), None) or module.TASKS
            for index, task in enumerate(tasks):
                actions = [(a.name, dict(a.kwargs)) for a in task.actions if a.name in writes[domain]]
                label = f"tau-bench {domain} {module_name.removeprefix('tasks_')} {index}"
                _replay(found, domain, label, actions, run, lambda data=data: copy.deepcopy(data))


def _tau2(root: Path, found: _Found, writes: dict[str, set[str]], extra: list[tuple[str, Path]]) -> None:
    """τ²-bench's tasks of each domain (its own task files and `extra` ones), replayed with its environments."""
    _stand_in("litellm")
    _package("tau2", root / "src" / "tau2")
    sys.path.insert(0, str(root / "src"))
    files = [(d, root / "data" / "tau2" / "domains" / d / "tasks.json") for d in writes] + extra
    for domain, path in files:
        if not path.is_file():
            continue
        environment = importlib.import_module(f"tau2.domains.{domain}.environment")
        try:
            base = environment.get_environment().tools.db
        except (OSError, ValueError) as exc:  # a database missing from this checkout
            click.echo(f"{domain}: no database ({exc}); skipped", err=True)
            continue

        def fresh(environment: Any = environment, base: Any = base) -> Any:
            return environment.get_environment(db=copy.deepcopy(base)).tools

        def run(tools: Any, name: str, arguments: dict[str, Any]) -> Any:
            return getattr(tools, name)(**arguments)

        for task in json.loads(path.read_text(encoding="utf-8")):
            criteria = task.get("evaluation_criteria") or {}
            actions = [
                (a["name"], dict(a.get("arguments") or {}))
                for a in criteria.get("actions") or ()
                if a.get("requestor", "assistant") == "assistant" and a["name"] in writes[domain]
            ]
            _replay(found, domain, f"tau2-bench {domain} {path.name} {task['id']}", actions, run, fresh)


@click.command()
@click.option("--tau", "tau_root", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--tau2", "tau2_root", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--tau2-tasks", "extra", multiple=True, help="DOMAIN=FILE: another version of a task file")
def main(tau_root: Path | None, tau2_root: Path | None, extra: tuple[str, ...]) -> None:
    """Print the refused ground-truth writes as JSON."""
    from agentwatch.importers.tau_domains import DOMAINS

    writes = {d: set(DOMAINS[d].write) for d in ("retail", "airline")}
    found = _Found()
    if tau_root is not None:
        _tau(tau_root, found, writes)
    if tau2_root is not None:
        pairs = [(d, Path(f)) for d, _, f in (e.partition("=") for e in extra)]
        _tau2(tau2_root, found, writes, pairs)
    click.echo(json.dumps(found.table(), indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
