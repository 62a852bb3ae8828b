"""An MCP server built on the Python SDK 2.x (MCPServer), which serves the
2026-07-28 era: a plain tool, a tool that needs the client's model and its
user (answered with `input_required` in that era), and a tool that adds a
tool and announces the change to `subscriptions/listen` streams.

Usage: python py2_modern_server.py stdio
       python py2_modern_server.py http PORT   (binds 127.0.0.1)
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


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
