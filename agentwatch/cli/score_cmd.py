"""`agentwatch score FILE...`: score transcript files offline and print a report; exit 1 when the gate fails."""

from __future__ import annotations

import sys
from enum import Enum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentwatch.cli.app import app
from agentwatch.safe_text import one_line

if TYPE_CHECKING:  # the service modules load when a command runs, not when the CLI starts
    from rich.progress import Progress, TaskID

    from agentwatch.config import Settings
    from agentwatch.judge.runner import JudgeRunner
    from agentwatch.report.cases import CaseKeeper
    from agentwatch.report.model import Report
    from agentwatch.scorers.decision import LabelRule
    from agentwatch.wire.schema import Conversation, ConversationScore
    from agentwatch.wire.transcript_keys import UnknownKeys
    from agentwatch.wire.transcripts import LineError

EXIT_OK, EXIT_GATE, EXIT_USAGE = 0, 1, 2
MAX_ERRORS_SHOWN = 20


class ReportFormat(str, Enum):
    text = "text"
    json = "json"
    html = "html"


def parse_ks(value: str | None) -> list[int] | None:
    """'1,3,5' -> [1, 3, 5]; raise typer.BadParameter on anything else."""
    if value is None:
        return None
    try:
        ks = sorted({int(part) for part in value.split(",") if part.strip()})
    except ValueError:
        raise typer.BadParameter(
            f"expected comma-separated integers, got {value!r}", param_hint="--k"
        ) from None
    if not ks or ks[0] < 1:
        raise typer.BadParameter(f"k values must be integers >= 1, got {value!r}", param_hint="--k")
    return ks


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _title(scores: list[ConversationScore]) -> str:
    series = sorted({f"{s.agent} {s.version}" for s in scores})
    if not series:
        return "Agent Evaluation Report"
    more = f" (+{len(series) - 3} more)" if len(series) > 3 else ""
    return "Agent Evaluation Report — " + ", ".join(series[:3]) + more


def _read_and_score(
    files: list[Path],
    settings: Settings,
    errors: list[LineError],
    runner: JudgeRunner | None = None,
    labels: LabelRule = "truth",
    unknown: UnknownKeys | None = None,
    keeper: CaseKeeper | None = None,
    notes: list[str] | None = None,
    per_file: dict[Path, int] | None = None,
) -> list[ConversationScore]:
    """Read every file (progress bar on a terminal) and score each conversation; with a `JudgeRunner`, the
    judge-sampled conversations are judged first, a chunk at a time, `runner.concurrency` calls in flight.
    `labels`: how outcome labels in the files grade (`ConversationScorer`'s rule; "truth" by default).
    Keys no field reads go to `unknown`, how a file that is not JSON Lines was read to `notes`, conversations
    read per file to `per_file`; `keeper` is offered every transcript (for the HTML report)."""
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

    from agentwatch.scorers import ConversationScorer
    from agentwatch.wire.transcripts import iter_conversations

    scorer = ConversationScorer(settings, labels=labels)
    scores: list[ConversationScore] = []
    console = Console(stderr=True)
    show = sys.stderr.isatty()
    chunk: list[Conversation] = []
    chunk_size = max(64, 16 * (runner.concurrency if runner is not None else 1))
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TextColumn("{task.fields[judged]}"),
        console=console,
        disable=not show,
    ) as progress:
        counts = [0, 0]  # judged, to judge

        def judged(task: TaskID) -> None:
            counts[0] += 1
            progress.update(task, judged=f"judged {counts[0]}/{counts[1]}")

        def flush(task: TaskID, runner: JudgeRunner) -> None:
            wanted = [c for c in chunk if scorer.wants_judge(c)]
            counts[1] += len(wanted)
            verdicts = runner.judge_many(wanted, on_done=lambda _v: judged(task))
            by_conv = dict(zip(map(id, wanted), verdicts, strict=True))
            for c in chunk:
                keep(c, scorer.score(c, by_conv.get(id(c))))
            chunk.clear()

        def keep(conv: Conversation, score: ConversationScore) -> None:
            scores.append(score)
            if keeper is not None:
                keeper.offer(conv, score)

        for path in files:
            size = path.stat().st_size if path.exists() else None
            task = progress.add_task(path.name, total=size, judged="")
            for conv in iter_conversations(path, errors, partial(_advance, progress, task), unknown, notes):
                if per_file is not None:
                    per_file[path] = per_file.get(path, 0) + 1
                if runner is None:
                    keep(conv, scorer.score(conv))
                    continue
                chunk.append(conv)
                if len(chunk) >= chunk_size:
                    flush(task, runner)
            if chunk and runner is not None:
                flush(task, runner)
    return scores


def _advance(progress: Progress, task: TaskID, position: int) -> None:
    progress.update(task, completed=position)


def _judge_runner(
    settings: Settings,
    judge: str | None,
    url: str | None,
    sample: float | None,
    concurrency: int | None,
    cache: Path | None,
) -> JudgeRunner | None:
    """A JudgeRunner when --judge is given or `judge.enabled` is set in the configuration; else None."""
    from agentwatch.config import JudgeConfig, SamplingConfig

    cfg = settings.judge
    updates: dict[str, object] = {"enabled": True if judge else cfg.enabled, "model": judge or cfg.model}
    if url:
        updates["base_url"] = url
    if concurrency is not None:
        updates["concurrency"] = concurrency
    if cache is not None:
        updates["cache_path"] = str(cache)
    settings.judge = JudgeConfig.model_validate({**cfg.model_dump(), **updates})
    if sample is not None:
        settings.sampling = SamplingConfig.model_validate(
            {**settings.sampling.model_dump(), "judge_rate": sample}
        )
    if not settings.judge.enabled:
        return None
    from agentwatch.judge.runner import JudgeRunner

    return JudgeRunner.from_settings(settings)


