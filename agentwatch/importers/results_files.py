"""Where a benchmark run's results are read from: a file (gzip detected; JSON, τ-bench entries one per line, or a
τ²-bench run written a simulation a line), or a τ²-bench run saved as a directory (`results.json` without its
simulations, one file per simulation in `simulations/`, as τ²-bench writes `--save-format dir` runs and its
leaderboard submissions)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentwatch.wire import json_text
from agentwatch.wire.transcripts import MAX_DOCUMENT_BYTES, bounded_lines, file_stem, open_binary


class TauBenchFormatError(ValueError):
    """The document is neither a τ-bench nor a τ²-bench results file."""


@dataclass(slots=True)
class JsonLines:
    """τ-bench entries written one per line (JSON Lines), each with its line number; lines that are not JSON
    as (position, reason)."""

    entries: list[tuple[int, Any]]
    errors: list[tuple[str, str]]


RESULTS_FILE = "results.json"  # a τ²-bench run saved as a directory: its metadata, and beside it
SIMULATIONS_DIR = "simulations"  # one file per simulation


@dataclass(slots=True)
class SavedRun:
    """A τ²-bench run saved as a directory: the metadata of `results.json` (info, tasks) and its simulations
    as (file name, document) in name order, as τ²-bench loads them; files that could not be read as
    (file name, reason)."""

    meta: dict[str, Any]
    simulations: list[tuple[str, Any]]
    errors: list[tuple[str, str]]


def results_path(path: Path) -> Path:
    """The file holding a run's results: `path`, or the `results.json` in it when it is a directory."""
    return path / RESULTS_FILE if path.is_dir() else path


def run_name(path: Path) -> str:
    """A run's name: its file's name without extensions, or, for a run saved as a directory, the directory's."""
    if path.is_dir():
        return path.resolve().name
    if path.name == RESULTS_FILE and (path.parent / SIMULATIONS_DIR).is_dir():
        return path.resolve().parent.name
    return file_stem(path)


def saved_run(document: Any, path: Path) -> Any:
    """The run of the results file at `path` (its `document`): a τ²-bench run saved as a directory when the
    document is an object without `simulations` and a `simulations/` folder is beside it; the document as it is
    otherwise. TauBenchFormatError when the metadata names its simulations (`simulation_index`) and the folder
    is missing."""
    if not isinstance(document, dict) or "simulations" in document:
        return document
    folder = path.parent / SIMULATIONS_DIR
    if not folder.is_dir():
        if "simulation_index" in document:
            raise TauBenchFormatError(
                f"a τ²-bench run saved as a directory, without its `{SIMULATIONS_DIR}/` folder beside the file"
            )
        return document
    run = SavedRun(document, [], [])
    files = sorted(folder.glob("*.json"))
    for file in files:
        name = f"{SIMULATIONS_DIR}/{file.name}"
        try:
            raw = _simulation_bytes(file)
        except (OSError, TauBenchFormatError) as exc:
            run.errors.append((name, str(exc)))
            continue
        try:
            run.simulations.append((name, json_text.loads(raw)))
        except (ValueError, RecursionError) as exc:
            run.errors.append((name, f"not readable as JSON: {exc}"))
    index = document.get("simulation_index")
    present = {file.stem for file in files}
    for entry in index if isinstance(index, list) else []:
        sim_id = entry.get("id") if isinstance(entry, dict) else None
        if sim_id is not None and str(sim_id) not in present:
            run.errors.append(
                (f"{SIMULATIONS_DIR}/{sim_id}.json", "in the run's simulation_index, no such file")
            )
    return run


def _simulation_bytes(file: Path) -> bytes:
    """The bytes of one simulation file of a run saved as a directory, at most `MAX_DOCUMENT_BYTES`;
    TauBenchFormatError past it or for what is no regular file (a link to /dev/zero was read until memory ran
    out, a named pipe waited for ever)."""
    if not file.is_file():
        raise TauBenchFormatError("not a regular file")
    with open(file, "rb") as stream:
        raw = stream.read(MAX_DOCUMENT_BYTES + 1)
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise TauBenchFormatError(
            f"more than {MAX_DOCUMENT_BYTES >> 20} MiB: a simulation file is read whole"
        )
    return raw


def load_results(path: Path) -> Any:
    """The results document at `path` (gzip detected; a directory: its `results.json`), with the simulation
    files of a run saved as a directory (`saved_run`)."""
    file = results_path(path)
    return saved_run(load_document(read_bounded(file)), file)


