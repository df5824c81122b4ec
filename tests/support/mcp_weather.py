"""An MCP server of one tool, `get_weather`, over stdio: what `tests.support.record_agents` runs an agent's MCP
tools against (`python -m tests.support.mcp_weather`)."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from tests.support.record_agents import weather

server = MCPServer("weather")


@server.tool()
def get_weather(city: str) -> dict:
    """Weather of a city."""
    return weather(city)


if __name__ == "__main__":
    server.run("stdio")
