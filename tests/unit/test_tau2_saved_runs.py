"""τ²-bench runs saved as a directory (`results.json` without its simulations, one file per simulation in
`simulations/`), as τ²-bench writes `--save-format dir` runs and its leaderboard submissions
(`tau2/data_model/simulation.py`, `Results.save(format="dir")`): imported as the same run in one file is."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentwatch.cli import app
from agentwatch.importers import results_files
from agentwatch.importers.formats import sniff
from agentwatch.importers.results_files import TauBenchFormatError, load_results, run_name
from agentwatch.importers.tau_bench import import_results
from agentwatch.report.validity import validate_run
from tests.support import published_runs
from tests.unit.test_importers import TAU2


def save_as_directory(document: dict[str, Any], folder: Path) -> Path:
    """`document` (a τ²-bench results object) written as τ²-bench's dir format does: the metadata with a
    `simulation_index` in `folder/results.json`, each simulation in `folder/simulations/<id>.json`."""
    sims = document["simulations"]
    index = [
        {
            "id": s["id"],
            "task_id": s["task_id"],
            "trial": s.get("trial"),
            "reward": (s.get("reward_info") or {}).get("reward"),
            "termination_reason": s.get("termination_reason"),
        }
        for s in sims
    ]
    (folder / "simulations").mkdir(parents=True)
    meta = {k: v for k, v in document.items() if k != "simulations"}
    (folder / "results.json").write_text(json.dumps({**meta, "simulation_index": index}, indent=2))
    for s in sims:
        (folder / "simulations" / f"{s['id']}.json").write_text(json.dumps(s, indent=2))
    return folder


def _by_conversation(lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {line["conversation_id"]: line for line in lines}


def _trials(n: int) -> dict[str, Any]:
    sim = TAU2["simulations"][0]
    return {**TAU2, "simulations": [{**sim, "id": f"sim-{t}", "trial": t} for t in range(n)]}


def test_a_run_saved_as_a_directory_imports_as_the_same_run_in_one_file(tmp_path: Path) -> None:
    document = _trials(3)
    folder = save_as_directory(document, tmp_path / "run")
    whole = import_results(document, "a", "v", "run")
    for path in (folder, folder / "results.json"):
        assert run_name(path) == "run"
        saved = import_results(load_results(path), "a", "v", "run")
        assert saved.format == "tau2-bench" and saved.errors == []
        assert _by_conversation(saved.lines) == _by_conversation(whole.lines)
        assert saved.policies == whole.policies and saved.ungraded == whole.ungraded


def test_unreadable_and_missing_simulation_files_are_reported_by_name_and_the_rest_imported(
    tmp_path: Path,
) -> None:
    folder = save_as_directory(_trials(3), tmp_path / "run")
    (folder / "simulations" / "sim-1.json").write_text('{"id": "sim-1", "messages": [')
    (folder / "simulations" / "sim-2.json").unlink()
    out = import_results(load_results(folder), "a", "v", "run")
    assert [line["conversation_id"] for line in out.lines] == ["run/task-t-1/trial-0"]
    assert [where for where, _ in out.errors] == ["simulations/sim-1.json", "simulations/sim-2.json"]
    assert out.errors[0][1].startswith("not readable as JSON")
    assert out.errors[1][1] == "in the run's simulation_index, no such file"


def test_a_simulation_file_past_the_size_bound_is_reported_by_name_and_never_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each simulation file is read with the bound a results file is read with: one of any size was read whole."""
    folder = save_as_directory(_trials(2), tmp_path / "run")
    big = folder / "simulations" / "sim-1.json"
    big.write_text(json.dumps({**json.loads(big.read_text()), "padding": " " * 1000}))
    monkeypatch.setattr(results_files, "MAX_DOCUMENT_BYTES", big.stat().st_size - 1)
    out = import_results(load_results(folder), "a", "v", "run")
    assert [line["conversation_id"] for line in out.lines] == ["run/task-t-1/trial-0"]
    assert [where for where, _ in out.errors] == ["simulations/sim-1.json"]
    assert out.errors[0][1].startswith("more than ")


