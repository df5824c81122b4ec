"""`agentwatch demo`: the whole pipeline live on an embedded broker, with a simulated instrumented agent.

An embedded Tansu broker starts; a simulated support agent instrumented with `@trace` sends its spans to it
through the Kafka span exporter; the collector rebuilds and scores every conversation; the estimator keeps
rolling Bayesian estimates and serves them on /metrics; the terminal shows them live. Version 1.1 of the
agent is worse than 1.0, so the regression probability of pass^3 climbs as evidence accumulates.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Annotated

import typer

from agentwatch.cli.app import app

log = logging.getLogger(__name__)


def _fmt(interval: object | None) -> str:
    if interval is None:
        return "—"
    return f"{interval.mean:.2f} ({interval.lower:.2f}–{interval.upper:.2f})"  # type: ignore[attr-defined]


def _table(
    estimates: list, window: str, sent: int, elapsed: float, port: int, stats: object, judge: object = None
) -> object:
    from rich.table import Table

    table = Table(
        title=f"agentwatch demo · support-bot · window {window} · {sent} conversations in {elapsed:.0f}s · "
        f"http://127.0.0.1:{port}/metrics",
        title_justify="left",
    )
    for column in ("version", "task", "scored", "success", "pass^3", "ASR", "aband.", "halluc.", "P(pass^3 regr.)"):
        table.add_column(column, no_wrap=True)
    rows = sorted((e for e in estimates if e.window == window), key=lambda e: (e.task != "*", e.task, e.version))
    for e in rows:
        regression = " ".join(f"{r.probability:.2f} vs {r.baseline_version}" for r in e.regression if r.k == 3)
        table.add_row(
            e.version, e.task, f"{e.scored}/{e.conversations}", _fmt(e.success), _fmt(e.pass_pow_k.get(3)),
            _fmt(e.asr), str(e.outcomes.get("abandoned", 0)), str(e.outcomes.get("hallucinated", 0)),
            regression or "—",
        )
    consumed = getattr(stats, "spans_consumed", "?")
    table.caption = f"posterior mean (95% credible interval) · spans consumed: {consumed} · Ctrl-C to stop"
    if judge is not None:
        j = judge.stats.snapshot()
        failed = sum(j["failures"].values())
        table.caption += (
            f"\njudge: {j['graded']} verdicts, {j['calls']} calls, {j['cache_hits']} cache hits, {failed} failed, "
            f"${j['spend_usd']:.4f} spent"
        )
    return table


@app.command()
def demo(
    duration: Annotated[float, typer.Option(help="Seconds to run (0 = until Ctrl-C).")] = 60.0,
    rate: Annotated[float, typer.Option(help="Conversations per second the simulated agent runs.")] = 40.0,
    metrics_port: Annotated[int, typer.Option(help="Port of /metrics.")] = 9464,
    seed: Annotated[int, typer.Option(help="Seed of the simulated agent.")] = 7,
    window: Annotated[str, typer.Option(help="Window shown in the table.")] = "1h",
    judge: Annotated[
        bool, typer.Option(help="Run a stand-in LLM judge (a local OpenAI-compatible server) on a sample.")
    ] = True,
    judge_rate: Annotated[float, typer.Option(min=0, max=1, help="Share of conversations the judge grades.")] = 0.25,
) -> None:
    """Run agent → Kafka → collector → scores → estimator → /metrics live on an embedded broker."""
    from rich.console import Console
    from rich.live import Live

    from agentwatch import sdk
    from agentwatch.broker import EmbeddedBroker
    from agentwatch.config import load_settings
    from agentwatch.demo_agent import AGENT, POLICIES, SYNTHETIC_SHARE, TASKS, SupportAgent, run_conversation
    from agentwatch.pipeline import Pipeline

    console = Console(stderr=True)
    logging.getLogger().setLevel(logging.WARNING)
    fast = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000}
    import contextlib
    import os

    from agentwatch.demo_judge import MODEL, DemoJudgeServer

    with EmbeddedBroker() as broker, (DemoJudgeServer() if judge else contextlib.nullcontext()) as judge_server:
        judge_settings = {}
        if judge_server is not None:
            os.environ.setdefault("AGENTWATCH_DEMO_JUDGE_KEY", "demo")
            judge_settings = {
                "judge": {"enabled": True, "name": "demo-judge", "base_url": judge_server.base_url, "model": MODEL,
                          "api_key_env": "AGENTWATCH_DEMO_JUDGE_KEY"},
                "sampling": {"judge_rate": judge_rate},
            }
        settings = load_settings(
            kafka={"bootstrap_servers": broker.bootstrap_servers},
            collector={"idle_timeout_s": 5.0, "end_grace_s": 0.5, **fast},
            exporter={"metrics_port": metrics_port, "regression_min_conversations": 30, **fast},
            policies=POLICIES,
            **judge_settings,
        )
        console.print(f"embedded broker on {broker.bootstrap_servers}; starting collector and exporter…")
        pipeline = Pipeline(settings)
        port = pipeline.start_http()
        pipeline.start()
        sdk.configure("kafka", agent=AGENT, bootstrap_servers=broker.bootstrap_servers)
        rng = random.Random(seed)
        agents = {v: SupportAgent(v, rng) for v in ("1.0", "1.1")}
        started = time.monotonic()
        sent = 0
        try:
            with Live(console=console, refresh_per_second=2) as live:
                while duration <= 0 or time.monotonic() - started < duration:
                    if pipeline.stop_event.is_set():
                        raise RuntimeError(f"pipeline stopped: {pipeline.errors}")
                    # Version 1.0 runs first; 1.1 is rolled out a quarter of the way in, as a canary would be.
                    version = "1.1" if sent > 300 and rng.random() < 0.5 else "1.0"
                    synthetic = rng.random() < SYNTHETIC_SHARE
                    run_conversation(agents[version], f"demo-{sent:06d}", TASKS[sent % len(TASKS)], synthetic)
                    sent += 1
                    elapsed = time.monotonic() - started
                    if sent % 10 == 0:
                        estimates = pipeline.exporter.estimator.snapshot()
                        live.update(_table(estimates, window, sent, elapsed, port, pipeline.collector.stats,
                                           pipeline.collector.judge))
                    time.sleep(max(0.0, sent / rate - elapsed))
                sdk.shutdown()
                deadline = time.monotonic() + settings.collector.idle_timeout_s + 10
                while time.monotonic() < deadline:  # let the last conversations be scored
                    estimates = pipeline.exporter.estimator.snapshot()
                    scored = sum(e.conversations for e in estimates if e.window == window and e.task != "*")
                    live.update(_table(estimates, window, sent, time.monotonic() - started, port,
                                       pipeline.collector.stats, pipeline.collector.judge))
                    if scored >= sent:
                        break
                    time.sleep(0.5)
        except KeyboardInterrupt:
            console.print("interrupted")
        finally:
            sdk.shutdown()
            pipeline.close()
        estimates = pipeline.exporter.estimator.snapshot()
        scored = sum(e.conversations for e in estimates if e.window == window and e.task != "*")
        console.print(f"{sent} conversations sent, {scored} scored and exported.")
        if pipeline.errors:
            raise typer.Exit(1)
