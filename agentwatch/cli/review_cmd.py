"""`agentwatch review` (the review queue in the browser) and `agentwatch review-hash` (reviewers' secrets)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated, Any

import typer

from agentwatch.cli.app import app, kafka_or_exit, serve_metrics, settings_from_options, stop_on_signals

log = logging.getLogger("agentwatch.review")


def _review_settings(config: Path | None, bootstrap_servers: str | None, updates: dict[str, Any]) -> Any:
    """Settings with the command-line options applied to the `review` section; exit 2 when invalid."""
    from pydantic import ValidationError

    from agentwatch.config import ReviewConfig

    settings = settings_from_options(config, bootstrap_servers)
    updates = {k: v for k, v in updates.items() if v is not None}
    if updates:
        try:
            settings.review = ReviewConfig.model_validate({**settings.review.model_dump(), **updates})
        except ValidationError as exc:
            first = exc.errors()[0]
            typer.echo(f"error: review.{'.'.join(str(p) for p in first['loc'])}: {first['msg']}", err=True)
            raise typer.Exit(2) from None
    if not settings.review.reviewers:
        typer.echo(
            "error: review.reviewers is empty: nobody could sign in. Add reviewers with a hashed secret "
            "(`agentwatch review-hash`, see docs/review.md).",
            err=True,
        )
        raise typer.Exit(2)
    return settings


@app.command("review")
def review(
    config: Annotated[Path | None, typer.Option(help="YAML configuration file (section `review:`).")] = None,
    bootstrap_servers: Annotated[
        str | None,
        typer.Option(help="Kafka bootstrap servers HOST:PORT (AGENTWATCH_KAFKA__BOOTSTRAP_SERVERS)."),
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option(help="sqlite:///PATH (default sqlite:///agentwatch-review.db) or postgresql://…"),
    ] = None,
    host: Annotated[
        str | None, typer.Option(help="Address to serve the page on (default 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None, typer.Option(help="Port of the page (default 8080; 0 = any free port).")
    ] = None,
    metrics_port: Annotated[
        int | None, typer.Option(help="Serve /metrics on this port (default 9466).")
    ] = None,
    metrics_host: Annotated[
        str | None, typer.Option(help="Address /metrics listens on (default 127.0.0.1).")
    ] = None,
) -> None:
    """Serve the review queue: people label the review sample and flagged conversations, revising scores."""
    settings = _review_settings(
        config,
        bootstrap_servers,
        {
            "database_url": database_url,
            "host": host,
            "port": port,
            "metrics_port": metrics_port,
            "metrics_host": metrics_host,
        },
    )
    try:
        from agentwatch.review.service import ReviewService
    except ImportError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    from sqlalchemy.exc import SQLAlchemyError

    try:
        service = ReviewService(settings)
    except SQLAlchemyError as exc:
        where = settings.review.database_url.split("@")[-1]  # no password in the message
        typer.echo(f"error: review store {where}: {type(exc).__name__}: {str(exc).splitlines()[0]}", err=True)
        raise typer.Exit(1) from None
    stop = stop_on_signals()
    if settings.review.metrics_port is not None:
        metrics = settings.review.metrics_port
        serve_metrics(lambda: service.start_metrics(metrics), metrics)
        settings.review.metrics_port = None  # started here, where a port in use is one clear error
    try:
        kafka_or_exit(lambda: service.run(stop), settings.kafka.bootstrap_servers)
    except OSError as exc:
        where = f"{settings.review.host}:{settings.review.port}"
        typer.echo(
            f"error: cannot serve the review page on {where}: {exc.strerror or exc}; choose another "
            "with --port",
            err=True,
        )
        raise typer.Exit(2) from None


@app.command("review-hash")
def review_hash(
    token: Annotated[
        bool, typer.Option("--token", help="Make a new random token instead of hashing a password.")
    ] = False,
    name: Annotated[
        str, typer.Option(help="Reviewer name for the printed configuration lines.")
    ] = "REVIEWER",
) -> None:
    """Print a reviewer's `review.reviewers` entry (JSON, also valid YAML): a password's scrypt hash, or a new
    token's SHA-256 (the token itself goes to stderr, once)."""
    from agentwatch.review.auth import hash_password, new_token, token_hash

    if token:
        secret = new_token()
        typer.echo(f"token (give it to {name}; it is not stored anywhere): {secret}", err=True)
        typer.echo(json.dumps({"name": name, "token_sha256": token_hash(secret)}))
        return
    password = typer.prompt("password", hide_input=True, confirmation_prompt=True, err=True)
    if len(password) < 10:
        typer.echo("error: use at least 10 characters", err=True)
        raise typer.Exit(2)
    typer.echo(json.dumps({"name": name, "password_hash": hash_password(password)}))
