"""`agentwatch judge calibrate LABELS.jsonl`: how well the judge agrees with human labels; exit 1 below min kappa."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentwatch.cli.app import app
from agentwatch.safe_text import one_line

if TYPE_CHECKING:  # the judge's modules load only when a judge command runs
    from agentwatch.config import Settings
    from agentwatch.judge.calibration import CalibrationReport
    from agentwatch.judge.runner import JudgeRunner
    from agentwatch.wire.schema import Conversation, Outcome
    from agentwatch.wire.transcripts import LineError

judge_app = typer.Typer(
    help="The LLM judge: calibrate it against human labels, watch it on anchors.", no_args_is_help=True
)
app.add_typer(judge_app, name="judge")
anchors_app = typer.Typer(
    help="A frozen set of labelled conversations that tells judge drift from agent drift.",
    no_args_is_help=True,
)
judge_app.add_typer(anchors_app, name="anchors")

EXIT_OK, EXIT_BELOW, EXIT_USAGE = 0, 1, 2


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(EXIT_USAGE)


def _num(x: float | None, fmt: str = ".3f") -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def render(report: CalibrationReport) -> str:
    """The calibration report as text."""
    lines = [
        f"Judge calibration — {report.judge_id}",
        f"labelled conversations: {report.labelled}; judged: {report.judged}"
        + (
            f"; judge failures: {', '.join(f'{k} {v}' for k, v in report.failures.items())}"
            if report.failures
            else ""
        ),
        f"Cohen's kappa: {_num(report.kappa)} ({report.level:.0%} interval {_num(report.kappa_low)} to "
        f"{_num(report.kappa_high)}); accuracy {_num(report.accuracy)}; minimum {report.min_kappa:.3f}: "
        + ("PASS" if report.passed else "FAIL")
        + (
            f" (the judge graded {report.judged} of {report.labelled}: fewer than half)"
            if report.too_few_judged
            else ""
        ),
        "",
        "confusion (rows: label, columns: judge)",
    ]
    short = [c[:12] for c in report.classes]
    width = max(len(s) for s in short) + 2
    lines.append(" " * width + "".join(s.rjust(width) for s in short))
    for name, row in zip(short, report.confusion, strict=True):
        lines.append(name.ljust(width) + "".join(str(x).rjust(width) for x in row))
    lines += ["", f"{'class':<20}{'precision':>10}{'recall':>10}{'support':>10}"]
    for c, m in report.per_class.items():
        lines.append(f"{c:<20}{_num(m['precision']):>10}{_num(m['recall']):>10}{m['support']:>10}")
    if report.consistency:
        twice = report.consistency
        lines += [
            "",
            (
                f"self-consistency (judged twice): {twice['pairs']} pair(s), agreement {_num(twice['agreement'])}, "
                f"kappa {_num(twice['kappa'])}, mean |score difference| {_num(twice['mean_abs_score_diff'])}"
            ),
        ]
    return "\n".join(lines) + "\n"


def _judge_settings(
    config: Path | None, judge: str | None, judge_url: str | None, concurrency: int | None
) -> Settings:
    """The settings with the judge enabled, the options applied, and no cache file (every call is real)."""
    from agentwatch.config import ConfigError, load_settings

    try:
        settings = load_settings(config)
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    return _judge_options(settings, judge, judge_url, concurrency)


def _judge_options(
    settings: Settings, judge: str | None, judge_url: str | None, concurrency: int | None
) -> Settings:
    """`settings` with the judge enabled, the command line's judge options and no cache file."""
    from agentwatch.config import JudgeConfig

    updates: dict = {"enabled": True, "cache_path": None}
    if judge:
        updates["model"] = judge
    if judge_url:
        updates["base_url"] = judge_url
    if concurrency is not None:
        updates["concurrency"] = concurrency
    settings.judge = JudgeConfig.model_validate({**settings.judge.model_dump(), **updates})
    return settings


def _labelled_file(path: Path) -> list[tuple[Conversation, Outcome]]:
    """The conversations of a transcript file that carry an outcome label; malformed lines are reported."""
    from agentwatch.wire.schema import Outcome
    from agentwatch.wire.transcripts import TranscriptFileError, iter_conversations

    errors: list[LineError] = []
    try:
        found = [
            (c, c.outcome)
            for c in iter_conversations(path, errors)
            if c.outcome is not None and c.outcome is not Outcome.UNSCORED
        ]
    except TranscriptFileError as exc:
        raise _fail(str(exc)) from None
    for err in errors[:20]:
        typer.echo(one_line(f"malformed: {err}"), err=True)
    if len(errors) > 20:
        typer.echo(f"malformed: {len(errors) - 20} more lines (left out)", err=True)
    if not found:
        raise _fail(f"no conversation in {path} carries an outcome label")
    return found  # type: ignore[return-value]


