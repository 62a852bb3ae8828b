"""Lists a server's tools with the Python SDK 2.x, in its default mode
(2026-07-28 when the server offers it) or the legacy one, calls the tools
named, answering elicitations with a name, and prints one JSON summary:
{"protocolVersion", "tools": [names], "results": {name: text}}.

    py_tools_view.py TARGET [--mode auto|legacy] [--command JSON] [--call NAME]...

TARGET is a Streamable HTTP URL or `stdio` (then --command is the program to
start, as a JSON array). Run with .tools/venv's Python."""

import argparse
import asyncio
import json

import mcp_types as types
from mcp import Client, StdioServerParameters


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    parser.add_argument("--mode", default="auto", choices=["auto", "legacy"])
    parser.add_argument("--command")
    parser.add_argument("--call", action="append", default=[])
    args = parser.parse_args()

    async def elicitation(_context, params):
        return types.ElicitResult(action="accept", content={"name": "ada"})

    server = args.target
    if server == "stdio":
        argv = json.loads(args.command)
        server = StdioServerParameters(command=argv[0], args=argv[1:])
    summary = {"ok": False}
    try:
        async with Client(server, mode=args.mode, elicitation_callback=elicitation, read_timeout_seconds=60) as client:
            summary["protocolVersion"] = client.protocol_version
            listed = await client.list_tools()
            summary["tools"] = sorted(t.name for t in listed.tools)
            summary["results"] = {}
            for name in args.call:
                result = await client.call_tool(name, {})
                summary["results"][name] = "".join(
                    getattr(c, "text", "") for c in result.content
                ) + (" [error]" if result.is_error else "")
        summary["ok"] = True
    except BaseException as e:  # the summary says what failed
        group = getattr(__builtins__, "BaseExceptionGroup", ())
        while group and isinstance(e, group) and e.exceptions:
            e = e.exceptions[0]
        summary["error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(summary))


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(), timeout=120))
