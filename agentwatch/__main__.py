"""`python -m agentwatch` runs the CLI (one line on stderr without the `service` extra)."""

from agentwatch.console import main

main()
