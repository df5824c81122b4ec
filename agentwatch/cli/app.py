"""The `agentwatch` Typer application; subcommands live in sibling modules, one per command group."""

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

app = typer.Typer(
    name="agentwatch",
    help="Reliability monitoring for AI agents: score transcripts, collect spans, export Bayesian estimates.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    """Print the version, then exit."""
    if value:
        from agentwatch import __version__
        from agentwatch.build_info import build_line

        typer.echo(f"agentwatch {__version__} ({build_line()})")
        raise typer.Exit()


@app.callback()
def _root(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log at DEBUG level."),
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Reliability monitoring for AI agents."""
    import logging

    from agentwatch.log_repeats import RepeatLimit
    from agentwatch.safe_text import OneLineFormatter

    handler = logging.StreamHandler()
    # a conversation id or a name with a newline in it must not start a forged log line
    handler.setFormatter(OneLineFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    if not verbose:  # bad input at any rate logs at most 20 lines a minute of each message (--verbose: all)
        handler.addFilter(RepeatLimit())
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=[handler])
    # httpx logs every request at INFO: one line per judge call would bury what matters
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.WARNING)


def stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT, for services to shut down gracefully."""
    import logging
    import signal

    stop = threading.Event()

    def _on_signal(signum: int, _frame: object) -> None:
        logging.getLogger("agentwatch").info("signal %d: shutting down", signum)
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    return stop


def settings_from_options(
    config: Path | None,
    bootstrap_servers: str | None,
    exporter: dict[str, Any] | None = None,
    collector: dict[str, Any] | None = None,
) -> Any:
    """Settings from file and environment, then command-line options (which win); exit 2 when invalid."""
    from agentwatch.config import ConfigError, load_settings, with_values

    given = {
        "exporter": {k: v for k, v in (exporter or {}).items() if v is not None},
        "collector": {k: v for k, v in (collector or {}).items() if v is not None},
        "kafka": {"bootstrap_servers": bootstrap_servers} if bootstrap_servers else {},
    }
    try:
        settings = with_values(load_settings(config), **{k: v for k, v in given.items() if v})
    except (ConfigError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    return settings


def reload_on_sighup(config: Path | None, apply: Any) -> None:
    """On SIGHUP, read the configuration again and hand it to `apply`; a bad file is logged and changes nothing."""
    import logging
    import signal

    from agentwatch.config import ConfigError, load_settings

    log = logging.getLogger("agentwatch")

    def _on_hup(_signum: int, _frame: object) -> None:
        try:
            settings = load_settings(config)
        except ConfigError as exc:
            log.error("SIGHUP: configuration not reloaded, the running one stays: %s", exc)
            return
        apply(settings)
        log.info(
            "SIGHUP: %d task policies and the sample rates reloaded from %s",
            len(settings.policies),
            config or "the environment",
        )

    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, _on_hup)


def serve_metrics(start: Callable[[], int], port: int | None) -> int:
    """Call `start()` (which serves /metrics and returns the port); a port in use is one clear error, exit 2."""
    try:
        return start()
    except OSError as exc:
        typer.echo(
            f"error: cannot serve /metrics on port {port}: {exc.strerror or exc}; choose another with "
            "--metrics-port (0 = any free port)",
            err=True,
        )
        raise typer.Exit(2) from None


def kafka_or_exit(call: Callable[[], object], bootstrap_servers: str) -> None:
    """Run `call`; Kafka refusing the settings or out of reach ends the command with one line, exit 1; settings
    the cluster cannot serve (a topic taking smaller records than the collector needs), exit 2."""
    from confluent_kafka import KafkaException

    from agentwatch.config import ConfigError
    from agentwatch.kafka.refusals import KafkaSecurityError

    try:
        call()
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except KafkaSecurityError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    except KafkaException as exc:
        typer.echo(f"error: Kafka at {bootstrap_servers}: {exc.args[0].str()}", err=True)
        raise typer.Exit(1) from None
