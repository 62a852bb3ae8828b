"""Tools on the Python SDK (mcp 1.x) over stdio that ask the client for
things: a sampling request with model hints, and its roots."""

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ModelHint, ModelPreferences, SamplingMessage, TextContent

mcp = FastMCP("asking")


@mcp.tool()
async def ask(question: str, max_tokens: int, ctx: Context) -> str:
    """Asks the client's model, preferring a qwen model."""
    result = await ctx.session.create_message(
        messages=[
            SamplingMessage(role="user", content=TextContent(type="text", text=question))
        ],
        max_tokens=max_tokens,
        system_prompt="Answer in one word.",
        model_preferences=ModelPreferences(hints=[ModelHint(name="qwen")]),
    )
    return f"{result.model}: {result.content.text}"


@mcp.tool()
async def roots(ctx: Context) -> str:
    """The client's roots, comma-separated."""
    result = await ctx.session.list_roots()
    return ", ".join(f"{r.name}={r.uri}" for r in result.roots)


if __name__ == "__main__":
    mcp.run()
