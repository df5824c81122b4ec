"""`agentwatch collector`: run the span collector service until SIGTERM/SIGINT."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentwatch.cli.app import app, reload_on_sighup, serve_metrics, settings_from_options, stop_on_signals


@app.command("collector")
def collector(
    bootstrap_servers: Annotated[
        str | None,
        typer.Option(help="Kafka bootstrap servers HOST:PORT (AGENTWATCH_KAFKA__BOOTSTRAP_SERVERS)."),
    ] = None,
    input_topic: Annotated[
        list[str] | None,
        typer.Option(help="Span topic to consume; repeat for several (AGENTWATCH_COLLECTOR__INPUT_TOPICS)."),
    ] = None,
    log_topic: Annotated[
        list[str] | None,
        typer.Option(
            help="Topic of OTLP log records whose GenAI message events join their spans; repeat for several "
            "(AGENTWATCH_COLLECTOR__LOG_TOPICS)."
        ),
    ] = None,
    scores_topic: Annotated[str | None, typer.Option(help="Topic the scores are written to.")] = None,
    group_id: Annotated[str | None, typer.Option(help="Consumer group of the collector instances.")] = None,
    idle_timeout: Annotated[
        float | None, typer.Option(help="Seconds without new spans after which a conversation is finished.")
    ] = None,
    config: Annotated[Path | None, typer.Option(help="YAML configuration file.")] = None,
    metrics_port: Annotated[int | None, typer.Option(help="Serve /metrics on this port.")] = None,
    metrics_host: Annotated[
        str | None, typer.Option(help="Address /metrics listens on (default collector.metrics_host).")
    ] = None,
) -> None:
    """Consume span topics, assemble conversations, score them and write the scores (runs until SIGTERM)."""
    settings = settings_from_options(
        config,
        bootstrap_servers,
        collector={
            "input_topics": input_topic or None,
            "log_topics": log_topic or None,
            "scores_topic": scores_topic,
            "group_id": group_id,
            "idle_timeout_s": idle_timeout,
            "metrics_port": metrics_port,
            "metrics_host": metrics_host,
        },
    )
    from agentwatch.collector.service import CollectorService

    try:
        service = CollectorService(settings)
    except ValueError as exc:  # e.g. a judge spend cap on a model the price table does not know
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    stop = stop_on_signals()
    reload_on_sighup(config, service.reload)

    port, host = settings.collector.metrics_port, settings.collector.metrics_host
    if port is not None:
        from agentwatch.collector.metrics import serve

        serve_metrics(lambda: serve(service.stats, service, port, host).port, port)
    from agentwatch.cli.app import kafka_or_exit

    kafka_or_exit(lambda: service.run(stop), settings.kafka.bootstrap_servers)