def read_bounded(file: Path) -> bytes:
    """The bytes of a results file (gunzipped), at most `MAX_DOCUMENT_BYTES`: a JSON document is read whole, and
    a 1.5 MB gzip file holding 1.5 GB took 3.2 GB before it was found to be no results file; TauBenchFormatError
    past it."""
    with open_binary(file) as stream:
        raw = stream.read(MAX_DOCUMENT_BYTES + 1)
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise TauBenchFormatError(
            f"more than {MAX_DOCUMENT_BYTES >> 20} MiB (gunzipped): a results file is read whole; "
            "save a run this large as a directory (τ²-bench's results.json beside simulations/, a file each)"
        )
    return raw


def load_document(raw: bytes) -> Any:
    """The JSON document of a results file's bytes (already gunzipped), its τ-bench entries when they are
    written one per line, or a τ²-bench run written a simulation a line; TauBenchFormatError when it is none."""
    try:
        return json_text.loads(raw)
    except (ValueError, RecursionError) as exc:
        lines = _json_lines(raw)
        if lines is not None:
            return lines
        run = _simulation_lines(raw)
        if run is None:
            raise TauBenchFormatError(f"not JSON: {exc}") from exc
        return run


def lines_of(raw: bytes) -> Iterator[bytes]:
    """The lines of `raw` as the transcript reader ends them (`bounded_lines`: LF, CRLF, or CR alone in a file
    whose lines end so), none cut short. Split at LF alone, a file saved with classic Mac OS line ends was one
    line: its τ-bench entries refused as "not JSON: Extra data"."""
    for line in bounded_lines(io.BytesIO(raw), max(len(raw), 1)):
        if line is not None:  # never: no line is longer than the whole
            yield line


def first_line(raw: bytes) -> tuple[bytes, bool]:
    """The first line of `raw` (`lines_of`) and whether a line end closes it."""
    line = next(lines_of(raw), b"")
    return line, line.endswith(b"\n")


def _parsed_lines(raw: bytes) -> Iterator[tuple[int, Any, str | None]]:
    """Each line of `raw` (`lines_of`) that is not blank as (its number, its JSON value, None), or (its number,
    None, why it is not JSON)."""
    for n, line in enumerate(lines_of(raw), start=1):
        if not line.strip():
            continue
        try:
            entry = json_text.loads(line)
        except (ValueError, RecursionError) as exc:
            yield n, None, f"not JSON: {exc}"
            continue
        yield n, entry, None


def _json_lines(raw: bytes) -> JsonLines | None:
    """τ-bench entries one per line, bad lines kept as errors; None unless the first line is such an entry."""
    out = JsonLines([], [])
    for n, entry, bad in _parsed_lines(raw):
        if bad is not None:
            if not out.entries:
                return None
            out.errors.append((f"line {n}", bad))
            continue
        if not out.entries and not (isinstance(entry, dict) and "traj" in entry):
            return None
        out.entries.append((n, entry))
    return out if out.entries else None


HEADER, SIMULATION, FOOTER = "header", "simulation", "footer"


def _simulation_lines(raw: bytes) -> SavedRun | None:
    """A τ²-bench run written as it goes, one JSON object a line: a `header` with the run's `info`, a
    `simulation` with its `task` beside it for each one saved, and a `footer` counting them (harnesses built on
    τ²-bench write this). None unless the first line is such a header; bad lines and a missing or disagreeing
    footer are kept as errors, by line."""
    run: SavedRun | None = None
    tasks: dict[str, Any] = {}
    footer: dict[str, Any] | None = None
    for n, entry, bad in _parsed_lines(raw):
        if bad is not None:
            if run is None:
                return None
            run.errors.append((f"line {n}", bad))
            continue
        kind = entry.get("type") if isinstance(entry, dict) else None
        if run is None:
            if kind != HEADER or not isinstance(entry.get("info"), dict):
                return None
            run = SavedRun({"timestamp": entry.get("timestamp"), "info": entry["info"]}, [], [])
        elif kind == SIMULATION:
            task = entry.get("task")
            if isinstance(task, dict) and "id" in task:
                tasks.setdefault(str(task["id"]), task)
            run.simulations.append((f"line {n}", entry.get(SIMULATION)))
        elif kind == FOOTER:
            footer = entry
        else:
            run.errors.append(
                (f"line {n}", f"a record of type {kind!r}, neither a simulation nor the footer")
            )
    if run is None:
        return None
    run.meta["tasks"] = list(tasks.values())
    if footer is None:
        run.errors.append(("end of file", "no footer: the run may have stopped before it saved everything"))
    elif isinstance(saved := footer.get("saved"), int) and saved != len(run.simulations):
        run.errors.append(
            ("footer", f"says {saved} simulations were saved; the file holds {len(run.simulations)}")
        )
    return run
