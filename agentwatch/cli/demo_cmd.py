"""`agentwatch demo`: the whole pipeline live on an embedded broker, with a simulated instrumented agent.

An embedded Tansu broker starts; a simulated support agent instrumented with `@trace` sends its spans to it
through the Kafka span exporter; the collector rebuilds and scores every conversation (task policies grade the
production-like traffic, a stand-in LLM judge a sample of it); the estimator keeps rolling Bayesian estimates and
serves them on /metrics. Version 1.1 of the agent is worse than 1.0 and is rolled out as a canary a quarter of
the way in, so the regression probability of pass^3 climbs as evidence accumulates.

On a wide terminal the estimates are a live table; in a log, a pipe or a narrow terminal they are one line per
version and task every few seconds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import time
from typing import Annotated, Any

import typer

from agentwatch.cli.app import app, serve_metrics

log = logging.getLogger(__name__)

WIDE = 140  # columns the live table needs (checked again on every update: `_Display.fits`)
LINE_EVERY_S = 5.0


def _fmt(interval: Any | None) -> str:
    if interval is None:
        return "—"
    return f"{interval.mean:.2f} [{interval.lower:.2f}, {interval.upper:.2f}]"


# pass^3 is over task instances only with repeated attempts; otherwise the figure is p^3 of the pooled rate.
POW3_NAMES = {"tasks": "pass^3", "exchangeable": "p^3 (exch.)"}


def _rows(estimates: list, window: str) -> list[dict[str, str]]:
    """One row per (version, task) of the window, the all-tasks rows first; each names its pass^3 figure."""
    rows = []
    for e in sorted(
        (e for e in estimates if e.window == window), key=lambda e: (e.task != "*", e.task, e.version)
    ):
        regression = " ".join(
            f"{r.probability:.2f} vs {r.baseline_version}" for r in e.regression if r.k == 3
        )
        name = POW3_NAMES.get(e.method, "pass^3")
        rows.append(
            {
                "version": e.version,
                "task": "all tasks" if e.task == "*" else e.task,
                "graded": f"{e.scored}/{e.conversations}",
                "success": _fmt(e.success),
                "pow3": f"{name} {_fmt(e.pass_pow_k.get(3))}",
                "ASR": _fmt(e.asr),
                "errors": f"{100 * e.failure_ratio.get('error', 0.0):.1f}%",
                "regression": regression or "—",
            }
        )
    return rows


def _judge_line(judge: Any) -> str | None:
    if judge is None:
        return None
    j = judge.stats.snapshot()
    return (
        f"judge: {j['graded']} verdicts, {j['calls']} calls, {j['cache_hits']} cache hits, "
        f"{sum(j['failures'].values())} failed, ${j['spend_usd']:.4f} spent"
    )


class _Display:
    """The live table on a wide terminal; otherwise plain lines every `LINE_EVERY_S` seconds."""

    def __init__(self, console: Any, window: str, port: int) -> None:
        self.console, self.window, self.port = console, window, port
        self.live = None
        self._next_lines = 0.0
        if console.is_terminal and console.width >= WIDE:
            from rich.live import Live

            self.live = Live(console=console, refresh_per_second=2)
            self.live.start()

    def update(self, estimates: list, sent: int, elapsed: float, judge: Any, *, force: bool = False) -> None:
        rows = _rows(estimates, self.window)
        if self.live is not None:
            table = self._table(rows, sent, elapsed, judge)
            if self.fits(table):
                self.live.update(table)
                return
            # a table wider or taller than the terminal is cut (its last columns, its footer): lines instead
            self.live.stop()
            self.live = None
            self.console.print(
                "the live table does not fit this terminal: one line per version and task instead",
                highlight=False,
            )
        if not force and elapsed < self._next_lines:
            return
        self._next_lines = elapsed + LINE_EVERY_S
        self.console.print(
            f"[{elapsed:5.1f}s] {sent} conversations sent; window {self.window}:", highlight=False
        )
        for r in rows:
            self.console.print(
                f"  {r['version']:>4} {r['task']:<13} graded {r['graded']:>9}  success {r['success']}  "
                f"{r['pow3']}  ASR {r['ASR']}  errors {r['errors']}  P(regression) {r['regression']}",
                highlight=False,
                soft_wrap=True,
            )
        line = _judge_line(judge)
        if line:
            self.console.print(f"  {line}", highlight=False)

    def fits(self, table: Any) -> bool:
        """Whether `table` is shown whole: no wider than the terminal, and no taller (Live crops the bottom)."""
        from rich.measure import Measurement

        unbounded = self.console.options.update(max_width=10 * self.console.width)
        width = Measurement.get(self.console, unbounded, table).maximum
        if width > self.console.width:
            return False
        lines = self.console.render_lines(table, self.console.options.update(width=width), pad=False)
        return bool(len(lines) < self.console.height)

    def _table(self, rows: list[dict[str, str]], sent: int, elapsed: float, judge: Any) -> Any:
        from rich.table import Table

        table = Table(
            title=f"agentwatch demo · support-bot · window {self.window} · {sent} conversations in {elapsed:.0f}s"
            f" · http://127.0.0.1:{self.port}/metrics",
            title_justify="left",
        )
        columns = ("version", "task", "graded", "success", "pass^3 or p^3", "ASR", "errors", "P(regression)")
        for column in columns:
            table.add_column(column, no_wrap=True, min_width=len(column))
        for r in rows:
            table.add_row(*r.values())
        legend = (
            "posterior mean [95% credible interval] over the graded sample · p^3 (exch.): p^3 of the "
            "pooled success rate under exchangeability (no task attempted twice), pass^3 when tasks are · "
            "errors: share of all conversations · Ctrl-C to stop"
        )
        caption = [legend]
        line = _judge_line(judge)
        if line:
            caption.append(line)
        table.caption = "\n".join(caption)
        table.caption_justify = "left"
        return table

    def message(self, text: str) -> None:
        (self.live.console if self.live is not None else self.console).print(text, highlight=False)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()


@app.command()
def demo(
    duration: Annotated[float, typer.Option(help="Seconds to run (0 = until Ctrl-C).")] = 60.0,
    rate: Annotated[float, typer.Option(help="Conversations per second the simulated agent runs.")] = 40.0,
    metrics_port: Annotated[int, typer.Option(help="Port of /metrics (0 = any free port).")] = 9464,
    seed: Annotated[int, typer.Option(help="Seed of the simulated agent.")] = 7,
    window: Annotated[str, typer.Option(help="Window shown in the table.")] = "1h",
    judge: Annotated[
        bool, typer.Option(help="Run a stand-in LLM judge (a local OpenAI-compatible server) on a sample.")
    ] = True,
    judge_rate: Annotated[
        float, typer.Option(min=0, max=1, help="Share of conversations the judge grades.")
    ] = 0.25,
) -> None:
    """Run agent → Kafka → collector → scores → estimator → /metrics live on an embedded broker."""
    from rich.console import Console

    from agentwatch import sdk
    from agentwatch.config import ConfigError, load_settings, with_values
    from agentwatch.demo.agent import AGENT, POLICIES, SYNTHETIC_SHARE, TASKS, SupportAgent, run_conversation
    from agentwatch.demo.judge import MODEL, DemoJudgeServer
    from agentwatch.kafka.broker import EmbeddedBroker
    from agentwatch.pipeline import Pipeline

    console = Console(stderr=True)
    logging.getLogger().setLevel(logging.WARNING)
    fast = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000}
    with EmbeddedBroker() as broker, DemoJudgeServer() if judge else contextlib.nullcontext() as judge_server:
        judge_settings: dict[str, Any] = {}
        if judge_server is not None:
            os.environ.setdefault("AGENTWATCH_DEMO_JUDGE_KEY", "demo")
            judge_settings = {
                "judge": {
                    "enabled": True,
                    "name": "demo-judge",
                    "base_url": judge_server.base_url,
                    "model": MODEL,
                    "api_key_env": "AGENTWATCH_DEMO_JUDGE_KEY",
                },
                "sampling": {"judge_rate": judge_rate},
            }
        try:  # the demo's own values win over AGENTWATCH_* variables: its broker, ports and policies
            settings = with_values(
                load_settings(),
                kafka={"bootstrap_servers": broker.bootstrap_servers},
                collector={"idle_timeout_s": 5.0, "end_grace_s": 0.5, **fast},
                exporter={"metrics_port": metrics_port, "regression_min_conversations": 30, **fast},
                policies=POLICIES,
                **judge_settings,
            )
        except ConfigError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        console.print(f"embedded broker on {broker.bootstrap_servers}; starting collector and exporter…")
        pipeline = Pipeline(settings)
        port = serve_metrics(pipeline.start_http, metrics_port)
        pipeline.start()
        console.print(
            f"/metrics on http://127.0.0.1:{port}/metrics · version 1.0 first; the 1.1 canary takes half the traffic "
            f"from {'a quarter of the run' if duration > 0 else 'conversation 300'} on"
            + (f" · the stand-in judge grades {judge_rate:.0%}" if judge else "")
        )
        sdk.configure("kafka", agent=AGENT, bootstrap_servers=broker.bootstrap_servers)
        rng = random.Random(seed)
        agents = {v: SupportAgent(v, rng) for v in ("1.0", "1.1")}
        canary_at = duration / 4 if duration > 0 else None
        canary = False
        started = time.monotonic()
        sent = 0
        display = _Display(console, window, port)
        try:
            while duration <= 0 or time.monotonic() - started < duration:
                if pipeline.stop_event.is_set():
                    raise RuntimeError(f"pipeline stopped: {pipeline.errors}")
                elapsed = time.monotonic() - started
                if not canary and (elapsed >= canary_at if canary_at is not None else sent >= 300):
                    canary = True
                    display.message(f"[{elapsed:5.1f}s] canary: version 1.1 now takes half the traffic")
                version = "1.1" if canary and rng.random() < 0.5 else "1.0"
                synthetic = rng.random() < SYNTHETIC_SHARE
                run_conversation(agents[version], f"demo-{sent:06d}", TASKS[sent % len(TASKS)], synthetic)
                sent += 1
                if sent % 10 == 0:
                    display.update(
                        pipeline.exporter.estimator.snapshot(), sent, elapsed, pipeline.collector.judge
                    )
                time.sleep(max(0.0, sent / rate - (time.monotonic() - started)))
            sdk.shutdown()
            deadline = time.monotonic() + settings.collector.idle_timeout_s + 10
            while time.monotonic() < deadline:  # let the last conversations be scored
                if _exported(pipeline, window) >= sent:
                    break
                time.sleep(0.25)
            display.update(
                pipeline.exporter.estimator.snapshot(),
                sent,
                time.monotonic() - started,
                pipeline.collector.judge,
                force=True,
            )
        except KeyboardInterrupt:
            display.message("interrupted")
        finally:
            display.close()
            sdk.shutdown()
            pipeline.close()
        console.print(f"{sent} conversations sent, {_exported(pipeline, window)} scored and exported.")
        if pipeline.errors:
            raise typer.Exit(1)


def _exported(pipeline: Any, window: str) -> int:
    estimates = pipeline.exporter.estimator.snapshot()
    return sum(e.conversations for e in estimates if e.window == window and e.task != "*")
