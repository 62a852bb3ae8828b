"""A stdio MCP server built on the Python SDK 1.x (FastMCP), as people write
their own: one tool that reverses a text. Run with .tools/venv1's Python."""

from mcp.server.fastmcp import FastMCP

server = FastMCP("py1-reverser")


@server.tool()
def reverse(text: str) -> str:
    """Returns the text backwards."""
    return text[::-1]


if __name__ == "__main__":
    server.run("stdio")
