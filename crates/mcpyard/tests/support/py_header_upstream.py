"""An MCP server on the Python SDK 1.x (FastMCP) over Streamable HTTP that
reports the `Authorization` header each call reached it with, so a test can
check what a gateway forwards upstream.

    py_header_upstream.py PORT      serves 127.0.0.1:PORT/mcp
"""

import sys

from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("header-reporter", host="127.0.0.1", port=int(sys.argv[1]))


@server.tool()
def authorization(ctx: Context) -> str:
    """The Authorization header of the HTTP request that carried this call."""
    request = ctx.request_context.request
    return request.headers.get("authorization", "<none>") if request is not None else "<no request>"


if __name__ == "__main__":
    server.run(transport="streamable-http")
