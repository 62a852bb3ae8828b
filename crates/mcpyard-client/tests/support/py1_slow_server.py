"""A slow tool on the Python SDK (mcp 1.x) over stdio: it reports progress
every tenth of a second and, when the client cancels it, writes
"cancelled" to the file named by argv[1] (the SDK cancels the tool's task
on notifications/cancelled)."""

import sys

import anyio
from mcp.server.fastmcp import Context, FastMCP

MARK = sys.argv[1]
mcp = FastMCP("slow")


@mcp.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Counts to `steps`, a tenth of a second each, reporting progress."""
    try:
        for i in range(steps):
            await ctx.report_progress(i + 1, steps, f"step {i + 1}")
            await anyio.sleep(0.1)
        return f"done after {steps} steps"
    except anyio.get_cancelled_exc_class():
        with open(MARK, "w") as f:
            f.write("cancelled")
        raise


if __name__ == "__main__":
    mcp.run()
