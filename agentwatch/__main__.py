"""`python -m agentwatch` runs the CLI (one line on stderr without the `service` extra)."""

from agentwatch.service_extra import main

main()
