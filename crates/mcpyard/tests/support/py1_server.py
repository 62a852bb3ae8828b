"""An MCP server built on the Python SDK 1.x (FastMCP), as people write
their own: a plain tool, and tools that need the client while they run
(sampling, elicitation, roots). Run with .tools/venv1's Python:

    py1_server.py              over stdio
    py1_server.py http PORT    over Streamable HTTP on 127.0.0.1:PORT/mcp
"""

import sys

from mcp.server.fastmcp import Context, FastMCP
from mcp.shared.message import ServerMessageMetadata
from mcp.types import (
    ListRootsRequest,
    ListRootsResult,
    SamplingMessage,
    ServerRequest,
    TextContent,
)
from pydantic import BaseModel

server = FastMCP("py1-reverser")


@server.tool()
def reverse(text: str) -> str:
    """Returns the text backwards."""
    return text[::-1]


@server.tool()
async def ask_model(prompt: str, ctx: Context) -> str:
    """Asks the client's model (sampling) and returns what it said."""
    result = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        max_tokens=50,
    )
    return f"model said: {result.content.text}"


class Name(BaseModel):
    name: str


@server.tool()
async def ask_name(ctx: Context) -> str:
    """Asks the user for a name (form elicitation)."""
    answer = await ctx.elicit(message="What is your name?", schema=Name)
    if answer.action == "accept":
        return f"hello {answer.data.name}"
    return f"elicitation {answer.action}"


@server.tool()
async def client_roots(ctx: Context) -> str:
    """Lists the client's roots."""
    # Sent as part of this call (the SDK's `list_roots()` names no call), so
    # that an HTTP transport puts it on the call's stream and a gateway in
    # front of several clients knows which client to ask.
    roots = await ctx.session.send_request(
        ServerRequest(ListRootsRequest()),
        ListRootsResult,
        metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
    )
    return "roots: " + ", ".join(str(r.uri) for r in roots.roots)


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.settings.host = "127.0.0.1"
        server.settings.port = int(sys.argv[2])
        server.run("streamable-http")
    else:
        server.run("stdio")
