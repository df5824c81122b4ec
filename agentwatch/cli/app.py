"""The `agentwatch` Typer application; subcommands live in sibling modules, one per command group."""

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
