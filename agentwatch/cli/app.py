"""The `agentwatch` Typer application; subcommands live in sibling modules, one per command group."""

import threading

import typer

app = typer.Typer(
    name="agentwatch",
    help="Reliability monitoring for AI agents: score transcripts, collect spans, export Bayesian estimates.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log at DEBUG level."),
) -> None:
    """Reliability monitoring for AI agents."""
    import logging

    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


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
