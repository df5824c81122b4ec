"""How `agentwatch score` reads transcript files and scores them: the progress bar, the judge runner the
options ask for (judged a chunk at a time), and the judge's one-line summary."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the service modules load when a command runs, not when the CLI starts
    from rich.progress import Progress, TaskID

    from agentwatch.cli.score_details import DetailsFile
    from agentwatch.config import Settings
    from agentwatch.judge.runner import JudgeRunner
    from agentwatch.report.cases import CaseKeeper
    from agentwatch.report.rows import ScoreRow
    from agentwatch.scorers.decision import LabelRule
    from agentwatch.wire.schema import Conversation, ConversationScore
    from agentwatch.wire.transcript_keys import UnknownKeys
    from agentwatch.wire.transcripts import LineError


def read_and_score(
    files: list[Path],
    settings: Settings,
    errors: list[LineError],
    runner: JudgeRunner | None = None,
    labels: LabelRule = "truth",
    unknown: UnknownKeys | None = None,
    keeper: CaseKeeper | None = None,
    notes: list[str] | None = None,
    per_file: dict[Path, int] | None = None,
    details: DetailsFile | None = None,
) -> list[ScoreRow]:
    """Read every file (progress bar on a terminal) and score each conversation, keeping the compact row the
    report reads of each; with a `JudgeRunner`, the judge-sampled conversations are judged first, a chunk at
    a time, `runner.concurrency` calls in flight.
    `labels`: how outcome labels in the files grade (`ConversationScorer`'s rule; "truth" by default).
    Keys no field reads go to `unknown`, how a file that is not JSON Lines was read to `notes`, conversations
    read per file to `per_file`; `keeper` is offered every transcript (for the HTML report), `details` every
    full score as it is made."""
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

    from agentwatch.report.rows import RowMaker
    from agentwatch.scorers import ConversationScorer
    from agentwatch.wire.transcripts import iter_conversations

    scorer = ConversationScorer(settings, labels=labels)
    rows: list[ScoreRow] = []
    maker = RowMaker()
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
            rows.append(maker.row(score))
            if keeper is not None:
                keeper.offer(conv, score)
            if details is not None:
                details.write(score)

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
    return rows


def _advance(progress: Progress, task: TaskID, position: int) -> None:
    progress.update(task, completed=position)


def judge_runner(
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


def judge_summary(runner: JudgeRunner) -> str:
    s = runner.stats.snapshot()
    failures = ", ".join(f"{k} {v}" for k, v in s["failures"].items() if v) or "none"
    return (
        f"judge {runner.judge_id}: {s['graded']} graded, {s['calls']} call(s), {s['cache_hits']} cache hit(s); "
        f"failures: {failures}; tokens {s['input_tokens']} in / {s['output_tokens']} out; "
        f"spend ${s['spend_usd']:.4f}"
    )
