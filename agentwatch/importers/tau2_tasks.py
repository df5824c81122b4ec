"""τ²-bench runs published without their tasks, and the benchmark's tasks given beside them.

A leaderboard trajectory file may carry its simulations alone: an object whose `tasks` is missing or null, or a
bare list of simulations. Each simulation names its task (`task_id`), and the reward's ground truth is in the
task, so such a run imports with every task ungraded until the benchmark's own tasks file (τ²-bench's
`data/tau2/domains/<domain>/tasks.json`) is given (`agentwatch import tau-bench --tasks`). Where the file carries
a task, its own wins.
"""

from __future__ import annotations

from typing import Any

from agentwatch.importers.results_files import JsonLines, SavedRun, TauBenchFormatError


def _simulations_alone(document: Any) -> bool:
    """Whether `document` is a bare list of τ²-bench simulations (each an object with `messages` and `task_id`,
    none a τ-bench entry's `traj`)."""
    return (
        isinstance(document, list)
        and bool(document)
        and all(
            isinstance(e, dict) and "messages" in e and "task_id" in e and "traj" not in e for e in document
        )
    )


def as_run(document: Any) -> Any:
    """A bare list of τ²-bench simulations as a run of them with no tasks; any other document as it is."""
    return {"simulations": document} if _simulations_alone(document) else document


def with_tasks(document: Any, tasks: Any) -> Any:
    """`document` (a results document, or a run saved as a directory) with the tasks it lacks taken from `tasks`
    (the benchmark's tasks file: a list of task objects, each with an `id`). TauBenchFormatError for a τ-bench
    run, whose entries carry their own tasks, and for tasks that are no such list."""
    if not isinstance(tasks, list) or not tasks or not all(isinstance(t, dict) and "id" in t for t in tasks):
        raise TauBenchFormatError("the tasks file is no list of τ²-bench tasks (objects with an `id`)")
    if isinstance(document, SavedRun):
        document.meta = {**document.meta, "tasks": _merged(document.meta.get("tasks"), tasks)}
        return document
    run = as_run(document)
    if isinstance(run, dict) and isinstance(run.get("simulations"), list):
        return {**run, "tasks": _merged(run.get("tasks"), tasks)}
    if isinstance(run, (list, JsonLines)):
        raise TauBenchFormatError(
            "tasks are given for τ²-bench runs: a τ-bench run's entries carry their own"
        )
    return run  # no run at all: the import says what it is not


def _merged(own: Any, given: list[dict[str, Any]]) -> list[Any]:
    """The file's own tasks, then those of `given` whose id none of them has."""
    mine = own if isinstance(own, list) else []
    ids = {str(t.get("id")) for t in mine if isinstance(t, dict)}
    return [*mine, *(t for t in given if str(t["id"]) not in ids)]
