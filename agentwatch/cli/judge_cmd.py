"""`agentwatch judge calibrate LABELS.jsonl`: how well the judge agrees with human labels; exit 1 below min kappa."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentwatch.cli.app import app

if TYPE_CHECKING:  # the judge's modules load only when a judge command runs
    from agentwatch.judge.calibration import CalibrationReport
    from agentwatch.transcripts import LineError

judge_app = typer.Typer(help="The LLM judge: calibrate it against human labels.", no_args_is_help=True)
app.add_typer(judge_app, name="judge")

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
        + (f"; judge failures: {', '.join(f'{k} {v}' for k, v in report.failures.items())}"
           if report.failures else ""),
        f"Cohen's kappa: {_num(report.kappa)} ({report.level:.0%} interval {_num(report.kappa_low)} to "
        f"{_num(report.kappa_high)}); accuracy {_num(report.accuracy)}; minimum {report.min_kappa:.3f}: "
        + ("PASS" if report.passed else "FAIL"),
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
            (f"self-consistency (judged twice): {twice['pairs']} pair(s), agreement {_num(twice['agreement'])}, "
             f"kappa {_num(twice['kappa'])}, mean |score difference| {_num(twice['mean_abs_score_diff'])}"),
        ]
    return "\n".join(lines) + "\n"


@judge_app.command()
def calibrate(
    labels: Annotated[Path, typer.Argument(help="Transcript JSONL whose lines carry a human `outcome` label.")],
    config: Annotated[Path | None, typer.Option("--config", help="YAML configuration file.")] = None,
    judge: Annotated[str | None, typer.Option("--judge", help="Judge model (default: judge.model).")] = None,
    judge_url: Annotated[str | None, typer.Option("--judge-url", help="OpenAI-compatible base URL.")] = None,
    concurrency: Annotated[int | None, typer.Option("--judge-concurrency", min=1)] = None,
    repeats: Annotated[
        int, typer.Option("--repeats", min=1, max=2, help="2: judge every conversation twice (self-consistency).")
    ] = 2,
    min_kappa: Annotated[
        float | None, typer.Option("--min-kappa", help="Exit 1 below this kappa (default: judge.min_kappa).")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Judge every labelled conversation (no cache, so repeats are real calls) and report agreement.

    Exit status: 0 kappa at or above the minimum, 1 below it (or undefined), 2 usage error or no labels.
    """
    from agentwatch.config import ConfigError, JudgeConfig, load_settings
    from agentwatch.schema import Outcome
    from agentwatch.judge.cache import JudgeCache
    from agentwatch.judge.calibration import calibrate as run_calibration
    from agentwatch.judge.runner import JudgeRunner
    from agentwatch.transcripts import TranscriptFileError, iter_conversations

    try:
        settings = load_settings(config)
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    updates: dict = {"enabled": True}
    if judge:
        updates["model"] = judge
    if judge_url:
        updates["base_url"] = judge_url
    if concurrency is not None:
        updates["concurrency"] = concurrency
    updates["cache_path"] = None
    settings.judge = JudgeConfig.model_validate({**settings.judge.model_dump(), **updates})
    errors: list[LineError] = []
    try:
        labelled = [(c, c.outcome) for c in iter_conversations(labels, errors)
                    if c.outcome is not None and c.outcome is not Outcome.UNSCORED]
        convs = [c for c, _ in labelled]
    except TranscriptFileError as exc:
        raise _fail(str(exc)) from None
    for err in errors[:20]:
        typer.echo(f"malformed: {err}", err=True)
    if not convs:
        raise _fail(f"no conversation in {labels} carries an outcome label")
    try:
        runner = JudgeRunner.from_settings(settings)
    except (ValueError, OSError) as exc:
        raise _fail(f"judge: {exc}") from None
    runner.cache = JudgeCache(max_entries=0)  # every run is a real call
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
