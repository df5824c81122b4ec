"""`python -m agentwatch` runs the CLI."""

from agentwatch.cli import main

main()
