"""A Streamable HTTP MCP server (the official Python SDK 2.x) whose one tool
tells what W3C trace context its request carried: the `traceparent` HTTP
header and `_meta.traceparent`.

Usage: traced_upstream.py PORT
"""
import json
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("traced-upstream")


@server.tool()
def trace_context(ctx: Context) -> str:
    """Answers with the trace context this request carried."""
    headers = ctx.headers or {}
    meta = ctx.request_context.meta
    if meta is None:
        sent = None
    elif isinstance(meta, dict):
        sent = meta.get("traceparent")
    else:
        sent = getattr(meta, "traceparent", None) or (meta.model_extra or {}).get("traceparent")
    return json.dumps({"header": headers.get("traceparent"), "meta": sent})


server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
