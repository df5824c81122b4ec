"""Where and how `agentwatch score` writes its report: the formats (text, JSON, HTML) and the report's title."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from agentwatch.cli.score_messages import fail

if TYPE_CHECKING:  # the service modules load when a command runs, not when the CLI starts
    from agentwatch.config import Settings
    from agentwatch.report.cases import CaseKeeper
    from agentwatch.report.model import Report
    from agentwatch.wire.score_view import ScoreView


class ReportFormat(str, Enum):
    """The formats of `--format`."""

    text = "text"
    json = "json"
    html = "html"


def report_title(scores: Sequence[ScoreView]) -> str:
    """The report's title: the first three agent versions scored, and how many more."""
    series = sorted({f"{s.agent} {s.version}" for s in scores})
    if not series:
        return "Agent Evaluation Report"
    more = f" (+{len(series) - 3} more)" if len(series) > 3 else ""
    return "Agent Evaluation Report — " + ", ".join(series[:3]) + more


def emit(
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
            raise fail(f"--format html needs matplotlib (pip install 'agentwatch[html]'): {exc}") from None
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
        raise fail(f"cannot write {out}: {exc.strerror or exc}") from None
