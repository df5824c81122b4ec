"""τ²-bench runs published without their tasks (leaderboard trajectory files: an object whose `tasks` is null, or
a bare list of simulations) graded once the benchmark's tasks file is given (`import tau-bench --tasks`)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentwatch.cli.app import app
from agentwatch.importers.formats import sniff_bytes
from agentwatch.importers.results_files import SavedRun, TauBenchFormatError
from agentwatch.importers.tau2_tasks import with_tasks
from agentwatch.report.validity import validate_run
from tests.support import published_runs

runner = CliRunner()


def _run() -> dict:
    run: dict = json.loads(gzip.open(published_runs.require(published_runs.TAU2_AIRLINE)).read())
    return run


def _write(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


@pytest.mark.parametrize("shape", ["tasks null", "no tasks key", "bare list"])
def test_a_run_without_its_tasks_grades_as_the_whole_run_once_they_are_given(tmp_path, shape) -> None:
    """The dev τ²-bench run, its tasks taken off as leaderboard files publish it, then given back from a tasks
    file: every conversation graded, the verdicts those of the run as published (28/50, 100% agreement)."""
    run = _run()
    tasks = _write(tmp_path / "tasks.json", run["tasks"])
    if shape == "bare list":
        stripped: object = run["simulations"]
    elif shape == "tasks null":
        stripped = {**run, "tasks": None}
    else:
        stripped = {k: v for k, v in run.items() if k != "tasks"}
    alone = _write(tmp_path / "trajectories.json", stripped)

    whole = validate_run(published_runs.require(published_runs.TAU2_AIRLINE))
    without = validate_run(alone)
    given = validate_run(alone, tasks=json.loads(tasks.read_text()))
    assert without.agreement.n == 0 and len(without.ungraded) == 50
    assert "(give the benchmark's: `--tasks`)" in next(iter(without.ungraded.values()))
    assert given.agreement.n == whole.agreement.n == 50 and not given.ungraded
    assert [s.passed for s in given.scores] == [s.passed for s in whole.scores]
    assert sum(bool(s.passed) for s in given.scores) == 28

    out = tmp_path / "out"
    result = runner.invoke(app, ["import", "tau-bench", str(alone), "--out", str(out), "--tasks", str(tasks)])
    assert result.exit_code == 0, result.output
    assert "50 conversation(s)" in result.stdout and "50 task policies" in result.stdout
    assert "without one" not in result.stdout


def test_the_files_own_tasks_win_and_a_saved_run_takes_the_missing_ones() -> None:
    """A task the file carries is kept as it is; the given file adds those it lacks, a run saved as a directory
    included (its metadata's tasks)."""
    own = {"id": "1", "evaluation_criteria": {"actions": []}}
    given = [{"id": "1", "evaluation_criteria": None}, {"id": "2"}]
    merged = with_tasks({"simulations": [], "tasks": [own]}, given)
    assert merged["tasks"] == [own, {"id": "2"}]
    saved = with_tasks(SavedRun({"tasks": None}, [], []), given)
    assert isinstance(saved, SavedRun) and saved.meta["tasks"] == given


def test_tasks_are_refused_for_a_tau_bench_run_and_when_they_are_no_tasks(tmp_path) -> None:
    """A τ-bench run's entries carry their tasks; a file that is no list of tasks is said to be so, by the import
    command too, with the exit status of a usage error."""
    entry = {"task_id": 0, "reward": 1.0, "info": {}, "traj": []}
    with pytest.raises(TauBenchFormatError, match="τ-bench run's entries carry their own"):
        with_tasks([entry], [{"id": "0"}])
    for bad in ({"id": "0"}, [], [{"name": "x"}], ["0"]):
        with pytest.raises(TauBenchFormatError, match="no list of τ²-bench tasks"):
            with_tasks({"simulations": []}, bad)
    alone = _write(tmp_path / "trajectories.json", _run()["simulations"])
    not_tasks = _write(tmp_path / "tasks.json", {"tasks": "none"})
    result = runner.invoke(
        app, ["import", "tau-bench", str(alone), "--out", str(tmp_path / "o"), "--tasks", str(not_tasks)]
    )
    assert result.exit_code == 2 and "no list of τ²-bench tasks" in result.stderr


def test_a_bare_list_of_simulations_is_sniffed_as_a_tau2_run_not_as_chat_logs() -> None:
    """Each simulation holds `messages`, as a chat log does: `import tau-bench` refused the file as chat logs."""
    raw = json.dumps(_run()["simulations"][:3]).encode()
    sniffed = sniff_bytes(raw)
    assert (sniffed.kind, sniffed.layout) == ("tau2-bench", "document")
    chat = json.dumps([{"messages": [{"role": "user", "content": "hi"}]}]).encode()
    assert sniff_bytes(chat).kind == "chat"