def _judge_summary(runner: JudgeRunner) -> str:
    s = runner.stats.snapshot()
    failures = ", ".join(f"{k} {v}" for k, v in s["failures"].items() if v) or "none"
    return (
        f"judge {runner.judge_id}: {s['graded']} graded, {s['calls']} call(s), {s['cache_hits']} cache hit(s); "
        f"failures: {failures}; tokens {s['input_tokens']} in / {s['output_tokens']} out; "
        f"spend ${s['spend_usd']:.4f}"
    )


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
    regression, 2 usage error or unreadable input. Malformed lines are reported on stderr with their line numbers and skipped.
    """
    from agentwatch.cli.score_messages import verdict_line, why_nothing
    from agentwatch.config import ConfigError, load_settings
    from agentwatch.report.baseline import BaselineError, load_baseline
    from agentwatch.report.cases import CaseKeeper
    from agentwatch.report.model import InputSummary
    from agentwatch.report.pass_k import default_ks
    from agentwatch.report.versions import build_reports, colliding_ids, duplicate_ids
    from agentwatch.wire.transcript_keys import UnknownKeys
    from agentwatch.wire.transcripts import TranscriptFileError

    ks = parse_ks(k)
    try:
        settings = load_settings(config)
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    base = None
    if baseline is not None:
        try:
            base = load_baseline(baseline)
        except BaselineError as exc:
            raise _fail(str(exc)) from None

    try:
        runner = _judge_runner(settings, judge, judge_url, judge_sample, judge_concurrency, judge_cache)
    except (ValueError, OSError) as exc:
        raise _fail(f"judge: {exc}") from None
    errors: list[LineError] = []
    unknown = UnknownKeys()
    keeper = CaseKeeper() if fmt is ReportFormat.html else None
    notes: list[str] = []
    per_file: dict[Path, int] = {}
    try:
        rule: LabelRule = "truth" if labels else "ignore"
        scores = _read_and_score(files, settings, errors, runner, rule, unknown, keeper, notes, per_file)
    except TranscriptFileError as exc:
        raise _fail(str(exc)) from None
    finally:
        if runner is not None:
            runner.close()
    if runner is not None:
        typer.echo(_judge_summary(runner), err=True)
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
        raise _fail(f"no conversation could be read from {why_nothing(files, errors)}")

    if details is not None:
        try:
            with open(details, "w", encoding="utf-8") as fh:
                fh.writelines(s.model_dump_json() + "\n" for s in scores)
        except OSError as exc:
            raise _fail(f"cannot write {details}: {exc.strerror or exc}") from None

    shared = colliding_ids(scores)
    _warn_collisions(shared)
    repeated, extra = duplicate_ids(scores)
    _warn_duplicates(repeated, extra)
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
    judge_id = runner.judge_id if runner is not None else None
    for section in (report, *report.versions):
        section.judge = judge_id
    _emit(report, settings, fmt, out, _title(scores), keeper, base)

    regression = report.baseline is not None and report.baseline.regression
    failed = (gate and not report.readiness.safe_to_ship) or regression
    code = EXIT_GATE if failed else EXIT_OK
    typer.echo(verdict_line(report, gate, code, out), err=True)
    raise typer.Exit(code)


MAX_IDS_SHOWN = 5


def _warn_collisions(ids: list[str]) -> None:
    """Name the conversation ids used by several versions on stderr (each counts once per version)."""
    from agentwatch.report.wording import first_few

    if ids:
        typer.echo(
            f"{len(ids)} conversation id(s) occur under several versions of one agent: {first_few(ids)}; "
            "each counts once in its version's section",
            err=True,
        )


def _warn_duplicates(ids: list[str], extra: int) -> None:
    """Name the conversation ids read more than once for one agent version (each counts once: its last)."""
    from agentwatch.report.wording import first_few, plural

    if ids:
        typer.echo(
            f"warning: {plural(len(ids), 'conversation id')} read more than once "
            f"({plural(extra, 'extra record')}): {first_few(ids)}; each counts once, its last record",
            err=True,
        )


def _emit(
    report: Report,
    settings: Settings,
    fmt: ReportFormat,
    out: Path | None,
    title: str,
    keeper: CaseKeeper | None,
    base: Report | None,
) -> None:
    """Write the report in the chosen format to `out` or stdout (the HTML report with `keeper`'s transcripts
    and the `--baseline` report's intervals)."""
    header: list[str] = []  # what was read is in the report (`input`)
    if fmt is ReportFormat.json:
        body = report.model_dump_json(indent=2) + "\n"
    elif fmt is ReportFormat.html:
        try:
            from agentwatch.report.html import render_html

            body = render_html(report, settings, title=title, header=header, cases=keeper, base=base)
        except ImportError as exc:
            raise _fail(f"--format html needs matplotlib (pip install 'agentwatch[html]'): {exc}") from None
    else:
        from agentwatch.report.text import print_report, render_text

        if out is None:
            from rich.console import Console

            print_report(
                report,
                Console(highlight=False, soft_wrap=True),
                title=title,
                header=header,
                level=settings.stats.level,
            )
            return
        body = render_text(report, title=title, header=header, level=settings.stats.level)
    if out is None:
        sys.stdout.write(body)
        sys.stdout.flush()
        return
    try:
        out.write_text(body, encoding="utf-8")
    except OSError as exc:
        raise _fail(f"cannot write {out}: {exc.strerror or exc}") from None
