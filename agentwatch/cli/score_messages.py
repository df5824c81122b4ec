"""What `agentwatch score` says on stderr and how it ends: its exit statuses, errors, the warnings about
conversation ids read more than once, the verdict line every run ends with, and why nothing could be read."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from agentwatch.safe_text import one_line

if TYPE_CHECKING:
    from agentwatch.report.model import Report
    from agentwatch.wire.transcripts import LineError


EXIT_OK, EXIT_GATE, EXIT_USAGE = 0, 1, 2


def fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    """Say `message` as an error on stderr; the exit (status 2 unless `code`) for the caller to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def warn_collisions(ids: list[str]) -> None:
    """Name the conversation ids used by several versions on stderr (each counts once per version)."""
    from agentwatch.report.wording import first_few

    if ids:
        typer.echo(
            one_line(
                f"{len(ids)} conversation id(s) occur under several versions of one agent: {first_few(ids)}; "
                "each counts once in its version's section"
            ),
            err=True,
        )


def warn_duplicates(ids: list[str], extra: int) -> None:
    """Name the conversation ids read more than once for one agent version (each counts once: its last)."""
    from agentwatch.report.wording import first_few, plural

    if ids:
        typer.echo(
            one_line(
                f"warning: {plural(len(ids), 'conversation id')} read more than once "
                f"({plural(extra, 'extra record')}): {first_few(ids)}; each counts once, its last record"
            ),
            err=True,
        )


# what looking at a file again raises when it is unreadable, or a gzip file damaged or cut short (said above)
_UNREADABLE = (OSError, EOFError, zlib.error)


def why_nothing(files: list[Path], errors: list[LineError]) -> str:
    """The files read, each with why it gave no conversation: another command's file (naming that command),
    empty, or its malformed lines."""
    from agentwatch.importers.formats import sniff, wrong_format

    bad: dict[str, int] = {}
    for e in errors:
        bad[e.path] = bad.get(e.path, 0) + 1
    parts = []
    for f in files:
        try:  # a named pipe was read once already: opened again, it would wait for a writer that never comes
            found = sniff(f) if f.is_file() else None
        except _UNREADABLE:
            found = None
        other = (
            None
            if found is None or found.kind == "empty"
            else wrong_format(f, found, ("transcripts",), "lines")
        )
        n = bad.get(str(f), 0)
        if other is not None:  # "<f> holds …: use `…`"
            parts.append(f"{f} ({other.removeprefix(f'{f} ')})")
        elif n:
            parts.append(f"{f} ({n} malformed line(s) skipped)")
        else:
            parts.append(f"{f} (empty: no line holds a conversation)")
    return ", ".join(parts)


def overwritten_input(files: list[Path], out: Path | None, details: Path | None) -> str | None:
    """Why `--out` or `--details` would write over a transcript file given, or over each other; else None.
    (They are written after the files are read: the transcripts would be lost without a word.)"""
    for option, target in (("--out", out), ("--details", details)):
        hit = next((f for f in files if target is not None and _same_file(target, f)), None)
        if hit is not None:
            return f"{option} {target} is the transcript file {hit}: writing it would destroy what it scores"
    if out is not None and details is not None and _same_file(out, details):
        return f"--out and --details are one file ({out}): one would overwrite the other"
    return None


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (through links and `..` when it exists)."""
    try:
        return a.samefile(b)
    except OSError:  # one does not exist (yet): the same path names the same file
        return a.absolute() == b.absolute()


def directory_hint(path: Path) -> str | None:
    """Why a directory given to `score` is no transcript file, naming the command that reads it (a τ²-bench run
    saved as a directory); None for a path that is no directory."""
    if not path.is_dir():
        return None
    if (path / "results.json").is_file():
        return (
            f"{path} is a directory: a τ²-bench run saved as one (`results.json`, `simulations/`): use "
            f"`agentwatch import tau-bench {path} --out DIR`, then score DIR's transcripts"
        )
    return f"{path} is a directory: give the transcript files in it (e.g. {path}/*.jsonl)"


def verdict_line(report: Report, gate: bool, code: int, out: Path | None) -> str:
    """The verdict in one line for stderr (a CI log): the gates that failed with their values, the regression
    checks that found one, where the report went and the exit status — whatever the format."""
    from agentwatch.report.model import COUNTED_GATES
    from agentwatch.report.text import final_verdict, gate_name, gate_value

    rd = report.readiness
    failed: list[str] = []
    notes: list[str] = []
    for g in rd.gates:
        if g.passed:
            continue
        value = gate_value(g)
        which = (
            ""
            if g.name in COUNTED_GATES
            else (" lower bound" if rd.estimate == "lower" else f" {rd.estimate}")
        )
        failed.append(f"{gate_name(g)}{which} {value} (needs {g.op} {g.threshold:g})")
        if g.note and g.note not in notes:
            notes.append(g.note)
    b = report.baseline
    if b is not None and b.regression:
        failed += [
            f"[{c.scope}] P(pass^{c.k} dropped by more than {c.margin:g}) = {c.probability:.3f}"
            for c in b.checks
            if c.regressed and c.probability is not None
        ]
    parts = [f"verdict: {final_verdict(report).rstrip('.')}"]
    if failed:
        parts.append(", ".join(failed))
    parts += notes
    if out is not None:
        parts.append(f"report in {out}")
    ungated = " (--no-gate: the gate does not set it)" if not gate and code == 0 and failed else ""
    parts.append(f"exit {code}{ungated}")
    return "; ".join(parts)
