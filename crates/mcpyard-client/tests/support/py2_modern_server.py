"""An MCP server built on the Python SDK 2.x (MCPServer), which serves the
2026-07-28 era: a plain tool, a tool that needs the client's model and its
user (answered with `input_required` in that era), and a tool that adds a
tool and announces the change to `subscriptions/listen` streams.

Usage: python py2_modern_server.py stdio [--modern-only]
       python py2_modern_server.py http PORT [--modern-only[=HOW]]   (binds 127.0.0.1)

--modern-only makes it a server of the 2026-07-28 era alone: `initialize`
is refused with -32022 naming the versions it serves, as such servers do.
Over HTTP, HOW picks another refusal such servers give: `32020` (HTTP 400,
-32020 "Missing MCP-Protocol-Version header"), `32601` (HTTP 400, method
not found), `404` or `405` (that status, no JSON-RPC body).
"""

import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import (
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    SamplingMessage,
    TextContent,
)

server = MCPServer("py2-modern")


@server.tool()
def reverse(text: str) -> str:
    """Returns the text backwards."""
    return text[::-1]


@server.tool()
async def consult(question: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks the client's model and then its user; answers with both replies."""
    answers = ctx.input_responses or {}
    if "model" not in answers or "user" not in answers:
        return InputRequiredResult(
            input_requests={
                "model": CreateMessageRequest(
                    params=CreateMessageRequestParams(
                        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=question))],
                        max_tokens=50,
                    )
                ),
                "user": ElicitRequest(
                    params=ElicitRequestFormParams(
                        message="Your name?",
                        requested_schema={
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                            "required": ["name"],
                        },
                    )
                ),
            },
            request_state="round-1",
        )
    if ctx.request_state != "round-1":
        return CallToolResult(content=[TextContent(type="text", text=f"bad state {ctx.request_state!r}")], is_error=True)
    model = answers["model"]
    user = answers["user"]
    model_text = model.content.text if hasattr(model, "content") else model["content"]["text"]
    name = user.content["name"] if hasattr(user, "content") else user["content"]["name"]
    return CallToolResult(content=[TextContent(type="text", text=f"model said {model_text}; user is {name}")])


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `grown` (once) and tells listeners the list changed."""
    if "grown" not in {t.name for t in await server.list_tools()}:
        server.add_tool(lambda: "grown", name="grown", description="Added at run time.")
    await ctx.notify_tools_changed()
    return "grew"


def refuse_the_handshake() -> None:
    from mcp.server.runner import ServerRunner
    from mcp.shared.exceptions import MCPError

    def refuse(self, params):
        requested = (params or {}).get("protocolVersion")
        raise MCPError(
            code=-32022,
            message="Unsupported protocol version",
            data={"supported": ["2026-07-28"], "requested": requested},
        )

    ServerRunner._handle_initialize = refuse


def refusing_the_handshake_over_http(app, how="32022"):
    """The app, with an `initialize` POST refused (by default HTTP 400, -32022)."""
    import json

    async def wrapped(scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            return await app(scope, receive, send)
        received, body, more = [], b"", True
        while more:
            message = await receive()
            received.append(message)
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if isinstance(request, dict) and request.get("method") == "initialize":
            if how in ("404", "405"):
                await send({"type": "http.response.start", "status": int(how),
                            "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"Not here"})
                return None
            requested = (request.get("params") or {}).get("protocolVersion")
            error = {
                "32022": {"code": -32022, "message": "Unsupported protocol version",
                          "data": {"supported": ["2026-07-28"], "requested": requested}},
                "32020": {"code": -32020, "message": "Missing MCP-Protocol-Version header"},
                "32601": {"code": -32601, "message": "Method not found: initialize"},
            }[how]
            payload = json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "error": error}).encode()
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": payload})
            return None
        replay = iter(received)

        async def receive_again():
            return next(replay, None) or await receive()

        return await app(scope, receive_again, send)

    return wrapped


if __name__ == "__main__":
    refusal = next((a for a in sys.argv if a.startswith("--modern-only")), None)
    if refusal and sys.argv[1] == "http":
        import uvicorn

        how = refusal.partition("=")[2] or "32022"
        app = refusing_the_handshake_over_http(server.streamable_http_app(), how)
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
        sys.exit(0)
    if "--modern-only" in sys.argv:
        refuse_the_handshake()
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
