"""An MCP server of both protocol eras (Python SDK 2.x, low-level server)
that offers each era something else, as servers in the field do: a client
of the handshake era sees `ask_by_request` (it asks the client with a
server request), a 2026-07-28 client sees `ask_by_input` (it answers with
`input_required`); `echo` is offered to both.

Usage: python py_two_eras_server.py stdio
       python py_two_eras_server.py http PORT     (127.0.0.1:PORT/mcp)
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

MODERN = "2026-07-28"

ECHO = {
    "name": "echo",
    "description": "Returns its text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}
BY_REQUEST = {
    "name": "ask_by_request",
    "description": "Asks the client's user with an elicitation request.",
    "inputSchema": {"type": "object", "properties": {}},
}
BY_INPUT = {
    "name": "ask_by_input",
    "description": "Asks the client's user with an input_required answer.",
    "inputSchema": {"type": "object", "properties": {}},
}
QUESTION = {
    "message": "What is your name?",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
}


def modern(ctx: ServerRequestContext[Any, Any]) -> bool:
    return ctx.protocol_version == MODERN


async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
    tools = [ECHO, BY_INPUT if modern(ctx) else BY_REQUEST]
    return types.ListToolsResult.model_validate({"tools": tools})


def text(t: str) -> types.CallToolResult:
    return types.CallToolResult.model_validate({"content": [{"type": "text", "text": t}]})


async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
    args = params.arguments or {}
    offered = {t["name"] for t in (ECHO, BY_INPUT if modern(ctx) else BY_REQUEST)}
    if params.name not in offered:
        return types.CallToolResult.model_validate(
            {"content": [{"type": "text", "text": f"Unknown tool: {params.name}"}], "isError": True}
        )
    if params.name == "echo":
        return text(str(args.get("text", "")))
    if params.name == "ask_by_request":
        answer = await ctx.session.elicit_form(
            message=QUESTION["message"], requested_schema=QUESTION["requestedSchema"], related_request_id=ctx.request_id
        )
        return text(f"hello {(answer.content or {}).get('name')} (by request)")
    answer = (params.input_responses or {}).get("name")
    if answer is None or params.request_state != "asked":
        return types.InputRequiredResult(
            input_requests={
                "name": types.ElicitRequest(
                    params=types.ElicitRequestFormParams(
                        message=QUESTION["message"], requested_schema=QUESTION["requestedSchema"]
                    )
                )
            },
            request_state="asked",
        )
    content = answer.content if hasattr(answer, "content") else answer.get("content")
    return text(f"hello {(content or {}).get('name')} (by input)")


def build() -> Server[Any]:
    return Server("two-eras", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def run_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def run_http(server: Server[Any], port: int) -> None:
    import uvicorn

    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()


if __name__ == "__main__":
    server = build()
    if sys.argv[1:2] == ["http"]:
        anyio.run(run_http, server, int(sys.argv[2]))
    else:
        anyio.run(run_stdio, server)
