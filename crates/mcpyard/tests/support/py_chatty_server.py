"""An MCP server built on the Python SDK 1.x (FastMCP) that talks while it
works: a log message and a progress report during its call, and a form it
asks the client to fill, each repeating what the caller gave it (a secret
among it, in the isolation and redaction tests). Run with .tools/venv1's
Python, over stdio.
"""

from mcp.server.fastmcp import Context, FastMCP
from pydantic import BaseModel

server = FastMCP("py-chatty")


@server.tool()
async def chatty(said: str, ctx: Context) -> str:
    """Logs and reports progress with `said`, then returns it."""
    await ctx.info(f"working on: {said}")
    await ctx.report_progress(1, 2, message=f"halfway through {said}")
    return f"done with {len(said)} characters"


class Confirm(BaseModel):
    ok: bool


@server.tool()
async def confirm(said: str, ctx: Context) -> str:
    """Asks the client to confirm `said` (form elicitation)."""
    answer = await ctx.elicit(message=f"Really use {said}?", schema=Confirm)
    return f"elicitation {answer.action}"


if __name__ == "__main__":
    server.run("stdio")