def _runner(settings: Settings) -> JudgeRunner:
    """A judge runner from `settings`, without a verdict cache (every call is real)."""
    from agentwatch.judge.cache import JudgeCache
    from agentwatch.judge.runner import JudgeRunner

    try:
        runner = JudgeRunner.from_settings(settings)
    except (ValueError, OSError) as exc:
        raise _fail(f"judge: {exc}") from None
    runner.cache = JudgeCache(max_entries=0)
    return runner


@judge_app.command()
def calibrate(
    labels: Annotated[
        Path,
        typer.Argument(metavar="LABELS", help="Transcript JSONL whose lines carry a human `outcome` label."),
    ],
    config: Annotated[Path | None, typer.Option("--config", help="YAML configuration file.")] = None,
    judge: Annotated[str | None, typer.Option("--judge", help="Judge model (default: judge.model).")] = None,
    judge_url: Annotated[str | None, typer.Option("--judge-url", help="OpenAI-compatible base URL.")] = None,
    concurrency: Annotated[int | None, typer.Option("--judge-concurrency", min=1)] = None,
    repeats: Annotated[
        int,
        typer.Option("--repeats", min=1, max=2, help="2: judge every conversation twice (self-consistency)."),
    ] = 2,
    min_kappa: Annotated[
        float | None, typer.Option("--min-kappa", help="Exit 1 below this kappa (default: judge.min_kappa).")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Judge every labelled conversation (no cache, so repeats are real calls) and report agreement.

    Exit status: 0 kappa at or above the minimum, 1 below it (or undefined), 2 usage error or no labels.
    """
    from agentwatch.judge.calibration import calibrate as run_calibration

    settings = _judge_settings(config, judge, judge_url, concurrency)
    labelled = _labelled_file(labels)
    convs = [c for c, _label in labelled]
    runner = _runner(settings)
    try:
        first = runner.judge_many(convs)
        second = runner.judge_many(convs) if repeats == 2 else None
    finally:
        runner.close()
    report = run_calibration(
        runner.judge_id,
        [outcome.value for _, outcome in labelled],
        first,
        second,
        min_kappa=settings.judge.min_kappa if min_kappa is None else min_kappa,
        level=settings.stats.level,
        resamples=settings.stats.bootstrap_resamples,
        seed=settings.stats.seed,
    )
    if json_out:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    else:
        typer.echo(render(report), nl=False)
    raise typer.Exit(EXIT_OK if report.passed else EXIT_BELOW)


@anchors_app.command("freeze")
def anchors_freeze(
    out: Annotated[Path, typer.Option("--out", help="Write the anchor set here (JSONL).")],
    from_labels: Annotated[
        Path | None,
        typer.Option("--from-labels", help="Transcript JSONL whose lines carry a human `outcome`."),
    ] = None,
    from_review_store: Annotated[
        bool,
        typer.Option("--from-review-store", help="The review store's blind labels (review.database_url)."),
    ] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many anchors.")] = 200,
    config: Annotated[Path | None, typer.Option("--config", help="YAML configuration file.")] = None,
    judge: Annotated[str | None, typer.Option("--judge", help="Judge model (default: judge.model).")] = None,
    judge_url: Annotated[str | None, typer.Option("--judge-url", help="OpenAI-compatible base URL.")] = None,
) -> None:
    """Judge labelled conversations once and freeze them, with the verdicts, as the anchor set.

    Exit status: 0 written, 2 usage error (no labelled conversation, no source, an unreadable file).
    """
    from agentwatch.judge.anchor_service import now_utc
    from agentwatch.judge.anchors import freeze, write_anchors

    if (from_labels is None) == (not from_review_store):
        raise _fail("give one source: --from-labels FILE or --from-review-store")
    settings = _judge_settings(config, judge, judge_url, None)
    if from_labels is not None:
        labelled = _labelled_file(from_labels)
        # a conversation labelled twice would be anchored twice, a set `run` refuses: the first label is kept
        first: dict[str, tuple[Conversation, Outcome]] = {}
        for conv, label in labelled:
            first.setdefault(conv.conversation_id, (conv, label))
        if len(first) < len(labelled):
            typer.echo(
                f"{len(labelled) - len(first)} lines of {from_labels} label a conversation again: the first "
                "label of each is used",
                err=True,
            )
        labelled = list(first.values())[:limit]
    else:
        from agentwatch.review.store import Store

        store = Store(settings.review.database_url)
        try:
            labelled = store.blind_labels(limit)
        finally:
            store.close()
        if not labelled:
            where = settings.review.database_url
            raise _fail(f"no conversation with a blind label and its transcript in {where}")
    runner = _runner(settings)
    try:
        verdicts = runner.judge_many([c for c, _label in labelled])
    finally:
        runner.close()
    anchors, failed = freeze(labelled, verdicts, now_utc())
    if not anchors:
        raise _fail(f"the judge graded none of the {len(labelled)} conversations")
    try:
        n = write_anchors(out, anchors)
    except OSError as exc:
        raise _fail(f"cannot write the anchor set to {out}: {exc.strerror or exc}") from None
    typer.echo(
        f"{n} anchors frozen with the verdicts of {runner.judge_id} in {out}"
        + (f" ({failed} left out: the judge failed on them)" if failed else "")
    )


@anchors_app.command("run")
def anchors_run(
    anchors: Annotated[Path | None, typer.Argument(help="The anchor set (default: anchors.path).")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="YAML configuration file.")] = None,
    judge: Annotated[str | None, typer.Option("--judge", help="Judge model (default: judge.model).")] = None,
    judge_url: Annotated[str | None, typer.Option("--judge-url", help="OpenAI-compatible base URL.")] = None,
    serve: Annotated[
        bool,
        typer.Option("--serve", help="Keep running: each anchors.interval_s, on a new judge; /metrics."),
    ] = False,
    metrics_port: Annotated[
        int | None, typer.Option("--metrics-port", help="Default: anchors.metrics_port.")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Judge the anchors again and compare with their frozen verdicts and labels (judge drift).

    Exit status (without --serve): 0 no judge drift, 1 judge drift, 2 usage error.
    """
    from agentwatch.config import AnchorsConfig
    from agentwatch.judge.anchor_service import AnchorJob, serve_metrics
    from agentwatch.judge.anchors import AnchorsFileError, anchors_json, render

    def options(settings: Settings) -> Settings:
        """The command line's options, applied at start and again to every configuration the job reloads."""
        settings = _judge_options(settings, judge, judge_url, None)
        if anchors is not None:
            path = {"path": str(anchors)}
            settings.anchors = AnchorsConfig.model_validate({**settings.anchors.model_dump(), **path})
        return settings

    settings = _judge_settings(config, None, None, None)
    try:
        job = AnchorJob(options(settings), config, options=options)
    except (AnchorsFileError, ValueError, OSError) as exc:  # the anchor set, or a judge that cannot be built
        raise _fail(str(exc)) from None
    if serve:
        _serve_anchors(job, settings, metrics_port, serve_metrics)
        return
    found = job.run_once()
    if found is None:
        raise _fail("the anchor run failed (see the log)")
    typer.echo(anchors_json(found) if json_out else render(found), nl=json_out)
    raise typer.Exit(EXIT_BELOW if found.drift else EXIT_OK)


def _serve_anchors(job: object, settings: Settings, metrics_port: int | None, serve_metrics: object) -> None:
    """Run the anchor job until SIGINT/SIGTERM; SIGHUP reads the configuration again."""
    import signal
    import threading

    from agentwatch.exporters.labels import sanitize_label

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    signal.signal(signal.SIGHUP, lambda *_: job.reload())  # type: ignore[attr-defined]
    from agentwatch.cli.app import serve_metrics as serve_or_exit

    port = settings.anchors.metrics_port if metrics_port is None else metrics_port
    servers: list[Any] = []
    if port is not None:

        def start() -> int:
            servers.append(serve_metrics(job, port, settings.anchors.host, sanitize_label))  # type: ignore[operator]
            return int(servers[0].port)

        bound = serve_or_exit(start, port)  # a port in use: one line naming it, exit 2
        typer.echo(f"anchor metrics on http://{settings.anchors.host}:{bound}/metrics")
    server = servers[0] if servers else None
    try:
        job.serve(stop)  # type: ignore[attr-defined]
    finally:
        if server is not None:
            server.stop()
