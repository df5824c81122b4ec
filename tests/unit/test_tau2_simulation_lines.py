"""τ²-bench runs written as they go, one JSON object a line (a `header` with the run's info, a `simulation` with
its task for each one saved, a `footer` counting them), as harnesses built on τ²-bench save them: imported as the
same run in one file is, and what is wrong with the file reported by line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agentwatch.cli import app
from agentwatch.importers.formats import sniff
from agentwatch.importers.results_files import load_results
from agentwatch.importers.tau_bench import import_results
from agentwatch.report.validity import validate_run
from tests.support import published_runs
from tests.unit.test_tau2_saved_runs import _by_conversation, _trials


def write_as_lines(document: dict[str, Any], path: Path, footer: bool = True) -> list[str]:
    """`document` (a τ²-bench results object) written a simulation a line; the lines, as written to `path`."""
    tasks = {task["id"]: task for task in document["tasks"]}
    lines = [json.dumps({"type": "header", "timestamp": document.get("timestamp"), "info": document["info"]})]
    for sim in document["simulations"]:
        lines.append(json.dumps({"type": "simulation", "task": tasks[sim["task_id"]], "simulation": sim}))
    if footer:
        lines.append(json.dumps({"type": "footer", "saved": len(document["simulations"]), "skipped": 0}))
    path.write_text("\n".join(lines) + "\n")
    return lines


def test_a_run_written_a_simulation_a_line_imports_as_the_same_run_in_one_file(tmp_path: Path) -> None:
    document = _trials(3)
    path = tmp_path / "run.jsonl"
    write_as_lines(document, path)
    whole = import_results(document, "a", "v", "run")
    lines = import_results(load_results(path), "a", "v", "run")
    assert lines.format == "tau2-bench" and lines.errors == []
    assert len(lines.lines) == 3 and _by_conversation(lines.lines) == _by_conversation(whole.lines)
    assert lines.policies == whole.policies and lines.ungraded == whole.ungraded
    assert sniff(path).kind == "tau2-bench"  # `agentwatch score` names the importer


def test_bad_lines_and_a_footer_that_disagrees_are_reported_by_line_and_the_rest_imported(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    lines = write_as_lines(_trials(3), path)
    lines[2] = lines[2][: len(lines[2]) // 2]  # the second simulation cut short
    lines.insert(3, json.dumps({"type": "progress", "done": 2}))
    path.write_text("\n".join(lines) + "\n")
    out = import_results(load_results(path), "a", "v", "run")
    assert sorted(line["conversation_id"] for line in out.lines) == [
        "run/task-t-1/trial-0",
        "run/task-t-1/trial-2",
    ]
    assert [where for where, _ in out.errors] == ["line 3", "line 4", "footer"]
    assert out.errors[0][1].startswith("not JSON")
    assert out.errors[1][1] == "a record of type 'progress', neither a simulation nor the footer"
    assert out.errors[2][1] == "says 3 simulations were saved; the file holds 2"


def test_a_run_without_its_footer_is_imported_and_said_to_be_perhaps_unfinished(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    write_as_lines(_trials(2), path, footer=False)
    out = import_results(load_results(path), "a", "v", "run")
    assert len(out.lines) == 2
    assert out.errors == [("end of file", "no footer: the run may have stopped before it saved everything")]


def test_the_import_command_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "run-7.jsonl"
    write_as_lines(_trials(2), path)
    run = CliRunner().invoke(app, ["import", "tau-bench", str(path), "--out", str(tmp_path / "o")])
    assert run.exit_code == 0, run.output
    assert "tau2-bench (airline): 2 conversation(s)" in run.stdout
    written = [json.loads(line) for line in (tmp_path / "o" / "transcripts.jsonl").read_text().splitlines()]
    assert sorted(t["conversation_id"] for t in written) == [
        "run-7/task-t-1/trial-0",
        "run-7/task-t-1/trial-1",
    ]


def test_a_published_tau2_run_written_a_simulation_a_line_agrees_with_its_rewards_as_in_one_file(
    tmp_path: Path,
) -> None:
    """The published τ²-bench airline run (50 simulations), written a simulation a line: the same verdicts."""
    path = published_runs.require(published_runs.TAU2_AIRLINE)
    document = json.loads(gzip.decompress(path.read_bytes()))
    lines = tmp_path / f"{path.name.split('.')[0]}.jsonl"
    write_as_lines(document, lines)
    whole, written = validate_run(path, resamples=50), validate_run(lines, resamples=50)
    assert written.name == whole.name and written.skipped == whole.skipped == 0
    got = (written.agreement.true_pass, written.agreement.false_pass, written.agreement.false_fail)
    assert got == (whole.agreement.true_pass, whole.agreement.false_pass, whole.agreement.false_fail)
    assert written.agreement.n == whole.agreement.n == len(document["simulations"])
