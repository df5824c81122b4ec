"""`agentwatch exporter` (scores → Bayesian estimates on /metrics) and `agentwatch serve` (collector + exporter)."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Annotated, Any

import typer

from agentwatch.cli.app import (
    app,
    kafka_or_exit,
    reload_on_sighup,
    serve_metrics,
    settings_from_options,
    stop_on_signals,
)

log = logging.getLogger("agentwatch.exporter")

BootstrapOpt = Annotated[
    str | None, typer.Option(help="Kafka bootstrap servers HOST:PORT (AGENTWATCH_KAFKA__BOOTSTRAP_SERVERS).")
]
ScoresTopicOpt = Annotated[str | None, typer.Option(help="Topic of the conversation scores.")]
MetricsPortOpt = Annotated[int | None, typer.Option(help="Serve /metrics on this port (default 9464).")]
MetricsHostOpt = Annotated[
    str | None, typer.Option(help="Address /metrics listens on (default exporter.metrics_host, 0.0.0.0).")
]
ConfigOpt = Annotated[Path | None, typer.Option(help="YAML configuration file.")]


def _start_otlp(settings: Any, service: Any) -> Any:
    if not settings.exporter.otlp_endpoint:
        return None
    from agentwatch.exporters.otlp_metrics import start_otlp_push

    return start_otlp_push(lambda: service.estimator, settings.exporter)


@app.command("exporter")
def exporter(
    bootstrap_servers: BootstrapOpt = None,
    scores_topic: ScoresTopicOpt = None,
    metrics_port: MetricsPortOpt = None,
    group_id: Annotated[str | None, typer.Option(help="Consumer group of the exporter instances.")] = None,
    config: ConfigOpt = None,
    metrics_host: MetricsHostOpt = None,
) -> None:
    """Consume conversation scores and serve rolling pass@k / pass^k / ASR estimates on /metrics."""
    settings = settings_from_options(
        config,
        bootstrap_servers,
        {
            "scores_topic": scores_topic,
            "metrics_port": metrics_port,
            "group_id": group_id,
            "metrics_host": metrics_host,
        },
    )
    from agentwatch.exporters.service import ExporterService

    stop = stop_on_signals()
    service = ExporterService(settings)
    serve_metrics(service.start_http, settings.exporter.metrics_port)
    otlp = _start_otlp(settings, service)
    try:
        kafka_or_exit(lambda: service.run(stop), settings.kafka.bootstrap_servers)
    finally:
        service.stop_http()
        if otlp is not None:
            otlp.shutdown()


@app.command("serve")
def serve(
    bootstrap_servers: BootstrapOpt = None,
    input_topic: Annotated[
        list[str] | None, typer.Option(help="Span topic to consume; repeat for several.")
    ] = None,
    scores_topic: ScoresTopicOpt = None,
    metrics_port: MetricsPortOpt = None,
    embedded_broker: Annotated[
        bool, typer.Option(help="Start an embedded Tansu broker (memory only) and use it.")
    ] = False,
    config: ConfigOpt = None,
    metrics_host: MetricsHostOpt = None,
) -> None:
    """Collector + estimator + exporter in one process, with pipeline health and estimates on one /metrics."""
    settings = settings_from_options(
        config,
        bootstrap_servers,
        {"scores_topic": scores_topic, "metrics_port": metrics_port, "metrics_host": metrics_host},
        {"input_topics": input_topic or None, "scores_topic": scores_topic},
    )
    from agentwatch.kafka.broker import EmbeddedBroker

    stop = stop_on_signals()
    # Everything started here is stopped on the way out, whichever error ends the command (a busy metrics
    # port, Kafka out of reach, a bad setting): an embedded broker left behind would outlive the command.
    with contextlib.ExitStack() as started:
        if embedded_broker:
            broker = started.enter_context(EmbeddedBroker())
            settings.kafka = settings.kafka.model_copy(update={"bootstrap_servers": broker.bootstrap_servers})
            typer.echo(
                f"embedded broker on {broker.bootstrap_servers} (memory only): point agents at it with "
                f"AGENTWATCH_BOOTSTRAP_SERVERS={broker.bootstrap_servers}",
                err=True,
            )
        _serve(settings, config, stop, started)


def _serve(settings: Any, config: Path | None, stop: Any, started: contextlib.ExitStack) -> None:
    """Run the pipeline until `stop`; what it starts is closed by `started`."""
    from agentwatch.kafka.topics import ensure_pipeline_topics
    from agentwatch.pipeline import Pipeline

    try:
        pipeline = Pipeline(settings, stop_event=stop)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    started.callback(pipeline.close)
    # reach Kafka (and create the pipeline's topics) before serving anything
    kafka_or_exit(lambda: ensure_pipeline_topics(settings), settings.kafka.bootstrap_servers)
    reload_on_sighup(config, pipeline.collector.reload)
    serve_metrics(pipeline.start_http, settings.exporter.metrics_port)
    otlp = _start_otlp(settings, pipeline.exporter)
    if otlp is not None:
        started.callback(otlp.shutdown)
    pipeline.start(exporter_in_thread=False)
    kafka_or_exit(lambda: pipeline.exporter.run(stop), settings.kafka.bootstrap_servers)
