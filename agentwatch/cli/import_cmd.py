"""`agentwatch import tau-bench|openai-chat FILE --out DIR`: other formats as transcripts (and policies)."""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentwatch.cli.app import app
from agentwatch.safe_text import one_line

if TYPE_CHECKING:
    from agentwatch.importers.formats import Kind, Layout

import_app = typer.Typer(
    help="Import benchmark results or chat logs as transcripts (and task policies from ground truth).",
    no_args_is_help=True,
)
app.add_typer(import_app, name="import")

EXIT_USAGE = 2
MAX_ERRORS_SHOWN = 20

OutOption = Annotated[
    Path,
    typer.Option(
        "--out",
        help="Directory to write transcripts.jsonl in (tau-bench: and the task policies, policies.yaml).",
    ),
]


def _out_dir(out: Path) -> Path:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        typer.echo(f"error: cannot create {out}: {exc.strerror or exc}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    return out


def _refuse_other_formats(path: Path, reads: tuple[Kind, ...], layout: Layout | None) -> None:
    """Exit 2 with the command to use when `path` holds a format this command does not read."""
    from agentwatch.importers.formats import sniff, wrong_format
    from agentwatch.wire.transcripts import TranscriptFileError

    if path.is_fifo() or path.is_char_device():
        # a pipe (`<(zcat logs.jsonl.gz)`) is read once: looked into first, the import opened it again and waited
        # for ever for a writer, or had what the look took
        return
    try:
        why = wrong_format(path, sniff(path), reads, layout)
    except TranscriptFileError as exc:
        why = f"{path}: {exc}"
    except (OSError, EOFError, zlib.error):  # a gzip file damaged or cut short: the import reads what it can
        return
    if why is not None:
        typer.echo(f"error: {why}", err=True)
        raise typer.Exit(EXIT_USAGE)


def _write_transcripts(directory: Path, lines: Iterable[dict[str, Any]]) -> int:
    """Write the transcript lines to DIR/transcripts.jsonl through a temporary file: an import that yields
    no conversation leaves an earlier transcripts.jsonl as it was."""
    from agentwatch.importers import TRANSCRIPTS, write_lines

    target = directory / TRANSCRIPTS
    partial = target.with_name(f".{TRANSCRIPTS}.partial")
    too_long: list[str] = []
    try:
        n = write_lines(partial, lines, too_long)
        if n:
            partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    _report_errors(too_long)
    return n


def _report_errors(errors: list[str], what: str = "skipped") -> None:
    for line in errors[:MAX_ERRORS_SHOWN]:
        typer.echo(one_line(f"{what}: {line}"), err=True)
    if len(errors) > MAX_ERRORS_SHOWN:
        typer.echo(f"{what}: … and {len(errors) - MAX_ERRORS_SHOWN} more", err=True)


@import_app.command("tau-bench")
def tau_bench(
    results: Annotated[
        Path,
        typer.Argument(
            metavar="RESULTS",
            help="τ-bench results (JSON array) or τ²-bench results (JSON object; or a run saved as a directory: "
            "the directory, or its results.json); gzip detected.",
        ),
    ],
    out: OutOption,
    agent: Annotated[
        str, typer.Option(help="Agent name on every transcript and policy.")
    ] = "tau-bench-agent",
    version: Annotated[str | None, typer.Option(help="Agent version (default: the file's name).")] = None,
    tasks: Annotated[
        Path | None,
        typer.Option(
            help="τ²-bench's tasks file (data/tau2/domains/<domain>/tasks.json) for a run published without its "
            "tasks (a leaderboard trajectory file): the tasks the file lacks are read from it.",
        ),
    ] = None,
) -> None:
    """Transcripts (task, attempt, system prompt, the reward as the outcome label) and one policy per task
    from its ground-truth actions with effects and its required outputs."""
    from agentwatch.importers import POLICIES, TRANSCRIPTS, write_policies
    from agentwatch.importers.formats import sniff_bytes, wrong_format
    from agentwatch.importers.results_files import (
        TauBenchFormatError,
        load_document,
        load_results,
        read_bounded,
        results_path,
        run_name,
        saved_run,
    )
    from agentwatch.importers.tau2_tasks import with_tasks
    from agentwatch.importers.tau_bench import import_results
    from agentwatch.wire.transcripts import TranscriptFileError

    stem = run_name(results)
    try:
        file = results_path(results)
        raw = read_bounded(file)
        why = wrong_format(file, sniff_bytes(raw), ("tau-bench", "tau2-bench"), None)
        if why is not None:
            typer.echo(f"error: {why}", err=True)
            raise typer.Exit(EXIT_USAGE)
        document = saved_run(load_document(raw), file)
        if tasks is not None:
            document = with_tasks(document, load_results(tasks))
        imported = import_results(document, agent, version or stem, stem)
    except (TranscriptFileError, TauBenchFormatError, OSError, EOFError, zlib.error) as exc:
        typer.echo(f"error: {results}: {exc}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    directory = _out_dir(out)
    _report_errors([f"{results}: {where}: {why}" for where, why in imported.errors])
    _report_errors([f"{results}: {where}: {why}" for where, why in imported.warnings], "warning")
    n = _write_transcripts(directory, imported.lines)
    if n == 0:
        typer.echo(f"error: no conversation could be imported from {results}", err=True)
        raise typer.Exit(EXIT_USAGE)
    header = (
        f"Task policies of {results.name} ({imported.format}), written by `agentwatch import tau-bench`:\n"
        "the ground-truth actions with effects (lookups and handoffs left out), free-text arguments\n"
        "ignored, the required outputs. Use with `agentwatch score --config THIS_FILE transcripts.jsonl`."
    )
    if imported.domain is not None:
        header += (
            f"\nThe ground truth's tools are τ-bench's {imported.domain} environment's: only its writes have "
            "effects\n(`read_only_tools`), the agent's own tools are read-only."
        )
        if imported.formerly:
            header += (
                "\nIts commit is one of tau2-bench's before 1.0.1, whose grading recorded every call of a "
                "discoverable tool:\none the ground truth does not make is forbidden, a read too."
            )
    if imported.refused:
        header += (
            "\n\nGround-truth writes the environment refuses from its starting database, not required (the "
            "reward's\nreplay is refused too, and changes nothing):\n" + "\n".join(imported.refused)
        )
    ungraded = [f"task {task}: {why}" for task, why in imported.ungraded.items()]
    if ungraded:
        header += "\n\nTasks without a policy (their conversations are not graded):\n" + "\n".join(ungraded)
    write_policies(directory / POLICIES, imported.policies, header)
    for line in ungraded[:MAX_ERRORS_SHOWN]:
        typer.echo(one_line(f"not graded: {line}"), err=True)
    if len(ungraded) > MAX_ERRORS_SHOWN:
        typer.echo(f"not graded: … and {len(ungraded) - MAX_ERRORS_SHOWN} more tasks", err=True)
    typer.echo(
        f"{imported.format}"
        + (f" ({imported.domain})" if imported.domain else "")
        + f": {n} conversation(s) → {directory / TRANSCRIPTS}; "
        f"{len(imported.policies)} task policies → {directory / POLICIES}"
        + (f"; {len(ungraded)} task(s) without one, not graded" if ungraded else "")
        + (f"; {len(imported.errors)} record(s) skipped" if imported.errors else "")
    )


@import_app.command("openai-chat")
def openai_chat(
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE",
            help='JSON Lines, one conversation per line: {"messages": [...]} or a '
            "list of messages (or a SWE-agent / mini-swe-agent trajectory, as a line or a whole .traj file); "
            "gzip detected.",
        ),
    ],
    out: OutOption,
    agent: Annotated[str | None, typer.Option(help="Agent name, where a line does not name one.")] = None,
    version: Annotated[
        str | None, typer.Option(help="Agent version, where a line does not name one.")
    ] = None,
    task: Annotated[str | None, typer.Option(help="Task, where a line does not name one.")] = None,
    error_prefix: Annotated[
        list[str] | None,
        typer.Option(
            "--error-prefix",
            help="A tool result starting with this marks a failed call (repeatable; default: Error:).",
        ),
    ] = None,
) -> None:
    """Transcripts from chat-format logs: a user message opens a turn, tool results are paired with waiting
    calls by id (then by order), system messages are the agent's instructions."""
    from agentwatch.importers import TRANSCRIPTS
    from agentwatch.importers.openai_chat import ERROR_PREFIXES, read_chat_lines
    from agentwatch.wire.transcripts import LineError, TranscriptFileError

    _refuse_other_formats(file, ("chat",), "lines")
    errors: list[LineError] = []
    prefixes = tuple(error_prefix) if error_prefix else ERROR_PREFIXES
    directory = _out_dir(out)
    try:
        lines = read_chat_lines(file, errors, prefixes, agent=agent, version=version, task=task)
        n = _write_transcripts(directory, lines)
    except (TranscriptFileError, OSError, EOFError, zlib.error) as exc:
        typer.echo(f"error: {file}: {exc}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    _report_errors([str(e) for e in errors])
    if n == 0:
        typer.echo(f"error: no conversation could be imported from {file}", err=True)
        raise typer.Exit(EXIT_USAGE)
    typer.echo(
        f"openai-chat: {n} conversation(s) → {directory / TRANSCRIPTS}"
        + (f"; {len(errors)} line(s) skipped" if errors else "")
    )
