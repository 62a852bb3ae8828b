"""Holds one Python SDK 2.x session (default mode) with `mcpyard stdio`
while the test edits the gateway's config: lists the tools, writes them to
MARKER (the test's cue to save the new config), then lists again until TOOL
appears (40 s at most), calls it with ARGS and prints one JSON summary:
{"protocolVersion", "before": [names], "after": [names], "result": text}.

    py_reload_stdio.py COMMAND_JSON MARKER TOOL ARGS_JSON

Run with .tools/venv's Python."""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters


async def main(command: list, marker: str, tool: str, arguments: dict) -> None:
    summary = {"ok": False}
    server = StdioServerParameters(command=command[0], args=command[1:])
    try:
        async with Client(server, read_timeout_seconds=60) as client:
            summary["protocolVersion"] = client.protocol_version
            before = sorted(t.name for t in (await client.list_tools()).tools)
            summary["before"] = before
            with open(marker, "w") as f:
                json.dump(before, f)
            after = before
            for _ in range(200):
                if tool in after:
                    break
                await asyncio.sleep(0.2)
                after = sorted(t.name for t in (await client.list_tools()).tools)
            summary["after"] = after
            if tool in after:
                result = await client.call_tool(tool, arguments)
                summary["result"] = "".join(getattr(c, "text", "") for c in result.content)
        summary["ok"] = True
    except BaseException as e:  # the summary says what failed
        group = getattr(__builtins__, "BaseExceptionGroup", ())
        while group and isinstance(e, group) and e.exceptions:
            e = e.exceptions[0]
        summary["error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(summary))


if __name__ == "__main__":
    command, marker, tool, arguments = sys.argv[1:5]
    asyncio.run(asyncio.wait_for(main(json.loads(command), marker, tool, json.loads(arguments)), timeout=120))