def test_a_simulation_file_that_is_no_regular_file_is_reported_by_name(tmp_path: Path) -> None:
    """A link to a device (/dev/zero was read until memory ran out) or a named pipe is never opened."""
    folder = save_as_directory(_trials(2), tmp_path / "run")
    device = folder / "simulations" / "sim-1.json"
    device.unlink()
    device.symlink_to("/dev/null")
    out = import_results(load_results(folder), "a", "v", "run")
    assert [line["conversation_id"] for line in out.lines] == ["run/task-t-1/trial-0"]
    assert out.errors == [("simulations/sim-1.json", "not a regular file")]


def test_metadata_without_its_simulations_folder_is_a_format_error_saying_so(tmp_path: Path) -> None:
    folder = save_as_directory(_trials(1), tmp_path / "run")
    alone = tmp_path / "results.json"
    alone.write_text((folder / "results.json").read_text())
    with pytest.raises(TauBenchFormatError, match="without its `simulations/` folder"):
        load_results(alone)
    assert sniff(alone).kind == "tau2-bench"  # `agentwatch score` names the importer
    run = CliRunner().invoke(app, ["import", "tau-bench", str(alone), "--out", str(tmp_path / "o")])
    assert run.exit_code == 2 and "without its `simulations/` folder" in run.output


def test_the_import_command_reads_the_directory(tmp_path: Path) -> None:
    folder = save_as_directory(_trials(2), tmp_path / "run-7")
    (folder / "simulations" / "sim-1.json").write_text("not json")
    run = CliRunner().invoke(app, ["import", "tau-bench", str(folder), "--out", str(tmp_path / "o")])
    assert run.exit_code == 0, run.output
    assert "tau2-bench (airline): 1 conversation(s)" in run.stdout and "1 record(s) skipped" in run.stdout
    assert f"{folder}: simulations/sim-1.json: not readable as JSON" in run.stderr
    written = [json.loads(line) for line in (tmp_path / "o" / "transcripts.jsonl").read_text().splitlines()]
    assert [(t["conversation_id"], t["version"]) for t in written] == [("run-7/task-t-1/trial-0", "run-7")]


def test_a_simulation_saved_with_its_policy_gives_it_as_the_instructions() -> None:
    sim = {**TAU2["simulations"][0], "policy": "Own policy of this run."}
    out = import_results({**TAU2, "simulations": [sim]}, "a", "v", "run")
    assert out.lines[0]["system"] == "Own policy of this run."


def test_a_published_tau2_run_saved_as_a_directory_agrees_with_its_rewards_as_in_one_file(
    tmp_path: Path,
) -> None:
    """The published τ²-bench airline run (50 simulations), split as τ²-bench saves it: the same verdicts."""
    path = published_runs.require(published_runs.TAU2_AIRLINE)
    document = json.loads(gzip.decompress(path.read_bytes()))
    folder = save_as_directory(document, tmp_path / path.name.split(".")[0])
    whole, saved = validate_run(path, resamples=50), validate_run(folder, resamples=50)
    assert saved.name == whole.name and saved.skipped == whole.skipped == 0
    got = (saved.agreement.true_pass, saved.agreement.false_pass, saved.agreement.false_fail)
    assert got == (whole.agreement.true_pass, whole.agreement.false_pass, whole.agreement.false_fail)
    assert saved.agreement.n == whole.agreement.n == len(document["simulations"])


@pytest.mark.parametrize(
    ("name", "stem"),
    [
        # τ²-bench's own result names carry a model's version: two models must not become one run
        (
            "gpt-4.1-2025-04-14_airline_default_gpt-4.1-2025-04-14_4trials.json",
            "gpt-4.1-2025-04-14_airline_default_gpt-4.1-2025-04-14_4trials",
        ),
        ("gpt-4.1-mini-2025-04-14_airline.json.gz", "gpt-4.1-mini-2025-04-14_airline"),
        ("tool-calling-grok-4-0.0_range_0--1.json", "tool-calling-grok-4-0.0_range_0--1"),
        ("run.JSONL", "run"),
        (".json", ".json"),  # nothing but an extension: kept whole
    ],
)
def test_a_run_is_named_by_its_file_without_the_data_extensions(tmp_path: Path, name: str, stem: str) -> None:
    assert run_name(tmp_path / name) == stem
