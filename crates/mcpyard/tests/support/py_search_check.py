"""Finds a hidden tool by a goal in plain words through the gateway's
search tool with the official Python SDK 2.x (its default mode), calls it
through `mcpyard__call_tool` with a progress callback, and prints on stdout,
as JSON, what was listed, found, reported and returned.

    py_search_check.py URL GOAL ARGS_JSON
"""
import asyncio
import json
import sys

from mcp import Client


async def main(url: str, goal: str, args: dict) -> int:
    progress = []

    async def on_progress(value, total, message):
        progress.append({"progress": value, "total": total})

    async with Client(url, read_timeout_seconds=60) as client:
        listed = [t.name for t in (await client.list_tools()).tools]
        found = await client.call_tool("mcpyard__search_tools", {"query": goal, "limit": 3})
        hits = found.structured_content["tools"]
        name = hits[0]["name"]
        result = await client.call_tool(
            "mcpyard__call_tool",
            {"name": name, "arguments": args},
            progress_callback=on_progress,
        )
        print(json.dumps({
            "protocolVersion": client.protocol_version,
            "listed": listed,
            "found": [h["name"] for h in hits],
            "called": name,
            "isError": result.is_error,
            "text": "".join(getattr(c, "text", "") for c in result.content),
            "progress": progress,
        }))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))))
