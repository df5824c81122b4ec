"""Command-line interface. Each module registers its commands on `app` when imported."""

from agentwatch.cli.app import app

# One import per command module; keep heavy imports inside the command functions.
from agentwatch.cli import schema_cmd  # noqa: F401,E402
from agentwatch.cli import score_cmd  # noqa: F401,E402
from agentwatch.cli import collector_cmd  # noqa: F401,E402
from agentwatch.cli import reconstruct_cmd  # noqa: F401,E402
from agentwatch.cli import demo_cmd  # noqa: F401,E402
from agentwatch.cli import exporter_cmd  # noqa: F401,E402

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the `agentwatch` console script."""
    app()
