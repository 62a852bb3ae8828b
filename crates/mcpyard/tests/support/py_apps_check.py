"""A client of the official Python SDK 2.x (its default mode, the
2026-07-28 era where it can) through the gateway in front of MCP Apps
servers: it declares no UI extension. Lists, reads a view by its exposed
URI, and calls by a server's own names; prints on stdout, as JSON, what it
saw, each call's text or error.

    py_apps_check.py URL
"""
import asyncio
import json
import sys

from mcp import Client


async def outcome(work):
    try:
        return {"ok": await work()}
    except Exception as e:  # the SDK raises on a JSON-RPC error
        return {"error": str(e)}


async def main(url: str) -> int:
    async with Client(url, read_timeout_seconds=60) as client:
        tools = (await client.list_tools()).tools
        resources = (await client.list_resources()).resources

        async def read(uri):
            result = await client.read_resource(uri)
            return [{"uri": str(c.uri), "text": getattr(c, "text", "")} for c in result.contents]

        async def call(name):
            result = await client.call_tool(name, {})
            if result.is_error:
                raise RuntimeError("".join(getattr(c, "text", "") for c in result.content))
            return "".join(getattr(c, "text", "") for c in result.content)

        print(json.dumps({
            "protocolVersion": client.protocol_version,
            "tools": {t.name: (t.meta or {}) for t in tools},
            "resources": [str(r.uri) for r in resources],
            "read": await outcome(lambda: read("ui://b/weather/view.html")),
            "refresh": await outcome(lambda: call("refresh")),
            "weather": await outcome(lambda: call("weather")),
        }))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
