"""Command-line interface. Each module registers its commands on `app` when imported."""

from agentwatch.service_extra import require

require(__name__)  # fails with the extra to install, before any service dependency is imported

# One import per command module; keep heavy imports inside the command functions.
from agentwatch.cli import (
    collector_cmd,  # noqa: F401
    demo_cmd,  # noqa: F401
    exporter_cmd,  # noqa: F401
    import_cmd,  # noqa: F401
    judge_cmd,  # noqa: F401
    policy_cmd,  # noqa: F401
    reconstruct_cmd,  # noqa: F401
    review_cmd,  # noqa: F401
    schema_cmd,  # noqa: F401
    score_cmd,  # noqa: F401
)
from agentwatch.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the `agentwatch` console script."""
    app()
