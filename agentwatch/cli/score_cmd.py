"""`agentwatch score FILE...`: score transcript files offline and print a report; exit 1 when the gate fails."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentwatch.cli.app import app
from agentwatch.cli.score_output import ReportFormat
from agentwatch.safe_text import one_line

if TYPE_CHECKING:  # the service modules load when a command runs, not when the CLI starts
    from agentwatch.scorers.decision import LabelRule
    from agentwatch.wire.transcripts import LineError

MAX_ERRORS_SHOWN = 20
MAX_IDS_SHOWN = 5


def parse_ks(value: str | None) -> list[int] | None:
    """'1,3,5' -> [1, 3, 5]; raise typer.BadParameter on anything else."""
    from agentwatch.config.scoring import MAX_K

    if value is None:
        return None
    try:
        ks = sorted({int(part) for part in value.split(",") if part.strip()})
    except ValueError:
        raise typer.BadParameter(
            f"expected comma-separated integers, got {value!r}", param_hint="--k"
        ) from None
    if not ks or ks[0] < 1 or ks[-1] > MAX_K:
        raise typer.BadParameter(
            f"k values must be integers from 1 to {MAX_K:,}, got {value!r}", param_hint="--k"
        )
    return ks


@app.command()
def score(
    files: Annotated[
        list[Path],
        typer.Argument(
            metavar="FILE...",
            help="Transcript files: JSON Lines, one Conversation per line (gzip accepted; a JSON array is "
            "read too).",
        ),
    ],
    k: Annotated[
        str | None,
        typer.Option(
            "--k",
            help="k values, comma-separated (default: 1 up to the most attempts at one task, at most 8, when "
            "tasks were attempted repeatedly; else stats.ks, 1,3,5).",
        ),
    ] = None,
    config: Annotated[Path | None, typer.Option("--config", help="YAML configuration file.")] = None,
    baseline: Annotated[
        Path | None, typer.Option("--baseline", help="A previous JSON report to compare with.")
    ] = None,
    fmt: Annotated[ReportFormat, typer.Option("--format", help="Report format.")] = ReportFormat.text,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the report here instead of stdout.")
    ] = None,
    details: Annotated[
        Path | None, typer.Option("--details", help="Write one ConversationScore JSON per line here.")
    ] = None,
    gate: Annotated[
        bool,
        typer.Option(
            "--gate/--no-gate",
            help="Exit 1 when the release gate fails (--no-gate: report it, exit 0; e.g. when writing a baseline).",
        ),
    ] = True,
    judge: Annotated[
        str | None,
        typer.Option("--judge", help="Grade the judge sample with this model (judge section of the config)."),
    ] = None,
    judge_url: Annotated[
        str | None, typer.Option("--judge-url", help="OpenAI-compatible base URL of the judge.")
    ] = None,
    judge_sample: Annotated[
        float | None,
        typer.Option("--judge-sample", min=0.0, max=1.0, help="Share of conversations the judge grades."),
    ] = None,
    judge_concurrency: Annotated[
        int | None, typer.Option("--judge-concurrency", min=1, help="Judge calls in flight.")
    ] = None,
    judge_cache: Annotated[
        Path | None, typer.Option("--judge-cache", help="Keep judge verdicts in this file between runs.")
    ] = None,
    examples: Annotated[
        int,
        typer.Option(
            "--examples",
            min=0,
            help="Conversations listed per failure mode in the JSON report (the HTML report lists every failing "
            "conversation, with its transcript).",
        ),
    ] = 10,
    labels: Annotated[
        bool,
        typer.Option(
            "--labels/--no-labels",
            help="Outcome labels in the files grade their conversations (a person's truth; default). "
            "--no-labels: grade by expectations, policies and the judge alone, the labels recorded beside "
            "the verdicts.",
        ),
    ] = True,
) -> None:
    """Score transcripts and report pass@k, pass^k, ASR and the release gate.

    Exit status: 0 ok, 1 the release gate fails (unless --no-gate) or the baseline comparison finds a
    regression, 2 usage error or unreadable input. Malformed lines are reported on stderr with their line numbers and
    skipped; more than gate.max_malformed of them (default 0) fail the gate: its figures rest on part of the input.
    """
    from agentwatch.cli.score_details import DetailsFile
    from agentwatch.cli.score_messages import (
        EXIT_GATE,
        EXIT_OK,
        directory_hint,
        fail,
        overwritten_input,
        verdict_line,
        warn_collisions,
        warn_duplicates,
        why_nothing,
    )
    from agentwatch.cli.score_output import emit, report_title
    from agentwatch.cli.score_reading import judge_runner, judge_summary, read_and_score
    from agentwatch.config import ConfigError, load_settings
    from agentwatch.report.baseline import BaselineError, load_baseline
    from agentwatch.report.build import gate_malformed
    from agentwatch.report.cases import CaseKeeper
    from agentwatch.report.model import InputSummary
    from agentwatch.report.pass_k import default_ks
    from agentwatch.report.versions import build_reports, colliding_ids, duplicate_ids
    from agentwatch.wire.transcript_keys import UnknownKeys
    from agentwatch.wire.transcripts import TranscriptFileError

    ks = parse_ks(k)
    for path in files:
        hint = directory_hint(path)
        if hint is not None:
            raise fail(hint)
    clobber = overwritten_input(files, out, details)
    if clobber is not None:
        raise fail(clobber)
    try:
        settings = load_settings(config)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    base = None
    if baseline is not None:
        try:
            base = load_baseline(baseline)
        except BaselineError as exc:
            raise fail(str(exc)) from None

    try:
        runner = judge_runner(settings, judge, judge_url, judge_sample, judge_concurrency, judge_cache)
    except (ValueError, OSError) as exc:
        raise fail(f"judge: {exc}") from None
    errors: list[LineError] = []
    unknown = UnknownKeys()
    keeper = CaseKeeper() if fmt is ReportFormat.html else None
    notes: list[str] = []
    per_file: dict[Path, int] = {}
    written = DetailsFile(details) if details is not None else None
    try:
        rule: LabelRule = "truth" if labels else "ignore"
        scores = read_and_score(
            files, settings, errors, runner, rule, unknown, keeper, notes, per_file, written
        )
    except TranscriptFileError as exc:
        raise fail(str(exc)) from None
    finally:
        if runner is not None:
            runner.close()
        if written is not None:
            written.close()
    if runner is not None:
        typer.echo(judge_summary(runner), err=True)
    for note in notes:
        typer.echo(f"note: {note}", err=True)
    for err in errors[:MAX_ERRORS_SHOWN]:
        typer.echo(one_line(f"malformed: {err}"), err=True)
    if len(errors) > MAX_ERRORS_SHOWN:
        typer.echo(f"malformed: … and {len(errors) - MAX_ERRORS_SHOWN} more", err=True)
    if errors:
        graded = sum(1 for s in scores if s.scored)
        typer.echo(
            f"{len(errors)} malformed line(s) skipped; {len(scores)} conversation(s) read, {graded} graded",
            err=True,
        )
    for warning in unknown.warnings():
        typer.echo(one_line(f"warning: {warning}"), err=True)
    if not scores:
        raise fail(f"no conversation could be read from {why_nothing(files, errors)}")

    if written is not None and written.error is not None:
        raise fail(f"cannot write {details}: {written.error}")

    shared = colliding_ids(scores)
    warn_collisions(shared)
    repeated, extra = duplicate_ids(scores)
    warn_duplicates(repeated, extra)
    report = build_reports(
        scores,
        settings,
        ks if ks is not None else default_ks(scores, settings.stats.ks),
        base,
        str(baseline),
        examples,
    )
    report.input = InputSummary(
        files=[str(f) for f in files],
        records=len(scores),
        malformed=len(errors),
        duplicate_ids=len(repeated),
        duplicate_records=extra,
        duplicate_examples=repeated[:MAX_IDS_SHOWN],
        shared_ids=len(shared),
        unknown_keys=unknown.counts(),
    )
    gate_malformed(report.readiness, len(errors), settings.gate.max_malformed)
    judge_id = runner.judge_id if runner is not None else None
    for section in (report, *report.versions):
        section.judge = judge_id
    emit(report, settings, fmt, out, report_title(scores), keeper, base)

    regression = report.baseline is not None and report.baseline.regression
    failed = (gate and not report.readiness.safe_to_ship) or regression
    code = EXIT_GATE if failed else EXIT_OK
    typer.echo(verdict_line(report, gate, code, out), err=True)
    raise typer.Exit(code)
