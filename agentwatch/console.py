"""The `agentwatch` console script: the CLI, or one line on stderr and exit 1 without the service extra.

Standard library only until the CLI is imported, so that a bare `pip install agentwatch` gets a sentence, not a
traceback. It sits apart from `service_extra` (which the CLI imports) so that no two modules import each other.
"""

from __future__ import annotations

import sys

from agentwatch.service_extra import ServiceExtraMissing


def main() -> None:
    """Run the CLI; without the service extra, name the package to install and exit 1."""
    try:
        from agentwatch.cli import main as cli_main
    except ServiceExtraMissing as exc:
        print(f"agentwatch: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    cli_main()
